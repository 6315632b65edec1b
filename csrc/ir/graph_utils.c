/*
 * Graph utilities: topological order, extraction of a node set into a standalone graph
 * (the unit an engine is built from), clone, and structural equality.
 *
 *   ttc_graph *sub; ttc_value **ins, **outs; int32_t ni, no;
 *   TTC_TRY(ttc_graph_extract(g, seg_nodes, n, &sub, &ins, &ni, &outs, &no));
 */
#include "ir.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A node is live in g when it sits in g->nodes at its recorded order. */
static bool node_live(const ttc_graph *g, const ttc_node *n) {
    return n && !n->dead && n->order >= 0 && n->order < g->n_nodes && g->nodes[n->order] == n;
}

/* ---- topological order (Kahn's algorithm, ready nodes taken in program order) ---- */
static void heap_push(int32_t *h, int32_t *n, int32_t v) {
    int32_t i = (*n)++;
    h[i] = v;
    while (i > 0 && h[(i - 1) / 2] > h[i]) {
        int32_t t = h[i]; h[i] = h[(i - 1) / 2]; h[(i - 1) / 2] = t;
        i = (i - 1) / 2;
    }
}

static int32_t heap_pop(int32_t *h, int32_t *n) {
    int32_t top = h[0];
    h[0] = h[--(*n)];
    for (int32_t i = 0;;) {
        int32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < *n && h[l] < h[m]) m = l;
        if (r < *n && h[r] < h[m]) m = r;
        if (m == i) break;
        int32_t t = h[i]; h[i] = h[m]; h[m] = t;
        i = m;
    }
    return top;
}

ttc_status ttc_graph_topo_order(const ttc_graph *g, ttc_node ***out) {
    *out = NULL;
    int32_t n = g->n_nodes;
    ttc_status st = TTC_OK;
    int32_t *indeg = ttc_calloc((size_t)n + 1, sizeof(int32_t));
    int32_t *succ_start = ttc_calloc((size_t)n + 2, sizeof(int32_t));
    int32_t *heap = ttc_calloc((size_t)n + 1, sizeof(int32_t));
    int32_t *succ = NULL;
    ttc_node **res = ttc_calloc((size_t)n + 1, sizeof(ttc_node *));
    if (!indeg || !succ_start || !heap || !res) { st = TTC_ERR_NOMEM; goto done; }
    for (int32_t i = 0; i < n; i++)
        if (!node_live(g, g->nodes[i]) || g->nodes[i]->order != i) {
            st = ttc_fail(TTC_ERR_VERIFY, "topo_order: node list is inconsistent at position %d", i);
            goto done;
        }
    /* Edges producer -> consumer, one per input slot, in CSR form. */
    int64_t n_edges = 0;
    for (int32_t i = 0; i < n; i++) {
        const ttc_node *c = g->nodes[i];
        for (int j = 0; j < c->n_inputs; j++) {
            const ttc_value *v = c->inputs[j];
            if (v && v->producer && node_live(g, v->producer)) { succ_start[v->producer->order + 1]++; n_edges++; }
        }
    }
    for (int32_t i = 0; i < n; i++) succ_start[i + 1] += succ_start[i];
    succ = ttc_calloc((size_t)n_edges + 1, sizeof(int32_t));
    if (!succ) { st = TTC_ERR_NOMEM; goto done; }
    int32_t *fill = heap; /* reuse as a cursor array before the heap is needed */
    for (int32_t i = 0; i < n; i++) fill[i] = succ_start[i];
    for (int32_t i = 0; i < n; i++) {
        const ttc_node *c = g->nodes[i];
        for (int j = 0; j < c->n_inputs; j++) {
            const ttc_value *v = c->inputs[j];
            if (v && v->producer && node_live(g, v->producer)) {
                succ[fill[v->producer->order]++] = i;
                indeg[i]++;
            }
        }
    }
    int32_t hn = 0, done_n = 0;
    for (int32_t i = 0; i < n; i++)
        if (!indeg[i]) heap_push(heap, &hn, i);
    while (hn) {
        int32_t i = heap_pop(heap, &hn);
        res[done_n++] = g->nodes[i];
        for (int32_t e = succ_start[i]; e < succ_start[i + 1]; e++)
            if (--indeg[succ[e]] == 0) heap_push(heap, &hn, succ[e]);
    }
    if (done_n != n) {
        for (int32_t i = 0; i < n; i++)
            if (indeg[i]) {
                const ttc_node *c = g->nodes[i];
                st = ttc_fail(TTC_ERR_VERIFY, "graph has a cycle through node %s (%s)",
                              c->name ? c->name : (c->n_outputs ? c->outputs[0]->name : "?"), c->op_name);
                break;
            }
        goto done;
    }
    *out = res;
    res = NULL;
done:
    free(indeg);
    free(succ_start);
    free(heap);
    free(succ);
    free(res);
    return st;
}

ttc_status ttc_graph_toposort(ttc_graph *g) {
    ttc_node **order;
    TTC_TRY(ttc_graph_topo_order(g, &order));
    for (int32_t i = 0; i < g->n_nodes; i++) {
        g->nodes[i] = order[i];
        order[i]->order = i;
    }
    free(order);
    return TTC_OK;
}

/* ---- copying nodes between graphs ---- */
static ttc_status copy_symbols(const ttc_graph *g, ttc_graph *ng) {
    for (int i = 0; i < g->n_syms; i++)
        if (ttc_graph_add_symbol(ng, g->syms[i].name, g->syms[i].min, g->syms[i].opt, g->syms[i].max) < 0)
            return TTC_ERR_INVALID_ARG;
    return TTC_OK;
}

static ttc_status set_value_name(ttc_value *v, const char *name) {
    char *s = ttc_strdup(name);
    if (!s) return TTC_ERR_NOMEM;
    free(v->name);
    v->name = s;
    return TTC_OK;
}

static ttc_status dup_str(char **dst, const char *src) {
    if (!src) return TTC_OK;
    if (!(*dst = ttc_strdup(src))) return TTC_ERR_NOMEM;
    return TTC_OK;
}

/* Appends a copy of n to ng; map[old value id] gives the new values (inputs must be mapped). */
static ttc_status copy_node(ttc_graph *ng, const ttc_graph *g, const ttc_node *n, ttc_value **map) {
    ttc_value **ins = ttc_calloc((size_t)n->n_inputs + 1, sizeof(ttc_value *));
    ttc_type *types = ttc_calloc((size_t)n->n_outputs + 1, sizeof(ttc_type));
    ttc_status st = TTC_OK;
    if (!ins || !types) { st = TTC_ERR_NOMEM; goto done; }
    for (int i = 0; i < n->n_inputs; i++) {
        const ttc_value *v = n->inputs[i];
        if (!v || v->id < 0 || v->id >= g->n_all_values || !(ins[i] = map[v->id])) {
            st = ttc_fail(TTC_ERR_VERIFY, "copying %s: input %d (%%%s) is not defined before it", n->op_name, i,
                          v && v->name ? v->name : "?");
            goto done;
        }
    }
    for (int i = 0; i < n->n_outputs; i++) types[i] = n->outputs[i]->type;
    ttc_node *c = ttc_graph_append_node(ng, n->op_name, ins, n->n_inputs, types, n->n_outputs, n->name);
    if (!c) { st = TTC_ERR_NOMEM; goto done; }
    for (int i = 0; i < n->n_outputs; i++) {
        if ((st = set_value_name(c->outputs[i], n->outputs[i]->name))) goto done;
        map[n->outputs[i]->id] = c->outputs[i];
    }
    for (int i = 0; i < n->n_attrs; i++)
        if ((st = ttc_node_set_attr(c, &n->attrs[i]))) goto done;
    if ((st = dup_str(&c->module_stack, n->module_stack)) || (st = dup_str(&c->reason, n->reason))) goto done;
    c->target = n->target;
    c->segment = n->segment;
done:
    free(ins);
    free(types);
    return st;
}

ttc_status ttc_graph_clone(const ttc_graph *g, ttc_graph **out) {
    *out = NULL;
    ttc_graph *ng = ttc_graph_new();
    ttc_value **map = ttc_calloc((size_t)g->n_all_values + 1, sizeof(ttc_value *));
    ttc_value **outs = ttc_calloc((size_t)g->n_outputs + 1, sizeof(ttc_value *));
    ttc_status st = TTC_OK;
    if (!ng || !map || !outs) { st = TTC_ERR_NOMEM; goto fail; }
    if ((st = copy_symbols(g, ng))) goto fail;
    for (int i = 0; i < g->n_inputs; i++) {
        ttc_value *v = ttc_graph_add_input(ng, g->inputs[i]->name, &g->inputs[i]->type);
        if (!v) { st = TTC_ERR_NOMEM; goto fail; }
        map[g->inputs[i]->id] = v;
    }
    for (int i = 0; i < g->n_nodes; i++)
        if ((st = copy_node(ng, g, g->nodes[i], map))) goto fail;
    for (int i = 0; i < g->n_outputs; i++) {
        const ttc_value *v = g->outputs[i];
        if (!v || v->id < 0 || v->id >= g->n_all_values || !(outs[i] = map[v->id])) {
            st = ttc_fail(TTC_ERR_VERIFY, "clone: graph output %d is not defined", i);
            goto fail;
        }
    }
    if ((st = ttc_graph_set_outputs(ng, outs, g->n_outputs))) goto fail;
    ng->next_name = g->next_name;
    free(map);
    free(outs);
    *out = ng;
    return TTC_OK;
fail:
    free(map);
    free(outs);
    ttc_graph_free(ng);
    return st;
}

/* A literal/weight, or a (nested) ListConstruct of those: rematerialisable in any graph. */
static bool const_value(const ttc_value *v, int depth) {
    const ttc_node *p = v ? v->producer : NULL;
    if (!p || depth > 8) return false;
    if (p->op == TTC_OP_CONSTANT) return p->n_inputs == 0;
    if (p->op != TTC_OP_LIST_CONSTRUCT) return false;
    for (int i = 0; i < p->n_inputs; i++)
        if (!const_value(p->inputs[i], depth + 1)) return false;
    return true;
}

/* Copies the producers of a const_value() into ng (each once, inputs first). */
static ttc_status copy_const(ttc_graph *ng, const ttc_graph *g, const ttc_value *v, ttc_value **map) {
    if (v->id < 0 || v->id >= g->n_all_values) return ttc_fail(TTC_ERR_VERIFY, "extract: bad constant value");
    if (map[v->id]) return TTC_OK;
    const ttc_node *p = v->producer;
    for (int i = 0; i < p->n_inputs; i++) {
        ttc_status st = copy_const(ng, g, p->inputs[i], map);
        if (st) return st;
    }
    return copy_node(ng, g, p, map);
}

ttc_status ttc_graph_extract(const ttc_graph *g, ttc_node *const *nodes, int32_t n, ttc_graph **out,
                             ttc_value ***in_map, int32_t *n_in_map, ttc_value ***out_map, int32_t *n_out_map) {
    *out = NULL;
    if (in_map) *in_map = NULL;
    if (out_map) *out_map = NULL;
    if (n_in_map) *n_in_map = 0;
    if (n_out_map) *n_out_map = 0;
    if (n < 0 || (n && !nodes)) return ttc_fail(TTC_ERR_INVALID_ARG, "extract: bad node list");
    ttc_status st = TTC_OK;
    ttc_graph *ng = ttc_graph_new();
    bool *in_set = ttc_calloc((size_t)g->n_nodes + 1, sizeof(bool));
    ttc_value **map = ttc_calloc((size_t)g->n_all_values + 1, sizeof(ttc_value *));
    ttc_value **ins = NULL, **outs = NULL, **new_outs = NULL;
    int32_t n_ins = 0, cap_ins = 0, n_outs = 0, cap_outs = 0;
    if (!ng || !in_set || !map) { st = TTC_ERR_NOMEM; goto fail; }
    for (int32_t i = 0; i < n; i++) {
        if (!node_live(g, nodes[i])) { st = ttc_fail(TTC_ERR_INVALID_ARG, "extract: node %d is not live in the graph", i); goto fail; }
        in_set[nodes[i]->order] = true;
    }
    if ((st = copy_symbols(g, ng))) goto fail;
    for (int32_t i = 0; i < g->n_nodes; i++) {
        if (!in_set[i]) continue;
        const ttc_node *nd = g->nodes[i];
        for (int j = 0; j < nd->n_inputs; j++) {
            ttc_value *v = nd->inputs[j];
            if (!v || v->id < 0 || v->id >= g->n_all_values) { st = ttc_fail(TTC_ERR_VERIFY, "extract: bad input on %s", nd->op_name); goto fail; }
            if (map[v->id]) continue;
            /* Constants travel with the nodes that use them: engines hold their weights. Lists
             * of constants too (aten.index's [None, idx_buffer] in swin/levit): the partitioner
             * treats them as constants and leaves them outside every segment, and as an engine
             * input a list has no binding. */
            if (const_value(v, 0)) {
                if ((st = copy_const(ng, g, v, map))) goto fail;
                continue;
            }
            ttc_value *nv = ttc_graph_add_input(ng, v->name, &v->type);
            if (!nv) { st = TTC_ERR_NOMEM; goto fail; }
            map[v->id] = nv;
            if ((st = ttc_grow((void **)&ins, &cap_ins, n_ins + 1, sizeof(ttc_value *)))) goto fail;
            ins[n_ins++] = v;
        }
        if ((st = copy_node(ng, g, nd, map))) goto fail;
    }
    for (int32_t i = 0; i < g->n_nodes; i++) {
        if (!in_set[i]) continue;
        const ttc_node *nd = g->nodes[i];
        for (int j = 0; j < nd->n_outputs; j++) {
            ttc_value *v = nd->outputs[j];
            bool escapes = ttc_value_is_graph_output(g, v);
            for (int u = 0; u < v->n_users && !escapes; u++)
                escapes = node_live(g, v->users[u]) && !in_set[v->users[u]->order];
            if (!escapes) continue;
            if ((st = ttc_grow((void **)&outs, &cap_outs, n_outs + 1, sizeof(ttc_value *)))) goto fail;
            outs[n_outs++] = v;
        }
    }
    new_outs = ttc_calloc((size_t)n_outs + 1, sizeof(ttc_value *));
    if (!new_outs) { st = TTC_ERR_NOMEM; goto fail; }
    for (int32_t i = 0; i < n_outs; i++) new_outs[i] = map[outs[i]->id];
    if ((st = ttc_graph_set_outputs(ng, new_outs, n_outs))) goto fail;
    free(new_outs);
    free(in_set);
    free(map);
    if (in_map) *in_map = ins; else free(ins);
    if (out_map) *out_map = outs; else free(outs);
    if (n_in_map) *n_in_map = n_ins;
    if (n_out_map) *n_out_map = n_outs;
    *out = ng;
    return TTC_OK;
fail:
    free(new_outs);
    free(in_set);
    free(map);
    free(ins);
    free(outs);
    ttc_graph_free(ng);
    return st;
}

/* ---- equality ---- */
static bool str_eq(const char *a, const char *b) { return (!a && !b) || (a && b && !strcmp(a, b)); }

static bool real_eq(double a, double b) {
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
    return a == b && signbit(a) == signbit(b);
}

static bool attr_eq(const ttc_attr *a, const ttc_attr *b) {
    if (!str_eq(a->name, b->name) || a->kind != b->kind) return false;
    switch (a->kind) {
    case TTC_ATTR_NONE: return true;
    case TTC_ATTR_INT:
    case TTC_ATTR_BOOL: return a->i == b->i;
    case TTC_ATTR_FLOAT: return real_eq(a->f, b->f);
    case TTC_ATTR_STR: return str_eq(a->s, b->s);
    case TTC_ATTR_INTS:
    case TTC_ATTR_BOOLS:
        if (a->n != b->n) return false;
        for (int i = 0; i < a->n; i++)
            if ((a->kind == TTC_ATTR_BOOLS ? !a->ints[i] != !b->ints[i] : a->ints[i] != b->ints[i])) return false;
        return true;
    case TTC_ATTR_FLOATS:
        if (a->n != b->n) return false;
        for (int i = 0; i < a->n; i++)
            if (!real_eq(a->floats[i], b->floats[i])) return false;
        return true;
    case TTC_ATTR_TENSOR:
        if (!str_eq(a->s, b->s) || !a->tensor != !b->tensor) return false;
        if (!a->tensor) return true;
        if (a->tensor->nbytes != b->tensor->nbytes) return false;
        return !a->tensor->nbytes || (a->tensor->data && b->tensor->data &&
                                      !memcmp(a->tensor->data, b->tensor->data, a->tensor->nbytes));
    default: return false;
    }
}

/* Values correspond when they have the same name and the same definition site. */
static bool value_ref_eq(const ttc_value *a, const ttc_value *b) {
    if (!a || !b) return a == b;
    if (!str_eq(a->name, b->name) || !a->producer != !b->producer) return false;
    if (a->producer && (a->producer->order != b->producer->order || a->output_index != b->output_index)) return false;
    return true;
}

static bool value_def_eq(const ttc_value *a, const ttc_value *b) {
    return a && b && str_eq(a->name, b->name) && ttc_type_eq(&a->type, &b->type);
}

bool ttc_graph_equal(const ttc_graph *a, const ttc_graph *b) {
    if (!a || !b) return a == b;
    if (a->n_syms != b->n_syms || a->n_inputs != b->n_inputs || a->n_nodes != b->n_nodes ||
        a->n_outputs != b->n_outputs)
        return false;
    for (int i = 0; i < a->n_syms; i++) {
        const ttc_symbol *x = &a->syms[i], *y = &b->syms[i];
        if (!str_eq(x->name, y->name) || x->min != y->min || x->opt != y->opt || x->max != y->max) return false;
    }
    for (int i = 0; i < a->n_inputs; i++)
        if (!value_def_eq(a->inputs[i], b->inputs[i])) return false;
    for (int i = 0; i < a->n_nodes; i++) {
        const ttc_node *x = a->nodes[i], *y = b->nodes[i];
        if (!x || !y) return false;
        if (!str_eq(x->op_name, y->op_name) || x->op != y->op || !str_eq(x->name, y->name) ||
            !str_eq(x->module_stack, y->module_stack) || x->n_inputs != y->n_inputs ||
            x->n_outputs != y->n_outputs || x->n_attrs != y->n_attrs)
            return false;
        for (int j = 0; j < x->n_inputs; j++)
            if (!value_ref_eq(x->inputs[j], y->inputs[j])) return false;
        for (int j = 0; j < x->n_outputs; j++)
            if (!value_def_eq(x->outputs[j], y->outputs[j])) return false;
        for (int j = 0; j < x->n_attrs; j++)
            if (!attr_eq(&x->attrs[j], &y->attrs[j])) return false;
    }
    for (int i = 0; i < a->n_outputs; i++)
        if (!value_ref_eq(a->outputs[i], b->outputs[i])) return false;
    return true;
}
