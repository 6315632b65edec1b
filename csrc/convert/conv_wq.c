/* Weight-only quantized linear (issue 35): torchtrt_c.wq_linear(x, qweight, scales, zeros,
 * group_size, bits) -> x [.., K] times the dequantized weight [N, K] transposed, as one kernel op
 * (TTC_KOP_WQ_LINEAR) that reads the packed weights and dequantizes in registers. The Python
 * side (torchtrt_c/quantization/) makes the node from torchao's graphs or from
 * compile(quantize=...). Layout: kir.h, TTC_KOP_WQ_LINEAR. */
#include "converters.h"
#include "converters_data.h"

#include <stdlib.h>
#include <string.h>

static bool fail(char **why_not, char *msg) {
    if (why_not) *why_not = msg;
    else free(msg);
    return false;
}

static bool is_float(ttc_dtype d) { return d == TTC_DTYPE_FLOAT32 || d == TTC_DTYPE_FLOAT16; }

static bool static_2d(const ttc_type *t, int64_t r, int64_t c) {
    return t->kind == TTC_TYPE_TENSOR && t->rank == 2 && t->dims[0].sym < 0 && t->dims[1].sym < 0 &&
           t->dims[0].add == r && t->dims[1].add == c;
}

bool ttc_validate_wq_linear(const ttc_graph *g, const ttc_node *n, bool fp16, char **why_not) {
    (void)g; (void)fp16;
    if (n->n_inputs != 6 || n->n_outputs != 1)
        return fail(why_not, ttc_strdup("expects (x, qweight, scales, zeros, group_size, bits)"));
    if (!ttc_data_output_ok(n, 0, why_not)) return false;
    const ttc_type *x = &n->inputs[0]->type, *q = &n->inputs[1]->type, *s = &n->inputs[2]->type;
    if (!ttc_data_type_ok(x, "x", why_not) || !ttc_data_type_ok(q, "qweight", why_not) ||
        !ttc_data_type_ok(s, "scales", why_not))
        return false;
    int64_t gs, bits;
    if (!ttc_value_const_int(n->inputs[4], &gs) || !ttc_value_const_int(n->inputs[5], &bits))
        return fail(why_not, ttc_strdup("group_size and bits must be constants"));
    if (bits != 8 && bits != 4) return fail(why_not, ttc_strfmt("bits must be 8 or 4, got %lld", (long long)bits));
    if (!is_float(x->dtype) || x->rank < 1 || x->dims[x->rank - 1].sym >= 0)
        return fail(why_not, ttc_strdup("x must be a float32/float16 tensor with a static last dim"));
    int64_t K = x->dims[x->rank - 1].add;
    if (q->rank != 2 || q->dims[0].sym >= 0) return fail(why_not, ttc_strdup("qweight must be a static 2-D tensor"));
    int64_t N = q->dims[0].add;
    if (gs < 1 || K % gs != 0)
        return fail(why_not, ttc_strfmt("K = %lld is not a multiple of group_size %lld", (long long)K, (long long)gs));
    if (bits == 8 && (q->dtype != TTC_DTYPE_INT8 || !static_2d(q, N, K)))
        return fail(why_not, ttc_strfmt("8-bit qweight must be int8 [N, %lld]", (long long)K));
    if (bits == 4 && (gs % 2 != 0 || q->dtype != TTC_DTYPE_UINT8 || !static_2d(q, N, K / 2)))
        return fail(why_not, ttc_strfmt("4-bit qweight must be uint8 [N, %lld] (two per byte) with an even group_size",
                                        (long long)K / 2));
    int64_t G = K / gs;
    if (!is_float(s->dtype) || !static_2d(s, N, G))
        return fail(why_not, ttc_strfmt("scales must be float [%lld, %lld]", (long long)N, (long long)G));
    if (!ttc_value_is_none(n->inputs[3])) {
        const ttc_type *z = &n->inputs[3]->type;
        if (z->kind != TTC_TYPE_TENSOR || !is_float(z->dtype) || !static_2d(z, N, G))
            return fail(why_not, ttc_strfmt("zeros must be None or float [%lld, %lld]", (long long)N, (long long)G));
    }
    const ttc_type *o = &n->outputs[0]->type;
    if (o->rank != x->rank || o->dims[o->rank - 1].sym >= 0 || o->dims[o->rank - 1].add != N)
        return fail(why_not, ttc_strdup("output must be x's shape with N as its last dim"));
    return true;
}

ttc_status ttc_convert_wq_linear(ttc_conv_ctx *cx, const ttc_node *n) {
    ttc_kir *k = cx->k;
    int32_t x, q, s, z = -1, xc, qc, sc, zc = -1;
    int64_t gs, bits;
    TTC_TRY(ttc_cx_tensor(cx, n, 0, &x));
    TTC_TRY(ttc_cx_tensor(cx, n, 1, &q));
    TTC_TRY(ttc_cx_tensor(cx, n, 2, &s));
    if (!ttc_cx_is_none(cx, n, 3)) TTC_TRY(ttc_cx_tensor(cx, n, 3, &z));
    TTC_TRY(ttc_cx_int(cx, n, 4, &gs));
    TTC_TRY(ttc_cx_int(cx, n, 5, &bits));
    const char *nm = n->outputs[0]->name;
    TTC_TRY(ttc_cx_contiguous(cx, x, nm, &xc));
    TTC_TRY(ttc_cx_contiguous(cx, q, nm, &qc));
    TTC_TRY(ttc_cx_contiguous(cx, s, nm, &sc));
    if (z >= 0) TTC_TRY(ttc_cx_contiguous(cx, z, nm, &zc));
    const ttc_type *ot = &n->outputs[0]->type;
    ttc_dtype dt = ttc_cx_float_dtype(cx, ot->dtype);
    int32_t oi = ttc_kir_op(k, TTC_KOP_WQ_LINEAR, dt, ot->rank, ot->dims, nm);
    if (oi < 0) return TTC_ERR_NOMEM;
    ttc_kop *op = &k->ops[oi];
    op->in[0] = xc;
    op->in[1] = qc;
    op->in[2] = sc;
    op->in[3] = zc;
    op->p.wq.group = (int32_t)gs;
    op->p.wq.bits = (int32_t)bits;
    op->p.wq.n = (int32_t)k->ts[qc].dims[0].add;
    op->p.wq.k = (int32_t)k->ts[xc].dims[k->ts[xc].rank - 1].add;
    op->p.wq.gemv = cx->tg && cx->tg->gpu_kernels;
    return ttc_cx_set_output(cx, n, 0, op->out);
}
