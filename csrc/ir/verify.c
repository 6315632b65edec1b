/*
 * Graph verifier: the invariants every pass may rely on and must preserve.
 *   - nodes: live, in g->nodes at their recorded order, op id matching the op table name,
 *     arity matching ops.def for non-variadic ops;
 *   - values: owned by the graph, names unique and non-empty, types valid (rank <= 8,
 *     known symbols, non-negative dims over the symbol's range);
 *   - def before use (graph inputs or earlier nodes), no dead producers, outputs defined;
 *   - users lists equal to the uses (as multisets);
 *   - prim.Constant carries a `value` attribute matching its type (tensor bytes included);
 *   - where the op has a shape function, output types agree with it.
 * Failures are TTC_ERR_VERIFY naming the node (debug name, else first output) and op.
 *
 *   if (ttc_graph_verify(g) != TTC_OK) fprintf(stderr, "%s\n", ttc_last_error());
 */
#include "ir.h"
#include "strmap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *node_label(const ttc_node *n) {
    if (n->name) return n->name;
    if (n->n_outputs > 0 && n->outputs && n->outputs[0] && n->outputs[0]->name) return n->outputs[0]->name;
    return "?";
}

#define NODE_FAIL(n, fmt, ...) \
    ttc_fail(TTC_ERR_VERIFY, "node %s (%s): " fmt, node_label(n), (n)->op_name ? (n)->op_name : "?", __VA_ARGS__)

static bool is_ident(const char *s) {
    if (!s || !((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_')) return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_'))
            return false;
    return true;
}

/* Value of an affine dim at symbol value x; false on overflow. */
static bool dim_at(ttc_dim d, int64_t x, int64_t *out) {
    int64_t m;
    if (__builtin_mul_overflow(d.mul, x, &m)) return false;
    return !__builtin_add_overflow(m, d.add, out);
}

static ttc_status check_type(const ttc_graph *g, const ttc_type *t, const char *vname) {
    if ((unsigned)t->kind >= TTC_TYPE_KIND_COUNT)
        return ttc_fail(TTC_ERR_VERIFY, "value %%%s: invalid type kind %d", vname, (int)t->kind);
    if (t->kind == TTC_TYPE_LIST) {
        if (t->elem == TTC_TYPE_LIST || (unsigned)t->elem >= TTC_TYPE_KIND_COUNT)
            return ttc_fail(TTC_ERR_VERIFY, "value %%%s: invalid list element kind %d", vname, (int)t->elem);
        return TTC_OK;
    }
    if (t->kind != TTC_TYPE_TENSOR) return TTC_OK;
    if ((unsigned)t->dtype >= TTC_DTYPE_COUNT)
        return ttc_fail(TTC_ERR_VERIFY, "value %%%s: invalid dtype %d", vname, (int)t->dtype);
    if (t->rank < -1 || t->rank > TTC_MAX_RANK)
        return ttc_fail(TTC_ERR_VERIFY, "value %%%s: rank %d out of range (max %d)", vname, t->rank, TTC_MAX_RANK);
    for (int i = 0; i < t->rank; i++) {
        ttc_dim d = t->dims[i];
        if (d.sym < 0) {
            if (d.add < 0) return ttc_fail(TTC_ERR_VERIFY, "value %%%s: dim %d is negative (%lld)", vname, i, (long long)d.add);
            continue;
        }
        if (d.sym >= g->n_syms)
            return ttc_fail(TTC_ERR_VERIFY, "value %%%s: dim %d uses unknown symbol #%d", vname, i, d.sym);
        if (d.mul == 0) return ttc_fail(TTC_ERR_VERIFY, "value %%%s: dim %d has symbol coefficient 0", vname, i);
        const ttc_symbol *s = &g->syms[d.sym];
        int64_t lo, hi;
        if (!dim_at(d, s->min, &lo) || !dim_at(d, s->max, &hi) || lo < 0 || hi < 0)
            return ttc_fail(TTC_ERR_VERIFY, "value %%%s: dim %d is negative or overflows for %s in [%lld, %lld]",
                            vname, i, s->name, (long long)s->min, (long long)s->max);
    }
    return TTC_OK;
}

static ttc_status check_constant(const ttc_node *n) {
    if (n->n_outputs != 1 || n->n_inputs != 0) return NODE_FAIL(n, "needs 0 inputs and 1 output, has %d and %d", n->n_inputs, n->n_outputs);
    const ttc_type *t = &n->outputs[0]->type;
    const ttc_attr *a = ttc_node_attr(n, "value");
    if (!a) {
        if (t->kind == TTC_TYPE_NONE) return TTC_OK;
        return NODE_FAIL(n, "%s", "constant without a value attribute");
    }
    bool ok;
    switch (t->kind) {
    case TTC_TYPE_INT: ok = a->kind == TTC_ATTR_INT; break;
    case TTC_TYPE_FLOAT: ok = a->kind == TTC_ATTR_FLOAT; break;
    case TTC_TYPE_BOOL: ok = a->kind == TTC_ATTR_BOOL; break;
    case TTC_TYPE_STR: ok = a->kind == TTC_ATTR_STR && a->s; break;
    case TTC_TYPE_NONE: ok = a->kind == TTC_ATTR_NONE; break;
    case TTC_TYPE_ANY: ok = a->kind != TTC_ATTR_TENSOR; break;
    case TTC_TYPE_LIST:
        ok = (t->elem == TTC_TYPE_INT && a->kind == TTC_ATTR_INTS) ||
             (t->elem == TTC_TYPE_FLOAT && a->kind == TTC_ATTR_FLOATS) ||
             (t->elem == TTC_TYPE_BOOL && a->kind == TTC_ATTR_BOOLS);
        break;
    case TTC_TYPE_TENSOR: {
        if (a->kind != TTC_ATTR_TENSOR || !a->tensor) { ok = false; break; }
        int64_t numel = ttc_type_numel_static(t);
        if (numel < 0) return NODE_FAIL(n, "%s", "tensor constant needs a static shape");
        size_t want;
        if (__builtin_mul_overflow((uint64_t)numel, ttc_dtype_size(t->dtype), &want) || a->tensor->nbytes != want)
            return NODE_FAIL(n, "tensor constant holds %zu bytes, its type %s[%lld elements] needs %zu",
                             a->tensor->nbytes, ttc_dtype_ir_name(t->dtype), (long long)numel, want);
        if (want && !a->tensor->data) return NODE_FAIL(n, "%s", "tensor constant has no data");
        return TTC_OK;
    }
    default: ok = false;
    }
    if (!ok) return NODE_FAIL(n, "value attribute of kind %d does not match the output type", (int)a->kind);
    if ((a->kind == TTC_ATTR_INTS || a->kind == TTC_ATTR_BOOLS) && (a->n < 0 || (a->n && !a->ints)))
        return NODE_FAIL(n, "%s", "list constant without elements");
    if (a->kind == TTC_ATTR_FLOATS && (a->n < 0 || (a->n && !a->floats)))
        return NODE_FAIL(n, "%s", "list constant without elements");
    return TTC_OK;
}

static void type_str(const ttc_graph *g, const ttc_type *t, char *buf, size_t n) {
    size_t o = 0;
    if (t->kind != TTC_TYPE_TENSOR) { snprintf(buf, n, "kind %d", (int)t->kind); return; }
    o += (size_t)snprintf(buf + o, n - o, "%s(", ttc_dtype_ir_name(t->dtype));
    for (int i = 0; i < t->rank && i < TTC_MAX_RANK && o < n; i++) {
        ttc_dim d = t->dims[i];
        if (d.sym < 0) o += (size_t)snprintf(buf + o, n - o, "%s%lld", i ? ", " : "", (long long)d.add);
        else o += (size_t)snprintf(buf + o, n - o, "%s%lld*%s%+lld", i ? ", " : "", (long long)d.mul,
                                   d.sym < g->n_syms ? g->syms[d.sym].name : "?", (long long)d.add);
    }
    if (o < n) snprintf(buf + o, n - o, ")");
}

static ttc_status check_shape(const ttc_graph *g, const ttc_node *n) {
    if (n->op == TTC_OP_OPAQUE || n->n_outputs > 16) return TTC_OK;
    ttc_type want[16];
    memset(want, 0, sizeof want);
    ttc_status s = ttc_infer_types(g, n, want, n->n_outputs);
    if (s == TTC_ERR_UNSUPPORTED) return TTC_OK;
    if (s != TTC_OK) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", ttc_last_error());
        return NODE_FAIL(n, "inputs are ill-typed: %s", msg);
    }
    for (int i = 0; i < n->n_outputs; i++) {
        const ttc_type *got = &n->outputs[i]->type;
        if (got->kind == TTC_TYPE_TENSOR && want[i].kind == TTC_TYPE_TENSOR && got->rank < 0) continue;
        /* a list the importer typed from its schema (Optional[Tensor][] -> Any[]) holds what
         * the shape function sees; Any[] is the wider type, not a different one */
        if (got->kind == TTC_TYPE_LIST && want[i].kind == TTC_TYPE_LIST && got->elem == TTC_TYPE_ANY) continue;
        if (!ttc_type_eq(got, &want[i])) {
            char a[256], b[256];
            type_str(g, got, a, sizeof a);
            type_str(g, &want[i], b, sizeof b);
            return NODE_FAIL(n, "output %d has type %s, its shape function gives %s", i, a, b);
        }
    }
    return TTC_OK;
}

ttc_status ttc_graph_verify(const ttc_graph *g) {
    if (!g) return ttc_fail(TTC_ERR_INVALID_ARG, "verify: NULL graph");
    ttc_status st = TTC_OK;
    int32_t nv = g->n_all_values;
    /* defined[v->id]: 1 = graph input, 2 = output of a node seen so far */
    uint8_t *defined = ttc_calloc((size_t)nv + 1, 1);
    int32_t *uses = ttc_calloc((size_t)nv + 1, sizeof(int32_t));
    ttc_strmap names = {0};
    if (!defined || !uses) { st = TTC_ERR_NOMEM; goto done; }

    for (int i = 0; i < g->n_syms; i++) {
        const ttc_symbol *s = &g->syms[i];
        if (!is_ident(s->name)) { st = ttc_fail(TTC_ERR_VERIFY, "symbol #%d has an invalid name", i); goto done; }
        for (int j = 0; j < i; j++)
            if (!strcmp(g->syms[j].name, s->name)) { st = ttc_fail(TTC_ERR_VERIFY, "symbol %s defined twice", s->name); goto done; }
        if (s->min < 0 || s->min > s->opt || s->opt > s->max) {
            st = ttc_fail(TTC_ERR_VERIFY, "symbol %s: need 0 <= min <= opt <= max", s->name);
            goto done;
        }
    }
#define OWNED(v) ((v) && (v)->id >= 0 && (v)->id < nv && g->all_values[(v)->id] == (v))
#define NAME_OK(v)                                                                                  \
    do {                                                                                            \
        if (!(v)->name || !*(v)->name) { st = ttc_fail(TTC_ERR_VERIFY, "value #%d has no name", (v)->id); goto done; } \
        if (ttc_strmap_get(&names, (v)->name)) {                                                    \
            st = ttc_fail(TTC_ERR_VERIFY, "value name %%%s is used twice", (v)->name);              \
            goto done;                                                                              \
        }                                                                                           \
        if ((st = ttc_strmap_put(&names, (v)->name, (void *)(v)))) goto done;                        \
    } while (0)

    for (int i = 0; i < g->n_inputs; i++) {
        ttc_value *v = g->inputs[i];
        if (!OWNED(v)) { st = ttc_fail(TTC_ERR_VERIFY, "graph input %d is not a value of this graph", i); goto done; }
        if (v->producer) { st = ttc_fail(TTC_ERR_VERIFY, "graph input %%%s has a producer", v->name); goto done; }
        if (defined[v->id]) { st = ttc_fail(TTC_ERR_VERIFY, "graph input %%%s listed twice", v->name); goto done; }
        NAME_OK(v);
        if ((st = check_type(g, &v->type, v->name))) goto done;
        defined[v->id] = 1;
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const ttc_node *n = g->nodes[i];
        if (!n) { st = ttc_fail(TTC_ERR_VERIFY, "node slot %d is NULL", i); goto done; }
        if (n->dead) { st = NODE_FAIL(n, "%s", "erased node still in the node list"); goto done; }
        if (n->order != i) { st = NODE_FAIL(n, "order is %d but it sits at %d", n->order, i); goto done; }
        if (!n->op_name || !*n->op_name) { st = ttc_fail(TTC_ERR_VERIFY, "node at %d has no op name", i); goto done; }
        if ((unsigned)n->op > TTC_OP_OPAQUE) { st = NODE_FAIL(n, "invalid op id %d", (int)n->op); goto done; }
        const ttc_op_info *info = ttc_op_info_get(n->op);
        if (info && strcmp(info->name, n->op_name)) { st = NODE_FAIL(n, "op id says %s", info->name); goto done; }
        if (!info && ttc_op_lookup(n->op_name) != TTC_OP_OPAQUE &&
            ttc_op_arity_ok(ttc_op_info_get(ttc_op_lookup(n->op_name)), n->n_inputs, n->n_outputs)) { st = NODE_FAIL(n, "%s", "known op marked opaque"); goto done; }
        if (n->n_inputs < 0 || n->n_outputs < 0 || (n->n_inputs && !n->inputs) || (n->n_outputs && !n->outputs)) {
            st = NODE_FAIL(n, "%s", "bad input/output arrays");
            goto done;
        }
        if (info && info->n_inputs >= 0 && n->n_inputs != info->n_inputs) {
            st = NODE_FAIL(n, "has %d inputs, the op takes %d", n->n_inputs, info->n_inputs);
            goto done;
        }
        if (info && info->n_outputs >= 0 && n->n_outputs != info->n_outputs) {
            st = NODE_FAIL(n, "has %d outputs, the op gives %d", n->n_outputs, info->n_outputs);
            goto done;
        }
        for (int j = 0; j < n->n_inputs; j++) {
            const ttc_value *v = n->inputs[j];
            if (!OWNED(v)) { st = NODE_FAIL(n, "input %d is not a value of this graph", j); goto done; }
            if (v->producer && v->producer->dead) {
                st = NODE_FAIL(n, "input %d (%%%s) comes from an erased node", j, v->name);
                goto done;
            }
            if (!defined[v->id]) {
                st = NODE_FAIL(n, "input %d (%%%s) is used before it is defined (or never defined)", j, v->name);
                goto done;
            }
            uses[v->id]++;
        }
        for (int j = 0; j < n->n_outputs; j++) {
            ttc_value *v = n->outputs[j];
            if (!OWNED(v)) { st = NODE_FAIL(n, "output %d is not a value of this graph", j); goto done; }
            if (v->producer != n || v->output_index != j) {
                st = NODE_FAIL(n, "output %d (%%%s) does not point back to its producer", j, v->name);
                goto done;
            }
            if (defined[v->id]) { st = NODE_FAIL(n, "output %%%s is defined twice", v->name); goto done; }
            NAME_OK(v);
            if ((st = check_type(g, &v->type, v->name))) goto done;
            defined[v->id] = 2;
        }
        for (int j = 0; j < n->n_attrs; j++)
            if (!n->attrs[j].name) { st = NODE_FAIL(n, "attribute %d has no name", j); goto done; }
        if (n->op == TTC_OP_CONSTANT && (st = check_constant(n))) goto done;
    }
    for (int i = 0; i < g->n_outputs; i++) {
        const ttc_value *v = g->outputs[i];
        if (!OWNED(v) || !defined[v->id]) {
            st = ttc_fail(TTC_ERR_VERIFY, "graph output %d (%%%s) is not defined", i, OWNED(v) && v->name ? v->name : "?");
            goto done;
        }
    }
    /* users lists: for every defined value, the multiset of users equals the uses */
    for (int32_t id = 0; id < nv; id++) {
        if (!defined[id]) continue;
        const ttc_value *v = g->all_values[id];
        if (v->n_users != uses[id]) {
            st = ttc_fail(TTC_ERR_VERIFY, "value %%%s lists %d users but is used %d times", v->name, v->n_users, uses[id]);
            goto done;
        }
        for (int u = 0; u < v->n_users; u++) {
            const ttc_node *un = v->users[u];
            if (!un || un->dead || un->order < 0 || un->order >= g->n_nodes || g->nodes[un->order] != un) {
                st = ttc_fail(TTC_ERR_VERIFY, "value %%%s lists a user that is not in the graph", v->name);
                goto done;
            }
            int listed = 0, used = 0;
            for (int k = 0; k < v->n_users; k++) listed += v->users[k] == un;
            for (int k = 0; k < un->n_inputs; k++) used += un->inputs[k] == v;
            if (listed != used) {
                st = NODE_FAIL(un, "uses %%%s %d times but is listed %d times as its user", v->name, used, listed);
                goto done;
            }
        }
    }
    for (int i = 0; i < g->n_nodes; i++)
        if ((st = check_shape(g, g->nodes[i]))) goto done;
done:
#undef OWNED
#undef NAME_OK
    free(defined);
    free(uses);
    ttc_strmap_free(&names);
    return st;
}
