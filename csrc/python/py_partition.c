/*
 * Partitioning from Python (contract: docs/binding_api.md, "Partitioning").
 *
 *   r = g.partition({"min_block_size": 1, "torch_executed_ops": ["aten::add"]})
 *   r["segments"][0] -> {"index": 0, "target": "opencl", "nodes": [...], "inputs": [...],
 *                        "outputs": [...], "constants": [...], "do_not_merge": False,
 *                        "weight_bytes": 0}
 *   r["nodes"]["add"] -> {"target": "opencl", "reason": None, "segment": 0}
 *   g.coverage(settings) -> {"supported": 5, "total": 8, "per_op": {op: (5, 8)}, "reasons": {...}}
 *   _C.partition(g, settings), _C.coverage(g, settings)       # the same, as functions
 *
 * Nodes are named by their name, else their first output's value name, else op#id.
 * Support comes from the converter registry unless settings["support"] is a callable
 * (op_name, node_name) -> True | False | "reason". The GIL stays held: the result is
 * written into the graph's nodes, which Python code may be reading.
 */
#include "binding.h"

#include "../common/status.h"
#include "../partition/partition.h"
#include "py_registry_support.h"

#include <stdlib.h>

typedef struct parsed {
    ttc_partition_settings s;
    PyObject *keep;           /* list holding every object whose UTF-8 we borrow */
    const char **teo, **fnames, **freasons, **pats;
    ttc_backend_spec *backends;
    const char ***backend_ops;
    Py_ssize_t n_backends;
    PyObject *support;        /* Python hook or NULL */
    int hook_failed;
} parsed;

static void parsed_free(parsed *p) {
    PyMem_Free(p->teo);
    PyMem_Free(p->fnames);
    PyMem_Free(p->freasons);
    PyMem_Free(p->pats);
    for (Py_ssize_t i = 0; p->backend_ops && i < p->n_backends; i++) PyMem_Free(p->backend_ops[i]);
    PyMem_Free(p->backend_ops);
    PyMem_Free(p->backends);
    Py_CLEAR(p->keep);
}

/* UTF-8 of o (str, or str(o) for OpOverloads and the like), kept alive in p->keep. */
static const char *utf8(parsed *p, PyObject *o) {
    PyObject *s = PyUnicode_Check(o) ? Py_NewRef(o) : PyObject_Str(o);
    if (!s) return NULL;
    if (PyList_Append(p->keep, s)) { Py_DECREF(s); return NULL; }
    Py_DECREF(s);
    return PyUnicode_AsUTF8(s);
}

/* A sequence (list/tuple/set/...) of strings into a PyMem array. */
static int str_array(parsed *p, PyObject *o, const char ***out, int32_t *n, const char *what) {
    if (o == Py_None) { *n = 0; return 0; }
    if (PyUnicode_Check(o)) { PyErr_Format(PyExc_TypeError, "%s must be a collection of op names, not a str", what); return -1; }
    PyObject *seq = PySequence_Fast(o, what);
    if (!seq) return -1;
    Py_ssize_t k = PySequence_Fast_GET_SIZE(seq);
    *out = PyMem_Calloc((size_t)(k ? k : 1), sizeof(char *));
    if (!*out) { Py_DECREF(seq); PyErr_NoMemory(); return -1; }
    for (Py_ssize_t i = 0; i < k; i++)
        if (!((*out)[i] = utf8(p, PySequence_Fast_GET_ITEM(seq, i)))) { Py_DECREF(seq); return -1; }
    *n = (int32_t)k;
    Py_DECREF(seq);
    return 0;
}

static bool py_support(const ttc_graph *g, const ttc_node *n, const ttc_partition_settings *s, char **why,
                       bool *dyn) {
    parsed *p = s->support_ctx;
    *dyn = true;
    if (p->hook_failed) return false;
    PyObject *r = PyObject_CallFunction(p->support, "ss", n->op_name, n->name ? n->name : "");
    if (!r) { p->hook_failed = 1; return false; }
    bool ok = false;
    if (PyUnicode_Check(r)) {
        const char *u = PyUnicode_AsUTF8(r);
        if (!u) p->hook_failed = 1;
        else *why = ttc_strdup(u);
    } else {
        int t = PyObject_IsTrue(r);
        if (t < 0) p->hook_failed = 1;
        ok = t > 0;
    }
    Py_DECREF(r);
    return ok;
}

static int parse_settings(parsed *p, PyObject *d) {
    memset(p, 0, sizeof *p);
    ttc_partition_settings_init(&p->s);
    p->s.support = ttc_partition_registry_support;
    if (!(p->keep = PyList_New(0))) return -1;
    if (d == Py_None) return 0;
    if (!PyDict_Check(d)) { PyErr_SetString(PyExc_TypeError, "settings must be a dict"); return -1; }
    PyObject *key, *val;
    Py_ssize_t pos = 0;
    while (PyDict_Next(d, &pos, &key, &val)) {
        const char *k = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : NULL;
        if (!k) { PyErr_SetString(PyExc_TypeError, "settings keys must be str"); return -1; }
        if (!strcmp(k, "min_block_size")) {
            long v = PyLong_AsLong(val);
            if (v == -1 && PyErr_Occurred()) return -1;
            if (v < 0 || v > INT32_MAX) { PyErr_SetString(PyExc_ValueError, "min_block_size must be >= 0"); return -1; }
            p->s.min_block_size = (int32_t)v;
        } else if (!strcmp(k, "torch_executed_ops")) {
            if (str_array(p, val, &p->teo, &p->s.n_torch_executed_ops, "torch_executed_ops")) return -1;
            p->s.torch_executed_ops = p->teo;
        } else if (!strcmp(k, "forced_nodes")) {
            if (val == Py_None) continue;
            if (!PyDict_Check(val)) { PyErr_SetString(PyExc_TypeError, "forced_nodes must be a dict {name: reason}"); return -1; }
            Py_ssize_t n = PyDict_GET_SIZE(val), i = 0, q = 0;
            p->fnames = PyMem_Calloc((size_t)(n ? n : 1), sizeof(char *));
            p->freasons = PyMem_Calloc((size_t)(n ? n : 1), sizeof(char *));
            if (!p->fnames || !p->freasons) { PyErr_NoMemory(); return -1; }
            PyObject *fk, *fv;
            while (PyDict_Next(val, &q, &fk, &fv)) {
                if (!(p->fnames[i] = utf8(p, fk))) return -1;
                if (fv != Py_None && !(p->freasons[i] = utf8(p, fv))) return -1;
                i++;
            }
            p->s.forced_nodes = p->fnames;
            p->s.forced_reasons = p->freasons;
            p->s.n_forced = (int32_t)n;
        } else if (!strcmp(k, "strategy")) {
            const char *v = PyUnicode_Check(val) ? PyUnicode_AsUTF8(val) : NULL;
            if (!v) { PyErr_SetString(PyExc_TypeError, "strategy must be a str"); return -1; }
            if (!strcmp(v, "fast")) p->s.strategy = TTC_PARTITION_FAST;
            else if (!strcmp(v, "global")) p->s.strategy = TTC_PARTITION_GLOBAL;
            else if (!strcmp(v, "hierarchical")) p->s.strategy = TTC_PARTITION_HIERARCHICAL;
            else if (!strcmp(v, "naive")) p->s.strategy = TTC_PARTITION_NAIVE;
            else {
                PyErr_Format(PyExc_ValueError, "unknown strategy '%s' (fast, global, hierarchical, naive)", v);
                return -1;
            }
        } else if (!strcmp(k, "require_full_compilation") || !strcmp(k, "assume_dynamic_shape_support") ||
                   !strcmp(k, "enable_resource_partitioning") || !strcmp(k, "fp16")) {
            int t = PyObject_IsTrue(val);
            if (t < 0) return -1;
            if (k[0] == 'r') p->s.require_full_compilation = t;
            else if (k[0] == 'a') p->s.assume_dynamic_shape_support = t;
            else if (k[0] == 'e') p->s.enable_resource_partitioning = t;
            else p->s.fp16 = t;
        } else if (!strcmp(k, "cpu_memory_budget")) {
            if (val == Py_None) continue;
            long long v = PyLong_AsLongLong(val);
            if (v == -1 && PyErr_Occurred()) return -1;
            if (v <= 0) { PyErr_SetString(PyExc_ValueError, "cpu_memory_budget must be positive or None"); return -1; }
            p->s.cpu_memory_budget = v;
        } else if (!strcmp(k, "atomic_patterns")) {
            if (str_array(p, val, &p->pats, &p->s.n_atomic_patterns, "atomic_patterns")) return -1;
            p->s.atomic_patterns = p->pats;
        } else if (!strcmp(k, "backends")) {
            PyObject *seq = PySequence_Fast(val, "backends must be a list of (name, ops or None)");
            if (!seq) return -1;
            Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
            p->backends = PyMem_Calloc((size_t)(n ? n : 1), sizeof(ttc_backend_spec));
            p->backend_ops = PyMem_Calloc((size_t)(n ? n : 1), sizeof(char **));
            if (!p->backends || !p->backend_ops) { Py_DECREF(seq); PyErr_NoMemory(); return -1; }
            p->n_backends = n;
            for (Py_ssize_t i = 0; i < n; i++) {
                PyObject *nm, *ops;
                if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "OO;backends entries are (name, ops or None)", &nm, &ops) ||
                    !(p->backends[i].name = utf8(p, nm))) {
                    Py_DECREF(seq);
                    return -1;
                }
                if (ops == Py_None) { p->backends[i].use_support = true; continue; }
                if (str_array(p, ops, &p->backend_ops[i], &p->backends[i].n_ops, "backend ops")) { Py_DECREF(seq); return -1; }
                p->backends[i].ops = p->backend_ops[i];
            }
            Py_DECREF(seq);
            p->s.backends = p->backends;
            p->s.n_backends = (int32_t)n;
        } else if (!strcmp(k, "support")) {
            if (val == Py_None) continue;
            if (!PyCallable_Check(val)) { PyErr_SetString(PyExc_TypeError, "support must be a callable (op, name)"); return -1; }
            p->support = val;
        } else {
            PyErr_Format(PyExc_ValueError, "unknown partition setting '%s'", k);
            return -1;
        }
    }
    if (p->support) {
        p->s.support = py_support;
        p->s.support_ctx = p;
    }
    return 0;
}

static PyObject *label(const ttc_node *n) {
    if (n->name) return PyUnicode_FromString(n->name);
    if (n->n_outputs) return PyUnicode_FromString(n->outputs[0]->name);
    return PyUnicode_FromFormat("%s#%d", n->op_name, (int)n->id);
}

static PyObject *str_or_none(const char *s) { return s ? PyUnicode_FromString(s) : Py_NewRef(Py_None); }

static PyObject *values_list(ttc_value *const *vs, int32_t n) {
    PyObject *l = PyList_New(n);
    for (int32_t i = 0; l && i < n; i++) {
        PyObject *s = PyUnicode_FromString(vs[i]->name);
        if (!s) { Py_CLEAR(l); break; }
        PyList_SET_ITEM(l, i, s);
    }
    return l;
}

static PyObject *nodes_list(ttc_node *const *ns, int32_t n, bool by_value) {
    PyObject *l = PyList_New(n);
    for (int32_t i = 0; l && i < n; i++) {
        PyObject *s = by_value ? PyUnicode_FromString(ns[i]->outputs[0]->name) : label(ns[i]);
        if (!s) { Py_CLEAR(l); break; }
        PyList_SET_ITEM(l, i, s);
    }
    return l;
}

static PyObject *result_dict(const ttc_graph *g, const ttc_partition_result *r) {
    PyObject *segs = PyList_New(r->n_segments), *nodes = PyDict_New(), *out = NULL;
    if (!segs || !nodes) goto fail;
    for (int32_t i = 0; i < r->n_segments; i++) {
        const ttc_segment *s = &r->segments[i];
        PyObject *d = Py_BuildValue("{s:i,s:s,s:N,s:N,s:N,s:N,s:O,s:L}", "index", (int)i, "target", r->targets[s->target],
                                    "nodes", nodes_list(s->nodes, s->n_nodes, false), "inputs",
                                    values_list(s->inputs, s->n_inputs), "outputs", values_list(s->outputs, s->n_outputs),
                                    "constants", nodes_list(s->constants, s->n_constants, true), "do_not_merge",
                                    s->do_not_merge ? Py_True : Py_False, "weight_bytes", (long long)s->weight_bytes);
        if (!d) goto fail;
        PyList_SET_ITEM(segs, i, d);
    }
    for (int32_t i = 0; i < g->n_nodes; i++) {
        const ttc_node *n = g->nodes[i];
        PyObject *tgt = n->target >= 0 && n->target < r->n_targets ? PyUnicode_FromString(r->targets[n->target])
                                                                   : Py_NewRef(Py_None);
        PyObject *d = tgt ? Py_BuildValue("{s:N,s:N,s:i}", "target", tgt, "reason", str_or_none(n->reason), "segment",
                                          (int)n->segment)
                          : NULL;
        PyObject *k = d ? label(n) : NULL;
        int bad = !k || PyDict_SetItem(nodes, k, d);
        Py_XDECREF(k);
        Py_XDECREF(d);
        if (bad) goto fail;
    }
    out = Py_BuildValue("{s:O,s:O}", "segments", segs, "nodes", nodes);
fail:
    Py_XDECREF(segs);
    Py_XDECREF(nodes);
    return out;
}

static PyObject *do_partition(ttc_py_state *st, PyObject *graph, PyObject *settings) {
    ttc_graph *g = ttc_py_graph_get(graph);
    if (!g) return NULL;
    parsed p;
    if (parse_settings(&p, settings)) { parsed_free(&p); return NULL; }
    ttc_partition_result *r = NULL;
    ttc_status rc = ttc_partition(g, &p.s, &r);
    PyObject *out = NULL;
    if (p.hook_failed) { if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "support hook failed"); }
    else if (rc) ttc_py_raise(st, rc);
    else out = result_dict(g, r);
    ttc_partition_result_free(r);
    parsed_free(&p);
    return out;
}

static PyObject *do_coverage(ttc_py_state *st, PyObject *graph, PyObject *settings) {
    ttc_graph *g = ttc_py_graph_get(graph);
    if (!g) return NULL;
    parsed p;
    if (parse_settings(&p, settings)) { parsed_free(&p); return NULL; }
    ttc_coverage *c = NULL;
    ttc_status rc = ttc_partition_coverage(g, &p.s, &c);
    PyObject *out = NULL, *per = NULL, *reasons = NULL;
    if (p.hook_failed) { if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "support hook failed"); goto done; }
    if (rc) { ttc_py_raise(st, rc); goto done; }
    if (!(per = PyDict_New()) || !(reasons = PyDict_New())) goto done;
    for (int32_t i = 0; i < c->n_ops; i++) {
        PyObject *t = Py_BuildValue("(ii)", (int)c->ops[i].supported, (int)c->ops[i].total);
        int bad = !t || PyDict_SetItemString(per, c->ops[i].op, t);
        Py_XDECREF(t);
        if (bad) goto done;
    }
    for (int32_t i = 0; i < c->n_fallback; i++) {
        PyObject *k = label(c->fallback[i]), *v = PyUnicode_FromString(c->reasons[i]);
        int bad = !k || !v || PyDict_SetItem(reasons, k, v);
        Py_XDECREF(k);
        Py_XDECREF(v);
        if (bad) goto done;
    }
    out = Py_BuildValue("{s:i,s:i,s:O,s:O}", "supported", (int)c->supported, "total", (int)c->total, "per_op", per,
                        "reasons", reasons);
done:
    Py_XDECREF(per);
    Py_XDECREF(reasons);
    ttc_coverage_free(c);
    parsed_free(&p);
    return out;
}

static int one_arg(PyObject *args, PyObject *kw, const char *fname, PyObject **settings) {
    static char *kwlist[] = {"settings", NULL};
    char fmt[64];
    PyOS_snprintf(fmt, sizeof fmt, "|O:%s", fname);
    *settings = Py_None;
    return PyArg_ParseTupleAndKeywords(args, kw, fmt, kwlist, settings) ? 0 : -1;
}

/* g.partition(settings) / g.coverage(settings) */
PyObject *ttc_py_graph_partition(PyObject *self, PyObject *args, PyObject *kw) {
    PyObject *s;
    if (one_arg(args, kw, "partition", &s)) return NULL;
    return do_partition(ttc_py_state_of_type(Py_TYPE(self)), self, s);
}

PyObject *ttc_py_graph_coverage(PyObject *self, PyObject *args, PyObject *kw) {
    PyObject *s;
    if (one_arg(args, kw, "coverage", &s)) return NULL;
    return do_coverage(ttc_py_state_of_type(Py_TYPE(self)), self, s);
}

static PyObject *mod_partition(PyObject *m, PyObject *args) {
    PyObject *g, *s = Py_None;
    if (!PyArg_ParseTuple(args, "O|O:partition", &g, &s)) return NULL;
    return do_partition(ttc_py_state_of_module(m), g, s);
}

static PyObject *mod_coverage(PyObject *m, PyObject *args) {
    PyObject *g, *s = Py_None;
    if (!PyArg_ParseTuple(args, "O|O:coverage", &g, &s)) return NULL;
    return do_coverage(ttc_py_state_of_module(m), g, s);
}

static PyMethodDef partition_functions[] = {
    {"partition", mod_partition, METH_VARARGS, "partition(graph, settings=None) -> dict(segments, nodes)"},
    {"coverage", mod_coverage, METH_VARARGS, "coverage(graph, settings=None) -> dict(supported, total, per_op, reasons)"},
    {NULL, NULL, 0, NULL},
};

int ttc_py_init_partition(PyObject *m, ttc_py_state *st) {
    (void)st;
    return PyModule_AddFunctions(m, partition_functions);
}
