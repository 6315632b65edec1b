/*
 * torchtrt_c._C.Graph: builds, inspects, prints and parses C graphs from Python
 * (contract: docs/binding_api.md, "Graph").
 *
 *   g = _C.Graph()
 *   g.add_symbol("s0", 1, 8, 32)
 *   x = g.add_input("x", ("tensor", "float32", ["s0", 3]))
 *   (y,) = g.add_node("aten.relu.default", [x], [("tensor", "float32", ["s0", 3])], name="relu")
 *   g.set_outputs([y]); g.verify(); print(g)
 *
 * Weights given to add_tensor_constant are held through the buffer protocol without a
 * copy; the C side releases them (re-acquiring the GIL) when the last reference goes.
 * Name lookups go through per-object caches validated on every hit, because passes
 * rename and erase values behind the binding's back.
 */
#include "py_graph_internal.h"

#include "../common/status.h"

#include <stdlib.h>

static ttc_py_state *state_of(PyObject *self) { return ttc_py_state_of_type(Py_TYPE(self)); }

static void cache_free(ttc_strmap *m) {
    for (size_t i = 0; i < m->cap; i++) free((char *)m->slots[i].key);
    ttc_strmap_free(m);
}

static void cache_put(ttc_strmap *m, const char *name, void *p) {
    if (!name) return;
    if (ttc_strmap_get(m, name)) { ttc_strmap_put(m, name, p); return; }
    char *k = ttc_strdup(name);
    if (!k) return; /* the cache is an optimisation: a failed insert only costs a scan later */
    if (ttc_strmap_put(m, k, p)) free(k);
}

static bool value_live(const ttc_value *v) { return !v->producer || !v->producer->dead; }

/* Adds values and nodes created since the last call (by the binding or by C passes). */
static void sync_caches(GraphObject *self) {
    ttc_graph *g = self->g;
    /* An entry that is still right is kept: a newer duplicate name must not hide it. */
    for (; self->synced_values < g->n_all_values; self->synced_values++) {
        ttc_value *v = g->all_values[self->synced_values], *o;
        if (!value_live(v) || !v->name) continue;
        o = ttc_strmap_get(&self->vcache, v->name);
        if (!o || !o->name || strcmp(o->name, v->name) || !value_live(o)) cache_put(&self->vcache, v->name, v);
    }
    for (; self->synced_nodes < g->n_all_nodes; self->synced_nodes++) {
        ttc_node *n = g->all_nodes[self->synced_nodes], *o;
        if (n->dead || !n->name) continue;
        o = ttc_strmap_get(&self->ncache, n->name);
        if (!o || !o->name || strcmp(o->name, n->name) || o->dead) cache_put(&self->ncache, n->name, n);
    }
}

/* Hits are checked against the graph; a miss falls back to a scan only when the name is
 * expected to exist (a C pass may have renamed a value), so that building stays linear. */
static ttc_value *lookup_value(GraphObject *self, const char *name, bool scan) {
    sync_caches(self);
    ttc_value *v = ttc_strmap_get(&self->vcache, name);
    if (v && v->name && !strcmp(v->name, name) && value_live(v)) return v;
    v = scan ? ttc_graph_find_value(self->g, name) : NULL;
    if (v) cache_put(&self->vcache, name, v);
    return v;
}

static ttc_value *find_value(GraphObject *self, const char *name) { return lookup_value(self, name, true); }

static ttc_node *lookup_node(GraphObject *self, const char *name, bool scan) {
    sync_caches(self);
    ttc_node *n = ttc_strmap_get(&self->ncache, name);
    if (n && n->name && !strcmp(n->name, name) && !n->dead) return n;
    n = scan ? ttc_graph_find_node(self->g, name) : NULL;
    if (n) cache_put(&self->ncache, name, n);
    return n;
}

static ttc_node *find_node(GraphObject *self, const char *name) { return lookup_node(self, name, true); }

/* A node as partition results label it: its name, or for a node passes made without one,
 * the name of its first output. */
static ttc_node *find_node_by_label(GraphObject *self, const char *label) {
    ttc_node *n = find_node(self, label);
    if (n) return n;
    ttc_value *v = find_value(self, label);
    return v && v->producer && !v->producer->name && !v->producer->dead && v->producer->outputs[0] == v ? v->producer
                                                                                                      : NULL;
}

/* ---- object lifetime ---- */
static void graph_dealloc(PyObject *op) {
    GraphObject *self = (GraphObject *)op;
    PyTypeObject *tp = Py_TYPE(op);
    ttc_graph_free(self->g);
    cache_free(&self->vcache);
    cache_free(&self->ncache);
    tp->tp_free(op);
    Py_DECREF(tp);
}

static PyObject *graph_new(PyTypeObject *tp, PyObject *args, PyObject *kw) {
    if ((args && PyTuple_GET_SIZE(args)) || (kw && PyDict_GET_SIZE(kw))) {
        PyErr_SetString(PyExc_TypeError, "Graph() takes no arguments");
        return NULL;
    }
    ttc_graph *g = ttc_graph_new();
    if (!g) return PyErr_NoMemory();
    GraphObject *self = (GraphObject *)tp->tp_alloc(tp, 0);
    if (!self) { ttc_graph_free(g); return NULL; }
    self->g = g;
    return (PyObject *)self;
}

PyObject *ttc_py_graph_wrap(ttc_py_state *st, ttc_graph *g) {
    PyTypeObject *tp = (PyTypeObject *)st->GraphType;
    GraphObject *self = tp ? (GraphObject *)tp->tp_alloc(tp, 0) : NULL;
    if (!self) {
        ttc_graph_free(g);
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "Graph type is not initialised");
        return NULL;
    }
    self->g = g;
    return (PyObject *)self;
}

ttc_graph *ttc_py_graph_get(PyObject *obj) {
    if (!obj || Py_TYPE(obj)->tp_dealloc != graph_dealloc) {
        PyErr_Format(PyExc_TypeError, "expected a torchtrt_c._C.Graph, got %s", obj ? Py_TYPE(obj)->tp_name : "NULL");
        return NULL;
    }
    return ((GraphObject *)obj)->g;
}

/* A name given by the caller for a new value must be non-empty and unused. */
static int check_new_value_name(GraphObject *self, const char *name, const char *what) {
    if (!*name) { PyErr_Format(PyExc_ValueError, "%s: value names must not be empty", what); return -1; }
    if (lookup_value(self, name, false)) {
        PyErr_Format(PyExc_ValueError, "%s: value name %%%s is already used", what, name);
        return -1;
    }
    return 0;
}

static int rename_value(GraphObject *self, ttc_value *v, const char *name) {
    char *s = ttc_strdup(name);
    if (!s) { PyErr_NoMemory(); return -1; }
    free(v->name);
    v->name = s;
    cache_put(&self->vcache, name, v);
    return 0;
}

/* Generated names ("12") may collide with names the caller chose earlier. */
static int make_unique(GraphObject *self, ttc_value *v) {
    for (int tries = 0; tries < 1000000; tries++) {
        ttc_value *o = lookup_value(self, v->name, false);
        if (!o || o == v) { cache_put(&self->vcache, v->name, v); return 0; }
        char buf[32];
        snprintf(buf, sizeof buf, "%d", self->g->next_name++);
        if (rename_value(self, v, buf)) return -1;
    }
    PyErr_SetString(PyExc_RuntimeError, "could not find a fresh value name");
    return -1;
}

static PyObject *value_name_result(GraphObject *self, ttc_value *v, PyObject *name, const char *what) {
    if (!v) return ttc_py_raise(state_of((PyObject *)self), ttc_last_error()[0] ? TTC_ERR_INVALID_ARG : TTC_ERR_NOMEM);
    if (name && name != Py_None) {
        const char *s = ttc_pyg_utf8_of(name, what);
        if (!s || rename_value(self, v, s)) return NULL;
    } else if (make_unique(self, v)) {
        return NULL;
    }
    return ttc_pyg_str_or_none(v->name);
}

/* ---- builder methods ---- */
static PyObject *g_add_symbol(PyObject *op, PyObject *args) {
    GraphObject *self = (GraphObject *)op;
    const char *name;
    long long mn, opt, mx;
    if (!PyArg_ParseTuple(args, "sLLL:add_symbol", &name, &mn, &opt, &mx)) return NULL;
    if (!ttc_pyg_is_ident_start((unsigned char)*name)) goto bad;
    for (const char *p = name; *p; p++)
        if (!ttc_pyg_is_ident_char((unsigned char)*p)) goto bad;
    if (ttc_graph_add_symbol(self->g, name, mn, opt, mx) < 0) {
        PyErr_SetString(PyExc_ValueError, ttc_last_error());
        return NULL;
    }
    Py_RETURN_NONE;
bad:
    PyErr_Format(PyExc_ValueError, "add_symbol: symbol name \"%s\" is not an identifier", name);
    return NULL;
}

static PyObject *g_add_input(PyObject *op, PyObject *args) {
    GraphObject *self = (GraphObject *)op;
    const char *name;
    PyObject *type;
    ttc_type t;
    if (!PyArg_ParseTuple(args, "sO:add_input", &name, &type)) return NULL;
    if (check_new_value_name(self, name, "add_input") || ttc_pyg_type_from_py(self->g, type, &t, "add_input")) return NULL;
    ttc_value *v = ttc_graph_add_input(self->g, name, &t);
    if (!v) return ttc_py_raise(state_of(op), TTC_ERR_INVALID_ARG);
    cache_put(&self->vcache, v->name, v);
    return ttc_pyg_str_or_none(v->name);
}

static ttc_value *const_bools(ttc_graph *g, const int64_t *v, int32_t n) {
    ttc_type t = ttc_type_list(TTC_TYPE_BOOL);
    ttc_node *nd = ttc_graph_append_node(g, "prim.Constant", NULL, 0, &t, 1, NULL);
    if (!nd) return NULL;
    int64_t dummy = 0;
    ttc_attr a = {.name = "value", .kind = TTC_ATTR_BOOLS, .ints = n ? (int64_t *)v : &dummy, .n = n};
    if (ttc_node_set_attr(nd, &a)) { ttc_graph_erase_node(g, nd); return NULL; }
    return nd->outputs[0];
}

static ttc_value *const_from_list(GraphObject *self, PyObject *o) {
    PyObject *seq = PySequence_Fast(o, "add_constant: expected a list");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    ttc_value *v = NULL;
    int64_t *ints = NULL;
    double *flts = NULL;
    if (n > INT32_MAX / 2) { PyErr_SetString(PyExc_ValueError, "add_constant: list too long"); goto done; }
    ints = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    flts = malloc(sizeof(double) * (size_t)(n ? n : 1));
    if (!ints || !flts) { PyErr_NoMemory(); goto done; }
    int nb = 0, ni = 0, nf = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *e = PySequence_Fast_GET_ITEM(seq, i);
        if (PyBool_Check(e)) { ints[i] = e == Py_True; flts[i] = (double)ints[i]; nb++; }
        else if (PyLong_Check(e)) {
            ints[i] = PyLong_AsLongLong(e);
            if (ints[i] == -1 && PyErr_Occurred()) goto done;
            flts[i] = (double)ints[i];
            ni++;
        } else if (PyFloat_Check(e)) { flts[i] = PyFloat_AS_DOUBLE(e); nf++; }
        else {
            PyErr_Format(PyExc_TypeError, "add_constant: list elements must be int, float or bool, got %s",
                         Py_TYPE(e)->tp_name);
            goto done;
        }
    }
    if (nb && (ni || nf)) { PyErr_SetString(PyExc_TypeError, "add_constant: a list mixes bools and numbers"); goto done; }
    if (nb) v = const_bools(self->g, ints, (int32_t)n);
    else if (nf) v = ttc_graph_const_floats(self->g, NULL, flts, (int32_t)n);
    else v = ttc_graph_const_ints(self->g, NULL, ints, (int32_t)n);
    if (!v) ttc_py_raise(state_of((PyObject *)self), TTC_ERR_NOMEM);
done:
    free(ints);
    free(flts);
    Py_DECREF(seq);
    return v;
}

static PyObject *g_add_constant(PyObject *op, PyObject *args, PyObject *kw) {
    GraphObject *self = (GraphObject *)op;
    static char *kwlist[] = {"value", "name", NULL};
    PyObject *o, *name = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O:add_constant", kwlist, &o, &name)) return NULL;
    if (name != Py_None) {
        const char *s = ttc_pyg_utf8_of(name, "add_constant: name");
        if (!s || check_new_value_name(self, s, "add_constant")) return NULL;
    }
    ttc_value *v;
    if (o == Py_None) v = ttc_graph_const_none(self->g, NULL);
    else if (PyBool_Check(o)) v = ttc_graph_const_bool(self->g, NULL, o == Py_True);
    else if (PyLong_Check(o)) {
        long long i = PyLong_AsLongLong(o);
        if (i == -1 && PyErr_Occurred()) return NULL;
        v = ttc_graph_const_int(self->g, NULL, i);
    } else if (PyFloat_Check(o)) v = ttc_graph_const_float(self->g, NULL, PyFloat_AS_DOUBLE(o));
    else if (PyUnicode_Check(o)) {
        const char *s = ttc_pyg_utf8_of(o, "add_constant: value");
        if (!s) return NULL;
        v = ttc_graph_const_str(self->g, NULL, s);
    } else if (PyList_Check(o) || PyTuple_Check(o)) {
        if (!(v = const_from_list(self, o))) return NULL;
    } else {
        PyErr_Format(PyExc_TypeError, "add_constant: unsupported value of type %s (None, bool, int, float, str, "
                     "list of int/float/bool)", Py_TYPE(o)->tp_name);
        return NULL;
    }
    return value_name_result(self, v, name, "add_constant: name");
}

/* Weights: the Py_buffer lives as long as the C tensor data. */
static void release_buffer(void *owner) {
    Py_buffer *view = owner;
    if (!Py_IsInitialized()) return; /* interpreter gone: nothing left to release into */
    PyGILState_STATE gs = PyGILState_Ensure();
    PyBuffer_Release(view);
    PyGILState_Release(gs);
    free(view);
}

static ttc_tensor_data *data_from_buffer(PyObject *obj, const char *what) {
    Py_buffer *view = calloc(1, sizeof *view);
    if (!view) { PyErr_NoMemory(); return NULL; }
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT)) {
        free(view);
        PyErr_Format(PyExc_TypeError, "%s: expected a C-contiguous buffer (numpy array, memoryview, bytes), got %s",
                     what, Py_TYPE(obj)->tp_name);
        return NULL;
    }
    ttc_tensor_data *d = ttc_tensor_data_wrap(view->buf, (size_t)view->len, release_buffer, view);
    if (!d) {
        PyBuffer_Release(view);
        free(view);
        PyErr_NoMemory();
    }
    return d;
}

static PyObject *g_add_tensor_constant(PyObject *op, PyObject *args) {
    GraphObject *self = (GraphObject *)op;
    const char *name;
    PyObject *dtype, *shape, *buf;
    if (!PyArg_ParseTuple(args, "sOOO:add_tensor_constant", &name, &dtype, &shape, &buf)) return NULL;
    if (check_new_value_name(self, name, "add_tensor_constant")) return NULL;
    ttc_type t = ttc_type_scalar(TTC_TYPE_TENSOR);
    if (ttc_pyg_dtype_from_py(dtype, &t.dtype, "add_tensor_constant: dtype") ||
        ttc_pyg_shape_from_py(self->g, shape, &t, "add_tensor_constant: shape"))
        return NULL;
    int64_t numel = ttc_type_numel_static(&t);
    if (numel < 0) {
        PyErr_Format(PyExc_ValueError, "add_tensor_constant(%s): the shape must be static", name);
        return NULL;
    }
    ttc_tensor_data *d = data_from_buffer(buf, "add_tensor_constant");
    if (!d) return NULL;
    size_t want = (size_t)numel * ttc_dtype_size(t.dtype);
    if (d->nbytes != want) {
        PyErr_Format(PyExc_ValueError, "add_tensor_constant(%s): buffer has %zu bytes, %s%s needs %zu", name,
                     d->nbytes, ttc_dtype_name(t.dtype), "", want);
        ttc_tensor_data_unref(d);
        return NULL;
    }
    ttc_value *v = ttc_graph_const_tensor(self->g, NULL, name, &t, d);
    ttc_tensor_data_unref(d);
    if (!v) return ttc_py_raise(state_of(op), TTC_ERR_INVALID_ARG);
    PyObject *nm = PyUnicode_FromString(name);
    if (!nm) return NULL;
    PyObject *r = value_name_result(self, v, nm, "add_tensor_constant");
    Py_DECREF(nm);
    return r;
}

static PyObject *g_add_node(PyObject *op, PyObject *args, PyObject *kw) {
    GraphObject *self = (GraphObject *)op;
    static char *kwlist[] = {"op", "inputs", "output_types", "name", "output_names", "module_stack", NULL};
    const char *opname;
    PyObject *inputs, *otypes, *name = Py_None, *onames = Py_None, *mstack = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "sOO|OOO:add_node", kwlist, &opname, &inputs, &otypes, &name, &onames,
                                     &mstack))
        return NULL;
    PyObject *ins = NULL, *tys = NULL, *nms = NULL, *result = NULL;
    ttc_value **vals = NULL;
    ttc_type *types = NULL;
    const char *nodename = NULL, *ms = NULL;
    if (!*opname) { PyErr_SetString(PyExc_ValueError, "add_node: empty op name"); return NULL; }
    if (PyUnicode_Check(inputs) || PyUnicode_Check(otypes) || PyUnicode_Check(onames)) {
        PyErr_SetString(PyExc_TypeError, "add_node: inputs, output_types and output_names must be lists, not str");
        return NULL;
    }
    if (!(ins = PySequence_Fast(inputs, "add_node: inputs must be a list of value names")) ||
        !(tys = PySequence_Fast(otypes, "add_node: output_types must be a list of types")))
        goto done;
    Py_ssize_t n_in = PySequence_Fast_GET_SIZE(ins), n_out = PySequence_Fast_GET_SIZE(tys);
    if (n_in > 100000 || n_out > 100000) { PyErr_Format(PyExc_ValueError, "add_node(%s): too many inputs/outputs", opname); goto done; }
    /* a known op name with another arity imports as opaque (the core records why) */
    if (name != Py_None) {
        if (!(nodename = ttc_pyg_utf8_of(name, "add_node: name"))) goto done;
        if (lookup_node(self, nodename, false)) { PyErr_Format(PyExc_ValueError, "add_node: node name %s is already used", nodename); goto done; }
    }
    if (mstack != Py_None && !(ms = ttc_pyg_utf8_of(mstack, "add_node: module_stack"))) goto done;
    if (onames != Py_None) {
        if (!(nms = PySequence_Fast(onames, "add_node: output_names must be a list of str"))) goto done;
        if (PySequence_Fast_GET_SIZE(nms) != n_out) {
            PyErr_Format(PyExc_ValueError, "add_node(%s): %zd output_names for %zd outputs", opname,
                         PySequence_Fast_GET_SIZE(nms), n_out);
            goto done;
        }
        for (Py_ssize_t i = 0; i < n_out; i++) {
            const char *s = ttc_pyg_utf8_of(PySequence_Fast_GET_ITEM(nms, i), "add_node: output name");
            if (!s || check_new_value_name(self, s, "add_node")) goto done;
            for (Py_ssize_t j = 0; j < i; j++)
                if (!strcmp(s, PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(nms, j)))) {
                    PyErr_Format(PyExc_ValueError, "add_node(%s): output name %s given twice", opname, s);
                    goto done;
                }
        }
    }
    vals = calloc((size_t)n_in + 1, sizeof *vals);
    types = calloc((size_t)n_out + 1, sizeof *types);
    if (!vals || !types) { PyErr_NoMemory(); goto done; }
    for (Py_ssize_t i = 0; i < n_in; i++) {
        const char *s = ttc_pyg_utf8_of(PySequence_Fast_GET_ITEM(ins, i), "add_node: input name");
        if (!s) goto done;
        if (!(vals[i] = find_value(self, s))) {
            PyErr_Format(PyExc_ValueError, "add_node(%s): unknown value %%%s (input %zd)", opname, s, i);
            goto done;
        }
    }
    for (Py_ssize_t i = 0; i < n_out; i++) {
        char what[160];
        snprintf(what, sizeof what, "add_node(%s): output type %zd", opname, i);
        if (ttc_pyg_type_from_py(self->g, PySequence_Fast_GET_ITEM(tys, i), &types[i], what)) goto done;
    }
    ttc_node *n = ttc_graph_append_node(self->g, opname, vals, (int32_t)n_in, types, (int32_t)n_out, nodename);
    if (!n) { ttc_py_raise(state_of(op), TTC_ERR_INVALID_ARG); goto done; }
    if (ms && !(n->module_stack = ttc_strdup(ms))) { PyErr_NoMemory(); goto done; }
    if (nodename) cache_put(&self->ncache, nodename, n);
    for (Py_ssize_t i = 0; i < n_out; i++) {
        int rc = nms ? rename_value(self, n->outputs[i], PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(nms, i)))
                     : make_unique(self, n->outputs[i]);
        if (rc) goto done;
    }
    result = ttc_pyg_names_list(n->outputs, n->n_outputs);
done:
    Py_XDECREF(ins);
    Py_XDECREF(tys);
    Py_XDECREF(nms);
    free(vals);
    free(types);
    return result;
}

static ttc_value **values_from_names(GraphObject *self, PyObject *names, Py_ssize_t *n, const char *what) {
    if (PyUnicode_Check(names)) {
        PyErr_Format(PyExc_TypeError, "%s: expected a list of value names, not a str", what);
        return NULL;
    }
    PyObject *seq = PySequence_Fast(names, "expected a list of value names");
    if (!seq) return NULL;
    *n = PySequence_Fast_GET_SIZE(seq);
    ttc_value **vals = calloc((size_t)*n + 1, sizeof *vals);
    if (!vals) { Py_DECREF(seq); PyErr_NoMemory(); return NULL; }
    for (Py_ssize_t i = 0; i < *n; i++) {
        const char *s = ttc_pyg_utf8_of(PySequence_Fast_GET_ITEM(seq, i), what);
        if (!s) goto fail;
        if (!(vals[i] = find_value(self, s))) {
            PyErr_Format(PyExc_ValueError, "%s: unknown value %%%s", what, s);
            goto fail;
        }
    }
    Py_DECREF(seq);
    return vals;
fail:
    Py_DECREF(seq);
    free(vals);
    return NULL;
}

static PyObject *g_set_outputs(PyObject *op, PyObject *names) {
    GraphObject *self = (GraphObject *)op;
    Py_ssize_t n;
    ttc_value **vals = values_from_names(self, names, &n, "set_outputs");
    if (!vals) return NULL;
    ttc_status s = ttc_graph_set_outputs(self->g, vals, (int32_t)n);
    free(vals);
    if (s) return ttc_py_raise(state_of(op), s);
    Py_RETURN_NONE;
}

/* ---- inspection ---- */
static PyObject *g_get_inputs(PyObject *op, void *c) {
    ttc_graph *g = ((GraphObject *)op)->g;
    return ttc_pyg_names_list(g->inputs, g->n_inputs);
}

static PyObject *g_get_outputs(PyObject *op, void *c) {
    ttc_graph *g = ((GraphObject *)op)->g;
    return ttc_pyg_names_list(g->outputs, g->n_outputs);
}

static PyObject *g_get_symbols(PyObject *op, void *c) {
    ttc_graph *g = ((GraphObject *)op)->g;
    PyObject *l = PyList_New(g->n_syms);
    for (int i = 0; l && i < g->n_syms; i++) {
        const ttc_symbol *s = &g->syms[i];
        PyObject *t = Py_BuildValue("(sLLL)", s->name, (long long)s->min, (long long)s->opt, (long long)s->max);
        if (!t) { Py_CLEAR(l); break; }
        PyList_SET_ITEM(l, i, t);
    }
    return l;
}

static PyObject *node_dict(const ttc_node *n) {
    PyObject *d = PyDict_New(), *ins = NULL, *outs = NULL;
    if (!d) return NULL;
    if (!(ins = ttc_pyg_names_list(n->inputs, n->n_inputs)) || !(outs = ttc_pyg_names_list(n->outputs, n->n_outputs))) goto fail;
    PyObject *name = ttc_pyg_str_or_none(n->name), *opn = ttc_pyg_str_or_none(n->op_name), *reason = ttc_pyg_str_or_none(n->reason),
             *ms = ttc_pyg_str_or_none(n->module_stack), *tg = PyLong_FromLong(n->target), *sg = PyLong_FromLong(n->segment);
    int bad = !name || !opn || !reason || !ms || !tg || !sg ||
              PyDict_SetItemString(d, "name", name) || PyDict_SetItemString(d, "op", opn) ||
              PyDict_SetItemString(d, "inputs", ins) || PyDict_SetItemString(d, "outputs", outs) ||
              PyDict_SetItemString(d, "target", tg) || PyDict_SetItemString(d, "segment", sg) ||
              PyDict_SetItemString(d, "reason", reason) || PyDict_SetItemString(d, "module_stack", ms);
    Py_XDECREF(name); Py_XDECREF(opn); Py_XDECREF(reason); Py_XDECREF(ms); Py_XDECREF(tg); Py_XDECREF(sg);
    if (bad) goto fail;
    Py_DECREF(ins);
    Py_DECREF(outs);
    return d;
fail:
    Py_XDECREF(ins);
    Py_XDECREF(outs);
    Py_DECREF(d);
    return NULL;
}

static PyObject *g_nodes(PyObject *op, PyObject *unused) {
    ttc_graph *g = ((GraphObject *)op)->g;
    PyObject *l = PyList_New(g->n_nodes);
    for (int i = 0; l && i < g->n_nodes; i++) {
        PyObject *d = node_dict(g->nodes[i]);
        if (!d) { Py_CLEAR(l); break; }
        PyList_SET_ITEM(l, i, d);
    }
    return l;
}

static ttc_value *value_arg(GraphObject *self, PyObject *arg, const char *what) {
    const char *s = ttc_pyg_utf8_of(arg, what);
    if (!s) return NULL;
    ttc_value *v = find_value(self, s);
    if (!v) PyErr_Format(PyExc_ValueError, "%s: unknown value %%%s", what, s);
    return v;
}

static PyObject *g_value(PyObject *op, PyObject *arg) {
    GraphObject *self = (GraphObject *)op;
    ttc_value *v = value_arg(self, arg, "value");
    if (!v) return NULL;
    const ttc_type *t = &v->type;
    const ttc_attr *c = ttc_value_const(v);
    PyObject *shape = t->kind == TTC_TYPE_TENSOR ? ttc_pyg_shape_to_py(self->g, t) : Py_NewRef(Py_None);
    PyObject *cv = c ? ttc_pyg_attr_to_py(c) : Py_NewRef(Py_None);
    if (!shape || !cv) { Py_XDECREF(shape); Py_XDECREF(cv); return NULL; }
    PyObject *r = Py_BuildValue("{s:s,s:z,s:N,s:z,s:N,s:O,s:z}", "kind", ttc_pyg_kind_name(t->kind), "dtype",
                                t->kind == TTC_TYPE_TENSOR ? ttc_dtype_name(t->dtype) : NULL, "shape", shape,
                                "producer", v->producer ? v->producer->name : NULL, "const", cv, "is_const",
                                c ? Py_True : Py_False, "elem", t->kind == TTC_TYPE_LIST ? ttc_pyg_kind_name(t->elem) : NULL);
    return r;
}

static PyObject *g_tensor_constant(PyObject *op, PyObject *arg) {
    GraphObject *self = (GraphObject *)op;
    ttc_value *v = value_arg(self, arg, "tensor_constant");
    if (!v) return NULL;
    const ttc_attr *c = ttc_value_const(v);
    if (!c || c->kind != TTC_ATTR_TENSOR || !c->tensor || v->type.kind != TTC_TYPE_TENSOR) {
        PyErr_Format(PyExc_ValueError, "tensor_constant: %%%s is not a tensor constant", v->name);
        return NULL;
    }
    PyObject *shape = PyTuple_New(v->type.rank < 0 ? 0 : v->type.rank);
    for (int i = 0; shape && i < v->type.rank; i++) {
        PyObject *d = ttc_pyg_dim_to_py(self->g, v->type.dims[i]);
        if (!d) { Py_CLEAR(shape); break; }
        PyTuple_SET_ITEM(shape, i, d);
    }
    if (!shape) return NULL;
    return Py_BuildValue("(sNy#)", ttc_dtype_name(v->type.dtype), shape, (const char *)c->tensor->data,
                         (Py_ssize_t)c->tensor->nbytes);
}

static PyObject *g_str(PyObject *op) {
    char *s = ttc_graph_print(((GraphObject *)op)->g);
    if (!s) return ttc_py_raise(state_of(op), TTC_ERR_NOMEM);
    PyObject *r = PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "surrogateescape");
    free(s);
    return r;
}

static PyObject *g_verify(PyObject *op, PyObject *unused) {
    ttc_status s = ttc_graph_verify(((GraphObject *)op)->g);
    if (s) return ttc_py_raise(state_of(op), s);
    Py_RETURN_NONE;
}

static PyObject *g_clone(PyObject *op, PyObject *unused) {
    ttc_graph *c;
    ttc_status s = ttc_graph_clone(((GraphObject *)op)->g, &c);
    if (s) return ttc_py_raise(state_of(op), s);
    return ttc_py_graph_wrap(state_of(op), c);
}

static PyObject *g_extract(PyObject *op, PyObject *names) {
    GraphObject *self = (GraphObject *)op;
    ttc_py_state *st = state_of(op);
    if (PyUnicode_Check(names)) {
        PyErr_SetString(PyExc_TypeError, "extract: expected a list of node names, not a str");
        return NULL;
    }
    PyObject *seq = PySequence_Fast(names, "extract: expected a list of node names");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    ttc_node **nodes = calloc((size_t)n + 1, sizeof *nodes);
    ttc_value **in_map = NULL, **out_map = NULL;
    int32_t n_in = 0, n_out = 0;
    ttc_graph *sub = NULL;
    PyObject *r = NULL;
    if (!nodes) { PyErr_NoMemory(); goto done; }
    for (Py_ssize_t i = 0; i < n; i++) {
        const char *s = ttc_pyg_utf8_of(PySequence_Fast_GET_ITEM(seq, i), "extract: node name");
        if (!s) goto done;
        if (!(nodes[i] = find_node_by_label(self, s))) { PyErr_Format(PyExc_ValueError, "extract: unknown node %s", s); goto done; }
    }
    ttc_status s = ttc_graph_extract(self->g, nodes, (int32_t)n, &sub, &in_map, &n_in, &out_map, &n_out);
    if (s) { ttc_py_raise(st, s); goto done; }
    PyObject *gi = ttc_py_graph_wrap(st, sub);
    sub = NULL;
    PyObject *li = gi ? ttc_pyg_names_list(in_map, n_in) : NULL, *lo = li ? ttc_pyg_names_list(out_map, n_out) : NULL;
    if (gi && li && lo) r = PyTuple_Pack(3, gi, li, lo);
    Py_XDECREF(gi);
    Py_XDECREF(li);
    Py_XDECREF(lo);
done:
    Py_DECREF(seq);
    free(nodes);
    free(in_map);
    free(out_map);
    return r;
}

/* Graph.parse(text, tensors=None): tensors maps names to buffers for weights printed by name. */
typedef struct { PyObject *tensors; } lookup_ctx;

static ttc_tensor_data *py_lookup(void *ctx, const char *name, const ttc_type *type) {
    lookup_ctx *lc = ctx;
    if (!lc->tensors) return NULL;
    PyGILState_STATE gs = PyGILState_Ensure();
    ttc_tensor_data *d = NULL;
    PyObject *key = PyUnicode_DecodeUTF8(name, (Py_ssize_t)strlen(name), "surrogateescape");
    PyObject *obj = key ? PyObject_GetItem(lc->tensors, key) : NULL;
    if (obj) d = data_from_buffer(obj, "Graph.parse tensors");
    Py_XDECREF(obj);
    Py_XDECREF(key);
    PyErr_Clear(); /* the parser reports the name that could not be resolved */
    PyGILState_Release(gs);
    return d;
}

static PyObject *g_parse(PyObject *cls, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"text", "tensors", NULL};
    const char *text;
    Py_ssize_t len;
    PyObject *tensors = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "s#|O:parse", kwlist, &text, &len, &tensors)) return NULL;
    ttc_py_state *st = ttc_py_state_of_type((PyTypeObject *)cls);
    if ((Py_ssize_t)strlen(text) != len) {
        PyErr_SetString(st->ParseError, "IR text contains a NUL character");
        return NULL;
    }
    if (tensors != Py_None && !PyMapping_Check(tensors)) {
        PyErr_Format(PyExc_TypeError, "parse: tensors must be a mapping name -> buffer, got %s", Py_TYPE(tensors)->tp_name);
        return NULL;
    }
    lookup_ctx lc = {tensors == Py_None ? NULL : tensors};
    ttc_graph *g = NULL;
    ttc_status s;
    Py_BEGIN_ALLOW_THREADS
    s = ttc_graph_parse_ex(text, py_lookup, &lc, &g);
    Py_END_ALLOW_THREADS
    if (s) return ttc_py_raise(st, s);
    return ttc_py_graph_wrap(st, g);
}

static PyMethodDef graph_methods[] = {
    {"add_symbol", g_add_symbol, METH_VARARGS, "add_symbol(name, min, opt, max): a dynamic dim symbol."},
    {"add_input", g_add_input, METH_VARARGS, "add_input(name, type) -> value name."},
    {"add_constant", (PyCFunction)(void (*)(void))g_add_constant, METH_VARARGS | METH_KEYWORDS,
     "add_constant(value, name=None) -> value name (None/bool/int/float/str/list of int, float or bool)."},
    {"add_tensor_constant", g_add_tensor_constant, METH_VARARGS,
     "add_tensor_constant(name, dtype, shape, buffer) -> value name; the buffer is held, not copied."},
    {"add_node", (PyCFunction)(void (*)(void))g_add_node, METH_VARARGS | METH_KEYWORDS,
     "add_node(op, inputs, output_types, name=None, output_names=None, module_stack=None) -> output names."},
    {"set_outputs", g_set_outputs, METH_O, "set_outputs(list of value names)."},
    {"nodes", g_nodes, METH_NOARGS, "nodes() -> list of dicts (name, op, inputs, outputs, target, segment, reason, module_stack)."},
    {"value", g_value, METH_O, "value(name) -> dict(kind, dtype, shape, producer, const, is_const, elem)."},
    {"tensor_constant", g_tensor_constant, METH_O, "tensor_constant(value name) -> (dtype, shape, bytes)."},
    {"verify", g_verify, METH_NOARGS, "verify(): raises VerifyError naming the first fault."},
    {"clone", g_clone, METH_NOARGS, "clone() -> an equal, independent Graph."},
    {"extract", g_extract, METH_O, "extract(node names) -> (Graph, input value names, output value names)."},
    {"parse", (PyCFunction)(void (*)(void))g_parse, METH_VARARGS | METH_KEYWORDS | METH_CLASS,
     "Graph.parse(text, tensors=None) -> Graph; tensors maps names of weights printed by name to buffers."},
    /* lowering and partitioning live in py_passes.c / py_partition.c */
    {"lower", (PyCFunction)(void (*)(void))ttc_py_graph_lower, METH_VARARGS | METH_KEYWORDS,
     "lower(disabled=(), enabled=(), debug=False, dump_after=None, dump=None, passes=None) -> [(pass, seconds, changed)]."},
    {"partition", (PyCFunction)(void (*)(void))ttc_py_graph_partition, METH_VARARGS | METH_KEYWORDS,
     "partition(settings=None) -> dict(segments, nodes)."},
    {"coverage", (PyCFunction)(void (*)(void))ttc_py_graph_coverage, METH_VARARGS | METH_KEYWORDS,
     "coverage(settings=None) -> dict(supported, total, per_op, reasons)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef graph_getset[] = {
    {"inputs", g_get_inputs, NULL, "graph input value names", NULL},
    {"outputs", g_get_outputs, NULL, "graph output value names", NULL},
    {"symbols", g_get_symbols, NULL, "list of (name, min, opt, max)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot graph_slots[] = {
    {Py_tp_new, graph_new},
    {Py_tp_dealloc, graph_dealloc},
    {Py_tp_str, g_str},
    {Py_tp_methods, graph_methods},
    {Py_tp_getset, graph_getset},
    {Py_tp_doc, "A torchtrt_c graph (C IR). See docs/binding_api.md."},
    {0, NULL},
};

static PyType_Spec graph_spec = {
    .name = "torchtrt_c._C.Graph",
    .basicsize = sizeof(GraphObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = graph_slots,
};

int ttc_py_init_graph(PyObject *m, ttc_py_state *st) {
    st->GraphType = PyType_FromModuleAndSpec(m, &graph_spec, NULL);
    if (!st->GraphType) return -1;
    return PyModule_AddObjectRef(m, "Graph", st->GraphType);
}
