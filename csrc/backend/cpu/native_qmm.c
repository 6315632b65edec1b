/* aten._int_mm as a native oneDNN int8 matmul (backend/cpu/native_qmm.h). */
#include "native_qmm.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "dnnl_api.h"
#include "native_conv_dnnl.h"

/* ---- plain C: exact int32 sums, where oneDNN is missing or refuses ---- */

void ttc_qmm_run_ref(const ttc_qmm_shape *s, const int8_t *A, const int8_t *B, void *C) {
    enum { CHUNK = 256 };
    int32_t acc[CHUNK];
    for (int64_t m = 0; m < s->m; m++)
        for (int64_t n0 = 0; n0 < s->n; n0 += CHUNK) {
            int64_t nn = s->n - n0 < CHUNK ? s->n - n0 : CHUNK;
            memset(acc, 0, sizeof(int32_t) * (size_t)nn);
            for (int64_t k = 0; k < s->k; k++) {
                int32_t a = A[m * s->sa[0] + k * s->sa[1]];
                const int8_t *b = B + k * s->sb[0] + n0 * s->sb[1];
                if (s->sb[1] == 1)
                    for (int64_t j = 0; j < nn; j++) acc[j] += a * b[j];
                else
                    for (int64_t j = 0; j < nn; j++) acc[j] += a * b[j * s->sb[1]];
            }
            if (s->y_f32) {
                float *y = (float *)C + m * s->n + n0;
                for (int64_t j = 0; j < nn; j++) y[j] = (float)acc[j];
            } else {
                memcpy((int32_t *)C + m * s->n + n0, acc, sizeof(int32_t) * (size_t)nn);
            }
        }
}

/* ---- oneDNN ---- */

#ifndef TTC_HAVE_DNNL

bool ttc_qmm_available(void) { return false; }
void ttc_qmm_run(const void *owner, int32_t ki, const ttc_qmm_shape *s, const int8_t *A, const int8_t *B,
                 bool b_const, void *C) {
    (void)owner, (void)ki, (void)b_const;
    ttc_qmm_run_ref(s, A, B, C);
}
int64_t ttc_qmm_dnnl_calls(void) { return 0; }
void ttc_qmm_forget(const void *owner) { (void)owner; }

#else

/* The library, its entry points, the scratchpads and the primitive cache: dnnl_api.c. */
bool ttc_qmm_available(void) { return ttc_dnnl_cpu_engine() != NULL; }

/* One product of one engine kernel at one shape: the primitive and, for constant weights, their
 * copy in the primitive's layout (m_wei) with the reorder that fills it. */
typedef struct qmm {
    ttc_qmm_shape s;
    bool packed;
    bool ok;                  /* false: oneDNN refused (or has only its reference kernel): plain C */
    bool wei_ready;
    const int8_t *wkey;       /* the weights the kept copy came from */
    pthread_mutex_t lock;     /* one call at a time: the memories' handles are set per call */
    dnnl_stream_t stream;
    dnnl_primitive_t mm, r_wei;
    dnnl_memory_t m_a, m_b, m_c, m_wei, s_mm, s_wei;
    size_t scratch;
} qmm;

static int64_t n_calls;

int64_t ttc_qmm_dnnl_calls(void) { return __atomic_load_n(&n_calls, __ATOMIC_RELAXED); }

static void qmm_free(void *v) {
    qmm *d = v;
    dnnl_primitive_t ps[] = {d->mm, d->r_wei};
    dnnl_memory_t ms[] = {d->m_a, d->m_b, d->m_c, d->m_wei, d->s_mm, d->s_wei};
    ttc_dnnl_destroy(ps, sizeof ps / sizeof ps[0], ms, sizeof ms / sizeof ms[0], d->stream);
    pthread_mutex_destroy(&d->lock);
    free(d);
}

static ttc_dnnl_cache qcache = TTC_DNNL_CACHE_INIT(qmm_free);

/* A 2-d strided descriptor; a dim of 1 takes the stride spanning the other (oneDNN accepts
 * only strides that cover the dims inside). */
static bool strided_md(dnnl_memory_desc_t *md, int64_t d0, int64_t d1, const int64_t *st, dnnl_data_type_t dt) {
    dnnl_dims_t dims = {d0, d1}, s = {st[0], st[1]};
    if (d1 == 1) s[1] = 1;
    if (d0 == 1) s[0] = d1 * s[1];
    if (s[0] < 1 || s[1] < 1) return false;
    return ttc_dnnl_fn.memory_desc_init_by_strides(md, 2, dims, dt, s) == dnnl_success;
}

static bool qmm_build(qmm *d) {
    const ttc_qmm_shape *s = &d->s;
    if (s->m < 1 || s->n < 1 || s->k < 1) return false;
    dnnl_dims_t bd = {s->k, s->n}, cd = {s->m, s->n};
    dnnl_memory_desc_t ua, ub, uc, wb;
    if (!strided_md(&ua, s->m, s->k, s->sa, dnnl_s8) || !strided_md(&ub, s->k, s->n, s->sb, dnnl_s8) ||
        ttc_dnnl_fn.memory_desc_init_by_tag(&uc, 2, cd, s->y_f32 ? dnnl_f32 : dnnl_s32, dnnl_ab) != dnnl_success ||
        ttc_dnnl_fn.memory_desc_init_by_tag(&wb, 2, bd, dnnl_s8, dnnl_format_tag_any) != dnnl_success)
        return false;
    dnnl_matmul_desc_t md;
    if (ttc_dnnl_fn.matmul_desc_init(&md, &ua, d->packed ? &wb : &ub, NULL, &uc) != dnnl_success) return false;
    dnnl_primitive_desc_t pd = ttc_dnnl_primitive_desc(&md, NULL);
    if (!pd) return false;
    /* oneDNN's reference kernel is orders of magnitude slower than its own plain C here */
    const char *impl = NULL;
    const dnnl_memory_desc_t *qw = ttc_dnnl_fn.primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    dnnl_memory_desc_t pw = qw ? *qw : ub;
    bool ok = ttc_dnnl_fn.primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl &&
              strncmp(impl, "ref", 3) != 0 && qw && ttc_dnnl_primitive(pd, &d->mm, &d->s_mm, &d->scratch);
    ttc_dnnl_fn.primitive_desc_destroy(pd);
    ok = ok && ttc_dnnl_stream(&d->stream) && ttc_dnnl_mem(&d->m_a, &ua) && ttc_dnnl_mem(&d->m_b, &ub) &&
         ttc_dnnl_mem(&d->m_c, &uc);
    if (!ok || !d->packed) return ok;
    return ttc_dnnl_reorder(&ub, &pw, false, &d->r_wei, &d->m_wei, &d->s_wei, &d->scratch);
}

/* Shapes kept per engine kernel (a dynamic batch makes one primitive, and with constant
 * weights one weight copy, per M); past this many the kernel's new shapes run in plain C. */
enum { MAX_SHAPES_PER_KERNEL = 8 };

typedef struct {
    const ttc_qmm_shape *s;
    bool packed;
} qmm_args;

static void *qmm_make(void *arg) {
    const qmm_args *a = arg;
    qmm *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    d->s = *a->s;
    d->packed = a->packed;
    pthread_mutex_init(&d->lock, NULL);
    d->ok = qmm_build(d);
    return d;
}

static qmm *qmm_get(const void *owner, int32_t ki, const ttc_qmm_shape *s, bool packed) {
    /* the group of at most MAX_SHAPES_PER_KERNEL: the kernel (ki), packed or not */
    struct {
        int64_t ki, packed;
        ttc_qmm_shape s;
    } key;
    memset(&key, 0, sizeof key);
    key.ki = ki;
    key.packed = packed;
    key.s = *s;
    qmm_args a = {s, packed};
    return ttc_dnnl_cache_get(&qcache, owner, &key, sizeof key, sizeof(int64_t), MAX_SHAPES_PER_KERNEL, qmm_make,
                              &a);
}

static bool qmm_dnnl(const void *owner, int32_t ki, const ttc_qmm_shape *s, const int8_t *A, const int8_t *B,
                     bool b_const, void *C) {
    if (!ttc_qmm_available()) return false;
    qmm *d = qmm_get(owner, ki, s, b_const);
    if (!d || !d->ok) return false;
    pthread_mutex_lock(&d->lock);
    /* the calling thread's scratchpad (dnnl_api.c: one primitive at a time per thread) */
    void *scr;
    bool ok = ttc_dnnl_bind(d->scratch, &scr, 3, (dnnl_memory_t[]){d->m_a, d->m_b, d->m_c}, (const void *[]){A, B, C});
    if (ok && d->r_wei && !(d->wei_ready && d->wkey == B)) {
        ok = ttc_dnnl_reorder_exec(d->r_wei, d->stream, d->m_b, d->m_wei, d->s_wei, scr);
        d->wei_ready = ok;
        d->wkey = B;
    }
    if (ok) {
        dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, d->m_a}, {DNNL_ARG_WEIGHTS, d->r_wei ? d->m_wei : d->m_b},
                                   {DNNL_ARG_DST, d->m_c}};
        ok = ttc_dnnl_exec(d->mm, d->stream, args, 3, d->s_mm, scr);
    }
    ok = ok && ttc_dnnl_fn.stream_wait(d->stream) == dnnl_success;
    if (!ok) d->wei_ready = false;
    pthread_mutex_unlock(&d->lock);
    if (ok) __atomic_add_fetch(&n_calls, 1, __ATOMIC_RELAXED);
    return ok;
}

/* oneDNN's int8 kernels sum exactly in int32 but hand an int32 destination its sums through
 * float32 (ttc_qmm_run below): exact while |sum| <= 2^24, which K <= 1024 guarantees
 * (|a b| <= 2^14). A float32 destination is the sum converted once, as torch converts it. */
enum { EXACT_K = 1024 };

/* An int32 product of K > EXACT_K: slices of EXACT_K columns of A (rows of B), each exact,
 * added here in int32. The slices' weights are not kept packed (they are other pointers into
 * B of one primitive's shape). False: C untouched or partly written (the caller redoes it). */
static bool qmm_dnnl_sliced(const void *owner, int32_t ki, const ttc_qmm_shape *s, const int8_t *A,
                            const int8_t *B, int32_t *C) {
    int32_t *t = malloc(sizeof(int32_t) * (size_t)(s->m * s->n));
    if (!t) return false;
    bool ok = true;
    for (int64_t k0 = 0; ok && k0 < s->k; k0 += EXACT_K) {
        ttc_qmm_shape c = *s;
        c.k = s->k - k0 < EXACT_K ? s->k - k0 : EXACT_K;
        ok = qmm_dnnl(owner, ki, &c, A + k0 * s->sa[1], B + k0 * s->sb[0], false, k0 ? t : C);
        if (ok && k0)
            for (int64_t i = 0; i < s->m * s->n; i++) C[i] += t[i];
    }
    free(t);
    return ok;
}

void ttc_qmm_run(const void *owner, int32_t ki, const ttc_qmm_shape *s, const int8_t *A, const int8_t *B,
                 bool b_const, void *C) {
    bool ok = s->y_f32 || s->k <= EXACT_K ? qmm_dnnl(owner, ki, s, A, B, b_const, C)
                                          : qmm_dnnl_sliced(owner, ki, s, A, B, C);
    if (!ok) ttc_qmm_run_ref(s, A, B, C);
}

void ttc_qmm_forget(const void *owner) { ttc_dnnl_cache_forget(&qcache, owner); }

#endif
