/* Conversions for torchtrt_c._C.Graph between Python values and IR dims, types, dtypes
 * and attributes (see py_graph_internal.h). Symbolic dims are written "s0", "2*s0" or
 * "2*s0+1"; types are ("tensor", dtype, shape) or a scalar kind name. */
#include "py_graph_internal.h"

#include "../common/status.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

const char *ttc_pyg_utf8_of(PyObject *o, const char *what) {
    if (!PyUnicode_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s must be a str, got %s", what, Py_TYPE(o)->tp_name);
        return NULL;
    }
    Py_ssize_t n;
    const char *s = PyUnicode_AsUTF8AndSize(o, &n);
    if (s && (Py_ssize_t)strlen(s) != n) {
        PyErr_Format(PyExc_ValueError, "%s contains a NUL character", what);
        return NULL;
    }
    return s;
}

PyObject *ttc_pyg_str_or_none(const char *s) {
    if (!s) Py_RETURN_NONE;
    return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "surrogateescape");
}

bool ttc_pyg_is_ident_start(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool ttc_pyg_is_ident_char(int c) { return ttc_pyg_is_ident_start(c) || (c >= '0' && c <= '9'); }

static bool read_i64(const char **p, int64_t *out) {
    char *end;
    errno = 0;
    long long v = strtoll(*p, &end, 10);
    if (end == *p || errno) return false;
    *out = v;
    *p = end;
    return true;
}

/* "5", "s0", "3*s0", "s0+1", "2*s0-1" */
static int dim_from_str(ttc_graph *g, const char *s, ttc_dim *d, const char *what) {
    const char *p = s;
    int64_t mul = 1, add = 0;
    if ((*p >= '0' && *p <= '9') || *p == '-') {
        int64_t k;
        if (!read_i64(&p, &k)) goto bad;
        if (!*p) {
            if (k < 0) goto bad;
            *d = ttc_dim_const(k);
            return 0;
        }
        if (*p++ != '*') goto bad;
        mul = k;
    }
    const char *sym = p;
    if (!ttc_pyg_is_ident_start((unsigned char)*p)) goto bad;
    while (ttc_pyg_is_ident_char((unsigned char)*p)) p++;
    char name[128];
    size_t n = (size_t)(p - sym);
    if (n >= sizeof name) goto bad;
    memcpy(name, sym, n);
    name[n] = 0;
    if (*p == '+' || *p == '-') {
        bool neg = *p == '-';
        p++;
        if (!(*p >= '0' && *p <= '9') || !read_i64(&p, &add)) goto bad;
        if (neg) add = -add;
    }
    if (*p || mul == 0) goto bad;
    int32_t idx = ttc_graph_find_symbol(g, name);
    if (idx < 0) {
        PyErr_Format(PyExc_ValueError, "%s: unknown symbol '%s' in dim \"%s\" (add it with add_symbol first)", what, name, s);
        return -1;
    }
    d->sym = idx;
    d->mul = mul;
    d->add = add;
    return 0;
bad:
    PyErr_Format(PyExc_ValueError, "%s: bad dim \"%s\" (want an int >= 0, 's0', '3*s0', 's0+1' or '2*s0-1')", what, s);
    return -1;
}

PyObject *ttc_pyg_dim_to_py(const ttc_graph *g, ttc_dim d) {
    if (d.sym < 0) return PyLong_FromLongLong(d.add);
    const char *name = d.sym < g->n_syms ? g->syms[d.sym].name : "?";
    char buf[192];
    int o = d.mul == 1 ? snprintf(buf, sizeof buf, "%s", name) : snprintf(buf, sizeof buf, "%lld*%s", (long long)d.mul, name);
    if (o > 0 && (size_t)o < sizeof buf && d.add)
        snprintf(buf + o, sizeof buf - (size_t)o, "%+lld", (long long)d.add);
    return PyUnicode_FromString(buf);
}

static const struct { const char *name; ttc_type_kind kind; } kind_names[] = {
    {"int", TTC_TYPE_INT}, {"float", TTC_TYPE_FLOAT}, {"bool", TTC_TYPE_BOOL}, {"str", TTC_TYPE_STR},
    {"none", TTC_TYPE_NONE}, {"any", TTC_TYPE_ANY}, {"tensor", TTC_TYPE_TENSOR}, {"list", TTC_TYPE_LIST},
};

const char *ttc_pyg_kind_name(ttc_type_kind k) {
    for (size_t i = 0; i < sizeof kind_names / sizeof kind_names[0]; i++)
        if (kind_names[i].kind == k) return kind_names[i].name;
    return "?";
}

static int kind_from(const char *s, ttc_type_kind *k) {
    for (size_t i = 0; i < sizeof kind_names / sizeof kind_names[0]; i++)
        if (!strcmp(kind_names[i].name, s)) { *k = kind_names[i].kind; return 0; }
    return -1;
}

int ttc_pyg_dtype_from_py(PyObject *o, ttc_dtype *dt, const char *what) {
    const char *s = ttc_pyg_utf8_of(o, what);
    if (!s) return -1;
    if (!ttc_dtype_from_name(s, dt)) {
        PyErr_Format(PyExc_ValueError, "%s: unknown dtype \"%s\" (float32, float16, bfloat16, float64, int64, "
                     "int32, int8, uint8, bool)", what, s);
        return -1;
    }
    return 0;
}

int ttc_pyg_shape_from_py(ttc_graph *g, PyObject *shape, ttc_type *t, const char *what) {
    if (shape == Py_None) { t->rank = -1; return 0; }
    PyObject *seq = PySequence_Fast(shape, "shape must be a list of dims");
    if (!seq) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    int rc = -1;
    if (n > TTC_MAX_RANK) {
        PyErr_Format(PyExc_ValueError, "%s: rank %zd exceeds %d", what, n, TTC_MAX_RANK);
        goto done;
    }
    t->rank = (int32_t)n;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *d = PySequence_Fast_GET_ITEM(seq, i);
        if (PyLong_Check(d) && !PyBool_Check(d)) {
            long long v = PyLong_AsLongLong(d);
            if (v == -1 && PyErr_Occurred()) goto done;
            if (v < 0) { PyErr_Format(PyExc_ValueError, "%s: dim %zd is negative (%lld)", what, i, v); goto done; }
            t->dims[i] = ttc_dim_const(v);
        } else if (PyUnicode_Check(d)) {
            const char *s = ttc_pyg_utf8_of(d, what);
            if (!s || dim_from_str(g, s, &t->dims[i], what)) goto done;
        } else {
            PyErr_Format(PyExc_TypeError, "%s: dim %zd must be an int or a str, got %s", what, i, Py_TYPE(d)->tp_name);
            goto done;
        }
    }
    rc = 0;
done:
    Py_DECREF(seq);
    return rc;
}

/* "int" | ("tensor", dtype, shape) | ("list", elem) */
int ttc_pyg_type_from_py(ttc_graph *g, PyObject *o, ttc_type *t, const char *what) {
    memset(t, 0, sizeof *t);
    ttc_type_kind k;
    if (PyUnicode_Check(o)) {
        const char *s = ttc_pyg_utf8_of(o, what);
        if (!s) return -1;
        if (kind_from(s, &k) || k == TTC_TYPE_TENSOR || k == TTC_TYPE_LIST) {
            PyErr_Format(PyExc_ValueError, "%s: unknown type \"%s\" (int, float, bool, str, none, any, "
                         "(\"tensor\", dtype, shape) or (\"list\", elem))", what, s);
            return -1;
        }
        *t = ttc_type_scalar(k);
        return 0;
    }
    if (!PyTuple_Check(o) && !PyList_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s: a type is a str or a tuple, got %s", what, Py_TYPE(o)->tp_name);
        return -1;
    }
    Py_ssize_t n = PySequence_Size(o);
    PyObject *head = n > 0 ? PySequence_GetItem(o, 0) : NULL;
    if (!head) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "%s: empty type tuple", what);
        return -1;
    }
    const char *hs = PyUnicode_Check(head) ? PyUnicode_AsUTF8(head) : NULL;
    Py_DECREF(head);
    if (hs && !strcmp(hs, "tensor") && n == 3) {
        PyObject *dt = PySequence_GetItem(o, 1), *shape = PySequence_GetItem(o, 2);
        int rc = -1;
        t->kind = TTC_TYPE_TENSOR;
        if (dt && shape && !ttc_pyg_dtype_from_py(dt, &t->dtype, what)) rc = ttc_pyg_shape_from_py(g, shape, t, what);
        Py_XDECREF(dt);
        Py_XDECREF(shape);
        return rc;
    }
    if (hs && !strcmp(hs, "list") && n == 2) {
        PyObject *e = PySequence_GetItem(o, 1);
        const char *es = e && PyUnicode_Check(e) ? PyUnicode_AsUTF8(e) : NULL;
        int ok = es && !kind_from(es, &k) && (k == TTC_TYPE_INT || k == TTC_TYPE_FLOAT || k == TTC_TYPE_BOOL ||
                                              k == TTC_TYPE_TENSOR || k == TTC_TYPE_ANY);
        Py_XDECREF(e);
        if (!ok) {
            PyErr_Clear();
            PyErr_Format(PyExc_ValueError, "%s: list element type must be int, float, bool, tensor or any", what);
            return -1;
        }
        *t = ttc_type_list(k);
        return 0;
    }
    PyErr_Format(PyExc_ValueError, "%s: a type tuple is (\"tensor\", dtype, shape) or (\"list\", elem)", what);
    return -1;
}

PyObject *ttc_pyg_shape_to_py(const ttc_graph *g, const ttc_type *t) {
    if (t->rank < 0) Py_RETURN_NONE;
    PyObject *l = PyList_New(t->rank);
    for (int i = 0; l && i < t->rank; i++) {
        PyObject *d = ttc_pyg_dim_to_py(g, t->dims[i]);
        if (!d) { Py_CLEAR(l); break; }
        PyList_SET_ITEM(l, i, d);
    }
    return l;
}

PyObject *ttc_pyg_names_list(ttc_value *const *vals, int32_t n) {
    PyObject *l = PyList_New(n);
    for (int i = 0; l && i < n; i++) {
        PyObject *s = ttc_pyg_str_or_none(vals[i] ? vals[i]->name : NULL);
        if (!s) { Py_CLEAR(l); break; }
        PyList_SET_ITEM(l, i, s);
    }
    return l;
}

PyObject *ttc_pyg_attr_to_py(const ttc_attr *a) {
    switch (a->kind) {
    case TTC_ATTR_INT: return PyLong_FromLongLong(a->i);
    case TTC_ATTR_FLOAT: return PyFloat_FromDouble(a->f);
    case TTC_ATTR_BOOL: return PyBool_FromLong(a->i != 0);
    case TTC_ATTR_STR: return ttc_pyg_str_or_none(a->s);
    case TTC_ATTR_INTS:
    case TTC_ATTR_BOOLS:
    case TTC_ATTR_FLOATS: {
        PyObject *l = PyList_New(a->n);
        for (int i = 0; l && i < a->n; i++) {
            PyObject *e = a->kind == TTC_ATTR_FLOATS ? PyFloat_FromDouble(a->floats[i])
                          : a->kind == TTC_ATTR_BOOLS ? PyBool_FromLong(a->ints[i] != 0)
                                                      : PyLong_FromLongLong(a->ints[i]);
            if (!e) { Py_CLEAR(l); break; }
            PyList_SET_ITEM(l, i, e);
        }
        return l;
    }
    default: Py_RETURN_NONE;
    }
}
