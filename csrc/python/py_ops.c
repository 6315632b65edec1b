/* torchtrt_c._C.ops(): the op table as the core knows it, one dict per op, so that Python
 * derives its knowledge (which ops to keep whole, which need differential cases) from the
 * same place as the partitioner: the op's row in csrc/ir/ops.def (name, arity, flags, shape
 * rule, converter/validator/evaluator, dynamic-shape support, the stated reason of an op
 * that never converts), read back through the tables built from it (graph.c, registry.c,
 * shape.c).
 * The "py.*" size-arithmetic callables (opaque nodes the registry accepts) are listed too,
 * with kind "py". */
#include "binding.h"

#include "../convert/registry.h"

static PyObject *flag_tuple(uint32_t f) {
    static const struct { uint32_t bit; const char *name; } names[] = {
        {TTC_OPF_ELEMENTWISE, "elementwise"}, {TTC_OPF_REDUCTION, "reduction"}, {TTC_OPF_VIEW, "view"},
        {TTC_OPF_IMPURE, "impure"}, {TTC_OPF_PRIM, "prim"}, {TTC_OPF_NOOP_INFER, "noop_infer"},
    };
    PyObject *t = PyTuple_New(0);
    for (size_t i = 0; t && i < sizeof names / sizeof names[0]; i++) {
        if (!(f & names[i].bit)) continue;
        PyObject *s = PyUnicode_FromString(names[i].name);
        if (!s || _PyTuple_Resize(&t, PyTuple_GET_SIZE(t) + 1)) { Py_XDECREF(s); Py_XDECREF(t); return NULL; }
        PyTuple_SET_ITEM(t, PyTuple_GET_SIZE(t) - 1, s);
    }
    return t;
}

static PyObject *entry(const char *name, const char *kind, int id, int n_in, int n_out, uint32_t flags,
                       const ttc_converter *c, bool shape_rule, bool evaluator, const char *never) {
    PyObject *fl = flag_tuple(flags);
    if (!fl) return NULL;
    PyObject *d = Py_BuildValue("{s:s,s:s,s:i,s:i,s:i,s:N,s:O,s:O,s:O,s:O,s:O,s:z}", "name", name, "kind", kind, "id", id,
                                "n_inputs", n_in, "n_outputs", n_out, "flags", fl,
                                "converter", c ? Py_True : Py_False,
                                "validator", c && c->validate ? Py_True : Py_False,
                                "evaluator", evaluator ? Py_True : Py_False,
                                "dynamic", c && (c->flags & TTC_CONVF_DYNAMIC) ? Py_True : Py_False,
                                "shape_rule", shape_rule ? Py_True : Py_False, "never_converted", never);
    return d;
}

static PyObject *py_ops(PyObject *m, PyObject *unused) {
    PyObject *list = PyList_New(0);
    if (!list) return NULL;
    for (int i = 0; i < TTC_OP_COUNT; i++) {
        const ttc_op_info *info = ttc_op_info_get((ttc_op_id)i);
        const ttc_converter *c = ttc_converter_get((ttc_op_id)i);
        const char *kind = !strncmp(info->name, "aten.", 5) ? "aten" : !strncmp(info->name, "prim.", 5) ? "prim" : "other";
        PyObject *d = entry(info->name, kind, i, info->n_inputs, info->n_outputs, info->flags, c,
                            ttc_op_has_shape_rule((ttc_op_id)i), c && (c->flags & TTC_CONVF_EVAL),
                            ttc_never_converted_reason((ttc_op_id)i));
        if (!d || PyList_Append(list, d)) { Py_XDECREF(d); Py_DECREF(list); return NULL; }
        Py_DECREF(d);
    }
    /* size arithmetic: supported without a kernel (a static evaluation), n inputs of ints */
    static const ttc_converter eval = {NULL, NULL, TTC_CONVF_DYNAMIC | TTC_CONVF_EVAL};
    for (int i = 0; ttc_symint_arith_ops[i]; i++) {
        PyObject *d = entry(ttc_symint_arith_ops[i], "py", -1, -1, 1, 0, &eval, false, true, NULL);
        if (!d || PyList_Append(list, d)) { Py_XDECREF(d); Py_DECREF(list); return NULL; }
        Py_DECREF(d);
    }
    return list;
}

static PyMethodDef ops_methods[] = {
    {"ops", py_ops, METH_NOARGS,
     "ops() -> list[dict]: every op the core knows: name (ATen overload name), kind (aten, prim, py), id, "
     "n_inputs/n_outputs (-1: variadic), flags (elementwise, reduction, view, impure, prim, noop_infer), "
     "converter, validator, evaluator (no kernel: a static value), dynamic (symbolic dims), shape_rule, "
     "never_converted (None, or why the op always stays in torch)."},
    {NULL, NULL, 0, NULL},
};

int ttc_py_init_ops(PyObject *m, ttc_py_state *st) {
    return PyModule_AddFunctions(m, ops_methods);
}
