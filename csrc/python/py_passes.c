/*
 * Lowering from Python (contract: docs/binding_api.md, "Lowering").
 *
 *   _C.pass_names() -> ["remove_asserts", ...]               # the pipeline, in order
 *   g.lower(disabled=("cse",), enabled=("unpack_addmm",), debug=True,
 *           dump_after="fuse_linear", dump=None, passes=[("mine", fn, "cse")])
 *     -> [(pass_name, seconds, changed), ...]
 *   _C.lower(g, ...)                                          # the same, as a function
 *
 * `passes` adds Python passes to this run: fn(graph) -> bool (changed), run on the same
 * Graph object, after the named pass (None: at the end, "": first). `dump` (a callable
 * taking (pass_name, text)) receives the dump; without it the text goes to sys.stderr.
 * The GIL stays held: passes mutate the graph, which Python code may also reach.
 */
#include "binding.h"

#include "../common/status.h"
#include "../passes/pass_manager.h"
#include "../target/knobs.h"

typedef struct py_pass {
    PyObject *fn;
    PyObject *graph;
    int failed;   /* the callable raised: the exception stays set */
} py_pass;

static ttc_status run_py_pass(ttc_graph *g, void *ctx, bool *changed) {
    py_pass *p = ctx;
    PyObject *r = PyObject_CallOneArg(p->fn, p->graph);
    if (!r) { p->failed = 1; return ttc_fail(TTC_ERR_INVALID_ARG, "a Python pass raised"); }
    int t = PyObject_IsTrue(r);
    Py_DECREF(r);
    if (t < 0) { p->failed = 1; return ttc_fail(TTC_ERR_INVALID_ARG, "a Python pass returned a non-bool"); }
    *changed = t;
    return TTC_OK;
}

typedef struct dump_ctx { PyObject *cb; int failed; } dump_ctx;

static void dump_sink(void *ctx, const char *pass, const char *text) {
    dump_ctx *d = ctx;
    if (d->failed) return;
    if (d->cb && d->cb != Py_None) {
        PyObject *r = PyObject_CallFunction(d->cb, "ss", pass, text);
        if (!r) d->failed = 1;
        Py_XDECREF(r);
    } else {
        PySys_FormatStderr("== graph after %s\n%s", pass, text);
    }
}

static int names_apply(ttc_pass_manager *pm, PyObject *seq, bool on, ttc_py_state *st) {
    if (!seq || seq == Py_None) return 0;
    PyObject *it = PyObject_GetIter(seq), *item;
    if (!it) return -1;
    while ((item = PyIter_Next(it))) {
        const char *s = PyUnicode_Check(item) ? PyUnicode_AsUTF8(item) : NULL;
        if (!s) {
            if (!PyErr_Occurred()) PyErr_Format(PyExc_TypeError, "pass names must be str, got %s", Py_TYPE(item)->tp_name);
            Py_DECREF(item);
            Py_DECREF(it);
            return -1;
        }
        ttc_status rc = ttc_pass_manager_set_enabled(pm, s, on);
        Py_DECREF(item);
        if (rc) { Py_DECREF(it); PyErr_SetString(PyExc_ValueError, ttc_last_error()); return -1; }
    }
    Py_DECREF(it);
    (void)st;
    return PyErr_Occurred() ? -1 : 0;
}

static PyObject *do_lower(ttc_py_state *st, PyObject *graph, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"disabled", "enabled", "debug", "dump_after", "dump", "passes", NULL};
    PyObject *disabled = NULL, *enabled = NULL, *dump = NULL, *passes = NULL, *result = NULL;
    int debug = 0;
    const char *dump_after = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|OOpzOO:lower", kwlist, &disabled, &enabled, &debug, &dump_after,
                                     &dump, &passes))
        return NULL;
    if (dump && dump != Py_None && !PyCallable_Check(dump)) {
        PyErr_SetString(PyExc_TypeError, "dump must be a callable (pass_name, text) or None");
        return NULL;
    }
    ttc_graph *g = ttc_py_graph_get(graph);
    if (!g) return NULL;
    ttc_pass_manager *pm = ttc_pass_manager_new();
    if (!pm) return PyErr_NoMemory();
    py_pass *pps = NULL;
    Py_ssize_t n_pp = 0;
    dump_ctx dc = {dump, 0};
    ttc_pass_report *rep = NULL;
    int32_t nrep = 0;
    /* the pipeline's off-by-default passes that a setting turns on (names given win) */
    if (ttc_knob_flag(TTC_KNOB_FUSE_PARALLEL_LINEAR, false))
        (void)ttc_pass_manager_set_enabled(pm, "fuse_parallel_linear", true);   /* a name it has */
    if (names_apply(pm, disabled, false, st) || names_apply(pm, enabled, true, st)) goto done;
    if (passes && passes != Py_None) {
        PyObject *seq = PySequence_Fast(passes, "passes must be a sequence of (name, fn, after)");
        if (!seq) goto done;
        n_pp = PySequence_Fast_GET_SIZE(seq);
        pps = PyMem_Calloc((size_t)(n_pp ? n_pp : 1), sizeof *pps);
        for (Py_ssize_t i = 0; pps && i < n_pp; i++) {
            PyObject *t = PySequence_Fast_GET_ITEM(seq, i), *fn;
            const char *name, *after = NULL;
            if (!PyArg_ParseTuple(t, "sO|z;passes entries are (name, fn, after)", &name, &fn, &after)) { Py_DECREF(seq); goto done; }
            if (!PyCallable_Check(fn)) { PyErr_Format(PyExc_TypeError, "pass %s: fn is not callable", name); Py_DECREF(seq); goto done; }
            pps[i].fn = fn;
            pps[i].graph = graph;
            if (ttc_pass_manager_register(pm, name, run_py_pass, &pps[i], after)) {
                PyErr_SetString(PyExc_ValueError, ttc_last_error());
                Py_DECREF(seq);
                goto done;
            }
        }
        Py_DECREF(seq);
        if (!pps) { PyErr_NoMemory(); goto done; }
    }
    if (dump_after && ttc_pass_manager_dump_after(pm, dump_after, dump_sink, &dc)) {
        PyErr_SetString(PyExc_ValueError, ttc_last_error());
        goto done;
    }
    ttc_pass_manager_set_debug(pm, debug);
    ttc_status rc = ttc_pass_manager_run(pm, g, &rep, &nrep);
    for (Py_ssize_t i = 0; i < n_pp; i++)
        if (pps[i].failed) goto done; /* the Python exception propagates */
    if (dc.failed) goto done;
    if (rc) { ttc_py_raise(st, rc); goto done; }
    result = PyList_New(nrep);
    for (int32_t i = 0; result && i < nrep; i++) {
        PyObject *t = Py_BuildValue("(sdO)", rep[i].name, rep[i].seconds, rep[i].changed ? Py_True : Py_False);
        if (!t) { Py_CLEAR(result); break; }
        PyList_SET_ITEM(result, i, t);
    }
done:
    ttc_pass_report_free(rep, nrep);
    ttc_pass_manager_free(pm);
    PyMem_Free(pps);
    return result;
}

/* g.lower(...) */
PyObject *ttc_py_graph_lower(PyObject *self, PyObject *args, PyObject *kw) {
    return do_lower(ttc_py_state_of_type(Py_TYPE(self)), self, args, kw);
}

/* _C.lower(graph, ...) */
static PyObject *mod_lower(PyObject *m, PyObject *args, PyObject *kw) {
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    if (n < 1) { PyErr_SetString(PyExc_TypeError, "lower(graph, ...) needs a graph"); return NULL; }
    PyObject *rest = PyTuple_GetSlice(args, 1, n);
    if (!rest) return NULL;
    PyObject *r = do_lower(ttc_py_state_of_module(m), PyTuple_GET_ITEM(args, 0), rest, kw);
    Py_DECREF(rest);
    return r;
}

static PyObject *mod_pass_names(PyObject *m, PyObject *unused) {
    ttc_pass_manager *pm = ttc_pass_manager_new();
    if (!pm) return PyErr_NoMemory();
    int32_t n = ttc_pass_manager_count(pm);
    PyObject *l = PyList_New(n);
    for (int32_t i = 0; l && i < n; i++) {
        PyObject *s = PyUnicode_FromString(ttc_pass_manager_name(pm, i));
        if (!s) { Py_CLEAR(l); break; }
        PyList_SET_ITEM(l, i, s);
    }
    ttc_pass_manager_free(pm);
    return l;
}

static PyObject *mod_pass_defaults(PyObject *m, PyObject *unused) {
    ttc_pass_manager *pm = ttc_pass_manager_new();
    if (!pm) return PyErr_NoMemory();
    PyObject *d = PyDict_New();
    for (int32_t i = 0; d && i < ttc_pass_manager_count(pm); i++)
        if (PyDict_SetItemString(d, ttc_pass_manager_name(pm, i), ttc_pass_manager_is_enabled(pm, i) ? Py_True : Py_False))
            Py_CLEAR(d);
    ttc_pass_manager_free(pm);
    return d;
}

static PyMethodDef pass_functions[] = {
    {"pass_names", mod_pass_names, METH_NOARGS, "pass_names() -> the lowering pipeline's pass names, in order"},
    {"pass_defaults", mod_pass_defaults, METH_NOARGS, "pass_defaults() -> {pass name: on by default}"},
    {"lower", (PyCFunction)(void (*)(void))mod_lower, METH_VARARGS | METH_KEYWORDS,
     "lower(graph, disabled=(), enabled=(), debug=False, dump_after=None, dump=None, passes=None)\n"
     "-> [(pass_name, seconds, changed)]"},
    {NULL, NULL, 0, NULL},
};

int ttc_py_init_passes(PyObject *m, ttc_py_state *st) {
    (void)st;
    return PyModule_AddFunctions(m, pass_functions);
}
