/* Quantized convolutions and linears as native oneDNN int8 steps (backend/cpu/native_qconv.h). */
#include "native_qconv.h"

#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "dnnl_api.h"
#include "native_conv_dnnl.h"
#include "native_post.h"

static bool is_q8(int64_t d) { return d == TTC_DTYPE_INT8 || d == TTC_DTYPE_UINT8; }

/* ---- the epilogue as post-ops ---- */

static bool is_const(const ttc_expr *e, int32_t i, double *v) {
    if (i < 0 || i >= e->n || e->nodes[i].op != TTC_EOP_CONST) return false;
    *v = e->nodes[i].f;
    return isfinite(e->nodes[i].f);
}

/* Leaf node i: a float32 constant with one value per output channel (dims, aligned right, 1
 * except the channel dim ch of out). */
static bool channel_leaf(const ttc_kir *k, const ttc_kop *op, int32_t i, int32_t ch, int32_t *leaf) {
    const ttc_expr *e = &op->epi;
    if (i < 0 || i >= e->n || e->nodes[i].op != TTC_EOP_LEAF || e->nodes[i].a < 0 ||
        e->nodes[i].dtype != TTC_DTYPE_FLOAT32)
        return false;
    const ttc_et *out = &k->ts[op->out], *b = &k->ts[e->leaves[e->nodes[i].a]];
    if (b->kind != TTC_ET_CONST || !b->data || b->dtype != TTC_DTYPE_FLOAT32 || b->rank > out->rank ||
        out->dims[ch].sym >= 0)
        return false;
    for (int32_t j = 0; j < b->rank; j++) {
        int32_t od = out->rank - b->rank + j;
        if (b->dims[j].sym >= 0 || b->dims[j].add != (od == ch ? out->dims[ch].add : 1)) return false;
    }
    *leaf = e->nodes[i].a;
    return true;
}

/* Node i is the residual: a leaf with the output's dims, stored dense (a tensor of its own),
 * float32 as it is or 8-bit dequantized: ((float)r - zr) * sr. Sets *leaf, *dt, *zr, *sr
 * and marks the nodes it takes in used[]. */
static bool residual(const ttc_kir *k, const ttc_kop *op, int32_t i, int32_t *leaf, int64_t *dt, double *zr,
                     double *sr, bool *used) {
    const ttc_expr *e = &op->epi;
    const ttc_et *out = &k->ts[op->out];
    int32_t mul = -1, sub = -1, cast = -1, lf = i;
    if (i >= 0 && e->nodes[i].op == TTC_EOP_MUL) {
        mul = i;
        const ttc_enode *m = &e->nodes[i];
        if (!is_const(e, m->b, sr) || (sub = m->a) < 0 || e->nodes[sub].op != TTC_EOP_SUB ||
            !is_const(e, e->nodes[sub].b, zr))
            return false;
        lf = e->nodes[sub].a;
        if (lf >= 0 && e->nodes[lf].op == TTC_EOP_CAST && e->nodes[lf].dtype == TTC_DTYPE_FLOAT32) {
            cast = lf;
            lf = e->nodes[lf].a;
        }
    }
    if (lf < 0 || lf >= e->n || e->nodes[lf].op != TTC_EOP_LEAF || e->nodes[lf].a < 0) return false;
    int32_t t = e->leaves[e->nodes[lf].a];
    const ttc_et *r = &k->ts[t];
    if (r->kind == TTC_ET_VIEW || r->kind == TTC_ET_CONST || !ttc_dims_eq(r->rank, r->dims, out->rank, out->dims))
        return false;
    if (mul < 0) {
        if (r->dtype != TTC_DTYPE_FLOAT32 || e->nodes[lf].dtype != TTC_DTYPE_FLOAT32) return false;
    } else {
        if (!is_q8(r->dtype) || !(*sr > 0)) return false;
        /* each node of the dequantization read only here */
        if (ttc_native_post_only_user(e, sub) != mul || (cast >= 0 && ttc_native_post_only_user(e, cast) != sub) ||
            ttc_native_post_only_user(e, lf) != (cast >= 0 ? cast : sub))
            return false;
        used[mul] = used[sub] = true;
        if (cast >= 0) used[cast] = true;
    }
    used[lf] = true;
    *leaf = e->nodes[lf].a;
    *dt = r->dtype;
    return true;
}

static bool push(ttc_qconv_plan *p, int32_t kind, double alpha, double beta) {
    /* linear steps stay apart, not merged into one: a dequantize computes (q - zp) s as torch
     * does; s q - zp s rounds apart by an ulp, and an average pool after it, whose averages of
     * 8-bit values sit on rounding ties of its own quantize, moved 7% of them by a step */
    if (p->n >= TTC_QPOST_MAX) return false;
    p->op[p->n].kind = kind;
    p->op[p->n].alpha = (float)alpha;
    p->op[p->n].beta = (float)beta;
    p->n++;
    return true;
}

/* The epilogue acc * scale[c] [+ bias[c]] followed by steps oneDNN takes as post-ops. out_dt:
 * the op's stored dtype; an 8-bit store must come from a value already rounded and clamped to
 * its range (what PT2E's quantize leaves), which oneDNN's conversion then keeps as it is. */
static bool plan_epilogue(const ttc_kir *k, const ttc_kop *op, int32_t ch, ttc_qconv_plan *p, int64_t *res_dt) {
    const ttc_expr *e = &op->epi;
    ttc_dtype out_dt = k->ts[op->out].dtype;
    if (e->n <= 0 || e->n > 64) return false;
    bool used[64] = {false};
    int32_t acc = -1;
    for (int32_t i = 0; i < e->n && acc < 0; i++)
        if (e->nodes[i].op == TTC_EOP_LEAF && e->nodes[i].a < 0) acc = i;
    if (acc < 0 || e->nodes[acc].dtype != TTC_DTYPE_FLOAT32) return false;
    used[acc] = true;
    int32_t j = ttc_native_post_only_user(e, acc);
    if (j < 0 || e->nodes[j].op != TTC_EOP_MUL) return false;
    int32_t o = e->nodes[j].a == acc ? e->nodes[j].b : e->nodes[j].a;
    if (!channel_leaf(k, op, o, ch, &p->scale_leaf)) return false;
    used[j] = used[o] = true;
    int32_t cur = j;
    j = ttc_native_post_only_user(e, cur);
    if (j >= 0 && e->nodes[j].op == TTC_EOP_ADD) {
        o = e->nodes[j].a == cur ? e->nodes[j].b : e->nodes[j].a;
        if (channel_leaf(k, op, o, ch, &p->bias_leaf)) {
            used[j] = used[o] = true;
            cur = j;
            j = ttc_native_post_only_user(e, cur);
        }
    }
    /* integral: the value is a whole number (after a rounding, moved by whole numbers only);
     * lo..hi: the range a clamp left it in */
    bool integral = false;
    double lo = -INFINITY, hi = INFINITY, c;
    for (; j >= 0; cur = j, j = ttc_native_post_only_user(e, cur)) {
        const ttc_enode *nd = &e->nodes[j];
        int32_t other = ttc_eop_is_binary(nd->op) ? (nd->a == cur ? nd->b : nd->a) : -1;
        bool ok = true;
        if (nd->dtype != TTC_DTYPE_FLOAT32 && nd->op != TTC_EOP_CAST) return false;
        switch (nd->op) {
        case TTC_EOP_RELU:
            ok = push(p, TTC_QP_RELU, 0, 0);
            lo = lo > 0 ? lo : 0;
            break;
        case TTC_EOP_ROUND:
            ok = push(p, TTC_QP_ROUND, 0, 0);
            integral = true;
            break;
        case TTC_EOP_MUL:
            if (!is_const(e, other, &c)) return false;
            ok = push(p, TTC_QP_LINEAR, c, 0);
            integral = integral && c == rint(c);
            lo = -INFINITY, hi = INFINITY;
            break;
        case TTC_EOP_ADD: case TTC_EOP_SUB: {
            if (is_const(e, other, &c)) {
                if (nd->op == TTC_EOP_SUB && nd->b != other) return false;   /* c - x */
                c = nd->op == TTC_EOP_SUB ? -c : c;
                ok = push(p, TTC_QP_LINEAR, 1, c);
                integral = integral && c == rint(c);
                lo += c, hi += c;
                break;
            }
            int64_t dt;
            double zr = 0, sr = 1;
            if (nd->op != TTC_EOP_ADD || p->res_leaf >= 0 || !residual(k, op, other, &p->res_leaf, &dt, &zr, &sr, used))
                return false;
            *res_dt = dt;
            /* x + (r - zr) sr = ((x / sr - zr) + r) sr */
            if (is_q8(dt)) ok = push(p, TTC_QP_LINEAR, 1.0 / sr, -zr);
            ok = ok && push(p, TTC_QP_ADD_RES, 0, 0);
            if (is_q8(dt)) ok = ok && push(p, TTC_QP_LINEAR, sr, 0);
            integral = false;
            lo = -INFINITY, hi = INFINITY;
            break;
        }
        case TTC_EOP_MAX: case TTC_EOP_MIN: {
            if (!is_const(e, other, &c)) return false;
            bool mx = nd->op == TTC_EOP_MAX;
            /* a MIN right after a MAX narrows the same clip */
            if (!mx && p->n > 0 && p->op[p->n - 1].kind == TTC_QP_CLIP && p->op[p->n - 1].beta == FLT_MAX)
                p->op[p->n - 1].beta = (float)c;
            else ok = push(p, TTC_QP_CLIP, mx ? c : -FLT_MAX, mx ? FLT_MAX : c);
            if (mx) lo = lo > c ? lo : c;
            else hi = hi < c ? hi : c;
            break;
        }
        case TTC_EOP_CAST:
            if (nd->dtype == TTC_DTYPE_FLOAT32) break;
            if (!is_q8(nd->dtype) || !integral) return false;
            if (nd->dtype == TTC_DTYPE_UINT8 ? (lo < 0 || hi > 255) : (lo < -128 || hi > 127)) return false;
            /* a stored 8-bit result, or one read back as float (quantize -> dequantize): the
             * value is unchanged either way */
            if (j == e->root ? out_dt != nd->dtype : ttc_native_post_only_user(e, j) < 0) return false;
            break;
        default:
            return false;
        }
        if (!ok) return false;
        used[j] = true;
        if (j == e->root) break;
    }
    if (cur != e->root && j != e->root) return false;
    /* every node accounted for: the chain, its constants, the per-channel and residual leaves */
    for (int32_t i = 0; i < e->n; i++)
        if (!used[i] && e->nodes[i].op != TTC_EOP_CONST) return false;
    ttc_dtype root_dt = e->nodes[e->root].dtype;
    return out_dt == TTC_DTYPE_FLOAT32 ? root_dt == TTC_DTYPE_FLOAT32 : (is_q8(out_dt) && root_dt == out_dt);
}

bool ttc_qconv_plan_op(const ttc_kir *k, const ttc_kop *op, ttc_qconv_plan *plan) {
    memset(plan, 0, sizeof *plan);
    plan->scale_leaf = plan->bias_leaf = plan->res_leaf = -1;
    if (op->dead || op->in[0] < 0 || op->in[1] < 0) return false;
    const ttc_et *x = &k->ts[op->in[0]], *w = &k->ts[op->in[1]], *out = &k->ts[op->out];
    if (!is_q8(x->dtype) || x->kind == TTC_ET_VIEW || w->dtype != TTC_DTYPE_INT8) return false;
    if (out->dtype != TTC_DTYPE_FLOAT32 && !is_q8(out->dtype)) return false;
    int32_t ch;
    if (op->kind == TTC_KOP_QCONV2D) {
        if (x->rank != 4 || w->rank != 4 || out->rank != 4 || w->kind != TTC_ET_CONST || x->dims[1].sym >= 0 ||
            op->p.qconv.groups < 1)
            return false;
        for (int d = 0; d < 4; d++)
            if (w->dims[d].sym >= 0) return false;
        ch = 1;
    } else if (op->kind == TTC_KOP_QGEMM) {
        /* a linear: x [M, K] of its own, weights [N, K] int8 constant read transposed */
        const ttc_et *wb = w->kind == TTC_ET_VIEW ? &k->ts[w->base] : NULL;
        if (x->rank != 2 || out->rank != 2 || !wb || w->vkind != TTC_VIEW_PERMUTE || w->perm[0] != 1 ||
            w->perm[1] != 0 || wb->kind != TTC_ET_CONST || wb->rank != 2 || x->dims[1].sym >= 0 ||
            wb->dims[0].sym >= 0 || wb->dims[1].sym >= 0)
            return false;
        ch = 1;
    } else {
        return false;
    }
    int64_t res_dt = -1;
    return plan_epilogue(k, op, ch, plan, &res_dt);
}

/* ---- plain C: the same arithmetic, where oneDNN is refused ---- */

static float post_ref(const ttc_qconv_plan *p, float v, float r) {
    for (int32_t i = 0; i < p->n; i++) {
        float a = p->op[i].alpha, b = p->op[i].beta;
        switch (p->op[i].kind) {
        case TTC_QP_LINEAR: v = a * v + b; break;
        case TTC_QP_RELU: v = v > 0 ? v : 0; break;
        case TTC_QP_ROUND: v = rintf(v); break;
        case TTC_QP_CLIP: v = v < a ? a : v > b ? b : v; break;
        case TTC_QP_ADD_RES: v += r; break;
        }
    }
    return v;
}

static float load(const void *p, int64_t dt, int64_t i) {
    if (dt == TTC_DTYPE_UINT8) return ((const uint8_t *)p)[i];
    if (dt == TTC_DTYPE_INT8) return ((const int8_t *)p)[i];
    return ((const float *)p)[i];
}

static void store(void *p, int64_t dt, int64_t i, float v) {
    if (is_q8(dt)) {
        float lo = dt == TTC_DTYPE_UINT8 ? 0.0f : -128.0f, hi = dt == TTC_DTYPE_UINT8 ? 255.0f : 127.0f;
        v = rintf(v);
        v = v < lo ? lo : v > hi ? hi : v;
        if (dt == TTC_DTYPE_UINT8) ((uint8_t *)p)[i] = (uint8_t)v;
        else ((int8_t *)p)[i] = (int8_t)v;
    } else {
        ((float *)p)[i] = v;
    }
}

/* index of (n, c, h, w) in a [N, C, H, W] tensor stored NCHW or NHWC */
static int64_t at(bool nhwc, int64_t C, int64_t H, int64_t W, int64_t n, int64_t c, int64_t h, int64_t w) {
    return nhwc ? ((n * H + h) * W + w) * C + c : ((n * C + c) * H + h) * W + w;
}

void ttc_qconv_run_ref(const ttc_qconv_shape *s, const ttc_qconv_plan *p, const void *x, const int8_t *w,
                      const float *scale, const float *bias, const void *res, void *y) {
    int64_t icg = s->c / s->g, ocg = s->oc / s->g;
    for (int64_t n = 0; n < s->n; n++)
        for (int64_t oc = 0; oc < s->oc; oc++) {
            int64_t g = oc / ocg;
            for (int64_t oh = 0; oh < s->oh; oh++)
                for (int64_t ow = 0; ow < s->ow; ow++) {
                    int64_t acc = 0;
                    for (int64_t ic = 0; ic < icg; ic++)
                        for (int64_t kh = 0; kh < s->kh; kh++) {
                            int64_t ih = oh * s->sh - s->ph + kh * s->dh;
                            if (ih < 0 || ih >= s->h) continue;
                            for (int64_t kw = 0; kw < s->kw; kw++) {
                                int64_t iw = ow * s->sw - s->pw + kw * s->dw;
                                if (iw < 0 || iw >= s->w) continue;
                                int64_t xi = at(s->x_nhwc, s->c, s->h, s->w, n, g * icg + ic, ih, iw);
                                int64_t xv = (int64_t)load(x, s->x_dt, xi) - s->a_zp;
                                acc += xv * w[((oc * icg + ic) * s->kh + kh) * s->kw + kw];
                            }
                        }
                    float v = (float)acc * scale[oc];
                    if (bias) v += bias[oc];
                    int64_t yi = at(s->y_nhwc, s->oc, s->oh, s->ow, n, oc, oh, ow);
                    float r = res ? load(res, s->r_dt, at(s->r_nhwc, s->oc, s->oh, s->ow, n, oc, oh, ow)) : 0.0f;
                    store(y, s->y_dt, yi, post_ref(p, v, r));
                }
        }
}

/* ---- oneDNN ---- */

#ifndef TTC_HAVE_DNNL

bool ttc_qconv_available(void) { return false; }
void ttc_qconv_run(const void *owner, int32_t ki, const ttc_qconv_shape *s, const ttc_qconv_plan *plan,
                   const void *x, const int8_t *w, const float *scale, const float *bias, const void *res, void *y) {
    (void)owner, (void)ki;
    ttc_qconv_run_ref(s, plan, x, w, scale, bias, res, y);
}
int64_t ttc_qconv_dnnl_calls(void) { return 0; }
void ttc_qconv_forget(const void *owner) { (void)owner; }

#else

/* The library, its entry points, the scratchpads and the primitive cache: dnnl_api.c. */
bool ttc_qconv_available(void) { return ttc_dnnl_available(); }   /* also false while NATIVE_CONV=blas */

/* One layer of one engine kernel at one shape: the primitive, the reorders around it (NULL
 * where the side is stored as the primitive takes it) and their memories. */
typedef struct qprim {
    ttc_qconv_shape s;
    bool ok;                  /* false: oneDNN refused; the C path runs */
    bool wei_ready;
    const int8_t *wkey;
    pthread_mutex_t lock;
    dnnl_stream_t stream;
    dnnl_primitive_t conv, r_src, r_wei, r_dst, r_res;
    dnnl_memory_t m_x, m_w, m_y, m_r, m_b, m_src, m_wei, m_dst, m_res, m_scr;
    float *bias;              /* bias[c] / scale[c]: oneDNN adds the bias before the output scales */
    float *oscale;            /* the output scales: scale[c], times a leading linear step's factor */
    /* linear steps and clips after the first of their kind as binary post-ops with one-value
     * operands: oneDNN 2.6 ran a second eltwise_linear post-op with the first one's factors, and
     * a second eltwise_clip with the first one's bounds (a hardtanh between two quantizes lost
     * its clip to the first quantize's -128..127; tests/test_native_qconv.c) */
    int32_t n_k, k_at[2 * TTC_QPOST_MAX], res_at;
    float k_val[2 * TTC_QPOST_MAX];
    dnnl_memory_t m_k[2 * TTC_QPOST_MAX];
    size_t scratch;
} qprim;

static int64_t dnnl_calls;

int64_t ttc_qconv_dnnl_calls(void) { return __atomic_load_n(&dnnl_calls, __ATOMIC_RELAXED); }

static void qprim_free(void *v) {
    qprim *d = v;
    dnnl_primitive_t ps[] = {d->conv, d->r_src, d->r_wei, d->r_dst, d->r_res};
    dnnl_memory_t ms[] = {d->m_x, d->m_w, d->m_y, d->m_r, d->m_b, d->m_src, d->m_wei, d->m_dst, d->m_res, d->m_scr};
    ttc_dnnl_destroy(ps, sizeof ps / sizeof ps[0], ms, sizeof ms / sizeof ms[0], NULL);
    ttc_dnnl_destroy(NULL, 0, d->m_k, (size_t)d->n_k, d->stream);
    pthread_mutex_destroy(&d->lock);
    free(d->bias);
    free(d->oscale);
    free(d);
}

static dnnl_data_type_t dnnl_dt(int64_t dt) {
    return dt == TTC_DTYPE_UINT8 ? dnnl_u8 : dt == TTC_DTYPE_INT8 ? dnnl_s8 : dnnl_f32;
}

static ttc_dnnl_cache qcache = TTC_DNNL_CACHE_INIT(qprim_free);

/* A reorder between the stored layout and the primitive's (user -> want, or back when to_user),
 * with a library-allocated memory for the primitive's side; nothing when they agree. Unlike
 * ttc_dnnl_reorder, no scratchpad memory of its own: d->scratch grows to its size (run_prim). */
static bool reorder_for(qprim *d, const dnnl_memory_desc_t *user, const dnnl_memory_desc_t *want, bool to_user,
                        dnnl_primitive_t *prim, dnnl_memory_t *mem) {
    if (ttc_dnnl_fn.memory_desc_equal(user, want)) return true;
    dnnl_primitive_desc_t pd = to_user ? ttc_dnnl_reorder_pd(want, user) : ttc_dnnl_reorder_pd(user, want);
    if (!pd) return false;
    ttc_dnnl_scratch_mem(pd, NULL, &d->scratch);
    bool ok = ttc_dnnl_fn.primitive_create(prim, pd) == dnnl_success &&
              ttc_dnnl_fn.memory_create(mem, want, ttc_dnnl_eng(), DNNL_MEMORY_ALLOCATE) == dnnl_success;
    ttc_dnnl_fn.primitive_desc_destroy(pd);
    return ok;
}

static dnnl_alg_kind_t qp_alg(int32_t kind) {
    switch (kind) {
    case TTC_QP_LINEAR: return dnnl_eltwise_linear;
    case TTC_QP_RELU: return dnnl_eltwise_relu;
    case TTC_QP_ROUND: return dnnl_eltwise_round;
    case TTC_QP_CLIP: return dnnl_eltwise_clip;
    }
    return dnnl_alg_kind_undef;
}

static bool qprim_build(qprim *d, const ttc_qconv_plan *p, const float *scale, const float *bias) {
    const ttc_qconv_shape *s = &d->s;
    int64_t prh = ttc_dnnl_pad_end(s->oh, s->sh, s->kh, s->dh, s->h, s->ph);
    int64_t prw = ttc_dnnl_pad_end(s->ow, s->sw, s->kw, s->dw, s->w, s->pw);
    if (prh < 0 || prw < 0 || s->g < 1 || s->c % s->g || s->oc % s->g) return false;
    dnnl_dims_t xd = {s->n, s->c, s->h, s->w}, yd = {s->n, s->oc, s->oh, s->ow}, wd, bd = {s->oc};
    int wr = ttc_dnnl_weight_dims(wd, s->g, s->oc, s->c, s->kh, s->kw);
    dnnl_data_type_t xt = dnnl_dt(s->x_dt), yt = dnnl_dt(s->y_dt), rt = dnnl_dt(s->r_dt);
    dnnl_memory_desc_t ux, uy, uw, ur, ub, ax, ay, aw, ar;
    bool res = s->r_dt >= 0;
    if (ttc_dnnl_fn.memory_desc_init_by_tag(&ux, 4, xd, xt, s->x_nhwc ? dnnl_nhwc : dnnl_nchw) != dnnl_success ||
        ttc_dnnl_fn.memory_desc_init_by_tag(&uy, 4, yd, yt, s->y_nhwc ? dnnl_nhwc : dnnl_nchw) != dnnl_success ||
        ttc_dnnl_fn.memory_desc_init_by_tag(&uw, wr, wd, dnnl_s8, s->g == 1 ? dnnl_oihw : dnnl_goihw) != dnnl_success ||
        ttc_dnnl_fn.memory_desc_init_by_tag(&ub, 1, bd, dnnl_f32, dnnl_a) != dnnl_success ||
        ttc_dnnl_fn.memory_desc_init_by_tag(&aw, wr, wd, dnnl_s8, dnnl_format_tag_any) != dnnl_success ||
        /* oneDNN's int8 kernels (AVX512-VNNI, AMX) run channels-last */
        ttc_dnnl_fn.memory_desc_init_by_tag(&ax, 4, xd, xt, dnnl_nhwc) != dnnl_success ||
        ttc_dnnl_fn.memory_desc_init_by_tag(&ay, 4, yd, yt, dnnl_nhwc) != dnnl_success ||
        (res &&
         (ttc_dnnl_fn.memory_desc_init_by_tag(&ur, 4, yd, rt, s->r_nhwc ? dnnl_nhwc : dnnl_nchw) != dnnl_success ||
          ttc_dnnl_fn.memory_desc_init_by_tag(&ar, 4, yd, rt, dnnl_nhwc) != dnnl_success)))
        return false;
    /* a leading linear step a x + b folds into the scales and the bias:
     * a (acc scale[c] + bias[c]) + b = (a scale[c]) (acc + (a bias[c] + b) / (a scale[c])) */
    int32_t first = 0;
    double fa = 1, fb = 0;
    if (p->n > 0 && p->op[0].kind == TTC_QP_LINEAR && p->op[0].alpha != 0.0f) {
        fa = p->op[0].alpha;
        fb = p->op[0].beta;
        first = 1;
    }
    if (!(d->bias = malloc(sizeof(float) * (size_t)s->oc)) || !(d->oscale = malloc(sizeof(float) * (size_t)s->oc)))
        return false;
    for (int64_t c = 0; c < s->oc; c++) {
        double sc = fa * scale[c];
        d->oscale[c] = (float)sc;
        d->bias[c] = (float)((fa * (bias ? bias[c] : 0.0) + fb) / sc);
        if (!(isfinite(d->oscale[c]) && d->oscale[c] != 0.0f && isfinite(d->bias[c]))) return false;
    }
    dnnl_dims_t st = {s->sh, s->sw}, dl = {s->dh - 1, s->dw - 1}, pl = {s->ph, s->pw}, pr = {prh, prw};
    dnnl_convolution_desc_t cd;
    if (ttc_dnnl_fn.dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_convolution_direct, &ax,
                                                          &aw, &ub, &ay, st, dl, pl, pr) != dnnl_success)
        return false;
    dnnl_primitive_attr_t attr = ttc_dnnl_scratch_attr();
    dnnl_post_ops_t po = NULL;
    if (!attr) return false;
    int32_t zp = (int32_t)s->a_zp;
    bool ok = ttc_dnnl_fn.primitive_attr_set_output_scales(attr, s->oc, 1 << 1, d->oscale) == dnnl_success &&
              (zp == 0 || ttc_dnnl_fn.primitive_attr_set_zero_points(attr, DNNL_ARG_SRC, 1, 0, &zp) == dnnl_success) &&
              ttc_dnnl_fn.post_ops_create(&po) == dnnl_success;
    dnnl_dims_t one = {1, 1, 1, 1};
    dnnl_memory_desc_t km;
    ok = ok && ttc_dnnl_fn.memory_desc_init_by_tag(&km, 4, one, dnnl_f32, dnnl_nhwc) == dnnl_success;
    bool linear_used = false, clip_used = false;
    d->res_at = -1;
    for (int32_t i = first, at = 0; ok && i < p->n; i++) {
        float a = p->op[i].alpha, b = p->op[i].beta;
        int32_t kind = p->op[i].kind;
        if (kind == TTC_QP_ADD_RES) {
            ok = ttc_dnnl_fn.post_ops_append_binary(po, dnnl_binary_add, &ar) == dnnl_success;
            d->res_at = at++;
        } else if ((kind == TTC_QP_LINEAR && linear_used) || (kind == TTC_QP_CLIP && clip_used)) {
            /* a x + b: mul a, add b; clip(a, b): max a, min b (an unbounded side left out) */
            bool lin = kind == TTC_QP_LINEAR;
            for (int j = 0; j < 2 && ok; j++) {
                if (lin ? (j == 0 ? a == 1.0f : b == 0.0f) : (j == 0 ? a == -FLT_MAX : b == FLT_MAX)) continue;
                dnnl_alg_kind_t alg = lin ? (j == 0 ? dnnl_binary_mul : dnnl_binary_add)
                                          : (j == 0 ? dnnl_binary_max : dnnl_binary_min);
                ok = d->n_k < 2 * TTC_QPOST_MAX && ttc_dnnl_fn.post_ops_append_binary(po, alg, &km) == dnnl_success &&
                     ttc_dnnl_fn.memory_create(&d->m_k[d->n_k], &km, ttc_dnnl_eng(), &d->k_val[d->n_k]) == dnnl_success;
                if (ok) {
                    d->k_val[d->n_k] = j == 0 ? a : b;
                    d->k_at[d->n_k++] = at++;
                }
            }
        } else {
            ok = ttc_dnnl_fn.post_ops_append_eltwise(po, 1.0f, qp_alg(kind), a, b) == dnnl_success;
            linear_used = linear_used || kind == TTC_QP_LINEAR;
            clip_used = clip_used || kind == TTC_QP_CLIP;
            at++;
        }
    }
    ok = ok && ttc_dnnl_fn.primitive_attr_set_post_ops(attr, po) == dnnl_success;
    dnnl_primitive_desc_t pd = NULL;
    if (ok && ttc_dnnl_fn.primitive_desc_create(&pd, &cd, attr, ttc_dnnl_eng(), NULL) != dnnl_success) pd = NULL;
    if (po) ttc_dnnl_fn.post_ops_destroy(po);
    ttc_dnnl_fn.primitive_attr_destroy(attr);
    if (!pd) return false;
    dnnl_memory_desc_t pw = *ttc_dnnl_fn.primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    ttc_dnnl_scratch_mem(pd, NULL, &d->scratch);   /* the size: one memory for every primitive (run_prim) */
    ok = ttc_dnnl_fn.primitive_create(&d->conv, pd) == dnnl_success;
    ttc_dnnl_fn.primitive_desc_destroy(pd);
    return ok && ttc_dnnl_stream(&d->stream) && ttc_dnnl_mem(&d->m_x, &ux) && ttc_dnnl_mem(&d->m_w, &uw) &&
           ttc_dnnl_mem(&d->m_y, &uy) &&
           ttc_dnnl_fn.memory_create(&d->m_b, &ub, ttc_dnnl_eng(), d->bias) == dnnl_success &&
           (!res || ttc_dnnl_mem(&d->m_r, &ur)) &&
           reorder_for(d, &ux, &ax, false, &d->r_src, &d->m_src) &&
           reorder_for(d, &uw, &pw, false, &d->r_wei, &d->m_wei) &&
           reorder_for(d, &uy, &ay, true, &d->r_dst, &d->m_dst) &&
           (!res || reorder_for(d, &ur, &ar, false, &d->r_res, &d->m_res));
}

typedef struct {
    const ttc_qconv_shape *s;
    const ttc_qconv_plan *p;
    const float *scale, *bias;
} qprim_args;

static void *qprim_make(void *arg) {
    const qprim_args *a = arg;
    qprim *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    d->s = *a->s;
    pthread_mutex_init(&d->lock, NULL);
    d->ok = qprim_build(d, a->p, a->scale, a->bias);
    return d;
}

/* The entry of (owner, ki, shape), made on first use; NULL only when out of memory. */
static qprim *qprim_get(const void *owner, int32_t ki, const ttc_qconv_shape *s, const ttc_qconv_plan *p,
                        const float *scale, const float *bias) {
    struct {
        int64_t ki;
        ttc_qconv_shape s;
    } key;
    memset(&key, 0, sizeof key);
    key.ki = ki;
    key.s = *s;
    qprim_args a = {s, p, scale, bias};
    return ttc_dnnl_cache_get(&qcache, owner, &key, sizeof key, 0, 0, qprim_make, &a);
}

/* Every primitive of this entry shares one scratchpad memory (m_scr, made on the first call),
 * over the calling thread's buffer of the largest scratchpad among them (one at a time), seen as
 * bytes; m_scr stays NULL while none needs one. */
static bool scratch_ready(qprim *d) {
    if (!d->scratch || d->m_scr) return true;
    dnnl_dims_t dims = {(dnnl_dim_t)d->scratch};
    dnnl_memory_desc_t md;
    return ttc_dnnl_fn.memory_desc_init_by_tag(&md, 1, dims, dnnl_u8, dnnl_a) == dnnl_success &&
           ttc_dnnl_mem(&d->m_scr, &md);
}

static bool run_prim(qprim *d, dnnl_primitive_t p, dnnl_exec_arg_t *args, int n, void *scr) {
    return scratch_ready(d) && ttc_dnnl_exec(p, d->stream, args, n, d->m_scr, scr);
}

static bool run_reorder(qprim *d, dnnl_primitive_t p, dnnl_memory_t from, dnnl_memory_t to, void *scr) {
    return scratch_ready(d) && ttc_dnnl_reorder_exec(p, d->stream, from, to, d->m_scr, scr);
}

static bool qconv_dnnl(const void *owner, int32_t ki, const ttc_qconv_shape *s, const ttc_qconv_plan *p,
                       const void *x, const int8_t *w, const float *scale, const float *bias, const void *res,
                       void *y) {
    if (!ttc_qconv_available()) return false;
    qprim *d = qprim_get(owner, ki, s, p, scale, bias);
    if (!d || !d->ok) return false;
    pthread_mutex_lock(&d->lock);
    void *scr;
    bool ok = ttc_dnnl_bind(d->scratch, &scr, 4, (dnnl_memory_t[]){d->m_x, d->m_w, d->m_y, d->m_r},
                            (const void *[]){x, w, y, res});
    dnnl_memory_t src = d->r_src ? d->m_src : d->m_x, wei = d->r_wei ? d->m_wei : d->m_w;
    dnnl_memory_t dst = d->r_dst ? d->m_dst : d->m_y, rm = d->r_res ? d->m_res : d->m_r;
    if (ok && d->r_src) ok = run_reorder(d, d->r_src, d->m_x, d->m_src, scr);
    if (ok && d->r_res) ok = run_reorder(d, d->r_res, d->m_r, d->m_res, scr);
    if (ok && d->r_wei && !(d->wei_ready && d->wkey == w)) {
        ok = run_reorder(d, d->r_wei, d->m_w, d->m_wei, scr);
        d->wei_ready = ok;
        d->wkey = w;
    }
    if (ok) {
        dnnl_exec_arg_t args[8 + 2 * TTC_QPOST_MAX] = {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei},
                                                       {DNNL_ARG_DST, dst}, {DNNL_ARG_BIAS, d->m_b}};
        int n = 4;
        if (rm && d->res_at >= 0) args[n++] = (dnnl_exec_arg_t){DNNL_ARG_ATTR_MULTIPLE_POST_OP(d->res_at) | DNNL_ARG_SRC_1, rm};
        for (int32_t i = 0; i < d->n_k; i++)
            args[n++] = (dnnl_exec_arg_t){DNNL_ARG_ATTR_MULTIPLE_POST_OP(d->k_at[i]) | DNNL_ARG_SRC_1, d->m_k[i]};
        ok = run_prim(d, d->conv, args, n, scr);
    }
    if (ok && d->r_dst) ok = run_reorder(d, d->r_dst, d->m_dst, d->m_y, scr);
    ok = ok && ttc_dnnl_fn.stream_wait(d->stream) == dnnl_success;
    if (!ok) d->wei_ready = false;
    pthread_mutex_unlock(&d->lock);
    if (ok) __atomic_add_fetch(&dnnl_calls, 1, __ATOMIC_RELAXED);
    return ok;
}

void ttc_qconv_run(const void *owner, int32_t ki, const ttc_qconv_shape *s, const ttc_qconv_plan *plan,
                   const void *x, const int8_t *w, const float *scale, const float *bias, const void *res, void *y) {
    if (!qconv_dnnl(owner, ki, s, plan, x, w, scale, bias, res, y)) ttc_qconv_run_ref(s, plan, x, w, scale, bias, res, y);
}

void ttc_qconv_forget(const void *owner) { ttc_dnnl_cache_forget(&qcache, owner); }

#endif
