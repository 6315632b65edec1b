/*
 * Linears that read the same input with constant weights become one linear over the
 * concatenated weights (and biases), each old output a slice of its last dim:
 *   q = linear(x, Wq), k = linear(x, Wk), v = linear(x, Wv)
 *   ->  qkv = linear(x, cat(Wq, Wk, Wv)); q = qkv[..., :Nq]; k = qkv[..., Nq:Nq+Nk]; ...
 * (an attention layer's Q/K/V projections, an MLP's gate and up). A decode step's linears are
 * GEMVs, memory-bound and short: one call reads the same bytes with fewer launches and a
 * larger job to split among threads (on a GPU, one GEMM instead of three). The slices are
 * views of the fused output.
 *
 * Applies where every linear of the group has a static 2-D float weight constant of one dtype
 * and the same K, and either every one a 1-D constant bias of that dtype or none. The fused
 * linear goes where the group's first one was. Weight-only quantized linears
 * (torchtrt_c.wq_linear: compile(quantize=...), torchao's int8/int4 weight-only) fuse the same
 * way among themselves: their packed weights, scales and zero points are concatenated by rows
 * (one bits and group size per group): a quantized decode step then runs 4 GEMVs a layer, not
 * 7 (the H100 run of 2026-12-07: k and v took 8.5 us each for 1 MB, too few rows to fill it). Off unless TORCHTRT_C_FUSE_PARALLEL_LINEAR is
 * on (compile_llm turns it on for its step): other graphs keep their kernels.
 */
#include "pass_manager.h"
#include "pass_util.h"

#include <stdlib.h>
#include <string.h>


enum { MAX_GROUP = 16 };

/* The weight [N, K] (and bias [N]) constants of a linear that may join a group; false else. */
static bool candidate(const ttc_node *n, const ttc_attr **w, const ttc_attr **b) {
    if (n->op != TTC_OP_LINEAR || n->n_inputs != 3 || n->n_outputs != 1) return false;
    const ttc_value *wv = n->inputs[1], *bv = n->inputs[2];
    *w = ttc_pass_tensor_const(wv);
    if (!*w || wv->type.rank != 2 || !ttc_type_is_static(&wv->type) ||
        (wv->type.dtype != TTC_DTYPE_FLOAT32 && wv->type.dtype != TTC_DTYPE_FLOAT16 &&
         wv->type.dtype != TTC_DTYPE_BFLOAT16))
        return false;
    if (ttc_value_is_none(bv)) {
        *b = NULL;
        return true;
    }
    *b = ttc_pass_tensor_const(bv);
    return *b && bv->type.rank == 1 && bv->type.dtype == wv->type.dtype && ttc_type_is_static(&bv->type) &&
           bv->type.dims[0].add == wv->type.dims[0].add;
}

/* A static 2-D constant (a wq_linear's packed weight, scales or zero points). */
static bool const_2d(const ttc_value *v) {
    return ttc_pass_tensor_const(v) && v->type.rank == 2 && ttc_type_is_static(&v->type);
}

/* A wq_linear(x, q, scales, zeros, group, bits) whose q, scales (and zeros) are constants. */
static bool wq_candidate(const ttc_node *n) {
    int64_t v;
    return n->op == TTC_OP_WQ_LINEAR && n->n_inputs == 6 && n->n_outputs == 1 && const_2d(n->inputs[1]) &&
           const_2d(n->inputs[2]) && (ttc_value_is_none(n->inputs[3]) || const_2d(n->inputs[3])) &&
           ttc_value_const_int(n->inputs[4], &v) && ttc_value_const_int(n->inputs[5], &v);
}

static bool same_cols(const ttc_value *a, const ttc_value *b) {
    return a->type.dtype == b->type.dtype && a->type.dims[1].add == b->type.dims[1].add;
}

/* Whether n fits the group led by g0: linears of the same weight dtype and K, bias or not
 * alike; wq_linears of the same bits and group size, packed rows, scales and zeros alike. */
static bool fits(const ttc_node *g0, const ttc_node *n) {
    if (g0->op != n->op || g0->outputs[0]->type.dtype != n->outputs[0]->type.dtype ||
        g0->outputs[0]->type.rank != n->outputs[0]->type.rank)
        return false;
    if (g0->op == TTC_OP_WQ_LINEAR) {
        int64_t g0g, g0b, ng, nb;
        ttc_value_const_int(g0->inputs[4], &g0g);
        ttc_value_const_int(g0->inputs[5], &g0b);
        ttc_value_const_int(n->inputs[4], &ng);
        ttc_value_const_int(n->inputs[5], &nb);
        bool z0 = ttc_value_is_none(g0->inputs[3]), z1 = ttc_value_is_none(n->inputs[3]);
        return g0g == ng && g0b == nb && same_cols(g0->inputs[1], n->inputs[1]) &&
               same_cols(g0->inputs[2], n->inputs[2]) && z0 == z1 && (z0 || same_cols(g0->inputs[3], n->inputs[3]));
    }
    const ttc_type *a = &g0->inputs[1]->type, *b = &n->inputs[1]->type;
    return a->dtype == b->dtype && a->dims[1].add == b->dims[1].add &&
           ttc_value_is_none(g0->inputs[2]) == ttc_value_is_none(n->inputs[2]);
}

/* One constant of the rows of each member's input `in` (2-D: rows of dims[1]; 1-D: biases). */
static ttc_value *concat_const(ttc_graph *g, ttc_node *before, ttc_node *const *grp, int32_t n, int32_t in,
                               int64_t total) {
    const ttc_type *t0 = &grp[0]->inputs[in]->type;
    int32_t rank = t0->rank;
    size_t esz = ttc_dtype_size(t0->dtype), row = rank == 2 ? (size_t)t0->dims[1].add * esz : esz, at = 0;
    ttc_tensor_data *d = ttc_tensor_data_copy(NULL, (size_t)total * row);
    if (!d) return NULL;
    for (int32_t i = 0; i < n; i++) {
        const ttc_attr *a = ttc_pass_tensor_const(grp[i]->inputs[in]);
        size_t bytes = (size_t)grp[i]->inputs[in]->type.dims[0].add * row;
        memcpy((char *)d->data + at, a->tensor->data, bytes);
        at += bytes;
    }
    int64_t shape[2] = {total, rank == 2 ? t0->dims[1].add : 0};
    ttc_type t = ttc_type_tensor(t0->dtype, rank, shape);
    ttc_value *v = ttc_graph_const_tensor(g, before, NULL, &t, d);
    ttc_tensor_data_unref(d);
    return v;
}

static ttc_status fuse_group(ttc_graph *g, ttc_node *const *grp, int32_t n, bool *kill) {
    ttc_node *first = grp[0];
    int64_t total = 0;
    for (int32_t i = 0; i < n; i++) total += grp[i]->inputs[1]->type.dims[0].add;
    ttc_type yt = first->outputs[0]->type;
    int32_t R = yt.rank;
    yt.dims[R - 1] = (ttc_dim){.sym = -1, .add = total};
    ttc_node *lin;
    if (first->op == TTC_OP_WQ_LINEAR) {
        ttc_value *q = concat_const(g, first, grp, n, 1, total), *sc = concat_const(g, first, grp, n, 2, total);
        ttc_value *z = ttc_value_is_none(first->inputs[3]) ? ttc_graph_const_none(g, first)
                                                           : concat_const(g, first, grp, n, 3, total);
        if (!q || !sc || !z) return TTC_ERR_NOMEM;
        ttc_value *in[6] = {first->inputs[0], q, sc, z, first->inputs[4], first->inputs[5]};
        lin = ttc_graph_insert_node_before(g, first, "torchtrt_c.wq_linear.default", in, 6, &yt, 1, NULL);
    } else {
        ttc_value *w = concat_const(g, first, grp, n, 1, total);
        if (!w) return TTC_ERR_NOMEM;
        ttc_value *b = ttc_value_is_none(first->inputs[2]) ? ttc_graph_const_none(g, first)
                                                           : concat_const(g, first, grp, n, 2, total);
        if (!b) return TTC_ERR_NOMEM;
        ttc_value *in[3] = {first->inputs[0], w, b};
        lin = ttc_graph_insert_node_before(g, first, "aten.linear.default", in, 3, &yt, 1, NULL);
    }
    if (!lin) return TTC_ERR_NOMEM;
    ttc_value *dim = ttc_graph_const_int(g, first, R - 1), *one = ttc_graph_const_int(g, first, 1);
    if (!dim || !one) return TTC_ERR_NOMEM;
    int64_t at = 0;
    for (int32_t i = 0; i < n; i++) {
        int64_t ni = grp[i]->inputs[1]->type.dims[0].add;
        ttc_value *lo = ttc_graph_const_int(g, first, at), *hi = ttc_graph_const_int(g, first, at + ni);
        if (!lo || !hi) return TTC_ERR_NOMEM;
        ttc_value *sin[5] = {lin->outputs[0], dim, lo, hi, one};
        ttc_node *sl = ttc_graph_insert_node_before(g, first, "aten.slice.Tensor", sin, 5, &grp[i]->outputs[0]->type,
                                                    1, NULL);
        if (!sl) return TTC_ERR_NOMEM;
        TTC_TRY(ttc_pass_replace_value(g, grp[i]->outputs[0], sl->outputs[0]));
        kill[i] = true;
        at += ni;
    }
    return TTC_OK;
}

ttc_status ttc_pass_fuse_parallel_linear(ttc_graph *g, void *ctx, bool *changed) {
    (void)ctx;
    *changed = false;
    int32_t n0 = g->n_nodes;
    ttc_node **nodes = ttc_malloc(sizeof(ttc_node *) * (size_t)(n0 ? n0 : 1));
    bool *taken = ttc_calloc((size_t)(n0 ? n0 : 1), sizeof(bool));
    ttc_node **dead = ttc_malloc(sizeof(ttc_node *) * (size_t)(n0 ? n0 : 1));
    ttc_status s = nodes && taken && dead ? TTC_OK : TTC_ERR_NOMEM;
    int32_t nd = 0;
    if (s == TTC_OK) memcpy(nodes, g->nodes, sizeof(ttc_node *) * (size_t)n0);
    for (int32_t i = 0; i < n0 && s == TTC_OK; i++) {
        const ttc_attr *w, *b;
        if (taken[i] || !(candidate(nodes[i], &w, &b) || wq_candidate(nodes[i]))) continue;
        ttc_node *grp[MAX_GROUP];
        int32_t gn = 0;
        grp[gn++] = nodes[i];
        for (int32_t j = i + 1; j < n0 && gn < MAX_GROUP; j++)
            if (!taken[j] && nodes[j]->inputs[0] == nodes[i]->inputs[0] &&
                (candidate(nodes[j], &w, &b) || wq_candidate(nodes[j])) && fits(nodes[i], nodes[j])) {
                grp[gn++] = nodes[j];
                taken[j] = true;
            }
        if (gn < 2) continue;
        bool kill[MAX_GROUP] = {false};
        s = fuse_group(g, grp, gn, kill);
        for (int32_t k = 0; k < gn; k++)
            if (kill[k]) dead[nd++] = grp[k];
        *changed = true;
    }
    if (s == TTC_OK) s = ttc_pass_erase_nodes(g, dead, nd);
    free(nodes);
    free(taken);
    free(dead);
    return s;
}
