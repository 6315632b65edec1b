/* GEMMs through oneDNN's matmul as native kernels (backend/cpu/native_gemm_dnnl.h).
 *
 * Why: on this CPU oneDNN's matmul with its weights reordered into the blocked layout it
 * prefers ran the transformer and ConvNeXt linears 5-45% faster than OpenBLAS 0.3.21's sgemm
 * on one core (bench/cpu_gemm.py, RESULTS.md "CPU GEMM libraries"); OpenBLAS stays the path
 * where the library is missing or refuses a shape.
 *
 * The library, its entry points, the scratchpads and the primitive cache are dnnl_api.c's; a
 * machine without libdnnl-dev builds the stubs. */
#include "native_gemm_dnnl.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "dnnl_api.h"
#include "native_conv_dnnl.h"

#ifndef TTC_HAVE_DNNL

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

bool ttc_dnnl_gemm_available(void) { return ttc_dnnl_cpu_engine() != NULL; }

/* One GEMM of one engine kernel at one shape: the primitive and, for constant weights in a
 * layout other than theirs, the reordered copy (m_wei) and the reorder that fills it. */
typedef struct dgemm {
    ttc_dnnl_gemm_shape s;    /* a GEMM's shape ... */
    ttc_dnnl_bgemm_shape bs;  /* ... or a strided batched GEMM's (ttc_dnnl_bgemm) */
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
     * every call (user mode, as everywhere (dnnl_api.c): oneDNN's library scratchpad belongs to
     * the thread that made the primitive, and PoCL runs the kernel on any of its workers) */
    dnnl_memory_t s_mm, s_wei;
    size_t scratch;           /* the larger of their sizes in bytes */
} dgemm;

static int64_t n_calls, n_post_calls;

int64_t ttc_dnnl_gemm_calls(void) { return __atomic_load_n(&n_calls, __ATOMIC_RELAXED); }
int64_t ttc_dnnl_gemm_post_calls(void) { return __atomic_load_n(&n_post_calls, __ATOMIC_RELAXED); }

static void dgemm_free(void *v) {
    dgemm *d = v;
    dnnl_primitive_t ps[] = {d->mm, d->r_wei};
    dnnl_memory_t ms[] = {d->m_a, d->m_b, d->m_c, d->m_wei, d->m_bias, d->s_mm, d->s_wei};
    ttc_dnnl_destroy(ps, sizeof ps / sizeof ps[0], ms, sizeof ms / sizeof ms[0], d->stream);
    pthread_mutex_destroy(&d->lock);
    free(d);
}

static ttc_dnnl_cache cache = TTC_DNNL_CACHE_INIT(dgemm_free);

/* The matmul's primitive descriptor with post (bias and activations) first and, where oneDNN
 * refuses them, without (the caller applies them); NULL where it refuses the shape. */
static dnnl_primitive_desc_t matmul_pd(dgemm *d, const ttc_dnnl_post *post, const dnnl_memory_desc_t *ua,
                                       const dnnl_memory_desc_t *ub, const dnnl_memory_desc_t *uc,
                                       dnnl_memory_desc_t *bias_md) {
    dnnl_dims_t bd = {1, d->s.n};
    dnnl_primitive_desc_t pd = NULL;
    for (int with = post != NULL; with >= 0 && !pd; with--) {
        bool bias = with && post->bias;
        if (bias && ttc_dnnl_fn.memory_desc_init_by_tag(bias_md, 2, bd, dnnl_f32, dnnl_ab) != dnnl_success) continue;
        dnnl_matmul_desc_t md;
        if (ttc_dnnl_fn.matmul_desc_init(&md, ua, ub, bias ? bias_md : NULL, uc) != dnnl_success) continue;
        pd = ttc_dnnl_primitive_desc(&md, with ? post : NULL);   /* NULL: the next round without post */
        d->post_in = pd && with;
        d->bias_in = pd && bias;
    }
    return pd;
}

static bool dgemm_build(dgemm *d, const ttc_dnnl_post *post) {
    const ttc_dnnl_gemm_shape *s = &d->s;
    if (s->m < 1 || s->n < 1 || s->k < 1) return false;
    dnnl_dims_t ad = {s->m, s->k}, bd = {s->k, s->n}, cd = {s->m, s->n}, cs = {s->ldc, 1};
    dnnl_memory_desc_t ua, ub, uc, wb, bias_md;
    /* B as [K,N]: row-major, or (trans_b) [N,K] read column-major */
    if (ttc_dnnl_fn.memory_desc_init_by_tag(&ua, 2, ad, dnnl_f32, dnnl_ab) != dnnl_success ||
        ttc_dnnl_fn.memory_desc_init_by_tag(&ub, 2, bd, dnnl_f32, s->trans_b ? dnnl_ba : dnnl_ab) != dnnl_success ||
        (s->ldc > s->n ? ttc_dnnl_fn.memory_desc_init_by_strides(&uc, 2, cd, dnnl_f32, cs)
                       : ttc_dnnl_fn.memory_desc_init_by_tag(&uc, 2, cd, dnnl_f32, dnnl_ab)) != dnnl_success ||
        ttc_dnnl_fn.memory_desc_init_by_tag(&wb, 2, bd, dnnl_f32, dnnl_format_tag_any) != dnnl_success)
        return false;
    dnnl_primitive_desc_t pd = matmul_pd(d, post, &ua, d->packed ? &wb : &ub, &uc, &bias_md);
    if (!pd) return false;
    const dnnl_memory_desc_t *qw = ttc_dnnl_fn.primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    dnnl_memory_desc_t pw = qw ? *qw : ub;
    bool ok = qw && ttc_dnnl_primitive(pd, &d->mm, &d->s_mm, &d->scratch);
    ttc_dnnl_fn.primitive_desc_destroy(pd);
    ok = ok && ttc_dnnl_stream(&d->stream) && ttc_dnnl_mem(&d->m_a, &ua) && ttc_dnnl_mem(&d->m_b, &ub) &&
         ttc_dnnl_mem(&d->m_c, &uc) && (!d->bias_in || ttc_dnnl_mem(&d->m_bias, &bias_md));
    if (!ok || !d->packed) return ok;
    return ttc_dnnl_reorder(&ub, &pw, false, &d->r_wei, &d->m_wei, &d->s_wei, &d->scratch);
}

/* Shapes kept per engine kernel: with a dynamic batch or sequence each M is a primitive and,
 * packed, a copy of the weights; past this many the kernel's new shapes take OpenBLAS. */
enum { MAX_SHAPES_PER_KERNEL = 8 };

static bool bgemm_build(dgemm *d);

typedef struct {
    const ttc_dnnl_gemm_shape *s;
    const ttc_dnnl_bgemm_shape *bs;   /* NULL: a GEMM (s) */
    bool packed;
    const ttc_dnnl_post *post;
} dgemm_args;

static void *dgemm_make(void *arg) {
    const dgemm_args *a = arg;
    dgemm *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    pthread_mutex_init(&d->lock, NULL);
    if (a->bs) {
        d->bs = *a->bs;
        d->ok = bgemm_build(d);
    } else {
        d->s = *a->s;
        d->packed = a->packed;
        d->ok = dgemm_build(d, a->post);
    }
    return d;
}

/* The cache's key: call `slot` of kernel ki (-1: a GEMM) and the shape, from zeroed memory. The
 * first two name the group of at most MAX_SHAPES_PER_KERNEL entries. */
typedef struct {
    int64_t ki, slot;
    int64_t packed, m, n, k, trans_b, ldc;
    int64_t nd, da[TTC_DNNL_BGEMM_MAX_BATCH], db[TTC_DNNL_BGEMM_MAX_BATCH];
    int64_t sa[TTC_DNNL_BGEMM_MAX_BATCH + 2], sb[TTC_DNNL_BGEMM_MAX_BATCH + 2], sc[TTC_DNNL_BGEMM_MAX_BATCH + 2];
} dgemm_key;

static dgemm *dgemm_lookup(const void *owner, const dgemm_key *key, dgemm_args *a) {
    return ttc_dnnl_cache_get(&cache, owner, key, sizeof *key, 2 * sizeof(int64_t), MAX_SHAPES_PER_KERNEL,
                              dgemm_make, a);
}

/* The entry of (owner, ki, shape, packed), made on first use; NULL when out of memory or the
 * kernel has its MAX_SHAPES_PER_KERNEL already. */
static dgemm *dgemm_get(const void *owner, int32_t ki, const ttc_dnnl_gemm_shape *s, bool packed,
                        const ttc_dnnl_post *post) {
    dgemm_key key;
    memset(&key, 0, sizeof key);
    key.ki = ki;
    key.slot = -1;
    key.packed = packed;
    key.m = s->m;
    key.n = s->n;
    key.k = s->k;
    key.trans_b = s->trans_b;
    key.ldc = s->ldc > s->n ? s->ldc : s->n;
    dgemm_args a = {s, NULL, packed, post};
    return dgemm_lookup(owner, &key, &a);
}

/* The same for call `slot` (>= 0) of kernel ki, a batched GEMM: the key holds the dims and
 * strides s uses (nd batch dims), so entries that differ only in unused ones are the same. */
static dgemm *bgemm_get(const void *owner, int32_t ki, int32_t slot, const ttc_dnnl_bgemm_shape *s) {
    dgemm_key key;
    memset(&key, 0, sizeof key);
    key.ki = ki;
    key.slot = slot;
    key.nd = s->nd;
    key.m = s->m;
    key.n = s->n;
    key.k = s->k;
    for (int32_t i = 0; i < s->nd + 2 && i < TTC_DNNL_BGEMM_MAX_BATCH + 2; i++) {
        key.sa[i] = s->sa[i];
        key.sb[i] = s->sb[i];
        key.sc[i] = s->sc[i];
        if (i < s->nd) {
            key.da[i] = s->da[i];
            key.db[i] = s->db[i];
        }
    }
    dgemm_args a = {NULL, s, false, NULL};
    return dgemm_lookup(owner, &key, &a);
}

bool ttc_dnnl_gemm_post(const void *owner, int32_t ki, const ttc_dnnl_gemm_shape *s, const float *A, const float *B,
                        bool b_const, float *C, const ttc_dnnl_post *post, const float *bias, bool *post_done) {
    *post_done = false;
    if (!ttc_dnnl_gemm_available()) return false;
    dgemm *d = dgemm_get(owner, ki, s, b_const, post);
    if (!d || !d->ok) return false;
    pthread_mutex_lock(&d->lock);
    /* the calling thread's scratchpad (shared with its convolutions: one primitive at a time) */
    void *scr;
    bool ok = ttc_dnnl_bind(d->scratch, &scr, 4,
                            (dnnl_memory_t[]){d->m_a, d->m_b, d->m_c, d->bias_in ? d->m_bias : NULL},
                            (const void *[]){A, B, C, bias});
    if (ok && d->r_wei && !(d->wei_ready && d->wkey == B)) {
        ok = ttc_dnnl_reorder_exec(d->r_wei, d->stream, d->m_b, d->m_wei, d->s_wei, scr);
        d->wei_ready = ok;
        d->wkey = B;
    }
    if (ok) {
        dnnl_exec_arg_t args[5] = {{DNNL_ARG_SRC, d->m_a}, {DNNL_ARG_WEIGHTS, d->r_wei ? d->m_wei : d->m_b},
                                   {DNNL_ARG_DST, d->m_c}, {DNNL_ARG_BIAS, d->m_bias}};
        ok = ttc_dnnl_exec(d->mm, d->stream, args, d->bias_in ? 4 : 3, d->s_mm, scr);
    }
    ok = ok && ttc_dnnl_fn.stream_wait(d->stream) == dnnl_success;
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
    if (ttc_dnnl_fn.memory_desc_init_by_strides(&ua, nd, ad, dnnl_f32, as) != dnnl_success ||
        ttc_dnnl_fn.memory_desc_init_by_strides(&ub, nd, bd, dnnl_f32, bs) != dnnl_success ||
        ttc_dnnl_fn.memory_desc_init_by_strides(&uc, nd, cd, dnnl_f32, cs) != dnnl_success)
        return false;
    dnnl_matmul_desc_t md;
    dnnl_primitive_desc_t pd = NULL;
    if (ttc_dnnl_fn.matmul_desc_init(&md, &ua, &ub, NULL, &uc) != dnnl_success) return false;
    if (!(pd = ttc_dnnl_primitive_desc(&md, NULL))) return false;
    const char *impl = NULL;
    bool ok = ttc_dnnl_fn.primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl &&
              strncmp(impl, "ref", 3) != 0 && ttc_dnnl_primitive(pd, &d->mm, &d->s_mm, &d->scratch);
    ttc_dnnl_fn.primitive_desc_destroy(pd);
    return ok && ttc_dnnl_stream(&d->stream) && ttc_dnnl_mem(&d->m_a, &ua) && ttc_dnnl_mem(&d->m_b, &ub) &&
           ttc_dnnl_mem(&d->m_c, &uc);
}

bool ttc_dnnl_bgemm(const void *owner, int32_t ki, int32_t slot, const ttc_dnnl_bgemm_shape *s, const float *A,
                    const float *B, float *C) {
    if (slot < 0 || !ttc_dnnl_gemm_available()) return false;
    dgemm *d = bgemm_get(owner, ki, slot, s);
    if (!d || !d->ok) return false;
    pthread_mutex_lock(&d->lock);
    void *scr;
    bool ok = ttc_dnnl_bind(d->scratch, &scr, 3, (dnnl_memory_t[]){d->m_a, d->m_b, d->m_c}, (const void *[]){A, B, C});
    if (ok) {
        dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, d->m_a}, {DNNL_ARG_WEIGHTS, d->m_b}, {DNNL_ARG_DST, d->m_c}};
        ok = ttc_dnnl_exec(d->mm, d->stream, args, 3, d->s_mm, scr) &&
             ttc_dnnl_fn.stream_wait(d->stream) == dnnl_success;
    }
    pthread_mutex_unlock(&d->lock);
    if (ok) __atomic_add_fetch(&n_calls, 1, __ATOMIC_RELAXED);
    return ok;
}

void ttc_dnnl_gemm_forget(const void *owner) { ttc_dnnl_cache_forget(&cache, owner); }

#endif
