/* Convolutions through oneDNN as native kernels (backend/cpu/native_conv_dnnl.h).
 *
 * Why: im2col + OpenBLAS sgemm runs ResNet's 3x3 convolutions far below the cores' peak (the
 * GEMMs are short and wide: 64 rows by 3136 columns at 56x56), while oneDNN's direct
 * convolution on its blocked layouts is what torch eager uses on the CPU. Activations that
 * OpenCL kernels or the engine's caller read are NCHW, so such a call reorders the input into
 * the primitive's layout and the result back; between native convolutions the engine keeps
 * them NHWC (backend/cpu/native_layout.h), and the primitive is asked for NHWC on that side, with
 * no reorder. Weights are reordered once per engine.
 *
 * The header is only needed to build: the library itself is dlopen'ed, and without the header
 * (a machine without libdnnl-dev) every call answers "unavailable". */
#include "native_conv_dnnl.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../../target/target.h"
#include "dnnl_api.h"

static bool env_blas(void) { return ttc_target_native_conv_blas(); }

#ifndef TTC_HAVE_DNNL

bool ttc_dnnl_available(void) { return false; }
bool ttc_dnnl_conv(const void *owner, int32_t ki, const ttc_dnnl_conv_shape *s, const float *x, const float *w,
                   bool w_const, float *y) {
    (void)owner, (void)ki, (void)s, (void)x, (void)w, (void)w_const, (void)y;
    return false;
}
bool ttc_dnnl_conv_post(const void *owner, int32_t ki, const ttc_dnnl_conv_shape *s, const float *x, const float *w,
                        bool w_const, float *y, const ttc_dnnl_post *post, const float *bias, bool *post_done) {
    (void)owner, (void)ki, (void)s, (void)x, (void)w, (void)w_const, (void)y, (void)post, (void)bias;
    *post_done = false;
    return false;
}
void ttc_dnnl_forget(const void *owner) { (void)owner; }
int64_t ttc_dnnl_wino_primitives(void) { return 0; }

#else

/* The library, its entry points (ttc_dnnl_fn) and the scratchpads: backend/cpu/dnnl_api.c. */
bool ttc_dnnl_available(void) { return !env_blas() && ttc_dnnl_cpu_engine() != NULL; }

/* One convolution of one engine kernel at one shape: the primitive, the reorders around it
 * (NULL where the primitive takes the plain layout) and their memories. */
typedef struct dconv {
    ttc_dnnl_conv_shape s;
    const float *wkey;        /* the weights the kept reordered copy came from */
    bool ok;                  /* false: oneDNN refused; the caller takes im2col + sgemm */
    bool post_in;             /* the primitive applies the post-ops (bias, activations) */
    bool bias_in;             /* ... and takes a bias argument */
    bool wei_ready;
    bool wino;                /* the primitive is oneDNN's Winograd convolution */
    float wmax;               /* wino: max |w| of the kept weights (NaN counts as inf) */
    pthread_mutex_t lock;     /* one call at a time: the memories' handles are set per call */
    dnnl_stream_t stream;
    dnnl_primitive_t conv, r_src, r_wei, r_dst;
    dnnl_memory_t m_x, m_w, m_y, m_src, m_wei, m_dst, m_b;
    /* each primitive's scratchpad (NULL: it needs none), pointed at the calling thread's
     * buffer on every call (ttc_dnnl_scratch) */
    dnnl_memory_t s_conv, s_src, s_wei, s_dst;
    size_t scratch;           /* the largest of their sizes in bytes */
} dconv;

static int64_t wino_made;

int64_t ttc_dnnl_wino_primitives(void) { return __atomic_load_n(&wino_made, __ATOMIC_RELAXED); }

static void dconv_free(void *v) {
    dconv *d = v;
    dnnl_primitive_t ps[] = {d->conv, d->r_src, d->r_wei, d->r_dst};
    dnnl_memory_t ms[] = {d->m_x, d->m_w, d->m_y, d->m_src, d->m_wei, d->m_dst, d->m_b,
                          d->s_conv, d->s_src, d->s_wei, d->s_dst};
    ttc_dnnl_destroy(ps, sizeof ps / sizeof ps[0], ms, sizeof ms / sizeof ms[0], d->stream);
    pthread_mutex_destroy(&d->lock);
    free(d);
}

/* The convolution's primitive descriptor for src/weights/dst descriptions ax/aw/ay, with the
 * post-ops first and, where oneDNN refuses them, without (the caller applies them); NULL where
 * oneDNN refuses the shape. ub: the bias description, when the primitive takes one. */
static dnnl_primitive_desc_t conv_pd(dconv *d, const ttc_dnnl_post *post, dnnl_alg_kind_t alg,
                                     const dnnl_memory_desc_t *ax, const dnnl_memory_desc_t *aw,
                                     const dnnl_memory_desc_t *ay, int64_t prh, int64_t prw, dnnl_memory_desc_t *ub) {
    const ttc_dnnl_conv_shape *s = &d->s;
    dnnl_dims_t st = {s->sh, s->sw}, dl = {s->dh - 1, s->dw - 1}, pl = {s->ph, s->pw}, pr = {prh, prw};
    dnnl_convolution_desc_t cd;
    dnnl_dims_t bd = {s->oc};
    dnnl_primitive_desc_t pd = NULL;
    for (int with = post != NULL; with >= 0 && !pd; with--) {
        bool bias = with && post->bias;
        if (bias && ttc_dnnl_fn.memory_desc_init_by_tag(ub, 1, bd, dnnl_f32, dnnl_a) != dnnl_success) continue;
        if (ttc_dnnl_fn.dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference, alg, ax, aw,
                                                         bias ? ub : NULL, ay, st, dl, pl, pr) != dnnl_success)
            return NULL;
        pd = ttc_dnnl_primitive_desc(&cd, with ? post : NULL);
        d->post_in = pd && with;
        d->bias_in = pd && bias;
    }
    return pd;
}

/* A reference or GEMM-based (im2col) implementation: slower than reordering around a direct one. */
static bool slow_impl(dnnl_primitive_desc_t pd) {
    const char *impl = NULL;
    if (ttc_dnnl_fn.primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success || !impl) return false;
    return !strncmp(impl, "ref", 3) || !strncmp(impl, "gemm", 4);
}

static bool dconv_build(dconv *d, const ttc_dnnl_post *post) {
    const ttc_dnnl_conv_shape *s = &d->s;
    int64_t prh = ttc_dnnl_pad_end(s->oh, s->sh, s->kh, s->dh, s->h, s->ph);
    int64_t prw = ttc_dnnl_pad_end(s->ow, s->sw, s->kw, s->dw, s->w, s->pw);
    if (prh < 0 || prw < 0 || s->g < 1 || s->c % s->g || s->oc % s->g) return false;
    dnnl_dims_t xd = {s->n, s->c, s->h, s->w}, yd = {s->n, s->oc, s->oh, s->ow}, wd;
    int wr = ttc_dnnl_weight_dims(wd, s->g, s->oc, s->c, s->kh, s->kw);
    dnnl_memory_desc_t ux, uw, uy, ax, aw, ay, ub;
    if (ttc_dnnl_fn.memory_desc_init_by_tag(&ux, 4, xd, dnnl_f32, s->x_nhwc ? dnnl_nhwc : dnnl_nchw) != dnnl_success ||
        ttc_dnnl_fn.memory_desc_init_by_tag(&uy, 4, yd, dnnl_f32, s->y_nhwc ? dnnl_nhwc : dnnl_nchw) != dnnl_success ||
        ttc_dnnl_fn.memory_desc_init_by_tag(&uw, wr, wd, dnnl_f32, s->g == 1 ? dnnl_oihw : dnnl_goihw) !=
            dnnl_success ||
        ttc_dnnl_fn.memory_desc_init_by_tag(&aw, wr, wd, dnnl_f32, dnnl_format_tag_any) != dnnl_success)
        return false;
    /* Winograd first where asked and the shape is one (3x3, stride 1): its kernel runs on the
     * blocked layout it picks, with reorders around it, and still takes 0.4-0.7 of the direct
     * NHWC kernel's time on ResNet's 3x3 convolutions here (bench/RESULTS.md, session 8). */
    dnnl_primitive_desc_t pd = NULL;
    /* Not for few channels: the transforms and reorders cost more than the multiplications
     * they save (the quickstart's 3->16 and 16->32 convolutions at 32x32: 1.0 ms a call with
     * Winograd, 0.5 without); ResNet's 3x3 convolutions have 64 channels or more. */
    bool wide = s->c >= 32 && s->oc >= 32;
    if (s->wino && wide && s->kh == 3 && s->kw == 3 && s->sh == 1 && s->sw == 1 && s->dh == 1 && s->dw == 1 && s->g == 1) {
        if (ttc_dnnl_fn.memory_desc_init_by_tag(&ax, 4, xd, dnnl_f32, dnnl_format_tag_any) != dnnl_success ||
            ttc_dnnl_fn.memory_desc_init_by_tag(&ay, 4, yd, dnnl_f32, dnnl_format_tag_any) != dnnl_success)
            return false;
        pd = conv_pd(d, post, dnnl_convolution_winograd, &ax, &aw, &ay, prh, prw, &ub);
        if (pd && slow_impl(pd)) {
            ttc_dnnl_fn.primitive_desc_destroy(pd);
            pd = NULL;
        }
        d->wino = pd != NULL;
    }
    /* A side kept NHWC is asked for as it is (oneDNN's NHWC kernels, no reorder); an NCHW side
     * lets the primitive choose. Where that request gets only a reference or GEMM-based kernel,
     * the primitive chooses both sides (reorders around it, as for NCHW). */
    for (int pass = s->x_nhwc || s->y_nhwc ? 0 : 1; pass < 2 && !pd; pass++) {
        if (ttc_dnnl_fn.memory_desc_init_by_tag(&ax, 4, xd, dnnl_f32, dnnl_format_tag_any) != dnnl_success ||
            ttc_dnnl_fn.memory_desc_init_by_tag(&ay, 4, yd, dnnl_f32, dnnl_format_tag_any) != dnnl_success)
            return false;
        if (pass == 0) {
            if (s->x_nhwc) ax = ux;
            if (s->y_nhwc) ay = uy;
        }
        pd = conv_pd(d, post, dnnl_convolution_auto, &ax, &aw, &ay, prh, prw, &ub);
        if (pd && pass == 0 && slow_impl(pd)) {
            ttc_dnnl_fn.primitive_desc_destroy(pd);
            pd = NULL;
        }
    }
    if (!pd) return false;
    dnnl_memory_desc_t px = *ttc_dnnl_fn.primitive_desc_query_md(pd, dnnl_query_src_md, 0);
    dnnl_memory_desc_t pw = *ttc_dnnl_fn.primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    dnnl_memory_desc_t py = *ttc_dnnl_fn.primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
    bool ok = ttc_dnnl_primitive(pd, &d->conv, &d->s_conv, &d->scratch);
    ttc_dnnl_fn.primitive_desc_destroy(pd);
    /* reorders around the primitive where it takes other layouts than x's, w's, y's */
    return ok && ttc_dnnl_stream(&d->stream) && ttc_dnnl_mem(&d->m_x, &ux) && ttc_dnnl_mem(&d->m_w, &uw) &&
           ttc_dnnl_mem(&d->m_y, &uy) &&
           ttc_dnnl_reorder(&ux, &px, false, &d->r_src, &d->m_src, &d->s_src, &d->scratch) &&
           ttc_dnnl_reorder(&uw, &pw, false, &d->r_wei, &d->m_wei, &d->s_wei, &d->scratch) &&
           ttc_dnnl_reorder(&uy, &py, true, &d->r_dst, &d->m_dst, &d->s_dst, &d->scratch) &&
           (!d->bias_in || ttc_dnnl_mem(&d->m_b, &ub));
}

static ttc_dnnl_cache cache = TTC_DNNL_CACHE_INIT(dconv_free);

typedef struct {
    const ttc_dnnl_conv_shape *s;
    const ttc_dnnl_post *post;
} dconv_args;

static void *dconv_make(void *arg) {
    const dconv_args *a = arg;
    dconv *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    d->s = *a->s;
    pthread_mutex_init(&d->lock, NULL);
    d->ok = dconv_build(d, a->post);
    if (d->ok && d->wino) __atomic_add_fetch(&wino_made, 1, __ATOMIC_RELAXED);
    return d;
}

/* The entry of (owner, ki, shape), made on first use; NULL only when out of memory. */
static dconv *dconv_get(const void *owner, int32_t ki, const ttc_dnnl_conv_shape *s, const ttc_dnnl_post *post) {
    struct {
        int64_t ki;
        ttc_dnnl_conv_shape s;
    } key;
    memset(&key, 0, sizeof key);
    key.ki = ki;
    key.s = *s;
    dconv_args a = {s, post};
    return ttc_dnnl_cache_get(&cache, owner, &key, sizeof key, 0, 0, dconv_make, &a);
}

/* max |p[i]| over n values, NaN counting as inf: 16 partial maxima so that the loop vectorises */
static float abs_max(const float *p, int64_t n) {
    float m[16] = {0};
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int j = 0; j < 16; j++) {
            float a = __builtin_fabsf(p[i + j]);
            a = a != a ? __builtin_inff() : a;
            m[j] = a > m[j] ? a : m[j];
        }
    for (; i < n; i++) {
        float a = __builtin_fabsf(p[i]);
        a = a != a ? __builtin_inff() : a;
        m[0] = a > m[0] ? a : m[0];
    }
    float r = 0.0f;
    for (int j = 0; j < 16; j++) r = m[j] > r ? m[j] : r;
    return r;
}

/* Whether Winograd gives what the direct convolution would for these operands. Its transforms
 * mix a whole input tile into a whole output tile, so a NaN or inf pixel would spread to
 * outputs whose windows never touch it (torch keeps NaN and inf to the windows:
 * tests/device/test_nonfinite.py), and they grow values by up to ~1e4 on the way. So: every
 * operand finite and |x| |w| (C/g kh kw) below 1e34, else this call runs the direct kernel.
 * One read of x (a tenth of the convolution's time or less); w's bound is kept with its
 * reordered copy when w is constant. Called under d->lock. */
static bool wino_safe(dconv *d, const ttc_dnnl_conv_shape *s, const float *x, const float *w, bool w_const) {
    int64_t nw = s->oc * (s->c / s->g) * s->kh * s->kw;
    float wm = w_const && d->wei_ready && d->wkey == w ? d->wmax : abs_max(w, nw);
    d->wmax = wm;
    float xm = abs_max(x, s->n * s->c * s->h * s->w);
    return xm * wm * (float)((s->c / s->g) * s->kh * s->kw) <= 1e34f;   /* false for inf and NaN */
}

bool ttc_dnnl_conv_post(const void *owner, int32_t ki, const ttc_dnnl_conv_shape *s, const float *x, const float *w,
                        bool w_const, float *y, const ttc_dnnl_post *post, const float *bias, bool *post_done) {
    *post_done = false;
    if (!ttc_dnnl_available()) return false;
    dconv *d = dconv_get(owner, ki, s, post);
    if (!d || !d->ok) return false;
    pthread_mutex_lock(&d->lock);
    if (d->wino && !wino_safe(d, s, x, w, w_const)) {
        pthread_mutex_unlock(&d->lock);
        ttc_dnnl_conv_shape direct = *s;
        direct.wino = 0;
        return ttc_dnnl_conv_post(owner, ki, &direct, x, w, w_const, y, post, bias, post_done);
    }
    /* the calling thread's scratchpad, shared by every primitive this thread runs (one at a time) */
    void *scr;
    bool ok = ttc_dnnl_bind(d->scratch, &scr, 4,
                            (dnnl_memory_t[]){d->m_x, d->m_w, d->m_y, d->bias_in ? d->m_b : NULL},
                            (const void *[]){x, w, y, bias});
    dnnl_memory_t src = d->r_src ? d->m_src : d->m_x, wei = d->r_wei ? d->m_wei : d->m_w;
    dnnl_memory_t dst = d->r_dst ? d->m_dst : d->m_y;
    if (ok && d->r_src) ok = ttc_dnnl_reorder_exec(d->r_src, d->stream, d->m_x, d->m_src, d->s_src, scr);
    if (ok && d->r_wei && !(w_const && d->wei_ready && d->wkey == w)) {
        ok = ttc_dnnl_reorder_exec(d->r_wei, d->stream, d->m_w, d->m_wei, d->s_wei, scr);
        d->wei_ready = ok && w_const;
        d->wkey = w;
    }
    if (ok) {
        dnnl_exec_arg_t args[5] = {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst},
                                   {DNNL_ARG_BIAS, d->m_b}};
        ok = ttc_dnnl_exec(d->conv, d->stream, args, d->bias_in ? 4 : 3, d->s_conv, scr);
    }
    if (ok && d->r_dst) ok = ttc_dnnl_reorder_exec(d->r_dst, d->stream, d->m_dst, d->m_y, d->s_dst, scr);
    ok = ok && ttc_dnnl_fn.stream_wait(d->stream) == dnnl_success;
    if (!ok) d->wei_ready = false;
    *post_done = ok && d->post_in;
    pthread_mutex_unlock(&d->lock);
    return ok;
}

bool ttc_dnnl_conv(const void *owner, int32_t ki, const ttc_dnnl_conv_shape *s, const float *x, const float *w,
                   bool w_const, float *y) {
    bool done;
    return ttc_dnnl_conv_post(owner, ki, s, x, w, w_const, y, NULL, NULL, &done);
}

void ttc_dnnl_forget(const void *owner) { ttc_dnnl_cache_forget(&cache, owner); }

#endif
