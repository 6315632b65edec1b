/*
 * Global partitioning: the fewest segments for a two-target assignment.
 *
 * Any valid partition, once adjacent same-target segments are merged, is a sequence of
 * segments whose targets alternate. Give every node the earliest stage it can take in
 * such a sequence (ASAP): a node's stage is at least its producers' stages, one more
 * when the target changes, and of the parity of its target. By induction every valid
 * alternating sequence puts each node at or after its ASAP stage, so ASAP needs the
 * fewest stages; trying both starting targets makes it optimal. Each stage is a convex
 * group (edges only go forward), usually disconnected, as in seeds/000's {add, mul, div}.
 * Linear in nodes + edges.
 */
#include "partition.h"

#include <stdlib.h>

static int32_t stage_plan(const ttc_part_state *st, int32_t start, int32_t *stage) {
    int32_t max_stage = -1;
    for (int32_t i = 0; i < st->n; i++) {
        if (st->constlike[i]) { stage[i] = -1; continue; }
        const ttc_node *nd = st->g->nodes[i];
        int32_t t = st->target[i] ? 1 : 0;
        int32_t lo = 0;
        for (int j = 0; j < nd->n_inputs; j++) {
            const ttc_value *v = nd->inputs[j];
            if (!v->producer) continue;
            int32_t p = v->producer->order;
            if (st->constlike[p]) continue;
            int32_t need = stage[p] + ((st->target[p] ? 1 : 0) != t);
            if (need > lo) lo = need;
        }
        /* stage s holds target start ^ (s & 1) */
        if ((start ^ (lo & 1)) != t) lo++;
        stage[i] = lo;
        if (lo > max_stage) max_stage = lo;
    }
    return max_stage;
}

static int32_t count_used(const ttc_part_state *st, const int32_t *stage, int32_t max_stage, int32_t *map) {
    for (int32_t s = 0; s <= max_stage; s++) map[s] = -1;
    for (int32_t i = 0; i < st->n; i++)
        if (stage[i] >= 0) map[stage[i]] = 0;
    int32_t k = 0;
    for (int32_t s = 0; s <= max_stage; s++)
        if (map[s] == 0) map[s] = k++;
    return k;
}

ttc_status ttc_part_segment_global(ttc_part_state *st) {
    for (int32_t i = 0; i < st->n; i++)
        if (st->isolate[i]) return ttc_part_segment_fast(st); /* control flow keeps its own segments */
    size_t sz = sizeof(int32_t) * (size_t)(st->n + 2);
    int32_t *a = ttc_malloc(sz), *b = ttc_malloc(sz), *ma = ttc_malloc(sz), *mb = ttc_malloc(sz);
    ttc_status rc = TTC_ERR_NOMEM;
    if (!a || !b || !ma || !mb) goto done;
    int32_t max_a = stage_plan(st, 0, a), max_b = stage_plan(st, 1, b);
    int32_t ka = count_used(st, a, max_a, ma), kb = count_used(st, b, max_b, mb);
    int32_t *stage = ka <= kb ? a : b, *map = ka <= kb ? ma : mb;
    int32_t k = ka <= kb ? ka : kb;
    free(st->seg_nomerge);
    st->seg_nomerge = ttc_calloc((size_t)(k ? k : 1), sizeof(bool));
    if (!st->seg_nomerge) goto done;
    st->n_segs = k;
    for (int32_t i = 0; i < st->n; i++) st->seg[i] = stage[i] < 0 ? -1 : map[stage[i]];
    rc = TTC_OK;
done:
    free(a);
    free(b);
    free(ma);
    free(mb);
    return rc;
}
