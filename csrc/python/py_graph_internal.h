/*
 * Internal to torchtrt_c._C.Graph (py_graph.c, py_graph_types.c): the object layout and the
 * conversions between Python values and IR types, dims and attributes. Each converter
 * returns NULL / -1 with a Python exception set whose message starts with `what`.
 *
 *   ttc_type t;
 *   if (ttc_pyg_type_from_py(g, obj, &t, "output 0") < 0) goto fail;  // obj: ("tensor", "float32", ["s0", 3])
 */
#ifndef TTC_PY_GRAPH_INTERNAL_H
#define TTC_PY_GRAPH_INTERNAL_H

#include "binding.h"

#include "../ir/ir.h"
#include "../ir/strmap.h"

typedef struct {
    PyObject_HEAD
    ttc_graph *g;
    ttc_strmap vcache;  /* value name (owned copy) -> ttc_value* */
    ttc_strmap ncache;  /* node name (owned copy) -> ttc_node* */
    int32_t synced_values, synced_nodes; /* all_values / all_nodes already in the caches */
} GraphObject;

/* str -> UTF-8 without embedded NULs */
const char *ttc_pyg_utf8_of(PyObject *o, const char *what);
PyObject *ttc_pyg_str_or_none(const char *s);
bool ttc_pyg_is_ident_start(int c);
bool ttc_pyg_is_ident_char(int c);
/* dims: an int, a symbol name, or "k*s+c" text */
PyObject *ttc_pyg_dim_to_py(const ttc_graph *g, ttc_dim d);
const char *ttc_pyg_kind_name(ttc_type_kind k);
int ttc_pyg_dtype_from_py(PyObject *o, ttc_dtype *dt, const char *what);
int ttc_pyg_shape_from_py(ttc_graph *g, PyObject *shape, ttc_type *t, const char *what);
int ttc_pyg_type_from_py(ttc_graph *g, PyObject *o, ttc_type *t, const char *what);
PyObject *ttc_pyg_shape_to_py(const ttc_graph *g, const ttc_type *t);
PyObject *ttc_pyg_names_list(ttc_value *const *vals, int32_t n);
PyObject *ttc_pyg_attr_to_py(const ttc_attr *a);

#endif
