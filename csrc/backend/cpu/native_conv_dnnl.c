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

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../target/target.h"

#if defined(__has_include)
#if __has_include(<oneapi/dnnl/dnnl.h>)
#include <oneapi/dnnl/dnnl.h>
#define TTC_HAVE_DNNL 1
#endif
#endif

static bool env_blas(void) { return ttc_target_native_conv_blas(); }

#ifndef TTC_HAVE_DNNL

bool ttc_dnnl_available(void) { return false; }
const char *ttc_dnnl_library(void) { return "oneDNN headers were missing at build time (apt-get install libdnnl-dev)"; }
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
void *ttc_dnnl_cpu_engine(void) { return NULL; }
void *ttc_dnnl_sym(const char *name) { (void)name; return NULL; }
void *ttc_dnnl_post_attr(const ttc_dnnl_post *post) { (void)post; return NULL; }
void *ttc_dnnl_scratch(size_t n) { (void)n; return NULL; }

#else

/* The entry points used, typed from the header's own prototypes. */
#define DNNL_FNS(X)                                                                                                  \
    X(dnnl_engine_create) X(dnnl_stream_create) X(dnnl_stream_wait) X(dnnl_stream_destroy)                          \
    X(dnnl_memory_desc_init_by_tag) X(dnnl_memory_desc_equal) X(dnnl_memory_create) X(dnnl_memory_destroy)          \
    X(dnnl_memory_set_data_handle) X(dnnl_dilated_convolution_forward_desc_init) X(dnnl_primitive_desc_create)      \
    X(dnnl_primitive_desc_query_md) X(dnnl_primitive_desc_destroy) X(dnnl_reorder_primitive_desc_create)            \
    X(dnnl_primitive_create) X(dnnl_primitive_execute) X(dnnl_primitive_destroy) X(dnnl_version)                  \
    X(dnnl_primitive_attr_create) X(dnnl_primitive_attr_destroy) X(dnnl_primitive_attr_set_post_ops)                \
    X(dnnl_post_ops_create) X(dnnl_post_ops_destroy) X(dnnl_post_ops_append_eltwise) X(dnnl_primitive_desc_query)   \
    X(dnnl_primitive_attr_set_scratchpad_mode) X(dnnl_memory_desc_get_size)

#define DECL(f) static __typeof__(&f) p_##f;
DNNL_FNS(DECL)
#undef DECL

static pthread_once_t dnnl_once = PTHREAD_ONCE_INIT;
static dnnl_engine_t dnnl_eng;
static void *dnnl_handle;
static char dnnl_desc[160];

static void dnnl_load(void) {
    void *h = dnnl_handle = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(dnnl_desc, sizeof dnnl_desc, "oneDNN not found (apt-get install libdnnl2)");
        return;
    }
    bool ok = true;
#define LOAD(f) ok = ok && (p_##f = (__typeof__(&f))dlsym(h, #f)) != NULL;
    DNNL_FNS(LOAD)
#undef LOAD
    if (!ok || p_dnnl_engine_create(&dnnl_eng, dnnl_cpu, 0) != dnnl_success) {
        dnnl_eng = NULL;
        snprintf(dnnl_desc, sizeof dnnl_desc, "libdnnl.so.2 lacks an entry point of oneDNN 2.x or has no CPU engine");
        return;
    }
    const dnnl_version_t *v = p_dnnl_version();
    snprintf(dnnl_desc, sizeof dnnl_desc, "oneDNN %d.%d.%d (cpu runtime %u)", v->major, v->minor, v->patch,
             v->cpu_runtime);
}

bool ttc_dnnl_available(void) {
    if (env_blas()) return false;
    pthread_once(&dnnl_once, dnnl_load);
    return dnnl_eng != NULL;
}

const char *ttc_dnnl_library(void) {
    pthread_once(&dnnl_once, dnnl_load);
    return dnnl_desc;
}

void *ttc_dnnl_cpu_engine(void) {
    pthread_once(&dnnl_once, dnnl_load);
    return dnnl_eng;
}

void *ttc_dnnl_sym(const char *name) {
    return ttc_dnnl_cpu_engine() ? dlsym(dnnl_handle, name) : NULL;
}

/* One convolution of one engine kernel at one shape: the primitive, the reorders around it
 * (NULL where the primitive takes the plain layout) and their memories. */
typedef struct dconv {
    struct dconv *next;
    const void *owner;
    int32_t ki;
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
     * buffer on every call (scratch_buffer below) */
    dnnl_memory_t s_conv, s_src, s_wei, s_dst;
    size_t scratch;           /* the largest of their sizes in bytes */
} dconv;

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static dconv *cache;
static int64_t wino_made;   /* under cache_lock */

int64_t ttc_dnnl_wino_primitives(void) {
    pthread_mutex_lock(&cache_lock);
    int64_t n = wino_made;
    pthread_mutex_unlock(&cache_lock);
    return n;
}

static void dconv_free(dconv *d) {
    dnnl_primitive_t ps[] = {d->conv, d->r_src, d->r_wei, d->r_dst};
    for (size_t i = 0; i < 4; i++)
        if (ps[i]) p_dnnl_primitive_destroy(ps[i]);
    dnnl_memory_t ms[] = {d->m_x, d->m_w, d->m_y, d->m_src, d->m_wei, d->m_dst, d->m_b,
                          d->s_conv, d->s_src, d->s_wei, d->s_dst};
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++)
        if (ms[i]) p_dnnl_memory_destroy(ms[i]);
    if (d->stream) p_dnnl_stream_destroy(d->stream);
    pthread_mutex_destroy(&d->lock);
    free(d);
}

/* Scratchpads. In oneDNN's default (library) mode, the implementations that declare a global
 * scratchpad (the Winograd convolution, the im2col-GEMM one) size a thread_local buffer of the
 * thread that *creates* the primitive, and at execution take the thread_local buffer of the
 * thread that *runs* it: oneDNN requires both to be the same thread. Ours are not: a primitive
 * is made on the first call, on whichever PoCL worker runs that native kernel, and later calls
 * run on any worker. A worker that never made such a primitive hands oneDNN a NULL buffer (one
 * that made only smaller ones, a short one): the SIGSEGV of session 8 (the JIT Winograd kernel
 * storing its transformed input at address 0). So every primitive here runs in user mode, with
 * a buffer of the calling thread's own that grows to the largest scratchpad it has run. */
static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static bool scratch_key_ok;

typedef struct {
    void *p;
    size_t n;
} scratch_buf;

static void scratch_free(void *v) {
    scratch_buf *b = v;
    free(b->p);
    free(b);
}

static void scratch_init(void) { scratch_key_ok = pthread_key_create(&scratch_key, scratch_free) == 0; }

/* The calling thread's buffer of at least n bytes, page-aligned; NULL when out of memory. */
static void *scratch_buffer(size_t n) {
    pthread_once(&scratch_once, scratch_init);
    if (!scratch_key_ok) return NULL;
    scratch_buf *b = pthread_getspecific(scratch_key);
    if (!b) {
        if (!(b = calloc(1, sizeof *b))) return NULL;
        if (pthread_setspecific(scratch_key, b) != 0) {
            free(b);
            return NULL;
        }
    }
    if (b->n < n) {
        void *p = NULL;
        if (posix_memalign(&p, 4096, n) != 0) return NULL;
        free(b->p);
        b->p = p;
        b->n = n;
    }
    return b->p;
}

/* Attributes asking for a user scratchpad (and nothing else); NULL when oneDNN refuses. */
static dnnl_primitive_attr_t user_scratch_attr(void) {
    dnnl_primitive_attr_t attr = NULL;
    if (p_dnnl_primitive_attr_create(&attr) != dnnl_success) return NULL;
    if (p_dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) != dnnl_success) {
        p_dnnl_primitive_attr_destroy(attr);
        return NULL;
    }
    return attr;
}

/* The primitive's scratchpad memory (*mem stays NULL where it needs none); d->scratch grows to
 * its size. */
static bool scratch_for(dconv *d, dnnl_primitive_desc_t pd, dnnl_memory_t *mem) {
    const dnnl_memory_desc_t *md = p_dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    size_t n = md ? p_dnnl_memory_desc_get_size(md) : 0;
    if (n == 0) return true;
    d->scratch = n > d->scratch ? n : d->scratch;
    return p_dnnl_memory_create(mem, md, dnnl_eng, DNNL_MEMORY_NONE) == dnnl_success;
}

/* A reorder user -> want (or back), with a library-allocated memory for the blocked side;
 * nothing when the layouts agree. */
static bool reorder_for(dconv *d, const dnnl_memory_desc_t *user, const dnnl_memory_desc_t *want, bool to_user,
                        dnnl_primitive_t *prim, dnnl_memory_t *mem, dnnl_memory_t *scratch) {
    if (p_dnnl_memory_desc_equal(user, want)) return true;
    dnnl_primitive_desc_t pd = NULL;
    const dnnl_memory_desc_t *from = to_user ? want : user, *to = to_user ? user : want;
    dnnl_primitive_attr_t attr = user_scratch_attr();
    if (!attr) return false;
    dnnl_status_t st = p_dnnl_reorder_primitive_desc_create(&pd, from, dnnl_eng, to, dnnl_eng, attr);
    p_dnnl_primitive_attr_destroy(attr);
    if (st != dnnl_success) return false;
    bool ok = p_dnnl_primitive_create(prim, pd) == dnnl_success && scratch_for(d, pd, scratch) &&
              p_dnnl_memory_create(mem, want, dnnl_eng, DNNL_MEMORY_ALLOCATE) == dnnl_success;
    p_dnnl_primitive_desc_destroy(pd);
    return ok;
}

static dnnl_alg_kind_t act_alg(ttc_dnnl_act a) {
    switch (a) {
    case TTC_DNNL_RELU: return dnnl_eltwise_relu;
    case TTC_DNNL_CLIP: return dnnl_eltwise_clip;
    case TTC_DNNL_SWISH: return dnnl_eltwise_swish;
    case TTC_DNNL_LOGISTIC: return dnnl_eltwise_logistic;
    case TTC_DNNL_HARDSWISH: return dnnl_eltwise_hardswish;
    case TTC_DNNL_LINEAR: return dnnl_eltwise_linear;
    case TTC_DNNL_TANH: return dnnl_eltwise_tanh;
    case TTC_DNNL_GELU_ERF: return dnnl_eltwise_gelu_erf;
    case TTC_DNNL_GELU_TANH: return dnnl_eltwise_gelu_tanh;
    }
    return dnnl_alg_kind_undef;
}

/* The primitive attributes: a user scratchpad and post's activations (post NULL: none). */
static bool post_attr(const ttc_dnnl_post *post, dnnl_primitive_attr_t *attr) {
    if (!(*attr = user_scratch_attr())) return false;
    if (!post || post->n_act == 0) return true;
    dnnl_post_ops_t po = NULL;
    if (p_dnnl_post_ops_create(&po) != dnnl_success) {
        p_dnnl_primitive_attr_destroy(*attr);
        *attr = NULL;
        return false;
    }
    bool ok = true;
    for (int32_t i = 0; i < post->n_act && ok; i++)
        ok = p_dnnl_post_ops_append_eltwise(po, 1.0f, act_alg(post->act[i]), post->alpha[i], post->beta[i]) ==
             dnnl_success;
    ok = ok && p_dnnl_primitive_attr_set_post_ops(*attr, po) == dnnl_success;
    p_dnnl_post_ops_destroy(po);
    if (!ok && *attr) {
        p_dnnl_primitive_attr_destroy(*attr);
        *attr = NULL;
    }
    return ok;
}

void *ttc_dnnl_post_attr(const ttc_dnnl_post *post) {
    dnnl_primitive_attr_t attr = NULL;
    return ttc_dnnl_cpu_engine() && post_attr(post, &attr) ? attr : NULL;
}

void *ttc_dnnl_scratch(size_t n) { return scratch_buffer(n); }

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
        dnnl_primitive_attr_t attr = NULL;
        if (bias && p_dnnl_memory_desc_init_by_tag(ub, 1, bd, dnnl_f32, dnnl_a) != dnnl_success) continue;
        if (p_dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference, alg, ax, aw,
                                                         bias ? ub : NULL, ay, st, dl, pl, pr) != dnnl_success)
            return NULL;
        if (!post_attr(with ? post : NULL, &attr)) continue;
        if (p_dnnl_primitive_desc_create(&pd, &cd, attr, dnnl_eng, NULL) != dnnl_success) pd = NULL;
        if (attr) p_dnnl_primitive_attr_destroy(attr);
        d->post_in = pd && with;
        d->bias_in = pd && bias;
    }
    return pd;
}

/* A reference or GEMM-based (im2col) implementation: slower than reordering around a direct one. */
static bool slow_impl(dnnl_primitive_desc_t pd) {
    const char *impl = NULL;
    if (p_dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success || !impl) return false;
    return !strncmp(impl, "ref", 3) || !strncmp(impl, "gemm", 4);
}

static bool dconv_build(dconv *d, const ttc_dnnl_post *post) {
    const ttc_dnnl_conv_shape *s = &d->s;
    /* the bottom/right padding that yields torch's output size. Negative where floor division
     * drops input rows (a 1x1 stride-2 convolution of an even image: ResNet's downsampling);
     * oneDNN's size check divides with floor too, so 0 gives the same output size there
     * (the shortfall is below one stride), where a negative one left those convolutions to
     * im2col + sgemm at a sixth of the speed. */
    int64_t prh = (s->oh - 1) * s->sh + (s->kh - 1) * s->dh + 1 - s->h - s->ph;
    int64_t prw = (s->ow - 1) * s->sw + (s->kw - 1) * s->dw + 1 - s->w - s->pw;
    prh = prh < 0 && prh > -s->sh ? 0 : prh;
    prw = prw < 0 && prw > -s->sw ? 0 : prw;
    if (prh < 0 || prw < 0 || s->g < 1 || s->c % s->g || s->oc % s->g) return false;
    dnnl_dims_t xd = {s->n, s->c, s->h, s->w}, yd = {s->n, s->oc, s->oh, s->ow};
    dnnl_dims_t wd = {s->g, s->oc / s->g, s->c / s->g, s->kh, s->kw};
    if (s->g == 1) {
        dnnl_dims_t w4 = {s->oc, s->c, s->kh, s->kw};
        memcpy(wd, w4, sizeof w4);
    }
    int wr = s->g == 1 ? 4 : 5;
    dnnl_memory_desc_t ux, uw, uy, ax, aw, ay, ub;
    if (p_dnnl_memory_desc_init_by_tag(&ux, 4, xd, dnnl_f32, s->x_nhwc ? dnnl_nhwc : dnnl_nchw) != dnnl_success ||
        p_dnnl_memory_desc_init_by_tag(&uy, 4, yd, dnnl_f32, s->y_nhwc ? dnnl_nhwc : dnnl_nchw) != dnnl_success ||
        p_dnnl_memory_desc_init_by_tag(&uw, wr, wd, dnnl_f32, s->g == 1 ? dnnl_oihw : dnnl_goihw) != dnnl_success ||
        p_dnnl_memory_desc_init_by_tag(&aw, wr, wd, dnnl_f32, dnnl_format_tag_any) != dnnl_success)
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
        if (p_dnnl_memory_desc_init_by_tag(&ax, 4, xd, dnnl_f32, dnnl_format_tag_any) != dnnl_success ||
            p_dnnl_memory_desc_init_by_tag(&ay, 4, yd, dnnl_f32, dnnl_format_tag_any) != dnnl_success)
            return false;
        pd = conv_pd(d, post, dnnl_convolution_winograd, &ax, &aw, &ay, prh, prw, &ub);
        if (pd && slow_impl(pd)) {
            p_dnnl_primitive_desc_destroy(pd);
            pd = NULL;
        }
        d->wino = pd != NULL;
    }
    /* A side kept NHWC is asked for as it is (oneDNN's NHWC kernels, no reorder); an NCHW side
     * lets the primitive choose. Where that request gets only a reference or GEMM-based kernel,
     * the primitive chooses both sides (reorders around it, as for NCHW). */
    for (int pass = s->x_nhwc || s->y_nhwc ? 0 : 1; pass < 2 && !pd; pass++) {
        if (p_dnnl_memory_desc_init_by_tag(&ax, 4, xd, dnnl_f32, dnnl_format_tag_any) != dnnl_success ||
            p_dnnl_memory_desc_init_by_tag(&ay, 4, yd, dnnl_f32, dnnl_format_tag_any) != dnnl_success)
            return false;
        if (pass == 0) {
            if (s->x_nhwc) ax = ux;
            if (s->y_nhwc) ay = uy;
        }
        pd = conv_pd(d, post, dnnl_convolution_auto, &ax, &aw, &ay, prh, prw, &ub);
        if (pd && pass == 0 && slow_impl(pd)) {
            p_dnnl_primitive_desc_destroy(pd);
            pd = NULL;
        }
    }
    if (!pd) return false;
    dnnl_memory_desc_t px = *p_dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
    dnnl_memory_desc_t pw = *p_dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    dnnl_memory_desc_t py = *p_dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
    bool ok = p_dnnl_primitive_create(&d->conv, pd) == dnnl_success && scratch_for(d, pd, &d->s_conv);
    p_dnnl_primitive_desc_destroy(pd);
    return ok && p_dnnl_stream_create(&d->stream, dnnl_eng, dnnl_stream_default_flags) == dnnl_success &&
           p_dnnl_memory_create(&d->m_x, &ux, dnnl_eng, DNNL_MEMORY_NONE) == dnnl_success &&
           p_dnnl_memory_create(&d->m_w, &uw, dnnl_eng, DNNL_MEMORY_NONE) == dnnl_success &&
           p_dnnl_memory_create(&d->m_y, &uy, dnnl_eng, DNNL_MEMORY_NONE) == dnnl_success &&
           reorder_for(d, &ux, &px, false, &d->r_src, &d->m_src, &d->s_src) &&
           reorder_for(d, &uw, &pw, false, &d->r_wei, &d->m_wei, &d->s_wei) &&
           reorder_for(d, &uy, &py, true, &d->r_dst, &d->m_dst, &d->s_dst) &&
           (!d->bias_in || p_dnnl_memory_create(&d->m_b, &ub, dnnl_eng, DNNL_MEMORY_NONE) == dnnl_success);
}

/* p with its arguments, and its scratchpad memory sm (NULL: none) over buffer scr. */
static bool run_with(dconv *d, dnnl_primitive_t p, dnnl_exec_arg_t *args, int n, dnnl_memory_t sm, void *scr) {
    if (sm) {
        if (p_dnnl_memory_set_data_handle(sm, scr) != dnnl_success) return false;
        args[n++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, sm};
    }
    return p_dnnl_primitive_execute(p, d->stream, n, args) == dnnl_success;
}

static bool run2(dconv *d, dnnl_primitive_t p, int a0, dnnl_memory_t m0, int a1, dnnl_memory_t m1, dnnl_memory_t sm,
                 void *scr) {
    dnnl_exec_arg_t args[3] = {{a0, m0}, {a1, m1}};
    return run_with(d, p, args, 2, sm, scr);
}

/* The entry of (owner, ki, shape), made on first use; NULL only when out of memory. */
static dconv *dconv_get(const void *owner, int32_t ki, const ttc_dnnl_conv_shape *s, const ttc_dnnl_post *post) {
    pthread_mutex_lock(&cache_lock);
    dconv *d = cache;
    while (d && !(d->owner == owner && d->ki == ki && !memcmp(&d->s, s, sizeof *s))) d = d->next;
    if (!d && (d = calloc(1, sizeof *d)) != NULL) {
        d->owner = owner;
        d->ki = ki;
        d->s = *s;
        pthread_mutex_init(&d->lock, NULL);
        d->ok = dconv_build(d, post);
        wino_made += d->ok && d->wino;
        d->next = cache;
        cache = d;
    }
    pthread_mutex_unlock(&cache_lock);
    return d;
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
    void *scr = d->scratch ? scratch_buffer(d->scratch) : NULL;
    bool ok = (!d->scratch || scr) && p_dnnl_memory_set_data_handle(d->m_x, (void *)x) == dnnl_success &&
              p_dnnl_memory_set_data_handle(d->m_w, (void *)w) == dnnl_success &&
              p_dnnl_memory_set_data_handle(d->m_y, y) == dnnl_success &&
              (!d->bias_in || p_dnnl_memory_set_data_handle(d->m_b, (void *)bias) == dnnl_success);
    dnnl_memory_t src = d->r_src ? d->m_src : d->m_x, wei = d->r_wei ? d->m_wei : d->m_w;
    dnnl_memory_t dst = d->r_dst ? d->m_dst : d->m_y;
    if (ok && d->r_src) ok = run2(d, d->r_src, DNNL_ARG_FROM, d->m_x, DNNL_ARG_TO, d->m_src, d->s_src, scr);
    if (ok && d->r_wei && !(w_const && d->wei_ready && d->wkey == w)) {
        ok = run2(d, d->r_wei, DNNL_ARG_FROM, d->m_w, DNNL_ARG_TO, d->m_wei, d->s_wei, scr);
        d->wei_ready = ok && w_const;
        d->wkey = w;
    }
    if (ok) {
        dnnl_exec_arg_t args[5] = {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst},
                                   {DNNL_ARG_BIAS, d->m_b}};
        ok = run_with(d, d->conv, args, d->bias_in ? 4 : 3, d->s_conv, scr);
    }
    if (ok && d->r_dst) ok = run2(d, d->r_dst, DNNL_ARG_FROM, d->m_dst, DNNL_ARG_TO, d->m_y, d->s_dst, scr);
    ok = ok && p_dnnl_stream_wait(d->stream) == dnnl_success;
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

void ttc_dnnl_forget(const void *owner) {
    pthread_mutex_lock(&cache_lock);
    dconv **pp = &cache;
    while (*pp) {
        dconv *d = *pp;
        if (d->owner == owner) {
            *pp = d->next;
            dconv_free(d);
        } else {
            pp = &d->next;
        }
    }
    pthread_mutex_unlock(&cache_lock);
}

#endif
