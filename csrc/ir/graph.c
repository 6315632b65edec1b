/* Graph construction, ownership and editing. Everything created is owned by the graph
 * (all_nodes / all_values) and freed with it; erased nodes leave g->nodes at once. */
#include "ir.h"

#include <stdlib.h>
#include <string.h>

/* ---- dtypes ---- */
static const struct { const char *name, *ir; size_t size; } dtype_tab[TTC_DTYPE_COUNT] = {
    [TTC_DTYPE_FLOAT32] = {"float32", "Float", 4},
    [TTC_DTYPE_FLOAT16] = {"float16", "Half", 2},
    [TTC_DTYPE_BFLOAT16] = {"bfloat16", "BFloat16", 2},
    [TTC_DTYPE_FLOAT64] = {"float64", "Double", 8},
    [TTC_DTYPE_INT64] = {"int64", "Long", 8},
    [TTC_DTYPE_INT32] = {"int32", "Int", 4},
    [TTC_DTYPE_INT8] = {"int8", "Char", 1},
    [TTC_DTYPE_UINT8] = {"uint8", "Byte", 1},
    [TTC_DTYPE_BOOL] = {"bool", "Bool", 1},
};

const char *ttc_dtype_name(ttc_dtype d) { return (unsigned)d < TTC_DTYPE_COUNT ? dtype_tab[d].name : "?"; }
const char *ttc_dtype_ir_name(ttc_dtype d) { return (unsigned)d < TTC_DTYPE_COUNT ? dtype_tab[d].ir : "?"; }
size_t ttc_dtype_size(ttc_dtype d) { return (unsigned)d < TTC_DTYPE_COUNT ? dtype_tab[d].size : 0; }

bool ttc_dtype_from_name(const char *name, ttc_dtype *out) {
    if (!name) return false;
    for (int i = 0; i < TTC_DTYPE_COUNT; i++)
        if (!strcmp(name, dtype_tab[i].name) || !strcmp(name, dtype_tab[i].ir)) {
            *out = (ttc_dtype)i;
            return true;
        }
    return false;
}

/* ---- op table ---- */
static const ttc_op_info op_tab[TTC_OP_COUNT] = {
#define TTC_OP(id, nm, nin, nout, fl, shape, conv) {TTC_OP_##id, nm, nin, nout, fl},
#include "ops.def"
#undef TTC_OP
};

const ttc_op_info *ttc_op_info_get(ttc_op_id id) {
    return (unsigned)id < TTC_OP_COUNT ? &op_tab[id] : NULL;
}

bool ttc_op_arity_ok(const ttc_op_info *info, int32_t n_in, int32_t n_out) {
    if (!info) return true;
    return (info->n_inputs < 0 || info->n_inputs == n_in) && (info->n_outputs < 0 || info->n_outputs == n_out);
}

char *ttc_node_schema_mismatch(const ttc_node *n) {
    if (!n || n->op != TTC_OP_OPAQUE || !n->op_name) return NULL;
    const ttc_op_info *info = ttc_op_info_get(ttc_op_lookup(n->op_name));
    if (!info) return NULL;
    if (info->n_inputs >= 0 && info->n_inputs != n->n_inputs)
        return ttc_strfmt("%s: the schema has %d inputs, the table knows %d", n->op_name, n->n_inputs, info->n_inputs);
    return ttc_strfmt("%s: the schema has %d outputs, the table knows %d", n->op_name, n->n_outputs, info->n_outputs);
}

bool ttc_dropout_is_identity(const ttc_node *n) {
    if (n->op != TTC_OP_DROPOUT && n->op != TTC_OP_NATIVE_DROPOUT) return false;
    double p;
    int64_t train;
    if (n->n_inputs > 1 && ttc_value_const_float(n->inputs[1], &p) && p == 0) return true;
    /* native_dropout's train is optional: None means training */
    return n->n_inputs > 2 && ttc_value_const_int(n->inputs[2], &train) && !train;
}

ttc_op_id ttc_op_lookup(const char *name) {
    /* Linear scan over ~180 entries is fine for import rates; keep it simple. */
    if (!name) return TTC_OP_OPAQUE;
    for (int i = 0; i < TTC_OP_COUNT; i++)
        if (!strcmp(op_tab[i].name, name)) return (ttc_op_id)i;
    return TTC_OP_OPAQUE;
}

/* ---- types ---- */
ttc_type ttc_type_scalar(ttc_type_kind kind) {
    ttc_type t;
    memset(&t, 0, sizeof t);
    t.kind = kind;
    t.rank = 0;
    return t;
}

ttc_type ttc_type_list(ttc_type_kind elem) {
    ttc_type t = ttc_type_scalar(TTC_TYPE_LIST);
    t.elem = elem;
    return t;
}

ttc_type ttc_type_tensor(ttc_dtype dtype, int32_t rank, const int64_t *shape) {
    ttc_type t = ttc_type_scalar(TTC_TYPE_TENSOR);
    t.dtype = dtype;
    t.rank = rank;
    for (int i = 0; i < rank && i < TTC_MAX_RANK; i++) t.dims[i] = ttc_dim_const(shape ? shape[i] : 1);
    return t;
}

bool ttc_type_eq(const ttc_type *a, const ttc_type *b) {
    if (a->kind != b->kind) return false;
    if (a->kind == TTC_TYPE_LIST) return a->elem == b->elem;
    if (a->kind != TTC_TYPE_TENSOR) return true;
    if (a->dtype != b->dtype || a->rank != b->rank) return false;
    for (int i = 0; i < a->rank; i++)
        if (!ttc_dim_eq(a->dims[i], b->dims[i])) return false;
    return true;
}

bool ttc_type_is_static(const ttc_type *t) {
    if (t->kind != TTC_TYPE_TENSOR || t->rank < 0) return false;
    for (int i = 0; i < t->rank; i++)
        if (!ttc_dim_is_const(t->dims[i])) return false;
    return true;
}

int64_t ttc_type_numel_static(const ttc_type *t) {
    if (!ttc_type_is_static(t)) return -1;
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++)
        if (__builtin_mul_overflow(n, t->dims[i].add, &n)) return -1; /* not addressable anyway */
    return n;
}

/* ---- tensor data ---- */
/* Live tensor data and its bytes, process-wide (ttc_tensor_data_stats). */
static int64_t n_data, n_data_bytes;

void ttc_tensor_data_stats(int64_t *live, int64_t *bytes) {
    *live = __atomic_load_n(&n_data, __ATOMIC_RELAXED);
    *bytes = __atomic_load_n(&n_data_bytes, __ATOMIC_RELAXED);
}

ttc_tensor_data *ttc_tensor_data_wrap(void *data, size_t nbytes, void (*release)(void *), void *owner) {
    ttc_tensor_data *d = ttc_calloc(1, sizeof *d);
    if (!d) return NULL;
    __atomic_add_fetch(&n_data, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&n_data_bytes, (int64_t)nbytes, __ATOMIC_RELAXED);
    d->data = data;
    d->nbytes = nbytes;
    d->release = release;
    d->owner = owner;
    d->refcount = 1;
    return d;
}

static void free_owner(void *p) { free(p); }

ttc_tensor_data *ttc_tensor_data_copy(const void *data, size_t nbytes) {
    void *buf = ttc_malloc(nbytes);
    if (!buf) return NULL;
    if (nbytes && data) memcpy(buf, data, nbytes);
    else if (nbytes) memset(buf, 0, nbytes);
    ttc_tensor_data *d = ttc_tensor_data_wrap(buf, nbytes, free_owner, buf);
    if (!d) free(buf);
    return d;
}

bool ttc_tensor_data_core_owned(const ttc_tensor_data *d) {
    return d && (d->release == free_owner || d->release == free) && d->owner == d->data;
}

ttc_tensor_data *ttc_tensor_data_ref(ttc_tensor_data *d) {
    if (d) __atomic_add_fetch(&d->refcount, 1, __ATOMIC_RELAXED);
    return d;
}

void ttc_tensor_data_unref(ttc_tensor_data *d) {
    if (!d) return;
    if (__atomic_sub_fetch(&d->refcount, 1, __ATOMIC_ACQ_REL) == 0) {
        if (d->release) d->release(d->owner);
        __atomic_sub_fetch(&n_data, 1, __ATOMIC_RELAXED);
        __atomic_sub_fetch(&n_data_bytes, (int64_t)d->nbytes, __ATOMIC_RELAXED);
        free(d);
    }
}

/* ---- attributes ---- */
void ttc_attr_clear(ttc_attr *a) {
    free(a->name);
    free(a->s);
    free(a->ints);
    free(a->floats);
    ttc_tensor_data_unref(a->tensor);
    memset(a, 0, sizeof *a);
}

ttc_status ttc_attr_copy(ttc_attr *dst, const ttc_attr *src) {
    memset(dst, 0, sizeof *dst);
    dst->kind = src->kind;
    dst->i = src->i;
    dst->f = src->f;
    dst->n = src->n;
    dst->name = ttc_strdup(src->name);
    if (src->name && !dst->name) goto oom;
    if (src->s && !(dst->s = ttc_strdup(src->s))) goto oom;
    if (src->ints) {
        if (!(dst->ints = ttc_malloc(sizeof(int64_t) * (size_t)(src->n ? src->n : 1)))) goto oom;
        memcpy(dst->ints, src->ints, sizeof(int64_t) * (size_t)src->n);
    }
    if (src->floats) {
        if (!(dst->floats = ttc_malloc(sizeof(double) * (size_t)(src->n ? src->n : 1)))) goto oom;
        memcpy(dst->floats, src->floats, sizeof(double) * (size_t)src->n);
    }
    dst->tensor = ttc_tensor_data_ref(src->tensor);
    return TTC_OK;
oom:
    ttc_attr_clear(dst);
    return TTC_ERR_NOMEM;
}

ttc_status ttc_node_set_attr(ttc_node *n, const ttc_attr *a) {
    for (int i = 0; i < n->n_attrs; i++)
        if (n->attrs[i].name && a->name && !strcmp(n->attrs[i].name, a->name)) {
            ttc_attr tmp;
            TTC_TRY(ttc_attr_copy(&tmp, a));
            ttc_attr_clear(&n->attrs[i]);
            n->attrs[i] = tmp;
            return TTC_OK;
        }
    ttc_attr *na = ttc_realloc(n->attrs, sizeof(ttc_attr) * (size_t)(n->n_attrs + 1));
    if (!na) return TTC_ERR_NOMEM;
    n->attrs = na;
    TTC_TRY(ttc_attr_copy(&n->attrs[n->n_attrs], a));
    n->n_attrs++;
    return TTC_OK;
}

const ttc_attr *ttc_node_attr(const ttc_node *n, const char *name) {
    for (int i = 0; i < n->n_attrs; i++)
        if (n->attrs[i].name && !strcmp(n->attrs[i].name, name)) return &n->attrs[i];
    return NULL;
}

/* ---- graph ---- */
ttc_graph *ttc_graph_new(void) { return ttc_calloc(1, sizeof(ttc_graph)); }

static void value_free(ttc_value *v) {
    if (!v) return;
    free(v->name);
    free(v->users);
    free(v);
}

static void node_free(ttc_node *n) {
    if (!n) return;
    free(n->op_name);
    free(n->name);
    free(n->module_stack);
    free(n->reason);
    free(n->inputs);
    free(n->outputs);
    for (int i = 0; i < n->n_attrs; i++) ttc_attr_clear(&n->attrs[i]);
    free(n->attrs);
    free(n);
}

void ttc_graph_free(ttc_graph *g) {
    if (!g) return;
    for (int i = 0; i < g->n_all_nodes; i++) node_free(g->all_nodes[i]);
    for (int i = 0; i < g->n_all_values; i++) value_free(g->all_values[i]);
    for (int i = 0; i < g->n_syms; i++) free(g->syms[i].name);
    free(g->all_nodes);
    free(g->all_values);
    free(g->nodes);
    free(g->inputs);
    free(g->outputs);
    free(g->syms);
    free(g);
}

int32_t ttc_graph_add_symbol(ttc_graph *g, const char *name, int64_t min, int64_t opt, int64_t max) {
    if (!name || !*name) { ttc_fail(TTC_ERR_INVALID_ARG, "symbol needs a name"); return -1; }
    if (min < 0 || max < min || opt < min || opt > max) {
        ttc_fail(TTC_ERR_INVALID_ARG, "symbol %s: need 0 <= min <= opt <= max, got %lld/%lld/%lld",
                 name, (long long)min, (long long)opt, (long long)max);
        return -1;
    }
    if (ttc_graph_find_symbol(g, name) >= 0) {
        ttc_fail(TTC_ERR_INVALID_ARG, "symbol %s defined twice", name);
        return -1;
    }
    if (ttc_grow((void **)&g->syms, &g->cap_syms, g->n_syms + 1, sizeof(ttc_symbol)))
        return -1;
    ttc_symbol *s = &g->syms[g->n_syms];
    if (!(s->name = ttc_strdup(name))) return -1;
    s->min = min;
    s->opt = opt;
    s->max = max;
    return g->n_syms++;
}

int32_t ttc_graph_find_symbol(const ttc_graph *g, const char *name) {
    for (int i = 0; i < g->n_syms; i++)
        if (!strcmp(g->syms[i].name, name)) return i;
    return -1;
}

ttc_value *ttc_graph_find_value(const ttc_graph *g, const char *name) {
    if (!name) return NULL;
    for (int i = 0; i < g->n_all_values; i++) {
        ttc_value *v = g->all_values[i];
        if (v->name && !strcmp(v->name, name) && (!v->producer || !v->producer->dead)) return v;
    }
    return NULL;
}

ttc_node *ttc_graph_find_node(const ttc_graph *g, const char *name) {
    if (!name) return NULL;
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i]->name && !strcmp(g->nodes[i]->name, name)) return g->nodes[i];
    return NULL;
}

static ttc_value *new_value(ttc_graph *g, const char *name, const ttc_type *type) {
    if (type->kind == TTC_TYPE_TENSOR && (type->rank < -1 || type->rank > TTC_MAX_RANK)) {
        ttc_fail(TTC_ERR_INVALID_ARG, "tensor rank %d out of range (max %d)", type->rank, TTC_MAX_RANK);
        return NULL;
    }
    if (type->kind == TTC_TYPE_TENSOR)
        for (int i = 0; i < type->rank; i++)
            if (type->dims[i].sym >= g->n_syms) {
                ttc_fail(TTC_ERR_INVALID_ARG, "dim %d refers to unknown symbol %d", i, type->dims[i].sym);
                return NULL;
            }
    if (ttc_grow((void **)&g->all_values, &g->cap_all_values, g->n_all_values + 1, sizeof(ttc_value *)))
        return NULL;
    ttc_value *v = ttc_calloc(1, sizeof *v);
    if (!v) return NULL;
    v->id = g->n_all_values;
    v->type = *type;
    v->name = name ? ttc_strdup(name) : ttc_strfmt("%d", g->next_name++);
    if (!v->name) { free(v); return NULL; }
    g->all_values[g->n_all_values++] = v;
    return v;
}

ttc_value *ttc_graph_add_input(ttc_graph *g, const char *name, const ttc_type *type) {
    if (ttc_grow((void **)&g->inputs, &g->cap_inputs, g->n_inputs + 1, sizeof(ttc_value *))) return NULL;
    ttc_value *v = new_value(g, name, type);
    if (!v) return NULL;
    g->inputs[g->n_inputs++] = v;
    return v;
}

ttc_status ttc_graph_set_outputs(ttc_graph *g, ttc_value *const *outs, int32_t n) {
    if (n < 0) return TTC_FAIL(TTC_ERR_INVALID_ARG, "negative output count");
    for (int i = 0; i < n; i++)
        if (!outs[i]) return TTC_FAIL(TTC_ERR_INVALID_ARG, "graph output %d is NULL", i);
    g->n_outputs = 0;
    TTC_TRY(ttc_grow((void **)&g->outputs, &g->cap_outputs, n, sizeof(ttc_value *)));
    if (n) memcpy(g->outputs, outs, sizeof(ttc_value *) * (size_t)n);
    g->n_outputs = n;
    return TTC_OK;
}

static ttc_status add_user(ttc_value *v, ttc_node *n) {
    TTC_TRY(ttc_grow((void **)&v->users, &v->cap_users, v->n_users + 1, sizeof(ttc_node *)));
    v->users[v->n_users++] = n;
    return TTC_OK;
}

static void remove_user(ttc_value *v, ttc_node *n) {
    for (int i = 0; i < v->n_users; i++)
        if (v->users[i] == n) {
            memmove(&v->users[i], &v->users[i + 1], sizeof(ttc_node *) * (size_t)(v->n_users - i - 1));
            v->n_users--;
            return;
        }
}

static void renumber(ttc_graph *g, int32_t from) {
    for (int i = from; i < g->n_nodes; i++) g->nodes[i]->order = i;
}

static ttc_node *create_node(ttc_graph *g, int32_t pos, const char *op_name,
                             ttc_value *const *inputs, int32_t n_in,
                             const ttc_type *out_types, int32_t n_out, const char *name) {
    if (!op_name || !*op_name) { ttc_fail(TTC_ERR_INVALID_ARG, "node needs an op name"); return NULL; }
    if (n_in < 0 || n_out < 0) { ttc_fail(TTC_ERR_INVALID_ARG, "negative arity for %s", op_name); return NULL; }
    for (int i = 0; i < n_in; i++)
        if (!inputs[i]) { ttc_fail(TTC_ERR_INVALID_ARG, "%s: input %d is NULL", op_name, i); return NULL; }
    if (ttc_grow((void **)&g->all_nodes, &g->cap_all_nodes, g->n_all_nodes + 1, sizeof(ttc_node *)) ||
        ttc_grow((void **)&g->nodes, &g->cap_nodes, g->n_nodes + 1, sizeof(ttc_node *)))
        return NULL;
    ttc_node *n = ttc_calloc(1, sizeof *n);
    if (!n) return NULL;
    g->all_nodes[g->n_all_nodes] = n;
    n->id = g->n_all_nodes++;
    n->op = ttc_op_lookup(op_name);
    /* A known name with another arity (a newer schema grew an argument) is not the op the
     * table describes: it imports as opaque and falls back, see ttc_node_schema_mismatch. */
    if (!ttc_op_arity_ok(ttc_op_info_get(n->op), n_in, n_out)) n->op = TTC_OP_OPAQUE;
    n->target = -1;
    n->segment = -1;
    n->op_name = ttc_strdup(op_name);
    n->name = ttc_strdup(name);
    n->inputs = ttc_calloc((size_t)(n_in ? n_in : 1), sizeof(ttc_value *));
    n->outputs = ttc_calloc((size_t)(n_out ? n_out : 1), sizeof(ttc_value *));
    if (!n->op_name || (name && !n->name) || !n->inputs || !n->outputs) { n->dead = true; return NULL; }
    for (int i = 0; i < n_out; i++) {
        ttc_value *v = new_value(g, NULL, &out_types[i]);
        if (!v) { n->dead = true; return NULL; }
        v->producer = n;
        v->output_index = i;
        n->outputs[i] = v;
        n->n_outputs++;
    }
    for (int i = 0; i < n_in; i++) {
        if (add_user(inputs[i], n)) { n->dead = true; return NULL; }
        n->inputs[i] = inputs[i];
        n->n_inputs++;
    }
    memmove(&g->nodes[pos + 1], &g->nodes[pos], sizeof(ttc_node *) * (size_t)(g->n_nodes - pos));
    g->nodes[pos] = n;
    g->n_nodes++;
    renumber(g, pos);
    return n;
}

ttc_node *ttc_graph_append_node(ttc_graph *g, const char *op_name, ttc_value *const *inputs, int32_t n_in,
                                const ttc_type *out_types, int32_t n_out, const char *name) {
    return create_node(g, g->n_nodes, op_name, inputs, n_in, out_types, n_out, name);
}

ttc_node *ttc_graph_insert_node_before(ttc_graph *g, ttc_node *before, const char *op_name,
                                       ttc_value *const *inputs, int32_t n_in,
                                       const ttc_type *out_types, int32_t n_out, const char *name) {
    int32_t pos = g->n_nodes;
    if (before) {
        if (before->dead || before->order < 0 || before->order >= g->n_nodes || g->nodes[before->order] != before) {
            ttc_fail(TTC_ERR_INVALID_ARG, "insert_before: node is not in this graph");
            return NULL;
        }
        pos = before->order;
    }
    return create_node(g, pos, op_name, inputs, n_in, out_types, n_out, name);
}

ttc_status ttc_node_set_output_name(ttc_graph *g, ttc_node *n, int32_t i, const char *name) {
    if (i < 0 || i >= n->n_outputs || !name) return TTC_FAIL(TTC_ERR_INVALID_ARG, "bad output index %d", i);
    ttc_value *other = ttc_graph_find_value(g, name);
    if (other && other != n->outputs[i]) return TTC_FAIL(TTC_ERR_INVALID_ARG, "value name %%%s already used", name);
    char *s = ttc_strdup(name);
    if (!s) return TTC_ERR_NOMEM;
    free(n->outputs[i]->name);
    n->outputs[i]->name = s;
    return TTC_OK;
}

/* ---- constants ---- */
static ttc_value *make_const(ttc_graph *g, ttc_node *before, const ttc_type *t, ttc_attr *a) {
    a->name = "value";
    ttc_node *n = ttc_graph_insert_node_before(g, before, "prim.Constant", NULL, 0, t, 1, NULL);
    if (!n) return NULL;
    if (ttc_node_set_attr(n, a)) {
        ttc_graph_erase_node(g, n);
        return NULL;
    }
    return n->outputs[0];
}

ttc_value *ttc_graph_const_int(ttc_graph *g, ttc_node *before, int64_t v) {
    ttc_type t = ttc_type_scalar(TTC_TYPE_INT);
    ttc_attr a = {.kind = TTC_ATTR_INT, .i = v};
    return make_const(g, before, &t, &a);
}

ttc_value *ttc_graph_const_float(ttc_graph *g, ttc_node *before, double v) {
    ttc_type t = ttc_type_scalar(TTC_TYPE_FLOAT);
    ttc_attr a = {.kind = TTC_ATTR_FLOAT, .f = v};
    return make_const(g, before, &t, &a);
}

ttc_value *ttc_graph_const_bool(ttc_graph *g, ttc_node *before, bool v) {
    ttc_type t = ttc_type_scalar(TTC_TYPE_BOOL);
    ttc_attr a = {.kind = TTC_ATTR_BOOL, .i = v};
    return make_const(g, before, &t, &a);
}

ttc_value *ttc_graph_const_str(ttc_graph *g, ttc_node *before, const char *s) {
    ttc_type t = ttc_type_scalar(TTC_TYPE_STR);
    ttc_attr a = {.kind = TTC_ATTR_STR, .s = (char *)s};
    return make_const(g, before, &t, &a);
}

ttc_value *ttc_graph_const_none(ttc_graph *g, ttc_node *before) {
    ttc_type t = ttc_type_scalar(TTC_TYPE_NONE);
    ttc_attr a = {.kind = TTC_ATTR_NONE};
    return make_const(g, before, &t, &a);
}

ttc_value *ttc_graph_const_ints(ttc_graph *g, ttc_node *before, const int64_t *v, int32_t n) {
    ttc_type t = ttc_type_list(TTC_TYPE_INT);
    ttc_attr a = {.kind = TTC_ATTR_INTS, .ints = (int64_t *)v, .n = n};
    int64_t dummy = 0;
    if (!n) a.ints = &dummy;
    return make_const(g, before, &t, &a);
}

ttc_value *ttc_graph_const_floats(ttc_graph *g, ttc_node *before, const double *v, int32_t n) {
    ttc_type t = ttc_type_list(TTC_TYPE_FLOAT);
    ttc_attr a = {.kind = TTC_ATTR_FLOATS, .floats = (double *)v, .n = n};
    double dummy = 0;
    if (!n) a.floats = &dummy;
    return make_const(g, before, &t, &a);
}

ttc_value *ttc_graph_const_tensor(ttc_graph *g, ttc_node *before, const char *name,
                                  const ttc_type *type, ttc_tensor_data *data) {
    if (type->kind != TTC_TYPE_TENSOR || !data) {
        ttc_fail(TTC_ERR_INVALID_ARG, "tensor constant %s needs a tensor type and data", name ? name : "");
        return NULL;
    }
    int64_t numel = ttc_type_numel_static(type);
    if (numel < 0 || (size_t)numel * ttc_dtype_size(type->dtype) != data->nbytes) {
        ttc_fail(TTC_ERR_INVALID_ARG, "tensor constant %s: %zu bytes do not match its static type",
                 name ? name : "", data->nbytes);
        return NULL;
    }
    /* Weights made by passes get a name too (from their value), so that printing and
     * serialising keep their data out of line instead of writing megabytes of text. */
    bool big = numel > 64;  /* the printer's inline limit */
    char *auto_name = (name || !big) ? NULL : ttc_strfmt("_w%d", g->n_all_values);
    if (!name && big && !auto_name) return NULL;
    ttc_attr a = {.kind = TTC_ATTR_TENSOR, .s = (char *)(name ? name : auto_name), .tensor = data};
    ttc_value *v = make_const(g, before, type, &a);
    free(auto_name);
    return v;
}

const ttc_attr *ttc_value_const(const ttc_value *v) {
    if (!v || !v->producer || v->producer->op != TTC_OP_CONSTANT) return NULL;
    return ttc_node_attr(v->producer, "value");
}

bool ttc_value_const_int(const ttc_value *v, int64_t *out) {
    const ttc_attr *a = ttc_value_const(v);
    if (!a || (a->kind != TTC_ATTR_INT && a->kind != TTC_ATTR_BOOL)) return false;
    *out = a->i;
    return true;
}

bool ttc_value_const_float(const ttc_value *v, double *out) {
    const ttc_attr *a = ttc_value_const(v);
    if (!a) return false;
    if (a->kind == TTC_ATTR_FLOAT) { *out = a->f; return true; }
    if (a->kind == TTC_ATTR_INT || a->kind == TTC_ATTR_BOOL) { *out = (double)a->i; return true; }
    return false;
}

bool ttc_value_const_ints(const ttc_value *v, int64_t **out, int32_t *n) {
    *out = NULL;
    *n = 0;
    const ttc_attr *a = ttc_value_const(v);
    if (a && a->kind == TTC_ATTR_INTS) {
        *out = malloc(sizeof(int64_t) * (size_t)(a->n ? a->n : 1));
        if (!*out) return false;
        memcpy(*out, a->ints, sizeof(int64_t) * (size_t)a->n);
        *n = a->n;
        return true;
    }
    if (v && v->producer && v->producer->op == TTC_OP_LIST_CONSTRUCT) {
        ttc_node *p = v->producer;
        int64_t *r = malloc(sizeof(int64_t) * (size_t)(p->n_inputs ? p->n_inputs : 1));
        if (!r) return false;
        for (int i = 0; i < p->n_inputs; i++)
            if (!ttc_value_const_int(p->inputs[i], &r[i])) { free(r); return false; }
        *out = r;
        *n = p->n_inputs;
        return true;
    }
    return false;
}

bool ttc_value_is_none(const ttc_value *v) {
    if (v && v->type.kind == TTC_TYPE_NONE) return true;
    const ttc_attr *a = ttc_value_const(v);
    return a && a->kind == TTC_ATTR_NONE;
}

/* ---- editing ---- */
ttc_status ttc_node_set_input(ttc_node *n, int32_t i, ttc_value *v) {
    if (i < 0 || i >= n->n_inputs || !v) return TTC_FAIL(TTC_ERR_INVALID_ARG, "set_input: bad index %d", i);
    TTC_TRY(add_user(v, n));
    remove_user(n->inputs[i], n);
    n->inputs[i] = v;
    return TTC_OK;
}

void ttc_value_replace_all_uses(ttc_value *old, ttc_value *repl) {
    if (old == repl) return;
    /* Move users in place: every user slot referring to old now refers to repl. */
    while (old->n_users > 0) {
        ttc_node *u = old->users[old->n_users - 1];
        int done = 0;
        for (int i = 0; i < u->n_inputs; i++)
            if (u->inputs[i] == old) {
                if (ttc_node_set_input(u, i, repl) != TTC_OK) return; /* OOM: leave as is */
                done = 1;
                break;
            }
        if (!done) old->n_users--; /* inconsistent list: drop the stale entry */
    }
}

bool ttc_value_is_graph_output(const ttc_graph *g, const ttc_value *v) {
    for (int i = 0; i < g->n_outputs; i++)
        if (g->outputs[i] == v) return true;
    return false;
}

ttc_status ttc_graph_erase_node(ttc_graph *g, ttc_node *n) {
    if (n->dead) return TTC_FAIL(TTC_ERR_INVALID_ARG, "node erased twice");
    for (int i = 0; i < n->n_outputs; i++) {
        if (n->outputs[i]->n_users)
            return TTC_FAIL(TTC_ERR_INVALID_ARG, "cannot erase %s: output %%%s still has %d users",
                            n->op_name, n->outputs[i]->name, n->outputs[i]->n_users);
        if (ttc_value_is_graph_output(g, n->outputs[i]))
            return TTC_FAIL(TTC_ERR_INVALID_ARG, "cannot erase %s: %%%s is a graph output",
                            n->op_name, n->outputs[i]->name);
    }
    for (int i = 0; i < n->n_inputs; i++) remove_user(n->inputs[i], n);
    int32_t pos = n->order;
    if (pos >= 0 && pos < g->n_nodes && g->nodes[pos] == n) {
        memmove(&g->nodes[pos], &g->nodes[pos + 1], sizeof(ttc_node *) * (size_t)(g->n_nodes - pos - 1));
        g->n_nodes--;
        renumber(g, pos);
    }
    n->dead = true;
    n->order = -1;
    return TTC_OK;
}
