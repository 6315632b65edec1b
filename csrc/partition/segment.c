/*
 * Segmentation strategies over per-node targets: the naive linear scan and the
 * dependency-aware ("fast") scan of seeds/000, plus the merge of adjacent segments and
 * the construction of each segment's inputs, outputs and constants.
 */
#include "partition.h"

#include <stdlib.h>
#include <string.h>

/* Views are free in torch (an alias of their input), except a reshape of a strided view
 * (a permuted, broadcast or inner-sliced tensor), which copies there as in an engine: that is
 * the work of pixel_shuffle, a flatten after a transpose, a repeat (expand + reshape). */
bool ttc_part_is_compute(const ttc_node *n) {
    const ttc_op_info *info = ttc_op_info_get(n->op);
    if (!info) return true; /* opaque ops compute something */
    if (info->flags & TTC_OPF_PRIM) return false;
    if (!(info->flags & TTC_OPF_VIEW)) return true;
    bool reshape = n->op == TTC_OP_VIEW || n->op == TTC_OP_RESHAPE || n->op == TTC_OP_UNSAFE_VIEW ||
                   n->op == TTC_OP_FLATTEN;
    return reshape && n->n_inputs > 0 && ttc_value_is_strided_view(n->inputs[0]);
}

/* Position of the producer of v in g->nodes, or -1 for graph inputs / constants. */
static inline int32_t dep_of(const ttc_part_state *st, const ttc_value *v) {
    if (!v->producer) return -1;
    int32_t p = v->producer->order;
    return st->constlike[p] ? -1 : p;
}

static ttc_status alloc_segs(ttc_part_state *st, int32_t cap) {
    free(st->seg_nomerge);
    st->seg_nomerge = ttc_calloc((size_t)(cap ? cap : 1), sizeof(bool));
    st->n_segs = 0;
    return st->seg_nomerge ? TTC_OK : TTC_ERR_NOMEM;
}

ttc_status ttc_part_segment_naive(ttc_part_state *st) {
    TTC_TRY(alloc_segs(st, st->n));
    int32_t prev = -2;
    bool prev_iso = false;
    for (int32_t i = 0; i < st->n; i++) {
        if (st->constlike[i]) { st->seg[i] = -1; continue; }
        if (st->target[i] != prev || st->isolate[i] || prev_iso) {
            st->seg_nomerge[st->n_segs] = st->isolate[i];
            st->n_segs++;
        }
        st->seg[i] = st->n_segs - 1;
        prev = st->target[i];
        prev_iso = st->isolate[i];
    }
    return TTC_OK;
}

/*
 * One open block per target. A node joins the open block of its target; before that,
 * every open block of another target holding one of its producers is finalised (appended
 * to the segment list). Invariant: an open block's nodes depend only on finalised
 * segments and on the block itself, so finalisation order is a topological order.
 */
ttc_status ttc_part_segment_fast(ttc_part_state *st) {
    ttc_status rc = TTC_ERR_NOMEM;
    int32_t k = st->n_targets;
    int32_t *blk = ttc_malloc(sizeof(int32_t) * (size_t)(st->n ? st->n : 1));
    int32_t *blk_seg = ttc_malloc(sizeof(int32_t) * (size_t)(st->n + 1));
    int32_t *blk_tgt = ttc_malloc(sizeof(int32_t) * (size_t)(st->n + 1));
    int32_t *open = ttc_malloc(sizeof(int32_t) * (size_t)k);
    if (!blk || !blk_seg || !blk_tgt || !open || alloc_segs(st, st->n)) goto done;
    int32_t n_blk = 0;
    for (int t = 0; t < k; t++) open[t] = -1;
#define FINALISE(b) do { int32_t _b = (b); blk_seg[_b] = st->n_segs++; \
                         if (open[blk_tgt[_b]] == _b) open[blk_tgt[_b]] = -1; } while (0)
    for (int32_t i = 0; i < st->n; i++) {
        if (st->constlike[i]) { blk[i] = -1; continue; }
        const ttc_node *nd = st->g->nodes[i];
        int32_t t = st->target[i];
        for (int j = 0; j < nd->n_inputs; j++) {
            int32_t p = dep_of(st, nd->inputs[j]);
            if (p < 0) continue;
            int32_t b = blk[p];
            if (blk_seg[b] < 0 && (blk_tgt[b] != t || st->isolate[i])) FINALISE(b);
        }
        if (st->isolate[i]) {
            blk_tgt[n_blk] = t;
            blk_seg[n_blk] = -1;
            blk[i] = n_blk;
            st->seg_nomerge[st->n_segs] = true;
            FINALISE(n_blk);
            n_blk++;
            continue;
        }
        if (open[t] < 0) {
            blk_tgt[n_blk] = t;
            blk_seg[n_blk] = -1;
            open[t] = n_blk++;
        }
        blk[i] = open[t];
    }
    for (int t = 0; t < k; t++)
        if (open[t] >= 0) FINALISE(open[t]);
#undef FINALISE
    for (int32_t i = 0; i < st->n; i++) st->seg[i] = blk[i] < 0 ? -1 : blk_seg[blk[i]];
    rc = TTC_OK;
done:
    free(blk);
    free(blk_seg);
    free(blk_tgt);
    free(open);
    return rc;
}

ttc_status ttc_part_merge_adjacent(ttc_part_state *st) {
    int32_t ns = st->n_segs;
    int32_t *tgt = ttc_malloc(sizeof(int32_t) * (size_t)(ns ? ns : 1));
    int32_t *map = ttc_malloc(sizeof(int32_t) * (size_t)(ns ? ns : 1));
    bool *nm = ttc_calloc((size_t)(ns ? ns : 1), sizeof(bool));
    if (!tgt || !map || !nm) { free(tgt); free(map); free(nm); return TTC_ERR_NOMEM; }
    for (int32_t s = 0; s < ns; s++) tgt[s] = -1;
    for (int32_t i = 0; i < st->n; i++)
        if (st->seg[i] >= 0) tgt[st->seg[i]] = st->target[i];
    int32_t out = 0, prev = -1;
    for (int32_t s = 0; s < ns; s++) {
        if (tgt[s] < 0) { map[s] = -1; continue; } /* empty */
        if (prev >= 0 && tgt[prev] == tgt[s] && !st->seg_nomerge[prev] && !st->seg_nomerge[s]) {
            map[s] = map[prev];
        } else {
            map[s] = out;
            nm[out] = st->seg_nomerge[s];
            out++;
        }
        prev = s;
    }
    for (int32_t i = 0; i < st->n; i++)
        if (st->seg[i] >= 0) st->seg[i] = map[st->seg[i]];
    free(st->seg_nomerge);
    st->seg_nomerge = nm;
    st->n_segs = out;
    free(tgt);
    free(map);
    return TTC_OK;
}

static ttc_status push(void **arr, int32_t *n, int32_t *cap, void *item) {
    TTC_TRY(ttc_grow(arr, cap, *n + 1, sizeof(void *)));
    ((void **)*arr)[(*n)++] = item;
    return TTC_OK;
}

/* Adds constant node c (and, for lists of constants, what it is built from) to seg. */
static ttc_status add_const(ttc_part_state *st, ttc_segment *sg, int32_t *cap, int32_t *stamp,
                            int32_t sid, ttc_node *c) {
    if (stamp[c->order] == sid) return TTC_OK;
    stamp[c->order] = sid;
    for (int j = 0; j < c->n_inputs; j++)
        if (c->inputs[j]->producer) TTC_TRY(add_const(st, sg, cap, stamp, sid, c->inputs[j]->producer));
    const ttc_attr *a = ttc_node_attr(c, "value");
    if (a && a->kind == TTC_ATTR_TENSOR && a->tensor) sg->weight_bytes += (int64_t)a->tensor->nbytes;
    return push((void **)&sg->constants, &sg->n_constants, cap, c);
}

static int cmp_node_order(const void *a, const void *b) {
    const ttc_node *x = *(ttc_node *const *)a, *y = *(ttc_node *const *)b;
    return (x->order > y->order) - (x->order < y->order);
}

ttc_status ttc_part_build_segments(ttc_part_state *st, ttc_partition_result *r) {
    const ttc_graph *g = st->g;
    ttc_status rc = TTC_ERR_NOMEM;
    int32_t ns = st->n_segs;
    int32_t *vstamp = ttc_malloc(sizeof(int32_t) * (size_t)(g->n_all_values + 1));
    int32_t *cstamp = ttc_malloc(sizeof(int32_t) * (size_t)(st->n + 1));
    int32_t *count = ttc_calloc((size_t)(ns + 1), sizeof(int32_t));
    bool *isout = ttc_calloc((size_t)(g->n_all_values + 1), sizeof(bool));
    r->segments = ttc_calloc((size_t)(ns ? ns : 1), sizeof(ttc_segment));
    if (!vstamp || !cstamp || !count || !isout || !r->segments) goto done;
    for (int32_t i = 0; i < g->n_outputs; i++) isout[g->outputs[i]->id] = true;
    r->n_segments = ns;
    for (int32_t i = 0; i < g->n_all_values; i++) vstamp[i] = -1;
    for (int32_t i = 0; i < st->n; i++) cstamp[i] = -1;
    for (int32_t i = 0; i < st->n; i++)
        if (st->seg[i] >= 0) count[st->seg[i]]++;
    for (int32_t s = 0; s < ns; s++) {
        r->segments[s].nodes = ttc_malloc(sizeof(ttc_node *) * (size_t)(count[s] ? count[s] : 1));
        if (!r->segments[s].nodes) goto done;
        r->segments[s].do_not_merge = st->seg_nomerge[s];
        r->segments[s].target = -1;
    }
    for (int32_t i = 0; i < st->n; i++) {
        int32_t s = st->seg[i];
        if (s < 0) continue;
        ttc_segment *sg = &r->segments[s];
        sg->nodes[sg->n_nodes++] = g->nodes[i];
        sg->target = st->target[i];
    }
    for (int32_t s = 0; s < ns; s++) {
        ttc_segment *sg = &r->segments[s];
        int32_t cap_in = 0, cap_out = 0, cap_c = 0;
        for (int32_t k = 0; k < sg->n_nodes; k++) {
            ttc_node *nd = sg->nodes[k];
            for (int j = 0; j < nd->n_inputs; j++) {
                ttc_value *v = nd->inputs[j];
                if (v->producer && st->constlike[v->producer->order]) {
                    if (add_const(st, sg, &cap_c, cstamp, s, v->producer)) goto done;
                    continue;
                }
                if (v->producer && st->seg[v->producer->order] == s) continue;
                if (vstamp[v->id] == s) continue;
                vstamp[v->id] = s;
                if (push((void **)&sg->inputs, &sg->n_inputs, &cap_in, v)) goto done;
            }
            for (int j = 0; j < nd->n_outputs; j++) {
                ttc_value *v = nd->outputs[j];
                bool out = isout[v->id];
                for (int u = 0; u < v->n_users && !out; u++)
                    out = st->seg[v->users[u]->order] != s;
                if (out && push((void **)&sg->outputs, &sg->n_outputs, &cap_out, v)) goto done;
            }
        }
        if (sg->n_constants > 1) qsort(sg->constants, (size_t)sg->n_constants, sizeof(ttc_node *), cmp_node_order);
    }
    rc = TTC_OK;
done:
    free(vstamp);
    free(cstamp);
    free(count);
    free(isout);
    return rc;
}
