/* The KV-cache operator of LLM generation (torchtrt_c/llm/_kv_op.py has its contract):
 *
 *   torchtrt_c.kv_attention(q, k, v, k_cache, v_cache, slots, key_mask, scale, window, softcap)
 *
 * becomes three kernels: two SLOT_WRITEs put the new keys and values into the caches at their
 * slots, in place (the caches are engine inputs that the engine writes: ttc_binding.written),
 * then KV_ATTENTION attends every new query over its cache up to its own slot (so a decode step
 * reads the filled part of the cache only), with the padding mask, the sliding window and the
 * score soft-capping. Kernels run in their list order on one queue, so the attention reads the
 * slots just written.
 *
 * With the GPU kernel families the attention is split along the keys (flash-decoding): a
 * work-group per (row, k/v head, group of query heads, key range) writes its partial softmax
 * state, and KV_REDUCE combines the ranges, so that a decode step (one query per sequence)
 * still spreads over many work-groups and each reads a key range once for all the query heads
 * of its k/v head. */
#include <string.h>

#include "converters_data.h"

static const char *nname(const ttc_node *n) { return n->name ? n->name : n->op_name; }

#define TTC_KVA_MAX_HEAD_DIM 256
#define TTC_KVA_CHUNK 128     /* keys a GPU work-group scores at once (codegen_kv.c, KVA_CH) */
#define TTC_KVA_MAX_SPLITS 8

/* Query heads of one k/v head that share a GPU work-group: a power of two dividing the group,
 * at most 8, whose queries fit 2048 floats of local memory. */
static int32_t heads_per_group(int32_t group, int32_t e) {
    int32_t hg = 1;
    while (hg * 2 <= 8 && group % (hg * 2) == 0 && hg * 2 * e <= 2048) hg *= 2;
    return hg;
}

static bool fail(char **why_not, const char *msg) {
    if (why_not) *why_not = ttc_strdup(msg);
    return false;
}

static bool is_float(ttc_dtype d) { return d == TTC_DTYPE_FLOAT32 || d == TTC_DTYPE_FLOAT16; }

static bool static_dim(ttc_dim d) { return d.sym < 0; }

bool ttc_validate_kv_attention(const ttc_graph *g, const ttc_node *n, bool fp16, char **why_not) {
    if (n->n_inputs != 10 || n->n_outputs != 1) return fail(why_not, "expects 10 inputs and one output");
    if (!ttc_data_output_ok(n, 0, why_not)) return false;
    const char *what[7] = {"q", "k", "v", "k_cache", "v_cache", "slots", "key_mask"};
    for (int32_t i = 0; i < 7; i++)
        if (!ttc_data_type_ok(&n->inputs[i]->type, what[i], why_not)) return false;
    const ttc_type *q = &n->inputs[0]->type, *k = &n->inputs[1]->type, *v = &n->inputs[2]->type;
    const ttc_type *kc = &n->inputs[3]->type, *vc = &n->inputs[4]->type;
    const ttc_type *sl = &n->inputs[5]->type, *km = &n->inputs[6]->type;
    for (int32_t i = 0; i < 5; i++) {
        const ttc_type *t = &n->inputs[i]->type;
        if (!is_float(t->dtype) || t->rank != 4) return fail(why_not, "q, k, v and the caches must be float tensors of rank 4");
    }
    /* the caches are written in place: they must be the engine's own inputs, not a value
     * another op computed (that would have to be copied back to where it came from) */
    if (n->inputs[3]->producer || n->inputs[4]->producer)
        return fail(why_not, "the caches are not graph inputs");
    if (kc->dtype != vc->dtype) return fail(why_not, "the key and value caches differ in dtype");
    if (sl->rank != 1 || (sl->dtype != TTC_DTYPE_INT64 && sl->dtype != TTC_DTYPE_INT32))
        return fail(why_not, "slots must be a 1-D int64/int32 tensor");
    if (km->rank != 2 || km->dtype != TTC_DTYPE_BOOL) return fail(why_not, "key_mask must be a 2-D bool tensor");
    if (!ttc_dim_eq(q->dims[0], k->dims[0]) || !ttc_dim_eq(q->dims[0], kc->dims[0]) ||
        !ttc_dim_eq(q->dims[0], vc->dims[0]) || !ttc_dim_eq(q->dims[0], km->dims[0]) || !ttc_dim_eq(q->dims[0], v->dims[0]))
        return fail(why_not, "q, k, v, the caches and key_mask differ in batch");
    if (!ttc_dim_eq(q->dims[2], k->dims[2]) || !ttc_dim_eq(q->dims[2], v->dims[2]) || !ttc_dim_eq(q->dims[2], sl->dims[0]))
        return fail(why_not, "q, k, v and slots differ in the number of new tokens");
    ttc_dim hq = q->dims[1], hk = k->dims[1];
    if (!static_dim(hq) || !static_dim(hk) || hk.add < 1 || hq.add % hk.add)
        return fail(why_not, "head counts are symbolic, or the k/v heads do not divide the query heads");
    if (!ttc_dim_eq(hk, v->dims[1]) || !ttc_dim_eq(hk, kc->dims[1]) || !ttc_dim_eq(hk, vc->dims[1]))
        return fail(why_not, "k, v and the caches differ in heads");
    ttc_dim L = kc->dims[2];
    if (!static_dim(L) || !ttc_dim_eq(L, vc->dims[2]) || !ttc_dim_eq(L, km->dims[1]))
        return fail(why_not, "the cache length is symbolic or differs between the caches and key_mask");
    ttc_dim e = q->dims[3], ev = v->dims[3];
    if (!static_dim(e) || !static_dim(ev) || !ttc_dim_eq(e, k->dims[3]) || !ttc_dim_eq(e, kc->dims[3]) ||
        !ttc_dim_eq(ev, vc->dims[3]) || !ttc_dim_eq(ev, n->outputs[0]->type.dims[3]))
        return fail(why_not, "head dims are symbolic or differ");
    if (e.add < 1 || ev.add < 1 || e.add > TTC_KVA_MAX_HEAD_DIM || ev.add > TTC_KVA_MAX_HEAD_DIM)
        return fail(why_not, "head dim outside [1, 256]");
    double f;
    int64_t w;
    if (!ttc_value_const_float(n->inputs[7], &f) || !ttc_value_const_int(n->inputs[8], &w) ||
        !ttc_value_const_float(n->inputs[9], &f))
        return fail(why_not, "scale, window and softcap must be constants");
    if (w < 0) return fail(why_not, "window is negative");
    return true;
}

/* A SLOT_WRITE of src into cache (an engine input) along dim. */
static ttc_status slot_write(ttc_conv_ctx *cx, const ttc_node *n, int32_t src, int32_t cache, int32_t slots, int32_t dim) {
    /* copies: ttc_kir_op grows cx->k->ts, which would leave pointers into it dangling */
    ttc_dim dims[TTC_MAX_RANK];
    int32_t rank = cx->k->ts[src].rank;
    memcpy(dims, cx->k->ts[src].dims, sizeof dims);
    int32_t oi = ttc_kir_op(cx->k, TTC_KOP_SLOT_WRITE, cx->k->ts[cache].dtype, rank, dims, n->outputs[0]->name);
    if (oi < 0) return ttc_fail_context(TTC_ERR_NOMEM, "node %s", nname(n));
    ttc_kop *op = &cx->k->ops[oi];
    op->in[0] = src;
    op->in[1] = slots;
    op->out = cache;   /* the op's own fresh tensor stays unused */
    op->p.slot.dim = dim;
    return TTC_OK;
}

/* torchtrt_c.index_copy_into(self, dim, index, source): index_copy_ into self, an input of the
 * graph that the engine writes in place (a cache that a model updates with index_copy_:
 * transformers' static cache; dynamo/_mutations.py puts the op in). Its value is self after the
 * write: readers read the input's memory, after the write in queue order. */
bool ttc_validate_index_copy_into(const ttc_graph *g, const ttc_node *n, bool fp16, char **why_not) {
    if (n->n_inputs != 4 || n->n_outputs != 1) return fail(why_not, "expects (self, dim, index, source)");
    const ttc_type *x = &n->inputs[0]->type, *ix = &n->inputs[2]->type, *src = &n->inputs[3]->type;
    if (!ttc_data_type_ok(x, "self", why_not) || !ttc_data_type_ok(ix, "index", why_not) ||
        !ttc_data_type_ok(src, "source", why_not))
        return false;
    if (n->inputs[0]->producer) return fail(why_not, "self is not a graph input (only inputs are written in place)");
    int64_t d;
    if (!ttc_value_const_int(n->inputs[1], &d)) return fail(why_not, "dim is not a constant");
    if (d < 0) d += x->rank;
    if (x->rank < 1 || d < 0 || d >= x->rank) return fail(why_not, "dim out of range");
    if (ix->rank != 1 || (ix->dtype != TTC_DTYPE_INT64 && ix->dtype != TTC_DTYPE_INT32))
        return fail(why_not, "index must be a 1-D int64/int32 tensor");
    if (!is_float(x->dtype)) return fail(why_not, "self is not float32/float16");
    if (src->rank != x->rank || src->dtype != x->dtype) return fail(why_not, "source differs from self in rank or dtype");
    for (int32_t i = 0; i < x->rank; i++)
        if (i != d && !ttc_dim_eq(x->dims[i], src->dims[i])) return fail(why_not, "source and self differ outside dim");
    if (!ttc_dim_eq(src->dims[d], ix->dims[0])) return fail(why_not, "index and source differ in length along dim");
    return true;
}

ttc_status ttc_convert_index_copy_into(ttc_conv_ctx *cx, const ttc_node *n) {
    int32_t x, ix, src;
    int64_t d;
    TTC_TRY(ttc_cx_tensor(cx, n, 0, &x));
    TTC_TRY(ttc_cx_int(cx, n, 1, &d));
    TTC_TRY(ttc_cx_tensor(cx, n, 2, &ix));
    TTC_TRY(ttc_cx_tensor(cx, n, 3, &src));
    if (cx->k->ts[x].kind != TTC_ET_INPUT)
        return ttc_fail(TTC_ERR_UNSUPPORTED, "node %s: self is not an engine input", nname(n));
    if (d < 0) d += cx->k->ts[x].rank;
    TTC_TRY(slot_write(cx, n, src, x, ix, (int32_t)d));
    return ttc_cx_set_output(cx, n, 0, x);
}

ttc_status ttc_convert_kv_attention(ttc_conv_ctx *cx, const ttc_node *n) {
    int32_t q, k, v, kc, vc, sl, km;
    TTC_TRY(ttc_cx_tensor(cx, n, 0, &q));
    TTC_TRY(ttc_cx_tensor(cx, n, 1, &k));
    TTC_TRY(ttc_cx_tensor(cx, n, 2, &v));
    TTC_TRY(ttc_cx_tensor(cx, n, 3, &kc));
    TTC_TRY(ttc_cx_tensor(cx, n, 4, &vc));
    TTC_TRY(ttc_cx_tensor(cx, n, 5, &sl));
    TTC_TRY(ttc_cx_tensor(cx, n, 6, &km));
    if (cx->k->ts[kc].kind != TTC_ET_INPUT || cx->k->ts[vc].kind != TTC_ET_INPUT)
        return ttc_fail(TTC_ERR_UNSUPPORTED, "node %s: the caches are not engine inputs", nname(n));
    double scale, softcap;
    int64_t window;
    TTC_TRY(ttc_cx_float(cx, n, 7, &scale));
    TTC_TRY(ttc_cx_int(cx, n, 8, &window));
    TTC_TRY(ttc_cx_float(cx, n, 9, &softcap));
    const ttc_type *ot = &n->outputs[0]->type;
    int32_t E = (int32_t)cx->k->ts[q].dims[3].add, EV = (int32_t)cx->k->ts[vc].dims[3].add;
    int32_t L = (int32_t)cx->k->ts[kc].dims[2].add;
    int32_t group = (int32_t)(cx->k->ts[q].dims[1].add / cx->k->ts[kc].dims[1].add);
    /* split-K where the GPU kernel takes the shapes: head dims in runs of 8 */
    bool split = cx->tg && cx->tg->gpu_kernels && E % 8 == 0;
    const ttc_et *kt = &cx->k->ts[k], *vt = &cx->k->ts[v], *kct = &cx->k->ts[kc], *vct = &cx->k->ts[vc];
    if (split && kt->dtype == vt->dtype && kct->dtype == vct->dtype && ttc_dims_eq(kt->rank, kt->dims, vt->rank, vt->dims) &&
        ttc_dims_eq(kct->rank, kct->dims, vct->rank, vct->dims)) {
        /* the GPU families: keys and values written by one kernel (one launch less a layer) */
        TTC_TRY(slot_write(cx, n, k, kc, sl, 2));
        ttc_kop *sw = &cx->k->ops[cx->k->n_ops - 1];
        sw->in[2] = v;
        sw->in[3] = vc;
    } else {
        TTC_TRY(slot_write(cx, n, k, kc, sl, 2));
        TTC_TRY(slot_write(cx, n, v, vc, sl, 2));
    }
    int32_t kps = TTC_KVA_CHUNK, splits = 1;
    if (split) {
        while ((L + kps - 1) / kps > TTC_KVA_MAX_SPLITS) kps += TTC_KVA_CHUNK;
        splits = (L + kps - 1) / kps;
    }
    int32_t part = -1;
    if (split) {   /* the partial results [B, Hq, S, splits, EV + 2], float */
        ttc_dim pd[5] = {ot->dims[0], ot->dims[1], ot->dims[2], {.sym = -1, .mul = 0, .add = splits},
                         {.sym = -1, .mul = 0, .add = EV + 2}};
        int32_t pi = ttc_kir_op(cx->k, TTC_KOP_KV_ATTENTION, TTC_DTYPE_FLOAT32, 5, pd, n->outputs[0]->name);
        if (pi < 0) return ttc_fail_context(TTC_ERR_NOMEM, "node %s", nname(n));
        part = pi;
    }
    int32_t oi = ttc_kir_op(cx->k, split ? TTC_KOP_KV_REDUCE : TTC_KOP_KV_ATTENTION, ttc_cx_float_dtype(cx, ot->dtype),
                            ot->rank, ot->dims, n->outputs[0]->name);
    if (oi < 0) return ttc_fail_context(TTC_ERR_NOMEM, "node %s", nname(n));
    if (split) {   /* the reduction reads the partials and the attention's parameters */
        ttc_kop *pa = &cx->k->ops[part];
        pa->in[0] = q;
        pa->in[1] = kc;
        pa->in[2] = vc;
        pa->in[3] = sl;
        pa->in[4] = km;
        pa->p.kva.scale = scale;
        pa->p.kva.softcap = softcap;
        pa->p.kva.window = window > INT32_MAX ? INT32_MAX : (int32_t)window;
        pa->p.kva.e = E;
        pa->p.kva.ev = EV;
        pa->p.kva.group = group;
        pa->p.kva.splits = splits;
        pa->p.kva.kps = kps;
        pa->p.kva.hg = heads_per_group(group, E);
        ttc_kop *rd = &cx->k->ops[oi];
        rd->in[0] = pa->out;
        rd->p.kva = pa->p.kva;
        return ttc_cx_set_output(cx, n, 0, rd->out);
    }
    ttc_kop *op = &cx->k->ops[oi];
    op->in[0] = q;
    op->in[1] = kc;
    op->in[2] = vc;
    op->in[3] = sl;
    op->in[4] = km;
    op->p.kva.scale = scale;
    op->p.kva.softcap = softcap;
    op->p.kva.window = window > INT32_MAX ? INT32_MAX : (int32_t)window;
    op->p.kva.e = E;
    op->p.kva.ev = EV;
    op->p.kva.group = group;
    return ttc_cx_set_output(cx, n, 0, op->out);
}
