/* GEMMs through oneDNN's matmul as native kernels (backend/cpu/native_gemm_dnnl.h).
 *
 * Why: on this CPU oneDNN's matmul with its weights reordered into the blocked layout it
 * prefers ran the transformer and ConvNeXt linears 5-45% faster than OpenBLAS 0.3.21's sgemm
 * on one core (bench/cpu_gemm.py, RESULTS.md "CPU GEMM libraries"); OpenBLAS stays the path
 * where the library is missing or refuses a shape.
 *
 * The library is the one native_conv_dnnl.c loads; its entry points are looked up here by name
 * (typed from the header's prototypes), so a machine without libdnnl-dev builds the stubs. */
#include "native_gemm_dnnl.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "native_conv_dnnl.h"

#if defined(__has_include)
#if __has_include(<oneapi/dnnl/dnnl.h>)
#include <oneapi/dnnl/dnnl.h>
#define TTC_HAVE_DNNL_GEMM 1
#endif
#endif

#ifndef TTC_HAVE_DNNL_GEMM

bool ttc_dnnl_gemm_available(void) { return false; }
bool ttc_dnnl_gemm(const void *owner, int32_t ki, const ttc_dnnl_gemm_shape *s, const float *A, const float *B,
                   bool b_const, float *C) {
    (void)owner, (void)ki, (void)s, (void)A, (void)B, (void)b_const, (void)C;
    return false;
}
bool ttc_dnnl_gemm_post(const void *owner, int32_t ki, const ttc_dnnl_gemm_shape *s, const float *A, const float *B,
                        bool b_const, float *C, const ttc_dnnl_post *post, const float *bias, bool *post_done) {
    (void)owner, (void)ki, (void)s, (void)A, (void)B, (void)b_const, (void)C, (void)post, (void)bias;
    *post_done = false;
    return false;
}
void ttc_dnnl_gemm_forget(const void *owner) { (void)owner; }
int64_t ttc_dnnl_gemm_calls(void) { return 0; }
int64_t ttc_dnnl_gemm_post_calls(void) { return 0; }
bool ttc_dnnl_bgemm(const void *owner, int32_t ki, int32_t slot, const ttc_dnnl_bgemm_shape *s, const float *A,
                    const float *B, float *C) {
    (void)owner, (void)ki, (void)slot, (void)s, (void)A, (void)B, (void)C;
    return false;
}

#else

#define GEMM_FNS(X)                                                                                                  \
    X(dnnl_stream_create) X(dnnl_stream_wait) X(dnnl_stream_destroy) X(dnnl_memory_desc_init_by_tag)                \
    X(dnnl_memory_desc_equal) X(dnnl_memory_create) X(dnnl_memory_destroy) X(dnnl_memory_set_data_handle)          \
    X(dnnl_matmul_desc_init) X(dnnl_primitive_desc_create) X(dnnl_primitive_desc_query_md)                          \
    X(dnnl_primitive_desc_destroy) X(dnnl_reorder_primitive_desc_create) X(dnnl_primitive_create)                   \
    X(dnnl_primitive_execute) X(dnnl_primitive_destroy) X(dnnl_memory_desc_init_by_strides)                        \
    X(dnnl_primitive_desc_query) X(dnnl_primitive_attr_destroy) X(dnnl_memory_desc_get_size)

#define DECL(f) static __typeof__(&f) g_##f;
GEMM_FNS(DECL)
#undef DECL

static pthread_once_t gemm_once = PTHREAD_ONCE_INIT;
static dnnl_engine_t g_eng;

static void gemm_load(void) {
    dnnl_engine_t eng = ttc_dnnl_cpu_engine();
    bool ok = eng != NULL;
#define LOAD(f) ok = ok && (g_##f = (__typeof__(&f))ttc_dnnl_sym(#f)) != NULL;
    GEMM_FNS(LOAD)
#undef LOAD
    g_eng = ok ? eng : NULL;
}

bool ttc_dnnl_gemm_available(void) {
    pthread_once(&gemm_once, gemm_load);
    return g_eng != NULL;
}

/* One GEMM of one engine kernel at one shape: the primitive and, for constant weights in a
 * layout other than theirs, the reordered copy (m_wei) and the reorder that fills it. */
typedef struct dgemm {
    struct dgemm *next;
    const void *owner;
    int32_t ki;
    int32_t slot;             /* -1: a GEMM (s); else a strided batched GEMM (bs) of kernel ki */
    ttc_dnnl_gemm_shape s;
    ttc_dnnl_bgemm_shape bs;
    bool packed;              /* B is constant: reordered once into the primitive's layout */
    bool ok;                  /* false: oneDNN refused; the caller takes OpenBLAS */
    bool post_in;             /* the primitive applies the post-ops (activations) */
    bool bias_in;             /* ... and adds a bias[N] argument */
    bool wei_ready;
    const float *wkey;        /* the weights the kept copy came from */
    pthread_mutex_t lock;     /* one call at a time: the memories' handles are set per call */
    dnnl_stream_t stream;
    dnnl_primitive_t mm, r_wei;
    dnnl_memory_t m_a, m_b, m_c, m_wei, m_bias;
    /* the primitives' scratchpads (NULL: none needed), over the calling thread's buffer on
     * every call (user mode, as native_conv_dnnl.c's: oneDNN's library scratchpad belongs to
     * the thread that made the primitive, and PoCL runs the kernel on any of its workers) */
    dnnl_memory_t s_mm, s_wei;
    size_t scratch;           /* the larger of their sizes in bytes */
} dgemm;

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static dgemm *cache;
static int64_t n_calls, n_post_calls;

int64_t ttc_dnnl_gemm_calls(void) { return __atomic_load_n(&n_calls, __ATOMIC_RELAXED); }
int64_t ttc_dnnl_gemm_post_calls(void) { return __atomic_load_n(&n_post_calls, __ATOMIC_RELAXED); }

static void dgemm_free(dgemm *d) {
    if (d->mm) g_dnnl_primitive_destroy(d->mm);
    if (d->r_wei) g_dnnl_primitive_destroy(d->r_wei);
    dnnl_memory_t ms[] = {d->m_a, d->m_b, d->m_c, d->m_wei, d->m_bias, d->s_mm, d->s_wei};
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++)
        if (ms[i]) g_dnnl_memory_destroy(ms[i]);
    if (d->stream) g_dnnl_stream_destroy(d->stream);
    pthread_mutex_destroy(&d->lock);
    free(d);
}

/* The primitive's scratchpad memory (*mem stays NULL where it needs none); d->scratch grows to
 * its size. */
static bool scratch_for(dgemm *d, dnnl_primitive_desc_t pd, dnnl_memory_t *mem) {
    const dnnl_memory_desc_t *md = g_dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    size_t n = md ? g_dnnl_memory_desc_get_size(md) : 0;
    if (n == 0) return true;
    d->scratch = n > d->scratch ? n : d->scratch;
    return g_dnnl_memory_create(mem, md, g_eng, DNNL_MEMORY_NONE) == dnnl_success;
}

/* The matmul's primitive descriptor with post (bias and activations) first and, where oneDNN
 * refuses them, without (the caller applies them); NULL where it refuses the shape. */
static dnnl_primitive_desc_t matmul_pd(dgemm *d, const ttc_dnnl_post *post, const dnnl_memory_desc_t *ua,
                                       const dnnl_memory_desc_t *ub, const dnnl_memory_desc_t *uc,
                                       dnnl_memory_desc_t *bias_md) {
    dnnl_dims_t bd = {1, d->s.n};
    dnnl_primitive_desc_t pd = NULL;
    for (int with = post != NULL; with >= 0 && !pd; with--) {
        bool bias = with && post->bias;
        if (bias && g_dnnl_memory_desc_init_by_tag(bias_md, 2, bd, dnnl_f32, dnnl_ab) != dnnl_success) continue;
        dnnl_matmul_desc_t md;
        if (g_dnnl_matmul_desc_init(&md, ua, ub, bias ? bias_md : NULL, uc) != dnnl_success) continue;
        dnnl_primitive_attr_t attr = ttc_dnnl_post_attr(with ? post : NULL);
        if (!attr) continue;   /* a post-op refused: next round without */
        if (g_dnnl_primitive_desc_create(&pd, &md, attr, g_eng, NULL) != dnnl_success) pd = NULL;
        g_dnnl_primitive_attr_destroy(attr);
        d->post_in = pd && with;
        d->bias_in = pd && bias;
    }
    return pd;
}

static bool dgemm_build(dgemm *d, const ttc_dnnl_post *post) {
    const ttc_dnnl_gemm_shape *s = &d->s;
    if (s->m < 1 || s->n < 1 || s->k < 1) return false;
    dnnl_dims_t ad = {s->m, s->k}, bd = {s->k, s->n}, cd = {s->m, s->n};
    dnnl_memory_desc_t ua, ub, uc, wb, bias_md;
    /* B as [K,N]: row-major, or (trans_b) [N,K] read column-major */
    if (g_dnnl_memory_desc_init_by_tag(&ua, 2, ad, dnnl_f32, dnnl_ab) != dnnl_success ||
        g_dnnl_memory_desc_init_by_tag(&ub, 2, bd, dnnl_f32, s->trans_b ? dnnl_ba : dnnl_ab) != dnnl_success ||
        g_dnnl_memory_desc_init_by_tag(&uc, 2, cd, dnnl_f32, dnnl_ab) != dnnl_success ||
        g_dnnl_memory_desc_init_by_tag(&wb, 2, bd, dnnl_f32, dnnl_format_tag_any) != dnnl_success)
        return false;
    dnnl_primitive_desc_t pd = matmul_pd(d, post, &ua, d->packed ? &wb : &ub, &uc, &bias_md);
    if (!pd) return false;
    const dnnl_memory_desc_t *qw = g_dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    dnnl_memory_desc_t pw = qw ? *qw : ub;
    bool ok = qw && g_dnnl_primitive_create(&d->mm, pd) == dnnl_success && scratch_for(d, pd, &d->s_mm);
    g_dnnl_primitive_desc_destroy(pd);
    ok = ok && g_dnnl_stream_create(&d->stream, g_eng, dnnl_stream_default_flags) == dnnl_success &&
         g_dnnl_memory_create(&d->m_a, &ua, g_eng, DNNL_MEMORY_NONE) == dnnl_success &&
         g_dnnl_memory_create(&d->m_b, &ub, g_eng, DNNL_MEMORY_NONE) == dnnl_success &&
         g_dnnl_memory_create(&d->m_c, &uc, g_eng, DNNL_MEMORY_NONE) == dnnl_success &&
         (!d->bias_in || g_dnnl_memory_create(&d->m_bias, &bias_md, g_eng, DNNL_MEMORY_NONE) == dnnl_success);
    if (!ok || !d->packed || g_dnnl_memory_desc_equal(&ub, &pw)) return ok;
    dnnl_primitive_desc_t rpd = NULL;
    dnnl_primitive_attr_t attr = ttc_dnnl_post_attr(NULL);
    if (!attr) return false;
    dnnl_status_t st = g_dnnl_reorder_primitive_desc_create(&rpd, &ub, g_eng, &pw, g_eng, attr);
    g_dnnl_primitive_attr_destroy(attr);
    if (st != dnnl_success) return false;
    ok = g_dnnl_primitive_create(&d->r_wei, rpd) == dnnl_success && scratch_for(d, rpd, &d->s_wei) &&
         g_dnnl_memory_create(&d->m_wei, &pw, g_eng, DNNL_MEMORY_ALLOCATE) == dnnl_success;
    g_dnnl_primitive_desc_destroy(rpd);
    return ok;
}

/* Shapes kept per engine kernel: with a dynamic batch or sequence each M is a primitive and,
 * packed, a copy of the weights; past this many the kernel's new shapes take OpenBLAS. */
enum { MAX_SHAPES_PER_KERNEL = 8 };

/* The entry of (owner, ki, shape, packed), made on first use; NULL when out of memory or the
 * kernel has its MAX_SHAPES_PER_KERNEL already. */
static dgemm *dgemm_get(const void *owner, int32_t ki, const ttc_dnnl_gemm_shape *s, bool packed,
                        const ttc_dnnl_post *post) {
    pthread_mutex_lock(&cache_lock);
    dgemm *d = cache;
    int32_t same_kernel = 0;
    for (; d; d = d->next) {
        if (d->owner != owner || d->ki != ki || d->slot >= 0) continue;
        if (d->packed == packed && d->s.m == s->m && d->s.n == s->n && d->s.k == s->k && d->s.trans_b == s->trans_b)
            break;
        same_kernel++;
    }
    if (!d && same_kernel < MAX_SHAPES_PER_KERNEL && (d = calloc(1, sizeof *d)) != NULL) {
        d->owner = owner;
        d->ki = ki;
        d->s = *s;
        d->slot = -1;
        d->packed = packed;
        pthread_mutex_init(&d->lock, NULL);
        d->ok = dgemm_build(d, post);
        d->next = cache;
        cache = d;
    }
    pthread_mutex_unlock(&cache_lock);
    return d;
}

/* p with its arguments, and its scratchpad memory sm (NULL: none) over buffer scr. */
static bool run_with(dgemm *d, dnnl_primitive_t p, dnnl_exec_arg_t *args, int n, dnnl_memory_t sm, void *scr) {
    if (sm) {
        if (g_dnnl_memory_set_data_handle(sm, scr) != dnnl_success) return false;
        args[n++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, sm};
    }
    return g_dnnl_primitive_execute(p, d->stream, n, args) == dnnl_success;
}

bool ttc_dnnl_gemm_post(const void *owner, int32_t ki, const ttc_dnnl_gemm_shape *s, const float *A, const float *B,
                        bool b_const, float *C, const ttc_dnnl_post *post, const float *bias, bool *post_done) {
    *post_done = false;
    if (!ttc_dnnl_gemm_available()) return false;
    dgemm *d = dgemm_get(owner, ki, s, b_const, post);
    if (!d || !d->ok) return false;
    pthread_mutex_lock(&d->lock);
    /* the calling thread's scratchpad (shared with its convolutions: one primitive at a time) */
    void *scr = d->scratch ? ttc_dnnl_scratch(d->scratch) : NULL;
    bool ok = (!d->scratch || scr) && g_dnnl_memory_set_data_handle(d->m_a, (void *)A) == dnnl_success &&
              g_dnnl_memory_set_data_handle(d->m_b, (void *)B) == dnnl_success &&
              g_dnnl_memory_set_data_handle(d->m_c, C) == dnnl_success &&
              (!d->bias_in || g_dnnl_memory_set_data_handle(d->m_bias, (void *)bias) == dnnl_success);
    if (ok && d->r_wei && !(d->wei_ready && d->wkey == B)) {
        dnnl_exec_arg_t args[3] = {{DNNL_ARG_FROM, d->m_b}, {DNNL_ARG_TO, d->m_wei}};
        ok = run_with(d, d->r_wei, args, 2, d->s_wei, scr);
        d->wei_ready = ok;
        d->wkey = B;
    }
    if (ok) {
        dnnl_exec_arg_t args[5] = {{DNNL_ARG_SRC, d->m_a}, {DNNL_ARG_WEIGHTS, d->r_wei ? d->m_wei : d->m_b},
                                   {DNNL_ARG_DST, d->m_c}, {DNNL_ARG_BIAS, d->m_bias}};
        ok = run_with(d, d->mm, args, d->bias_in ? 4 : 3, d->s_mm, scr);
    }
    ok = ok && g_dnnl_stream_wait(d->stream) == dnnl_success;
    if (!ok) d->wei_ready = false;
    *post_done = ok && d->post_in;
    pthread_mutex_unlock(&d->lock);
    if (ok) __atomic_add_fetch(&n_calls, 1, __ATOMIC_RELAXED);
    if (ok && *post_done) __atomic_add_fetch(&n_post_calls, 1, __ATOMIC_RELAXED);
    return ok;
}

bool ttc_dnnl_gemm(const void *owner, int32_t ki, const ttc_dnnl_gemm_shape *s, const float *A, const float *B,
                   bool b_const, float *C) {
    bool done;
    return ttc_dnnl_gemm_post(owner, ki, s, A, B, b_const, C, NULL, NULL, &done);
}

static bool bshape_equal(const ttc_dnnl_bgemm_shape *a, const ttc_dnnl_bgemm_shape *b) {
    if (a->nd != b->nd || a->m != b->m || a->n != b->n || a->k != b->k) return false;
    for (int32_t i = 0; i < a->nd + 2; i++) {
        if (a->sa[i] != b->sa[i] || a->sb[i] != b->sb[i] || a->sc[i] != b->sc[i]) return false;
        if (i < a->nd && (a->da[i] != b->da[i] || a->db[i] != b->db[i])) return false;
    }
    return true;
}

/* A primitive over plain strided memories, or false where oneDNN refuses or would run its
 * reference implementation (orders of magnitude slower than the BLAS the caller falls back to). */
static bool bgemm_build(dgemm *d) {
    const ttc_dnnl_bgemm_shape *s = &d->bs;
    int32_t nd = s->nd + 2;
    if (s->nd < 0 || s->nd > TTC_DNNL_BGEMM_MAX_BATCH || s->m < 1 || s->n < 1 || s->k < 1) return false;
    dnnl_dims_t ad, bd, cd, as, bs, cs;
    for (int32_t i = 0; i < s->nd; i++) {
        if (s->da[i] < 1 || (s->db[i] != s->da[i] && s->db[i] != 1)) return false;
        ad[i] = cd[i] = s->da[i];
        bd[i] = s->db[i];
    }
    ad[nd - 2] = cd[nd - 2] = s->m;
    ad[nd - 1] = bd[nd - 2] = s->k;
    bd[nd - 1] = cd[nd - 1] = s->n;
    for (int32_t i = 0; i < nd; i++) {
        as[i] = s->sa[i];
        bs[i] = s->sb[i];
        cs[i] = s->sc[i];
    }
    /* a dim of 1 may come with any stride (0 for a rank-3 attention's missing batch): oneDNN
     * takes only strides that span the dims inside, so give it those */
    for (int32_t i = nd - 3; i >= 0; i--) {
        if (ad[i] == 1) as[i] = as[i + 1] * ad[i + 1];
        if (bd[i] == 1) bs[i] = bs[i + 1] * bd[i + 1];
        if (cd[i] == 1) cs[i] = cs[i + 1] * cd[i + 1];
    }
    dnnl_memory_desc_t ua, ub, uc;
    if (g_dnnl_memory_desc_init_by_strides(&ua, nd, ad, dnnl_f32, as) != dnnl_success ||
        g_dnnl_memory_desc_init_by_strides(&ub, nd, bd, dnnl_f32, bs) != dnnl_success ||
        g_dnnl_memory_desc_init_by_strides(&uc, nd, cd, dnnl_f32, cs) != dnnl_success)
        return false;
    dnnl_matmul_desc_t md;
    dnnl_primitive_desc_t pd = NULL;
    if (g_dnnl_matmul_desc_init(&md, &ua, &ub, NULL, &uc) != dnnl_success) return false;
    dnnl_primitive_attr_t attr = ttc_dnnl_post_attr(NULL);
    if (!attr) return false;
    dnnl_status_t st = g_dnnl_primitive_desc_create(&pd, &md, attr, g_eng, NULL);
    g_dnnl_primitive_attr_destroy(attr);
    if (st != dnnl_success) return false;
    const char *impl = NULL;
    bool ok = g_dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl &&
              strncmp(impl, "ref", 3) != 0 && g_dnnl_primitive_create(&d->mm, pd) == dnnl_success &&
              scratch_for(d, pd, &d->s_mm);
    g_dnnl_primitive_desc_destroy(pd);
    return ok && g_dnnl_stream_create(&d->stream, g_eng, dnnl_stream_default_flags) == dnnl_success &&
           g_dnnl_memory_create(&d->m_a, &ua, g_eng, DNNL_MEMORY_NONE) == dnnl_success &&
           g_dnnl_memory_create(&d->m_b, &ub, g_eng, DNNL_MEMORY_NONE) == dnnl_success &&
           g_dnnl_memory_create(&d->m_c, &uc, g_eng, DNNL_MEMORY_NONE) == dnnl_success;
}

bool ttc_dnnl_bgemm(const void *owner, int32_t ki, int32_t slot, const ttc_dnnl_bgemm_shape *s, const float *A,
                    const float *B, float *C) {
    if (slot < 0 || !ttc_dnnl_gemm_available()) return false;
    pthread_mutex_lock(&cache_lock);
    dgemm *d = cache;
    int32_t same_slot = 0;
    for (; d; d = d->next) {
        if (d->owner != owner || d->ki != ki || d->slot != slot) continue;
        if (bshape_equal(&d->bs, s)) break;
        same_slot++;
    }
    if (!d && same_slot < MAX_SHAPES_PER_KERNEL && (d = calloc(1, sizeof *d)) != NULL) {
        d->owner = owner;
        d->ki = ki;
        d->slot = slot;
        d->bs = *s;
        pthread_mutex_init(&d->lock, NULL);
        d->ok = bgemm_build(d);
        d->next = cache;
        cache = d;
    }
    pthread_mutex_unlock(&cache_lock);
    if (!d || !d->ok) return false;
    pthread_mutex_lock(&d->lock);
    void *scr = d->scratch ? ttc_dnnl_scratch(d->scratch) : NULL;
    bool ok = (!d->scratch || scr) && g_dnnl_memory_set_data_handle(d->m_a, (void *)A) == dnnl_success &&
              g_dnnl_memory_set_data_handle(d->m_b, (void *)B) == dnnl_success &&
              g_dnnl_memory_set_data_handle(d->m_c, C) == dnnl_success;
    if (ok) {
        dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, d->m_a}, {DNNL_ARG_WEIGHTS, d->m_b}, {DNNL_ARG_DST, d->m_c}};
        ok = run_with(d, d->mm, args, 3, d->s_mm, scr) && g_dnnl_stream_wait(d->stream) == dnnl_success;
    }
    pthread_mutex_unlock(&d->lock);
    if (ok) __atomic_add_fetch(&n_calls, 1, __ATOMIC_RELAXED);
    return ok;
}

void ttc_dnnl_gemm_forget(const void *owner) {
    /* entries exist only once the library loaded: no load here */
    pthread_mutex_lock(&cache_lock);
    dgemm **pp = &cache;
    while (*pp) {
        dgemm *d = *pp;
        if (d->owner == owner) {
            *pp = d->next;
            dgemm_free(d);
        } else {
            pp = &d->next;
        }
    }
    pthread_mutex_unlock(&cache_lock);
}

#endif
