/* torchtrt_c._C.FastCall: an engine call on CPU torch tensors in one C call, the runtime's
 * steady state (torchtrt_c/runtime/_execute.py, dynamo/_compiled_module.py).
 *
 *   f = _C.FastCall(engine, torch.Tensor, torch.empty, [(torch.float32, (4, 64))],
 *                   [{"dtype": torch.float32, "device": cpu}], 1, (0,), (0,), "single")
 *   y = f.run((x,))      # NotImplemented: these arguments need the general path
 *
 * A FastCall is made for one set of input shapes, after the general path has validated them
 * once. Per call it checks each argument the cheapest way that still proves the engine may
 * read its memory in place (exact torch.Tensor, the dtype object, the shape, CPU, no autograd,
 * contiguous, no negative or conjugate bit: such a lazy view's memory holds the values before
 * the negation), allocates the outputs with torch.empty and runs the engine on the tensors'
 * data pointers: no numpy views, no buffer protocol, no shape computation. Anything else
 * answers NotImplemented and the caller takes the general path, which names what is wrong.
 * The arguments and the outputs are referenced for the whole call, so the memory the engine
 * wraps in place outlives its host-pointer buffers (freed before ttc_engine_execute returns).
 * The object holds no per-call state: threads may share it (the engine takes an execution
 * context per call). */
#include "binding.h"

#include "../common/status.h"
#include "../engine/engine.h"

enum { FC_MAX = 64, FC_LIST = 0, FC_TUPLE = 1, FC_SINGLE = 2 };

typedef struct {
    PyObject_HEAD
    PyObject *engine;            /* the Engine object: keeps e alive */
    ttc_engine *e;
    PyObject *tensor_type, *empty;
    /* attribute names, interned once */
    PyObject *s_dtype, *s_shape, *s_is_cpu, *s_requires_grad, *s_is_contiguous, *s_is_neg, *s_is_conj, *s_data_ptr;
    int32_t n_args, n_in, n_out, n_ret, ret_mode;
    int32_t arg_idx[FC_MAX], ret_idx[FC_MAX], in_rank[FC_MAX];
    PyObject *in_dtype[FC_MAX];
    PyObject *out_args[FC_MAX], *out_kw[FC_MAX]; /* output i: empty(*out_args[i], **out_kw[i]), out_args[i] = (sizes,) */
    int64_t in_shape[FC_MAX][TTC_MAX_RANK];
    size_t in_bytes[FC_MAX], out_bytes[FC_MAX];
} FastCallObject;

static void fc_dealloc(PyObject *self) {
    FastCallObject *f = (FastCallObject *)self;
    PyTypeObject *tp = Py_TYPE(self);
    Py_XDECREF(f->engine);
    Py_XDECREF(f->tensor_type);
    Py_XDECREF(f->empty);
    Py_XDECREF(f->s_dtype);
    Py_XDECREF(f->s_shape);
    Py_XDECREF(f->s_is_cpu);
    Py_XDECREF(f->s_requires_grad);
    Py_XDECREF(f->s_is_contiguous);
    Py_XDECREF(f->s_is_neg);
    Py_XDECREF(f->s_is_conj);
    Py_XDECREF(f->s_data_ptr);
    for (int32_t i = 0; i < FC_MAX; i++) {
        Py_XDECREF(f->in_dtype[i]);
        Py_XDECREF(f->out_args[i]);
        Py_XDECREF(f->out_kw[i]);
    }
    tp->tp_free(self);
    Py_DECREF(tp);
}

/* A dtype object's itemsize matches the binding's element size (-1: error set). */
static int itemsize_ok(PyObject *dtype, ttc_dtype dt, const char *what, const char *name) {
    PyObject *v = PyObject_GetAttrString(dtype, "itemsize");
    if (!v) return -1;
    long long n = PyLong_AsLongLong(v);
    Py_DECREF(v);
    if (n == -1 && PyErr_Occurred()) return -1;
    if (n != (long long)ttc_dtype_size(dt)) {
        PyErr_Format(PyExc_ValueError, "FastCall: %s %s is %s (%zu bytes), got a dtype of %lld bytes", what, name,
                     ttc_dtype_name(dt), ttc_dtype_size(dt), n);
        return -1;
    }
    return 0;
}

/* Reads a sequence of ints in [0, bound) into idx (at most FC_MAX); returns the count or -1. */
static Py_ssize_t read_index(PyObject *seq, int32_t bound, int32_t *idx, const char *what) {
    PyObject *fs = PySequence_Fast(seq, what);
    if (!fs) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fs);
    if (n > FC_MAX) { Py_DECREF(fs); PyErr_Format(PyExc_ValueError, "FastCall: %s: more than %d", what, FC_MAX); return -1; }
    for (Py_ssize_t i = 0; i < n; i++) {
        long v = PyLong_AsLong(PySequence_Fast_GET_ITEM(fs, i));
        if (v == -1 && PyErr_Occurred()) { Py_DECREF(fs); return -1; }
        if (v < 0 || v >= bound) {
            Py_DECREF(fs);
            PyErr_Format(PyExc_ValueError, "FastCall: %s: index %ld outside [0, %d)", what, v, (int)bound);
            return -1;
        }
        idx[i] = (int32_t)v;
    }
    Py_DECREF(fs);
    return n;
}

static int fc_read_inputs(FastCallObject *f, PyObject *in_specs) {
    PyObject *fs = PySequence_Fast(in_specs, "FastCall: in_specs must be a sequence of (dtype, shape)");
    if (!fs) return -1;
    int rc = -1;
    if (PySequence_Fast_GET_SIZE(fs) != f->n_in) {
        PyErr_Format(PyExc_ValueError, "FastCall: engine %s takes %d inputs, %zd specs given", ttc_engine_name(f->e),
                     (int)f->n_in, PySequence_Fast_GET_SIZE(fs));
        goto done;
    }
    for (int32_t i = 0; i < f->n_in; i++) {
        const ttc_binding *b = ttc_engine_input(f->e, i);
        PyObject *dtype, *shape;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(fs, i), "OO:in_spec", &dtype, &shape)) goto done;
        if (itemsize_ok(dtype, b->dtype, "input", b->name) < 0) goto done;
        f->in_dtype[i] = Py_NewRef(dtype);
        PyObject *sh = PySequence_Fast(shape, "FastCall: a shape must be a sequence of ints");
        if (!sh) goto done;
        Py_ssize_t r = PySequence_Fast_GET_SIZE(sh);
        if (r != b->rank) {
            Py_DECREF(sh);
            PyErr_Format(PyExc_ValueError, "FastCall: input %s has rank %d, shape of %zd dims given", b->name, (int)b->rank, r);
            goto done;
        }
        int64_t numel = 1;
        for (Py_ssize_t d = 0; d < r; d++) {
            long long v = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(sh, d));
            if (v == -1 && PyErr_Occurred()) { Py_DECREF(sh); goto done; }
            if (v < 0) { Py_DECREF(sh); PyErr_Format(PyExc_ValueError, "FastCall: input %s: negative dim", b->name); goto done; }
            f->in_shape[i][d] = v;
            numel *= v;
        }
        Py_DECREF(sh);
        if (numel == 0) {  /* empty tensors take the general path */
            PyErr_Format(PyExc_ValueError, "FastCall: input %s is empty", b->name);
            goto done;
        }
        f->in_rank[i] = (int32_t)r;
        f->in_bytes[i] = (size_t)numel * ttc_dtype_size(b->dtype);
    }
    rc = 0;
done:
    Py_DECREF(fs);
    return rc;
}

static int fc_read_outputs(FastCallObject *f, ttc_py_state *st, PyObject *out_kw) {
    int64_t oshapes[FC_MAX][TTC_MAX_RANK];
    ttc_status s = ttc_engine_output_shapes(f->e, (const int64_t(*)[TTC_MAX_RANK])f->in_shape, oshapes);
    if (s != TTC_OK) return ttc_py_raise_int(st, s);
    PyObject *fs = PySequence_Fast(out_kw, "FastCall: out_kwargs must be a sequence of dicts");
    if (!fs) return -1;
    int rc = -1;
    if (PySequence_Fast_GET_SIZE(fs) != f->n_out) {
        PyErr_Format(PyExc_ValueError, "FastCall: engine %s has %d outputs, %zd given", ttc_engine_name(f->e),
                     (int)f->n_out, PySequence_Fast_GET_SIZE(fs));
        goto done;
    }
    for (int32_t i = 0; i < f->n_out; i++) {
        const ttc_binding *b = ttc_engine_output(f->e, i);
        PyObject *kw = PySequence_Fast_GET_ITEM(fs, i), *dtype;
        if (!PyDict_CheckExact(kw) || !(dtype = PyDict_GetItemString(kw, "dtype"))) {
            PyErr_Format(PyExc_ValueError, "FastCall: output %s: expected a dict with a dtype", b->name);
            goto done;
        }
        if (itemsize_ok(dtype, b->dtype, "output", b->name) < 0) goto done;
        /* empty((d0, d1, ...), **kw): the sizes as one tuple, so that a 0-d output is empty(()) */
        PyObject *shape = PyTuple_New(b->rank);
        if (!shape) goto done;
        int64_t numel = 1;
        for (int32_t d = 0; d < b->rank; d++) {
            PyObject *v = PyLong_FromLongLong(oshapes[i][d]);
            if (!v) { Py_DECREF(shape); goto done; }
            PyTuple_SET_ITEM(shape, d, v);
            numel *= oshapes[i][d];
        }
        f->out_args[i] = PyTuple_Pack(1, shape);
        Py_DECREF(shape);
        if (!f->out_args[i]) goto done;
        f->out_kw[i] = PyDict_Copy(kw);  /* a copy: the caller's dict may change later */
        if (!f->out_kw[i]) goto done;
        if (numel == 0) {
            PyErr_Format(PyExc_ValueError, "FastCall: output %s is empty", b->name);
            goto done;
        }
        f->out_bytes[i] = (size_t)numel * ttc_dtype_size(b->dtype);
    }
    rc = 0;
done:
    Py_DECREF(fs);
    return rc;
}

static PyObject *fc_new(PyTypeObject *tp, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"engine", "tensor_type", "empty", "in_specs", "out_kwargs", "n_args", "arg_idx",
                             "ret_idx", "ret", NULL};
    PyObject *engine, *tensor_type, *empty, *in_specs, *out_kw, *arg_idx, *ret_idx;
    int n_args;
    const char *ret;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO!OOOiOOs:FastCall", kwlist, &engine, &PyType_Type, &tensor_type,
                                     &empty, &in_specs, &out_kw, &n_args, &arg_idx, &ret_idx, &ret))
        return NULL;
    ttc_py_state *st = ttc_py_state_of_type(tp);
    ttc_engine *e = ttc_py_engine_get(st, engine);
    if (!e) return NULL;
    if (!PyCallable_Check(empty)) return PyErr_Format(PyExc_TypeError, "FastCall: empty must be callable");
    int ret_mode = !strcmp(ret, "list") ? FC_LIST : !strcmp(ret, "tuple") ? FC_TUPLE : !strcmp(ret, "single") ? FC_SINGLE : -1;
    if (ret_mode < 0) return PyErr_Format(PyExc_ValueError, "FastCall: ret must be list, tuple or single, got %s", ret);
    if (n_args < 0 || n_args > FC_MAX || ttc_engine_n_inputs(e) > FC_MAX || ttc_engine_n_outputs(e) > FC_MAX)
        return PyErr_Format(PyExc_ValueError, "FastCall: at most %d arguments, inputs and outputs", FC_MAX);
    FastCallObject *f = (FastCallObject *)tp->tp_alloc(tp, 0);
    if (!f) return NULL;
    f->engine = Py_NewRef(engine);
    f->e = e;
    f->tensor_type = Py_NewRef(tensor_type);
    f->empty = Py_NewRef(empty);
    f->n_args = n_args;
    f->n_in = ttc_engine_n_inputs(e);
    f->n_out = ttc_engine_n_outputs(e);
    f->ret_mode = ret_mode;
    if (!(f->s_dtype = PyUnicode_InternFromString("dtype")) || !(f->s_shape = PyUnicode_InternFromString("shape")) ||
        !(f->s_is_cpu = PyUnicode_InternFromString("is_cpu")) ||
        !(f->s_requires_grad = PyUnicode_InternFromString("requires_grad")) ||
        !(f->s_is_contiguous = PyUnicode_InternFromString("is_contiguous")) ||
        !(f->s_is_neg = PyUnicode_InternFromString("is_neg")) || !(f->s_is_conj = PyUnicode_InternFromString("is_conj")) ||
        !(f->s_data_ptr = PyUnicode_InternFromString("data_ptr")))
        goto fail;
    Py_ssize_t n = read_index(arg_idx, n_args, f->arg_idx, "arg_idx");
    if (n < 0) goto fail;
    if (n != f->n_in) {
        PyErr_Format(PyExc_ValueError, "FastCall: arg_idx has %zd entries, the engine %d inputs", n, (int)f->n_in);
        goto fail;
    }
    n = read_index(ret_idx, f->n_out, f->ret_idx, "ret_idx");
    if (n < 0) goto fail;
    if (ret_mode == FC_SINGLE && n != 1) {
        PyErr_Format(PyExc_ValueError, "FastCall: ret single takes one output index, got %zd", n);
        goto fail;
    }
    f->n_ret = (int32_t)n;
    if (fc_read_inputs(f, in_specs) < 0 || fc_read_outputs(f, st, out_kw) < 0) goto fail;
    return (PyObject *)f;
fail:
    Py_DECREF(f);
    return NULL;
}

/* 1: the attribute is the expected object, 0: it is not, -1: error. */
static int attr_is(PyObject *t, PyObject *name, PyObject *want) {
    PyObject *v = PyObject_GetAttr(t, name);
    if (!v) return -1;
    int ok = v == want;
    Py_DECREF(v);
    return ok;
}

/* 1: t.name() returns the expected object, 0: it does not, -1: error. */
static int method_is(PyObject *t, PyObject *name, PyObject *want) {
    PyObject *v = PyObject_CallMethodNoArgs(t, name);
    if (!v) return -1;
    int ok = v == want;
    Py_DECREF(v);
    return ok;
}

/* Whether tensor t is input i as the engine may read it in place (1), is not (0), or an error
 * was raised (-1); *ptr: its data. */
static int input_check(FastCallObject *f, PyObject *t, int32_t i, const void **ptr) {
    if (Py_TYPE(t) != (PyTypeObject *)f->tensor_type) return 0;
    int r;
    if ((r = attr_is(t, f->s_dtype, f->in_dtype[i])) != 1) return r;
    if ((r = attr_is(t, f->s_is_cpu, Py_True)) != 1) return r;
    if ((r = attr_is(t, f->s_requires_grad, Py_False)) != 1) return r;
    PyObject *sh = PyObject_GetAttr(t, f->s_shape);
    if (!sh) return -1;
    r = PyTuple_Check(sh) && PyTuple_GET_SIZE(sh) == f->in_rank[i];
    for (int32_t d = 0; r == 1 && d < f->in_rank[i]; d++) {
        long long v = PyLong_AsLongLong(PyTuple_GET_ITEM(sh, d));
        if (v == -1 && PyErr_Occurred()) r = -1;
        else r = v == f->in_shape[i][d];
    }
    Py_DECREF(sh);
    if (r != 1) return r;
    if ((r = method_is(t, f->s_is_contiguous, Py_True)) != 1) return r;
    if ((r = method_is(t, f->s_is_neg, Py_False)) != 1) return r;
    if ((r = method_is(t, f->s_is_conj, Py_False)) != 1) return r;
    PyObject *p = PyObject_CallMethodNoArgs(t, f->s_data_ptr);
    if (!p) return -1;
    *ptr = PyLong_AsVoidPtr(p);
    Py_DECREF(p);
    return *ptr == NULL && PyErr_Occurred() ? -1 : 1;
}

/* The same, a getter that raises (a tensor without storage: functorch's wrappers, say) being a
 * "no": the general path then says what is wrong with it, if anything. */
static int input_ok(FastCallObject *f, PyObject *t, int32_t i, const void **ptr) {
    int r = input_check(f, t, i, ptr);
    if (r < 0 && !PyErr_ExceptionMatches(PyExc_MemoryError)) {
        PyErr_Clear();
        r = 0;
    }
    return r;
}

static PyObject *fc_run(PyObject *self, PyObject *args) {
    FastCallObject *f = (FastCallObject *)self;
    if (!PyTuple_CheckExact(args) && !PyList_CheckExact(args)) Py_RETURN_NOTIMPLEMENTED;
    Py_ssize_t n = PyTuple_CheckExact(args) ? PyTuple_GET_SIZE(args) : PyList_GET_SIZE(args);
    if (n != f->n_args) Py_RETURN_NOTIMPLEMENTED;
    /* own references: a list could change while torch's getters run */
    PyObject *items[FC_MAX], *outs[FC_MAX] = {0}, *ret = NULL;
    for (Py_ssize_t i = 0; i < n; i++)
        items[i] = Py_NewRef(PyTuple_CheckExact(args) ? PyTuple_GET_ITEM(args, i) : PyList_GET_ITEM(args, i));
    const void *in_ptr[FC_MAX];
    void *out_ptr[FC_MAX];
    int r = 1;
    for (int32_t i = 0; r == 1 && i < f->n_in; i++) r = input_ok(f, items[f->arg_idx[i]], i, &in_ptr[i]);
    for (int32_t o = 0; r == 1 && o < f->n_out; o++) {
        /* a mode or a patched torch.empty could hand back something else: only a CPU tensor's
         * memory is written */
        outs[o] = PyObject_Call(f->empty, f->out_args[o], f->out_kw[o]);
        if (!outs[o]) { r = -1; break; }
        if (Py_TYPE(outs[o]) != (PyTypeObject *)f->tensor_type) { r = 0; break; }
        if ((r = attr_is(outs[o], f->s_is_cpu, Py_True)) != 1) break;
        PyObject *p = PyObject_CallMethodNoArgs(outs[o], f->s_data_ptr);
        if (!p) { r = -1; break; }
        out_ptr[o] = PyLong_AsVoidPtr(p);
        Py_DECREF(p);
        if (out_ptr[o] == NULL && PyErr_Occurred()) r = -1;
    }
    if (r == 0) ret = Py_NewRef(Py_NotImplemented);
    if (r != 1) goto done;
    ttc_status s;
    Py_BEGIN_ALLOW_THREADS
    s = ttc_engine_execute(f->e, in_ptr, f->in_bytes, (const int64_t(*)[TTC_MAX_RANK])f->in_shape, out_ptr, f->out_bytes);
    Py_END_ALLOW_THREADS
    if (s != TTC_OK) { ttc_py_raise(ttc_py_state_of_type(Py_TYPE(self)), s); goto done; }
    if (f->ret_mode == FC_SINGLE) {
        ret = Py_NewRef(outs[f->ret_idx[0]]);
        goto done;
    }
    ret = f->ret_mode == FC_TUPLE ? PyTuple_New(f->n_ret) : PyList_New(f->n_ret);
    for (int32_t k = 0; ret && k < f->n_ret; k++) {
        PyObject *o = Py_NewRef(outs[f->ret_idx[k]]);
        if (f->ret_mode == FC_TUPLE) PyTuple_SET_ITEM(ret, k, o);
        else PyList_SET_ITEM(ret, k, o);
    }
done:
    for (Py_ssize_t i = 0; i < n; i++) Py_DECREF(items[i]);
    for (int32_t o = 0; o < f->n_out; o++) Py_XDECREF(outs[o]);
    return ret;
}

static PyObject *fc_get_engine(PyObject *self, void *c) { return Py_NewRef(((FastCallObject *)self)->engine); }

static PyObject *fc_get_shapes(PyObject *self, void *c) {
    FastCallObject *f = (FastCallObject *)self;
    PyObject *l = PyList_New(f->n_in);
    for (int32_t i = 0; l && i < f->n_in; i++) {
        PyObject *t = PyTuple_New(f->in_rank[i]);
        if (!t) { Py_CLEAR(l); break; }
        for (int32_t d = 0; d < f->in_rank[i]; d++) {
            PyObject *v = PyLong_FromLongLong(f->in_shape[i][d]);
            if (!v) { Py_DECREF(t); Py_CLEAR(l); return NULL; }
            PyTuple_SET_ITEM(t, d, v);
        }
        PyList_SET_ITEM(l, i, t);
    }
    return l;
}

static PyMethodDef fc_methods[] = {
    {"run", fc_run, METH_O,
     "run(args: tuple | list) -> outputs, or NotImplemented where an argument is not what this call was made for"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef fc_getset[] = {
    {"engine", fc_get_engine, NULL, "the Engine", NULL},
    {"input_shapes", fc_get_shapes, NULL, "the input shapes this call was made for (engine order)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot fc_slots[] = {
    {Py_tp_new, fc_new},
    {Py_tp_dealloc, fc_dealloc},
    {Py_tp_methods, fc_methods},
    {Py_tp_getset, fc_getset},
    {Py_tp_doc, "FastCall(engine, tensor_type, empty, in_specs, out_kwargs, n_args, arg_idx, ret_idx, ret): one "
                "engine call on CPU tensors of fixed shapes (torchtrt_c/runtime/_execute.py)."},
    {0, NULL},
};

static PyType_Spec fc_spec = {
    .name = "torchtrt_c._C.FastCall",
    .basicsize = sizeof(FastCallObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = fc_slots,
};

int ttc_py_init_fastcall(PyObject *m, ttc_py_state *st) {
    PyObject *tp = PyType_FromModuleAndSpec(m, &fc_spec, NULL);
    if (!tp) return -1;
    int rc = PyModule_AddObjectRef(m, "FastCall", tp);
    Py_DECREF(tp);
    (void)st;
    return rc;
}
