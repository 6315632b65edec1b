/* Fusion on the kernel IR.
 * 1. An elementwise op whose only reader is another elementwise op of the same shape is
 *    inlined into it (chains become one kernel).
 * 2. An elementwise op whose input is the sole use of a GEMM/conv/reduce/... result, with
 *    the same shape, becomes that op's epilogue: the producer moves to the consumer's
 *    place in the schedule (its inputs are all computed earlier) and writes the
 *    consumer's output.
 *    A GEMM is also seen through a contiguous reshape view (a linear on [B, T, K] is a
 *    [B*T, N] GEMM read as [B, T, N]): both walk the same elements in the same order, so
 *    the GEMM keeps its own dims (p.gemm.shape) and stores at the same linear index into
 *    the consumer's output (gemm_through_view says when that holds).
 * 0. First, an elementwise op that only copies a tensor (a chain of value-preserving casts of one
 *    dense intermediate with its own dims and storage type: HF's RMSNorm's .to(float32) of a
 *    half hidden state, which an fp16 engine stores as half) is no kernel: its readers read
 *    the source (drop_identity_copies).
 * 0b. A negation read only by a concatenation (rotate_half's cat(-x2, x1)) is read negated by it
 *    (p.concat.neg), where no kernel can take it otherwise (negate_into_concat).
 * 3. Then act(gate) * up over the two halves of one weight-only GEMV's result (a gated MLP whose
 *    gate and up projections were joined), one elementwise op by then, is computed by the GEMV
 *    itself (fuse_gated_wq).
 * 4. Then an RMS norm read only by a weight-only GEMV (the GPU families' decode product) is done
 *    inside it (rms_into_wq, p.wq.rms).
 * 5. Last, a concatenation read only by the GPU families' slot write (its keys) or split-K
 *    attention (its queries) is computed by that kernel where it loads it (inline_concat_reads).
 * Of a consumer's leaves, elementwise producers that read 8-bit results of integer layers
 * (PT2E's dequantize of a residual) are inlined first: the consumer then reads the 8-bit tensor itself when it becomes
 * a convolution's epilogue (the int8 convolution takes it as a post-op, native_qconv.h), where
 * fusing the convolution first left the dequantize as a kernel of its own writing float32. */
#include "kir.h"

#include <stdlib.h>
#include <string.h>

static void count_reads(ttc_kir *k) {
    for (int32_t t = 0; t < k->n_ts; t++) k->ts[t].n_reads = 0;
    for (int32_t i = 0; i < k->n_ops; i++) {
        ttc_kop *op = &k->ops[i];
        if (op->dead) continue;
        for (int j = 0; j < TTC_KOP_MAX_IN; j++) if (op->in[j] >= 0) k->ts[op->in[j]].n_reads++;
        for (int32_t l = 0; l < op->epi.n_leaves; l++) k->ts[op->epi.leaves[l]].n_reads++;
    }
    for (int32_t t = 0; t < k->n_ts; t++)
        if (k->ts[t].kind == TTC_ET_VIEW) k->ts[k->ts[t].base].n_reads++;
}

/* Builds the composition: nodes of `inner` (leaves remapped into `outer`'s leaf table),
 * then `outer`'s nodes with reads of leaf tensor t replaced by inner's result.
 * inner_acc: inner reads acc (an epilogue); the result keeps acc references. */
static ttc_status compose(ttc_expr *outer, int32_t t, const ttc_expr *inner, ttc_expr *res) {
    ttc_expr_init(res);
    int32_t *map_in = ttc_malloc(sizeof(int32_t) * (size_t)(inner->n + 1));
    int32_t *map_out = ttc_malloc(sizeof(int32_t) * (size_t)(outer->n + 1));
    if (!map_in || !map_out) { free(map_in); free(map_out); return TTC_ERR_NOMEM; }
    ttc_status s = TTC_OK;
    /* leaves of outer except t, then inner's */
    for (int32_t i = 0; i < inner->n && s == TTC_OK; i++) {
        ttc_enode nd = inner->nodes[i];
        int32_t r;
        if (nd.op == TTC_EOP_LEAF && nd.a >= 0) r = ttc_expr_leaf(res, inner->leaves[nd.a], nd.dtype);
        else if (nd.op == TTC_EOP_LEAF) r = ttc_expr_acc(res, nd.dtype);
        else if (nd.op == TTC_EOP_CONST) r = ttc_expr_const(res, nd.f, nd.dtype);
        else if (nd.op == TTC_EOP_INDEX) r = ttc_expr_index(res, (int32_t)nd.f, nd.dtype);
        else r = ttc_expr_op(res, nd.op, map_in[nd.a], nd.b >= 0 ? map_in[nd.b] : -1, nd.c >= 0 ? map_in[nd.c] : -1, nd.dtype);
        if (r < 0) s = TTC_ERR_UNSUPPORTED;
        else map_in[i] = r;
    }
    int32_t inner_root = inner->n ? map_in[inner->root] : -1;
    if (s == TTC_OK && inner_root < 0) {
        inner_root = ttc_expr_acc(res, TTC_DTYPE_FLOAT32);
        if (inner_root < 0) s = TTC_ERR_NOMEM;
    }
    for (int32_t i = 0; i < outer->n && s == TTC_OK; i++) {
        ttc_enode nd = outer->nodes[i];
        int32_t r;
        if (nd.op == TTC_EOP_LEAF && nd.a >= 0 && outer->leaves[nd.a] == t) r = ttc_expr_cast(res, inner_root, nd.dtype);
        else if (nd.op == TTC_EOP_LEAF && nd.a >= 0) r = ttc_expr_leaf(res, outer->leaves[nd.a], nd.dtype);
        else if (nd.op == TTC_EOP_LEAF) r = ttc_expr_acc(res, nd.dtype);
        else if (nd.op == TTC_EOP_CONST) r = ttc_expr_const(res, nd.f, nd.dtype);
        else if (nd.op == TTC_EOP_INDEX) r = ttc_expr_index(res, (int32_t)nd.f, nd.dtype);
        else r = ttc_expr_op(res, nd.op, map_out[nd.a], nd.b >= 0 ? map_out[nd.b] : -1, nd.c >= 0 ? map_out[nd.c] : -1, nd.dtype);
        if (r < 0) s = TTC_ERR_UNSUPPORTED;
        else map_out[i] = r;
    }
    if (s == TTC_OK) res->root = outer->n ? map_out[outer->root] : inner_root;
    free(map_in);
    free(map_out);
    if (s != TTC_OK) { ttc_expr_free(res); ttc_clear_error(); }
    return s;
}

static bool is_q8(ttc_dtype d) { return d == TTC_DTYPE_INT8 || d == TTC_DTYPE_UINT8; }

/* An integer layer: the int8 convolution / linear (PT2E's layers folded, QUANT_KERNELS=int8) or
 * a pool over 8-bit values. Graphs without them (Q/DQ around float layers) fuse as before. */
static bool int8_layer(const ttc_kop *p) {
    return !p->dead && (p->kind == TTC_KOP_QCONV2D || p->kind == TTC_KOP_QGEMM || p->kind == TTC_KOP_POOL);
}

/* An elementwise op reading an 8-bit result of an integer layer (a dequantize of it). */
static bool reads_q8(const ttc_kir *k, const ttc_kop *p) {
    if (p->kind != TTC_KOP_ELEMENTWISE) return false;
    for (int32_t l = 0; l < p->epi.n_leaves; l++) {
        const ttc_et *t = &k->ts[p->epi.leaves[l]];
        if (is_q8(t->dtype) && t->kind == TTC_ET_INTER && t->producer >= 0 && int8_layer(&k->ops[t->producer]))
            return true;
    }
    return false;
}

/* Whether tensor t is read by exactly one op, an elementwise one (through no view). */
static bool read_by_one_elementwise(const ttc_kir *k, int32_t t) {
    if (k->ts[t].n_reads != 1) return false;
    for (int32_t i = 0; i < k->n_ops; i++) {
        const ttc_kop *op = &k->ops[i];
        if (op->dead) continue;
        for (int32_t l = 0; l < op->epi.n_leaves; l++)
            if (op->epi.leaves[l] == t) return op->kind == TTC_KOP_ELEMENTWISE;
        for (int j = 0; j < TTC_KOP_MAX_IN; j++)
            if (op->in[j] == t) return false;
    }
    return false;
}

static bool fusable_input(const ttc_kir *k, const ttc_kop *consumer, int32_t t) {
    const ttc_et *et = &k->ts[t];
    const ttc_et *out = &k->ts[consumer->out];
    return et->kind == TTC_ET_INTER && et->producer >= 0 && et->binding < 0 && et->n_reads == 1 &&
           ttc_dims_eq(et->rank, et->dims, out->rank, out->dims);
}

/* The product of dims [0, r) when it stays affine in one symbol. */
static bool dims_product(const ttc_dim *d, int32_t r, ttc_dim *out) {
    ttc_dim p = ttc_dim_const(1);
    for (int32_t i = 0; i < r; i++)
        if (!ttc_dim_mul(p, d[i], &p)) return false;
    *out = p;
    return true;
}

static bool is_output(const ttc_kir *k, int32_t t) {
    for (int32_t i = 0; i < k->n_outputs; i++)
        if (k->outputs[i] == t) return true;
    return false;
}

/* Leaf v of `consumer`: when it is a reshape view of a GEMM result that only that view
 * reads, and the view is read only by the consumer with the consumer's dims, returns the
 * GEMM result's tensor (else -1). The GEMM's epilogue, indexed so far by its own [.., M, N],
 * is then indexed by the consumer's dims: so the last dims (N) must agree, the leading
 * dims must have the same product (same elements, same order), and every leaf of that
 * epilogue must vary along N only (a bias), which reads the same in either shape. An
 * epilogue without leaves only needs the same element count (a 1x1 convolution's
 * [N, OC, H*W] GEMM read as [N, OC, H, W]). */
static int32_t gemm_through_view(const ttc_kir *k, const ttc_kop *consumer, int32_t v) {
    const ttc_et *vt = &k->ts[v];
    const ttc_et *out = &k->ts[consumer->out];
    if (vt->kind != TTC_ET_VIEW || vt->vkind != TTC_VIEW_RESHAPE || vt->n_reads != 1 || vt->binding >= 0 ||
        vt->rank < 1 || is_output(k, v) || !ttc_dims_eq(vt->rank, vt->dims, out->rank, out->dims))
        return -1;
    int32_t g = vt->base;
    const ttc_et *gt = &k->ts[g];
    if (gt->kind != TTC_ET_INTER || gt->producer < 0 || gt->binding >= 0 || gt->n_reads != 1 || !gt->contig ||
        gt->rank < 2 || is_output(k, g))
        return -1;
    const ttc_kop *p = &k->ops[gt->producer];
    if (p->dead || p->kind != TTC_KOP_GEMM || p->out != g) return -1;
    ttc_dim pv, pg;
    if (p->epi.n_leaves == 0)   /* nothing indexed by [.., M, N] yet: the same elements suffice */
        return dims_product(vt->dims, vt->rank, &pv) && dims_product(gt->dims, gt->rank, &pg) && ttc_dim_eq(pv, pg)
                   ? g : -1;
    if (!ttc_dim_eq(vt->dims[vt->rank - 1], gt->dims[gt->rank - 1]) || !dims_product(vt->dims, vt->rank - 1, &pv) ||
        !dims_product(gt->dims, gt->rank - 1, &pg) || !ttc_dim_eq(pv, pg))
        return -1;
    for (int32_t l = 0; l < p->epi.n_leaves; l++) {
        const ttc_et *lt = &k->ts[p->epi.leaves[l]];
        if (lt->rank > vt->rank) return -1;
        for (int32_t d = 0; d + 1 < lt->rank; d++)
            if (!ttc_dim_eq(lt->dims[d], ttc_dim_const(1))) return -1;
    }
    return g;
}

/* Whether a value of dtype d survives a round trip through node dtype nd unchanged (a
 * widening float cast, or none). */
static bool keeps_value(ttc_dtype d, ttc_dtype nd) {
    return nd == d || (d == TTC_DTYPE_FLOAT16 && nd == TTC_DTYPE_FLOAT32);
}

/* The source tensor of op when op is an identity copy: an elementwise op whose expression is
 * casts of one leaf, each keeping the value, storing the same dtype, of a dense intermediate
 * or a statically dense view of one (no engine input: nothing writes it after its producer)
 * with the output's dims, and whose output is no engine output. -1 otherwise. */
static int32_t identity_source(const ttc_kir *k, const ttc_kop *op) {
    if (op->dead || op->kind != TTC_KOP_ELEMENTWISE || op->epi.n_leaves != 1 || op->epi.root < 0) return -1;
    const ttc_et *o = &k->ts[op->out];
    int32_t s = op->epi.leaves[0], root = ttc_kir_root(k, s);
    const ttc_et *x = &k->ts[s];
    if (o->kind != TTC_ET_INTER || o->binding >= 0 || k->ts[root].kind != TTC_ET_INTER || k->ts[root].producer < 0 ||
        !x->contig || x->dtype != o->dtype || (x->dtype != TTC_DTYPE_FLOAT16 && x->dtype != TTC_DTYPE_FLOAT32) ||
        !ttc_dims_eq(x->rank, x->dims, o->rank, o->dims))
        return -1;
    int32_t i = op->epi.root;
    while (op->epi.nodes[i].op == TTC_EOP_CAST) {
        if (!keeps_value(x->dtype, op->epi.nodes[i].dtype)) return -1;
        i = op->epi.nodes[i].a;
    }
    const ttc_enode *nd = &op->epi.nodes[i];
    return nd->op == TTC_EOP_LEAF && nd->a == 0 && keeps_value(x->dtype, nd->dtype) ? s : -1;
}

/* A copy of e with one leaf per tensor (ttc_expr_leaf merges leaves of the same tensor). */
static ttc_status relink(const ttc_expr *e, ttc_expr *res) {
    ttc_expr_init(res);
    int32_t *map = ttc_malloc(sizeof(int32_t) * (size_t)(e->n + 1));
    if (!map) return TTC_ERR_NOMEM;
    for (int32_t i = 0; i < e->n; i++) {
        ttc_enode nd = e->nodes[i];
        int32_t r;
        if (nd.op == TTC_EOP_LEAF && nd.a >= 0) r = ttc_expr_leaf(res, e->leaves[nd.a], nd.dtype);
        else if (nd.op == TTC_EOP_LEAF) r = ttc_expr_acc(res, nd.dtype);
        else if (nd.op == TTC_EOP_CONST) r = ttc_expr_const(res, nd.f, nd.dtype);
        else if (nd.op == TTC_EOP_INDEX) r = ttc_expr_index(res, (int32_t)nd.f, nd.dtype);
        else r = ttc_expr_op(res, nd.op, map[nd.a], nd.b >= 0 ? map[nd.b] : -1, nd.c >= 0 ? map[nd.c] : -1, nd.dtype);
        if (r < 0) { free(map); ttc_expr_free(res); return TTC_ERR_NOMEM; }
        map[i] = r;
    }
    res->root = e->n ? map[e->root] : -1;
    free(map);
    return TTC_OK;
}

/* Identity copies removed: every read of the copy (inputs, leaves, views) reads its source. */
static int32_t drop_identity_copies(ttc_kir *k) {  /* -1: no memory */
    int32_t n = 0;
    for (int32_t i = 0; i < k->n_ops; i++) {
        ttc_kop *c = &k->ops[i];
        int32_t s = identity_source(k, c);
        if (s < 0) continue;
        int32_t t = c->out;
        for (int32_t j = 0; j < k->n_ops; j++) {
            ttc_kop *r = &k->ops[j];
            if (r->dead || j == i) continue;
            for (int q = 0; q < TTC_KOP_MAX_IN; q++)
                if (r->in[q] == t) r->in[q] = s;
            bool had = false, reads = false;
            for (int32_t l = 0; l < r->epi.n_leaves; l++) {
                had = had || r->epi.leaves[l] == s;
                if (r->epi.leaves[l] == t) { r->epi.leaves[l] = s; reads = true; }
            }
            /* s was a leaf of r already: one leaf for it */
            if (had && reads) {
                ttc_expr e;
                if (relink(&r->epi, &e) != TTC_OK) return -1;
                ttc_expr_free(&r->epi);
                r->epi = e;
            }
        }
        for (int32_t v = 0; v < k->n_ts; v++)
            if (k->ts[v].kind == TTC_ET_VIEW && k->ts[v].base == t) k->ts[v].base = s;
        ttc_expr_free(&c->epi);
        c->dead = true;
        k->ts[t].producer = -1;
        n++;
    }
    return n;
}

/* The tensor op negates when op is an elementwise negation of one float tensor with op's dims
 * and dtype (around the negation only value-keeping casts), its result read once and no
 * engine output; -1 otherwise. */
static int32_t neg_source(const ttc_kir *k, const ttc_kop *op) {
    if (op->dead || op->kind != TTC_KOP_ELEMENTWISE || op->epi.n_leaves != 1 || op->epi.root < 0) return -1;
    const ttc_et *o = &k->ts[op->out];
    int32_t s = op->epi.leaves[0];
    const ttc_et *x = &k->ts[s];
    if (o->kind != TTC_ET_INTER || o->binding >= 0 || o->n_reads != 1 || x->dtype != o->dtype ||
        (x->dtype != TTC_DTYPE_FLOAT16 && x->dtype != TTC_DTYPE_FLOAT32) || !ttc_dims_eq(x->rank, x->dims, o->rank, o->dims))
        return -1;
    int32_t i = op->epi.root, negs = 0;
    while (op->epi.nodes[i].op == TTC_EOP_CAST || op->epi.nodes[i].op == TTC_EOP_NEG) {
        if (!keeps_value(x->dtype, op->epi.nodes[i].dtype)) return -1;
        negs += op->epi.nodes[i].op == TTC_EOP_NEG;
        i = op->epi.nodes[i].a;
    }
    const ttc_enode *nd = &op->epi.nodes[i];
    return negs == 1 && nd->op == TTC_EOP_LEAF && nd->a == 0 && keeps_value(x->dtype, nd->dtype) ? s : -1;
}

/* Concatenation inputs that are negations (neg_source) read their source negated instead. */
static int32_t negate_into_concat(ttc_kir *k) {
    int32_t n = 0;
    count_reads(k);
    for (int32_t j = 0; j < k->n_ops; j++) {
        ttc_kop *c = &k->ops[j];
        if (c->dead || c->kind != TTC_KOP_CONCAT) continue;
        for (int32_t i = 0; i < c->p.concat.n && i < TTC_KOP_MAX_IN; i++) {
            int32_t t = c->in[i];
            if (t < 0 || k->ts[t].kind != TTC_ET_INTER || k->ts[t].producer < 0) continue;
            ttc_kop *p = &k->ops[k->ts[t].producer];
            int32_t s = neg_source(k, p);
            if (s < 0) continue;
            char *name = ttc_strfmt("%s+%s", p->name, c->name);
            if (name) { free(c->name); c->name = name; }
            c->in[i] = s;
            c->p.concat.neg |= 1u << i;
            ttc_expr_free(&p->epi);
            p->dead = true;
            k->ts[t].producer = -1;
            n++;
        }
    }
    return n;
}

/* Leaf v of `consumer`: when it is the transpose(1, 2) view of a KV_REDUCE result [B, Hq, S, EV]
 * (an attention's output, read as [B, S, Hq, EV] before the heads are joined), only that view
 * reading it and only the consumer the view, with the consumer's dims and no epilogue leaves
 * in the reduction yet, returns the reduction's result (else -1): the reduction then writes
 * the consumer's output in its order (p.kva.bshe). */
static int32_t kv_reduce_through_transpose(const ttc_kir *k, const ttc_kop *consumer, int32_t v) {
    const ttc_et *vt = &k->ts[v];
    const ttc_et *out = &k->ts[consumer->out];
    if (vt->kind != TTC_ET_VIEW || vt->vkind != TTC_VIEW_PERMUTE || vt->rank != 4 || vt->n_reads != 1 ||
        vt->binding >= 0 || is_output(k, v) || !ttc_dims_eq(vt->rank, vt->dims, out->rank, out->dims) ||
        vt->perm[0] != 0 || vt->perm[1] != 2 || vt->perm[2] != 1 || vt->perm[3] != 3)
        return -1;
    int32_t g = vt->base;
    const ttc_et *gt = &k->ts[g];
    if (gt->kind != TTC_ET_INTER || gt->producer < 0 || gt->binding >= 0 || gt->n_reads != 1 || gt->rank != 4 ||
        is_output(k, g))
        return -1;
    const ttc_kop *p = &k->ops[gt->producer];
    if (p->dead || p->kind != TTC_KOP_KV_REDUCE || p->out != g || p->p.kva.bshe || p->epi.n_leaves != 0) return -1;
    return g;
}

/* The reader that computes concatenation result t itself when it is inlined: the GPU families'
 * slot write reading it as its keys (in[0]) or split-K attention reading it as its queries
 * (in[0]); -1 otherwise. t: a float16/float32 dense result of a live CONCAT, no engine output,
 * read once, directly (no view), by that reader. Those kernels read in[0] element by element at
 * its own index (codegen_kv.c), which is what the inlined concatenation computes. */
static int32_t concat_reader(const ttc_kir *k, int32_t t) {
    const ttc_et *et = &k->ts[t];
    if (et->kind != TTC_ET_INTER || et->producer < 0 || et->binding >= 0 || et->n_reads != 1 || !et->contig ||
        is_output(k, t) || (et->dtype != TTC_DTYPE_FLOAT16 && et->dtype != TTC_DTYPE_FLOAT32))
        return -1;
    const ttc_kop *p = &k->ops[et->producer];
    if (p->dead || p->inlined || p->kind != TTC_KOP_CONCAT || p->out != t || p->p.concat.n < 1 ||
        p->p.concat.n > TTC_KOP_MAX_IN)
        return -1;
    for (int32_t j = 0; j < k->n_ops; j++) {
        const ttc_kop *c = &k->ops[j];
        if (c->dead || c->inlined) continue;
        bool reads = false;
        for (int q = 0; q < TTC_KOP_MAX_IN; q++) reads = reads || c->in[q] == t;
        for (int32_t l = 0; l < c->epi.n_leaves; l++) reads = reads || c->epi.leaves[l] == t;
        if (!reads) continue;
        /* the one reader: t is its in[0] and nothing else of it */
        bool other = false;
        for (int q = 1; q < TTC_KOP_MAX_IN; q++) other = other || c->in[q] == t;
        for (int32_t l = 0; l < c->epi.n_leaves; l++) other = other || c->epi.leaves[l] == t;
        if (other || c->in[0] != t) return -1;
        if (c->kind == TTC_KOP_SLOT_WRITE) return j;
        /* the split kernel indexes the queries [B, Hq, S, E] by its own b, h, s and e */
        const ttc_et *o = &k->ts[c->out];
        if (c->kind == TTC_KOP_KV_ATTENTION && c->p.kva.splits > 0 && et->rank == 4 && o->rank == 5 &&
            et->dims[1].sym < 0 && ttc_dim_eq(et->dims[3], ttc_dim_const(c->p.kva.e)) &&
            ttc_dim_eq(et->dims[0], o->dims[0]) && ttc_dim_eq(et->dims[2], o->dims[2]))
            return j;
        return -1;
    }
    return -1;
}

/* Whether an op from index `from` to `to` writes in place (a slot write into its caches) an engine
 * input that inlined op p reads (an input or a leaf, through views): computed at `to` instead
 * of at `from`, p would then read what was written in between. */
static bool written_between(const ttc_kir *k, const ttc_kop *p, int32_t from, int32_t to) {
    for (int32_t i = from; i <= to; i++) {
        const ttc_kop *w = &k->ops[i];
        if (w->dead) continue;
        int32_t outs[2] = {k->ts[w->out].kind == TTC_ET_INPUT ? w->out : -1,
                           w->kind == TTC_KOP_SLOT_WRITE ? ttc_kir_root(k, w->in[3]) : -1};
        for (int o = 0; o < 2; o++) {
            if (outs[o] < 0) continue;
            for (int j = 0; j < TTC_KOP_MAX_IN; j++)
                if (p->in[j] >= 0 && ttc_kir_root(k, p->in[j]) == outs[o]) return true;
            for (int32_t l = 0; l < p->epi.n_leaves; l++)
                if (ttc_kir_root(k, p->epi.leaves[l]) == outs[o]) return true;
        }
    }
    return false;
}

/* Concatenations whose one reader computes them (concat_reader) are inlined into it
 * (ttc_kop.inlined): the rotary embedding's rotated keys and queries of an LLM decoder layer
 * (cat(-x2, x1) * sin + x * cos) are then computed by the kernel that writes the keys into the
 * cache and by the attention where it loads the queries, two launches less a layer. The GPU
 * kernel families only (the target's inline_concat): the CPU's native slot write and attention
 * read tensors. */
static int32_t inline_concat_reads(ttc_kir *k) {
    if (!ttc_kir_target(k)->inline_concat) return 0;
    int32_t n = 0;
    count_reads(k);
    for (int32_t i = 0; i < k->n_ops; i++) {
        ttc_kop *p = &k->ops[i];
        if (p->dead || p->inlined || p->kind != TTC_KOP_CONCAT) continue;
        int32_t r = concat_reader(k, p->out);
        if (r <= i || written_between(k, p, i, r)) continue;
        ttc_kop *c = &k->ops[r];
        char *name = ttc_strfmt("%s+%s", p->name, c->name);
        if (name) { free(c->name); c->name = name; }
        p->inlined = true;
        n++;
    }
    return n;
}

/* Node i of e past casts to float16/float32 (value roundings the fused kernel, computing in
 * float, leaves out). */
static int32_t past_float_casts(const ttc_expr *e, int32_t i) {
    while (i >= 0 && i < e->n && e->nodes[i].op == TTC_EOP_CAST &&
           (e->nodes[i].dtype == TTC_DTYPE_FLOAT32 || e->nodes[i].dtype == TTC_DTYPE_FLOAT16))
        i = e->nodes[i].a;
    return i;
}

/* A tensor of K elements along the last dim only (dims [.., 1, K]), float. */
static bool last_dim_vector(const ttc_kir *k, int32_t t, int32_t K) {
    const ttc_et *x = &k->ts[t];
    if (x->rank < 1 || (x->dtype != TTC_DTYPE_FLOAT32 && x->dtype != TTC_DTYPE_FLOAT16) || !x->contig ||
        !ttc_dim_eq(x->dims[x->rank - 1], ttc_dim_const(K)))
        return false;
    for (int32_t d = 0; d + 1 < x->rank; d++)
        if (!ttc_dim_eq(x->dims[d], ttc_dim_const(1))) return false;
    return true;
}

/* The norm's scale along K when op is an RMS norm over the last dim whose result is that
 * scale times the normalised x (its weight, or an epilogue acc * g with casts around it), else
 * -2 (-1: no scale). */
static int32_t rms_scale(const ttc_kir *k, const ttc_kop *op, int32_t K) {
    const ttc_et *x = &k->ts[op->in[0]];
    if (op->kind != TTC_KOP_NORM || !op->p.norm.rms || op->p.norm.group || op->in[2] >= 0 || x->rank < 1 ||
        op->p.norm.axis_from != x->rank - 1 || !x->contig || !ttc_dim_eq(x->dims[x->rank - 1], ttc_dim_const(K)))
        return -2;
    int32_t g = op->in[1];
    if (g >= 0 && !last_dim_vector(k, g, K)) return -2;
    if (op->epi.n == 0 || op->epi.root < 0) return g;
    const ttc_expr *e = &op->epi;
    int32_t r = past_float_casts(e, e->root);
    if (e->nodes[r].op == TTC_EOP_LEAF && e->nodes[r].a < 0) return g;
    if (g >= 0 || e->nodes[r].op != TTC_EOP_MUL) return -2;
    for (int side = 0; side < 2; side++) {
        int32_t a = past_float_casts(e, side ? e->nodes[r].b : e->nodes[r].a);
        int32_t b = past_float_casts(e, side ? e->nodes[r].a : e->nodes[r].b);
        if (e->nodes[a].op == TTC_EOP_LEAF && e->nodes[a].a < 0 && e->nodes[b].op == TTC_EOP_LEAF &&
            e->nodes[b].a >= 0 && last_dim_vector(k, e->leaves[e->nodes[b].a], K))
            return e->leaves[e->nodes[b].a];
    }
    return -2;
}

/* An RMS norm read only by a weight-only GEMV (its x, the GPU families' decode kernel) is done
 * by the GEMV (p.wq.rms): the GEMV reads the norm's input times its scale, sums its squares
 * with the dot products and multiplies each output by the row's rsqrt(mean + eps). The norm's
 * rounding of its result to the engine's storage type is not made (float throughout). */
static int32_t rms_into_wq(ttc_kir *k) {
    int32_t n = 0;
    count_reads(k);
    for (int32_t j = 0; j < k->n_ops; j++) {
        ttc_kop *c = &k->ops[j];
        if (c->dead || c->kind != TTC_KOP_WQ_LINEAR || !c->p.wq.gemv || c->p.wq.rms || c->in[4] >= 0) continue;
        int32_t t = c->in[0];
        const ttc_et *xt = &k->ts[t];
        if (xt->kind != TTC_ET_INTER || xt->producer < 0 || xt->binding >= 0 || xt->n_reads != 1 || is_output(k, t))
            continue;
        ttc_kop *p = &k->ops[xt->producer];
        if (p->dead || p->out != t) continue;
        int32_t g = rms_scale(k, p, c->p.wq.k);
        if (g < -1 || !ttc_dims_eq(k->ts[p->in[0]].rank, k->ts[p->in[0]].dims, xt->rank, xt->dims)) continue;
        char *name = ttc_strfmt("%s+%s", p->name, c->name);
        if (name) { free(c->name); c->name = name; }
        c->in[0] = p->in[0];
        c->in[4] = g;
        c->p.wq.rms = true;
        c->p.wq.rms_eps = p->p.norm.eps;
        ttc_expr_free(&p->epi);
        p->dead = true;
        k->ts[t].producer = -1;
        n++;
    }
    return n;
}

/* ---- a gated MLP's activation into the quantized gate/up GEMV (fuse_gated_wq) ---- */

/* The leaf index node i of e reads past float casts; -1 when it is no tensor leaf. */
static int32_t leaf_past_casts(const ttc_expr *e, int32_t i) {
    i = past_float_casts(e, i);
    return i >= 0 && i < e->n && e->nodes[i].op == TTC_EOP_LEAF && e->nodes[i].a >= 0 ? e->nodes[i].a : -1;
}

/* Half h (0: [0, I), 1: [I, 2I)) of the last dim of wq result g that view v is: a slice
 * (start 0 or I, step 1, typed I) of g itself with g's leading dims, read only by c; -1 else. */
static int32_t gated_half(const ttc_kir *k, int32_t v, int32_t g) {
    const ttc_et *vt = &k->ts[v], *gt = &k->ts[g];
    int32_t R = gt->rank;
    int64_t N = gt->dims[R - 1].add, I = N / 2;
    if (vt->kind != TTC_ET_VIEW || vt->vkind != TTC_VIEW_SLICE || vt->base != g || vt->rank != R || vt->vdim != R - 1 ||
        vt->step != 1 || vt->n_reads != 1 || vt->binding >= 0 || is_output(k, v) || vt->dims[R - 1].sym >= 0 ||
        vt->dims[R - 1].add != I || !ttc_dims_eq(R - 1, vt->dims, R - 1, gt->dims))
        return -1;
    int64_t st = vt->start < 0 ? vt->start + N : vt->start;
    return st == 0 ? 0 : st == I ? 1 : -1;
}

/* An elementwise c computing act(a) * b (casts to float16/float32 around either factor or the
 * product allowed) of the two halves a, b of the last dim of one weight-only GEMV's result
 * (GPU kernel families: p.wq.gemv) that nothing else reads, the GEMV without an epilogue:
 * the GEMV computes the product itself (p.wq.glu) and writes c's output in c's place. The
 * gated MLP of Llama, Qwen, Mistral (SiLU) and Gemma (GELU, tanh form), whose gate and up
 * projections passes/fuse_parallel_linear.c joined: the [.., 2I] result is never stored. */
static int32_t fuse_gated_wq(ttc_kir *k) {
    int32_t n = 0;
    if (!ttc_kir_target(k)->wq_glu) return 0;   /* TORCHTRT_C_WQ_GLU=0 */
    count_reads(k);
    for (int32_t j = 0; j < k->n_ops; j++) {
        ttc_kop *c = &k->ops[j];
        if (c->dead || c->kind != TTC_KOP_ELEMENTWISE || c->epi.n_leaves != 2 || c->epi.root < 0) continue;
        const ttc_et *o = &k->ts[c->out];
        if (o->dtype != TTC_DTYPE_FLOAT32 && o->dtype != TTC_DTYPE_FLOAT16) continue;
        const ttc_expr *e = &c->epi;
        int32_t mul = past_float_casts(e, e->root);
        if (mul < 0 || e->nodes[mul].op != TTC_EOP_MUL) continue;
        int32_t act = -1, gl = -1, ul = -1;
        for (int side = 0; side < 2 && act < 0; side++) {
            int32_t f = past_float_casts(e, side ? e->nodes[mul].b : e->nodes[mul].a);
            int32_t u = leaf_past_casts(e, side ? e->nodes[mul].a : e->nodes[mul].b);
            if (f < 0 || u < 0) continue;
            ttc_eop fo = e->nodes[f].op;
            if (fo != TTC_EOP_SILU && fo != TTC_EOP_GELU_ERF && fo != TTC_EOP_GELU_TANH) continue;
            int32_t gla = leaf_past_casts(e, e->nodes[f].a);
            if (gla < 0 || gla == u) continue;
            act = (int32_t)fo;
            gl = gla;
            ul = u;
        }
        if (act < 0) continue;
        int32_t gv = e->leaves[gl], uv = e->leaves[ul];
        if (k->ts[gv].kind != TTC_ET_VIEW || k->ts[gv].base != k->ts[uv].base) continue;
        int32_t g = k->ts[gv].base;
        const ttc_et *gt = &k->ts[g];
        if (gt->kind != TTC_ET_INTER || gt->producer < 0 || gt->binding >= 0 || gt->n_reads != 2 || !gt->contig ||
            gt->rank < 1 || is_output(k, g) || gt->dims[gt->rank - 1].sym >= 0)
            continue;
        int32_t pi = gt->producer;
        ttc_kop *p = &k->ops[pi];
        if (p->dead || p->kind != TTC_KOP_WQ_LINEAR || p->out != g || !p->p.wq.gemv || p->p.wq.glu || p->epi.n != 0 ||
            p->epi.n_leaves != 0 || p->p.wq.n % 2 != 0 || gt->dims[gt->rank - 1].add != p->p.wq.n)
            continue;
        int32_t hg = gated_half(k, gv, g), hu = gated_half(k, uv, g);
        if (hg < 0 || hu < 0 || hg == hu || !ttc_dims_eq(o->rank, o->dims, k->ts[gv].rank, k->ts[gv].dims)) continue;
        /* the GEMV takes c's slot (its inputs are all computed earlier), writing c's output */
        char *name = ttc_strfmt("%s+%s", p->name, c->name);
        int32_t out = c->out;
        ttc_expr_free(&c->epi);
        free(c->name);
        *c = *p;
        ttc_expr_init(&c->epi);
        c->out = out;
        c->name = name ? name : ttc_strdup("fused");
        c->p.wq.glu = true;
        c->p.wq.glu_hi = hg == 1;
        c->p.wq.glu_act = act;
        ttc_expr_free(&p->epi);
        free(p->name);
        p->name = NULL;
        p->dead = true;
        k->ts[g].producer = -1;
        k->ts[out].producer = j;
        n++;
        count_reads(k);
    }
    return n;
}

ttc_status ttc_fuse(ttc_kir *k, int32_t *n_fused) {
    *n_fused = drop_identity_copies(k);
    if (*n_fused < 0) { *n_fused = 0; return TTC_ERR_NOMEM; }
    *n_fused += negate_into_concat(k);
    bool changed = true;
    while (changed) {
        changed = false;
        count_reads(k);
        for (int32_t j = 0; j < k->n_ops && !changed; j++) {
            ttc_kop *c = &k->ops[j];
            if (c->dead || c->kind != TTC_KOP_ELEMENTWISE) continue;
            for (int32_t l = 0; l < 2 * c->epi.n_leaves && !changed; l++) {
                /* first pass (l < n_leaves): 8-bit-reading elementwise producers only */
                bool first = l < c->epi.n_leaves;
                int32_t t = c->epi.leaves[first ? l : l - c->epi.n_leaves];
                /* src: the producer's result; t: what the consumer reads (src or a view of it) */
                int32_t src = fusable_input(k, c, t) ? t : gemm_through_view(k, c, t);
                if (src < 0) src = kv_reduce_through_transpose(k, c, t);
                if (src < 0) continue;
                int32_t pi = k->ts[src].producer;
                ttc_kop *p = &k->ops[pi];
                if (p->dead || (first && !reads_q8(k, p))) continue;
                /* an 8-bit result (a quantized layer's) stays 8-bit where its dequantize only
                 * feeds one elementwise op (a residual add): the dequantize goes into that op
                 * instead, which then reads the 8-bit tensor (the first pass above) */
                if (int8_layer(p) && p->kind != TTC_KOP_POOL && is_q8(k->ts[src].dtype) &&
                    k->ts[c->out].dtype == TTC_DTYPE_FLOAT32 && read_by_one_elementwise(k, c->out))
                    continue;
                /* epilogues take a float accumulator: an integer scan (cumsum of a mask, often
                 * int64) or integer reduction (sum of int32, argmax) would lose exactness past 2^24 */
                if ((p->kind == TTC_KOP_SCAN || p->kind == TTC_KOP_REDUCE) && k->ts[src].dtype != TTC_DTYPE_FLOAT32 &&
                    k->ts[src].dtype != TTC_DTYPE_FLOAT16)
                    continue;
                ttc_expr res;
                if (compose(&c->epi, t, &p->epi, &res) != TTC_OK) continue;  /* too many leaves: keep apart */
                ttc_expr_free(&c->epi);
                c->epi = res;
                if (p->kind != TTC_KOP_ELEMENTWISE) {
                    /* the producer takes the consumer's slot, writing the consumer's output */
                    int32_t out = c->out;
                    char *name = ttc_strfmt("%s+%s", p->name, c->name);
                    ttc_expr epi = c->epi;
                    ttc_expr_init(&c->epi);
                    free(c->name);
                    *c = *p;
                    c->epi = epi;
                    ttc_expr_free(&p->epi);
                    c->out = out;
                    if (src != t && c->kind == TTC_KOP_KV_REDUCE) {
                        c->p.kva.bshe = true;
                    } else if (src != t && !c->p.gemm.reshaped) {
                        c->p.gemm.reshaped = true;
                        c->p.gemm.shape = src;
                    }
                    c->name = name ? name : ttc_strdup("fused");
                    free(p->name);
                    p->name = NULL;
                    k->ts[out].producer = j;
                } else {
                    char *name = ttc_strfmt("%s+%s", p->name, c->name);
                    if (name) { free(c->name); c->name = name; }
                    ttc_expr_free(&p->epi);
                }
                p->dead = true;
                k->ts[src].producer = -1;
                (*n_fused)++;
                changed = true;
            }
        }
    }
    /* after the chains became one op each (silu, then the product: one expression) */
    *n_fused += fuse_gated_wq(k);
    *n_fused += rms_into_wq(k);
    /* last: what it inlines is final (no later fusion changes the concatenation or its reader) */
    *n_fused += inline_concat_reads(k);
    return TTC_OK;
}
