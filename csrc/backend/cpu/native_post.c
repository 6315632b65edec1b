/* oneDNN post-ops for a native convolution's epilogue (backend/cpu/native_post.h). */
#include "native_post.h"

#include <float.h>
#include <math.h>
#include <string.h>

int32_t ttc_native_post_only_user(const ttc_expr *e, int32_t v) {
    int32_t user = -1;
    for (int32_t j = v + 1; j < e->n; j++) {
        const ttc_enode *nd = &e->nodes[j];
        if (nd->op == TTC_EOP_LEAF || nd->op == TTC_EOP_CONST || nd->op == TTC_EOP_INDEX) continue;
        bool reads = nd->a == v || (ttc_eop_is_binary(nd->op) && nd->b == v) ||
                     (nd->op == TTC_EOP_WHERE && (nd->b == v || nd->c == v));
        if (!reads) continue;
        if (user >= 0) return -1;
        user = j;
    }
    return user;
}

/* The other operand of binary node j beside v. */
static int32_t other(const ttc_enode *nd, int32_t v) { return nd->a == v ? nd->b : nd->a; }

/* Leaf node i holds a bias broadcast over the output: bias[oc] over a convolution's
 * [N, OC, OH, OW], bias[n] over a GEMM's [.., M, N] (a Linear's). A dense float32 tensor
 * whose dims, aligned right, are 1 except that one (static) dim. */
static bool bias_leaf(const ttc_kir *k, const ttc_kop *op, int32_t i, int32_t *leaf) {
    const ttc_expr *e = &op->epi;
    if (i < 0 || i >= e->n || e->nodes[i].op != TTC_EOP_LEAF || e->nodes[i].a < 0) return false;
    const ttc_et *out = &k->ts[op->out], *b = &k->ts[e->leaves[e->nodes[i].a]];
    int32_t R = out->rank, ch = op->kind == TTC_KOP_CONV2D ? 1 : R - 1;
    if ((op->kind == TTC_KOP_CONV2D && R != 4) || R < 1 || b->rank > R || b->dtype != TTC_DTYPE_FLOAT32 ||
        out->dims[ch].sym >= 0)
        return false;
    if (b->kind == TTC_ET_VIEW && !b->contig) return false;
    for (int32_t j = 0; j < b->rank; j++) {
        int32_t od = R - b->rank + j;
        const ttc_dim *d = &b->dims[j];
        if (d->sym >= 0 || d->add != (od == ch ? out->dims[ch].add : 1)) return false;
    }
    *leaf = e->nodes[i].a;
    return true;
}

/* A GEMM whose output rows are its [M, N] rows: the last dim is N (static), so that oneDNN's
 * bias[N] and the row-wise C fallback see the epilogue's elements where they are. */
static bool gemm_rows(const ttc_kir *k, const ttc_kop *op) {
    const ttc_et *out = &k->ts[op->out], *sh = &k->ts[ttc_kop_gemm_shape(op)];
    if (out->rank < 1 || sh->rank < 2) return false;
    const ttc_dim *a = &out->dims[out->rank - 1], *b = &sh->dims[sh->rank - 1];
    return a->sym < 0 && b->sym < 0 && a->add == b->add;
}

static bool push(ttc_dnnl_post *p, ttc_dnnl_act a, float alpha, float beta) {
    if (p->n_act >= TTC_DNNL_MAX_ACT) return false;
    p->act[p->n_act] = a;
    p->alpha[p->n_act] = alpha;
    p->beta[p->n_act] = beta;
    p->n_act++;
    return true;
}

/* kir/eops.def's DNNL column: the oneDNN post-op each expression op may be, -1 none */
#define TTC_DNNL_NONE (-1)
static const int dnnl_act[TTC_EOP_COUNT] = {
#define EOP(name, arity, cmp, half, native, mathfn, dnnl, cublas) [TTC_EOP_##name] = TTC_DNNL_##dnnl,
#include "../../kir/eops.def"
#undef EOP
};

/* One activation step reading cur (node j, its only user): appended to p, *next = the node
 * that produces its value; false when j is not one. */
static bool activation(const ttc_expr *e, int32_t cur, int32_t j, bool hswish_in, ttc_dnnl_post *p, int32_t *next) {
    const ttc_enode *nd = &e->nodes[j];
    ttc_dnnl_post save = *p;
    bool ok = true;
    *next = j;
    if (nd->dtype != TTC_DTYPE_FLOAT32) return false;
    /* ReLU, clamp/hardtanh/ReLU6 and hardsigmoid stay in C after oneDNN (native_epi): oneDNN
     * 2.6's relu, clip and clip_v2 kernels take max/min, which turn NaN into the bound (conv +
     * ReLU with a NaN pixel gave 0 NaNs where torch gives 270: tests/device/test_nonfinite.py);
     * torch keeps NaN. Hardswish multiplies by x last, so NaN passes: done in oneDNN it saves a
     * pass over the output in C (MobileNetV3's expansions). */
    int act = (unsigned)nd->op < TTC_EOP_COUNT ? dnnl_act[nd->op] : TTC_DNNL_NONE;
    if (act == TTC_DNNL_NONE || (act == TTC_DNNL_HARDSWISH && !hswish_in)) return false;
    if (act == TTC_DNNL_HARDSWISH) ok = push(p, TTC_DNNL_HARDSWISH, 1.0f / 6.0f, 0.5f);   /* oneDNN 2.6 ignores both: fixed to these */
    else ok = push(p, (ttc_dnnl_act)act, act == TTC_DNNL_SWISH ? 1.0f : 0.0f, 0.0f);
    if (!ok) *p = save;
    return ok;
}

bool ttc_native_post_plan(const ttc_kir *k, const ttc_kop *op, ttc_native_post *pp) {
    const ttc_expr *e = &op->epi;
    memset(pp, 0, sizeof *pp);
    pp->bias_leaf = -1;
    pp->split = -1;
    const ttc_target *tg = ttc_kir_target(k);
    bool conv = op->kind == TTC_KOP_CONV2D && tg->native_post;
    bool gemm = (op->kind == TTC_KOP_GEMM || op->kind == TTC_KOP_WQ_LINEAR) && tg->native_gemm_post && gemm_rows(k, op);
    if (!(conv || gemm) || e->n <= 0 || k->ts[op->out].dtype != TTC_DTYPE_FLOAT32) return false;
    int32_t cur = -1;
    for (int32_t i = 0; i < e->n && cur < 0; i++)
        if (e->nodes[i].op == TTC_EOP_LEAF && e->nodes[i].a < 0) cur = i;
    if (cur < 0 || e->nodes[cur].dtype != TTC_DTYPE_FLOAT32) return false;
    int32_t j = ttc_native_post_only_user(e, cur);
    if (j >= 0 && e->nodes[j].op == TTC_EOP_ADD && e->nodes[j].dtype == TTC_DTYPE_FLOAT32 &&
        bias_leaf(k, op, other(&e->nodes[j], cur), &pp->bias_leaf)) {
        pp->dnnl.bias = true;
        cur = j;
        j = ttc_native_post_only_user(e, cur);
    }
    int32_t next;
    bool hswish_in = tg->native_post_hswish;
    while (j >= 0 && activation(e, cur, j, hswish_in, &pp->dnnl, &next)) {
        cur = next;
        j = ttc_native_post_only_user(e, cur);
    }
    pp->split = cur;
    return pp->dnnl.bias || pp->dnnl.n_act > 0;
}

static float act_ref(ttc_dnnl_act a, float alpha, float beta, float x) {
    switch (a) {
    case TTC_DNNL_RELU: return x < 0.0f ? alpha * x : x;
    case TTC_DNNL_CLIP: return x < alpha ? alpha : x > beta ? beta : x;
    case TTC_DNNL_SWISH: return x / (1.0f + expf(-alpha * x));
    case TTC_DNNL_LOGISTIC: return 1.0f / (1.0f + expf(-x));
    case TTC_DNNL_HARDSWISH: {
        float t = alpha * x + beta;
        return x * (t < 0.0f ? 0.0f : t > 1.0f ? 1.0f : t);
    }
    case TTC_DNNL_LINEAR: return alpha * x + beta;
    case TTC_DNNL_TANH: return tanhf(x);
    case TTC_DNNL_GELU_ERF: return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
    case TTC_DNNL_GELU_TANH:
        return 0.5f * x * (1.0f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
    }
    return x;
}

void ttc_native_post_ref(const ttc_dnnl_post *post, const float *bias, float *y, int64_t n, int64_t oc, int64_t hw) {
    for (int64_t i = 0; i < n; i++)
        for (int64_t c = 0; c < oc; c++) {
            float *r = y + (i * oc + c) * hw, b = post->bias ? bias[c] : 0.0f;
            for (int64_t s = 0; s < hw; s++) {
                float x = r[s] + b;
                for (int32_t a = 0; a < post->n_act; a++) x = act_ref(post->act[a], post->alpha[a], post->beta[a], x);
                r[s] = x;
            }
        }
}

void ttc_native_post_ref_nhwc(const ttc_dnnl_post *post, const float *bias, float *y, int64_t rows, int64_t oc) {
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < oc; c++) {
            float x = y[r * oc + c] + (post->bias ? bias[c] : 0.0f);
            for (int32_t a = 0; a < post->n_act; a++) x = act_ref(post->act[a], post->alpha[a], post->beta[a], x);
            y[r * oc + c] = x;
        }
}
