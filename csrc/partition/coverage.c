/*
 * Coverage report, like Torch-TensorRT's get_graph_converter_support: how many of the
 * graph's non-constant nodes the backend can take, per op, and why each other one falls
 * back. Capability only: min_block_size and segmentation do not enter.
 */
#include "partition.h"

#include <stdlib.h>
#include <string.h>

void ttc_coverage_free(ttc_coverage *c) {
    if (!c) return;
    for (int32_t i = 0; i < c->n_ops; i++) free(c->ops[i].op);
    free(c->ops);
    for (int32_t i = 0; i < c->n_fallback; i++) free(c->reasons[i]);
    free(c->reasons);
    free(c->fallback);
    free(c);
}

static int cmp_op(const void *a, const void *b) {
    return strcmp(((const ttc_coverage_op *)a)->op, ((const ttc_coverage_op *)b)->op);
}

ttc_status ttc_partition_coverage(const ttc_graph *g, const ttc_partition_settings *s, ttc_coverage **out) {
    *out = NULL;
    ttc_coverage *c = ttc_calloc(1, sizeof *c);
    bool *constlike = ttc_calloc((size_t)(g->n_nodes ? g->n_nodes : 1), sizeof(bool));
    int32_t *op_slot = ttc_malloc(sizeof(int32_t) * (TTC_OP_COUNT + 1));
    int32_t cap_ops = 0, cap_fb = 0;
    ttc_status rc = TTC_ERR_NOMEM;
    if (!c || !constlike || !op_slot) goto fail;
    for (int i = 0; i <= TTC_OP_COUNT; i++) op_slot[i] = -1;
    for (int32_t i = 0; i < g->n_nodes; i++) {
        const ttc_node *nd = g->nodes[i];
        bool all_const = true;
        for (int j = 0; j < nd->n_inputs; j++) {
            const ttc_node *p = nd->inputs[j]->producer;
            if (!p || p->order < 0 || p->order >= g->n_nodes || !constlike[p->order]) all_const = false;
        }
        constlike[i] = nd->op == TTC_OP_CONSTANT ||
                       ((nd->op == TTC_OP_LIST_CONSTRUCT || nd->op == TTC_OP_TUPLE_CONSTRUCT) && all_const);
        if (constlike[i]) continue;
        char *why = NULL;
        bool ok;
        if (s->strategy == TTC_PARTITION_HIERARCHICAL) {
            ok = false;
            for (int32_t b = 0; b < s->n_backends && !ok; b++) {
                free(why);
                why = NULL;
                ok = ttc_node_capable_on(g, nd, s, &s->backends[b], &why);
                if (!ok && !why) goto fail;
            }
            if (!ok && !why && !(why = ttc_strdup("no backends given"))) goto fail;
        } else {
            ok = ttc_node_capable(g, nd, s, &why);
            if (!ok && !why) goto fail;
        }
        /* per-op row: known ops by id, opaque ones by name (linear search; they are few) */
        int32_t slot = nd->op < TTC_OP_COUNT ? op_slot[nd->op] : -1;
        if (slot < 0)
            for (int32_t k = 0; k < c->n_ops && nd->op == TTC_OP_OPAQUE; k++)
                if (!strcmp(c->ops[k].op, nd->op_name)) { slot = k; break; }
        if (slot < 0) {
            if (ttc_grow((void **)&c->ops, &cap_ops, c->n_ops + 1, sizeof(ttc_coverage_op))) { free(why); goto fail; }
            slot = c->n_ops++;
            memset(&c->ops[slot], 0, sizeof c->ops[slot]);
            if (!(c->ops[slot].op = ttc_strdup(nd->op_name))) { free(why); goto fail; }
            if (nd->op < TTC_OP_COUNT) op_slot[nd->op] = slot;
        }
        c->ops[slot].total++;
        c->total++;
        if (ok) {
            c->ops[slot].supported++;
            c->supported++;
            free(why);
            continue;
        }
        if (ttc_grow((void **)&c->fallback, &cap_fb, c->n_fallback + 1, sizeof(ttc_node *))) { free(why); goto fail; }
        int32_t cap_r = cap_fb;
        ttc_node **fb = c->fallback;
        char **rs = ttc_realloc(c->reasons, sizeof(char *) * (size_t)cap_r);
        if (!rs) { free(why); goto fail; }
        c->reasons = rs;
        fb[c->n_fallback] = (ttc_node *)nd;
        c->reasons[c->n_fallback++] = why;
    }
    if (c->n_ops > 1) qsort(c->ops, (size_t)c->n_ops, sizeof(ttc_coverage_op), cmp_op);
    free(constlike);
    free(op_slot);
    *out = c;
    return TTC_OK;
fail:
    free(constlike);
    free(op_slot);
    ttc_coverage_free(c);
    return rc;
}
