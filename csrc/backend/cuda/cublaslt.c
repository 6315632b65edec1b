/* cuBLASLt through dlopen (cublas.h): products whose epilogue (bias along the output's rows,
 * a residual tensor, tanh GELU) cuBLASLt applies itself, so that no epilogue kernel
 * reads and writes the output again after the product (issue 12: ViT-B/16 b32 fp16 spent 1.13
 * of 4.17 ms in such passes; torch's Linear does the same through cuBLASLt's bias epilogue).
 * Enum values and the heuristic result's size are cublasLt.h's, declared by layout and
 * checked against the header on a GPU machine by bench/probe/cublaslt_probe.py. */
#include "cublas.h"
#include "cuda_driver.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

enum { R_32F = 0 };   /* the scale type */
enum { DESC_TRANSA = 3, DESC_TRANSB = 4, DESC_EPILOGUE = 7, DESC_BIAS_POINTER = 8, DESC_BIAS_DATA_TYPE = 26 };
enum { EPI_DEFAULT = 1, EPI_BIAS = 4, EPI_GELU = 32, EPI_GELU_BIAS = 36 };
enum { PREF_MAX_WORKSPACE_BYTES = 1, PREF_MIN_ALIGN_A = 5, PREF_MIN_ALIGN_B = 6, PREF_MIN_ALIGN_C = 7,
       PREF_MIN_ALIGN_D = 8 };
#define MAX_DEV 64

typedef int lt_status;
typedef struct lt_result {   /* cublasLtMatmulHeuristicResult_t */
    unsigned char algo[64];
    size_t workspace;
    int32_t state;
    float waves;
    int32_t reserved[4];
} lt_result;
_Static_assert(sizeof(lt_result) == 96, "cublasLtMatmulHeuristicResult_t is 96 bytes");

static struct {
    lt_status (*create)(void **);
    lt_status (*desc_create)(void **, int, int);
    lt_status (*desc_destroy)(void *);
    lt_status (*desc_set)(void *, int, const void *, size_t);
    lt_status (*layout_create)(void **, int, uint64_t, uint64_t, int64_t);
    lt_status (*layout_destroy)(void *);
    lt_status (*pref_create)(void **);
    lt_status (*pref_destroy)(void *);
    lt_status (*pref_set)(void *, int, const void *, size_t);
    lt_status (*heuristic)(void *, void *, void *, void *, void *, void *, void *, int, lt_result *, int *);
    lt_status (*matmul)(void *, void *, const void *, const void *, void *, const void *, void *, const void *,
                        const void *, void *, void *, void *, const void *, void *, size_t, void *);
} lt;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static char load_msg[256];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static void *handles[MAX_DEV];

static void load(void) {
    static const char *names[] = {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so.11", "libcublasLt.so"};
    void *h = ttc_cuda_dlopen_first(names, sizeof names / sizeof names[0]);
    if (!h) { snprintf(load_msg, sizeof load_msg, "no libcublasLt could be loaded (torch without CUDA?)"); return; }
#define X(field, sym)                                                                                      \
    *(void **)&lt.field = dlsym(h, sym);                                                                   \
    if (!lt.field) { snprintf(load_msg, sizeof load_msg, "libcublasLt has no %s (too old)", sym); return; }
    X(create, "cublasLtCreate")
    X(desc_create, "cublasLtMatmulDescCreate")
    X(desc_destroy, "cublasLtMatmulDescDestroy")
    X(desc_set, "cublasLtMatmulDescSetAttribute")
    X(layout_create, "cublasLtMatrixLayoutCreate")
    X(layout_destroy, "cublasLtMatrixLayoutDestroy")
    X(pref_create, "cublasLtMatmulPreferenceCreate")
    X(pref_destroy, "cublasLtMatmulPreferenceDestroy")
    X(pref_set, "cublasLtMatmulPreferenceSetAttribute")
    X(heuristic, "cublasLtMatmulAlgoGetHeuristic")
    X(matmul, "cublasLtMatmul")
#undef X
}

bool ttc_cublaslt_available(char *why, size_t why_len) {
    pthread_once(&once, load);
    if (why && why_len) snprintf(why, why_len, "%s", load_msg);
    return !load_msg[0];
}

/* The largest power of two (at most 256) dividing a byte address. */
static uint32_t align_of(uint64_t p) {
    uint64_t a = p & (~p + 1);
    return !p || a > 256 ? 256 : (uint32_t)a;
}

/* A call's descriptors: the matmul (operations, epilogue, bias) and the three layouts of the
 * column-major C^T (n x m) = B^T (n x k) . A^T (k x m); C and D share one. */
typedef struct lt_call {
    void *desc, *la, *lb, *lc;
} lt_call;

static void call_free(lt_call *c) {
    if (c->desc) lt.desc_destroy(c->desc);
    if (c->la) lt.layout_destroy(c->la);
    if (c->lb) lt.layout_destroy(c->lb);
    if (c->lc) lt.layout_destroy(c->lc);
    memset(c, 0, sizeof *c);
}

static int epilogue_of(const ttc_cublas_gemm *g) {
    if (g->act == TTC_CUBLAS_ACT_GELU_TANH) return g->bias ? EPI_GELU_BIAS : EPI_GELU;
    return g->bias ? EPI_BIAS : EPI_DEFAULT;
}

static bool call_make(const ttc_cublas_gemm *g, lt_call *c) {
    memset(c, 0, sizeof *c);
    ttc_cublas_call cc;
    ttc_cublas_call_of(g, &cc);
    int32_t epi = epilogue_of(g);
    void *bias = (void *)(uintptr_t)g->bias;
    bool ok = !lt.desc_create(&c->desc, cc.compute, R_32F) &&
              !lt.desc_set(c->desc, DESC_TRANSA, &cc.opa, sizeof cc.opa) &&
              !lt.desc_set(c->desc, DESC_TRANSB, &cc.opb, sizeof cc.opb) &&
              !lt.desc_set(c->desc, DESC_EPILOGUE, &epi, sizeof epi);
    if (ok && g->bias)
        ok = !lt.desc_set(c->desc, DESC_BIAS_POINTER, &bias, sizeof bias) &&
             !lt.desc_set(c->desc, DESC_BIAS_DATA_TYPE, &cc.ct, sizeof cc.ct);
    /* cuBLAS's A is our B: n x k (op N) or stored k x n (op T); its B is our A likewise */
    ok = ok &&
         !lt.layout_create(&c->la, cc.ab, (uint64_t)(cc.opa ? g->k : g->n), (uint64_t)(cc.opa ? g->n : g->k), cc.lda) &&
         !lt.layout_create(&c->lb, cc.ab, (uint64_t)(cc.opb ? g->m : g->k), (uint64_t)(cc.opb ? g->k : g->m), cc.ldb) &&
         !lt.layout_create(&c->lc, cc.ct, (uint64_t)g->n, (uint64_t)g->m, g->ldc);
    if (!ok) call_free(c);
    return ok;
}

/* Algorithms found per shape, alignments and epilogue, for the process. */
typedef struct lt_key {
    int64_t v[18];
} lt_key;
#define ALGOS 1024
static lt_key keys[ALGOS];
static lt_result algos[ALGOS];
static int8_t found[ALGOS];
static int32_t n_algos;

static void key_of(int32_t ordinal, const ttc_cublas_gemm *g, size_t ws, lt_key *k) {
    memset(k, 0, sizeof *k);
    int64_t v[] = {ordinal, g->ab_type, g->c_type, g->tf32, g->m, g->n, g->k, g->a_rs, g->a_cs, g->b_rs, g->b_cs,
                   g->ldc, epilogue_of(g), g->res != 0, (int64_t)ws,
                   (int64_t)align_of(g->a) << 40 | (int64_t)align_of(g->b) << 20 | align_of(g->c),
                   align_of(g->res), align_of(g->bias)};
    memcpy(k->v, v, sizeof v);
}

static ttc_status handle_of(int32_t ordinal, void **h) {
    lt_status r = 0;
    if (!handles[ordinal] && (r = lt.create(&handles[ordinal]))) {
        handles[ordinal] = NULL;
        return ttc_fail_device("cuBLASLt", (int32_t)r, NULL, "cublasLtCreate failed (status %d)", r);
    }
    *h = handles[ordinal];
    return TTC_OK;
}

/* The cached algorithm of g (lock held); NULL where cuBLASLt has none. */
static const lt_result *algo_of(int32_t ordinal, const ttc_cublas_gemm *g, size_t ws) {
    lt_key k;
    key_of(ordinal, g, ws, &k);
    for (int32_t i = 0; i < n_algos; i++)
        if (!memcmp(&keys[i], &k, sizeof k)) return found[i] ? &algos[i] : NULL;
    void *h = NULL;
    if (handle_of(ordinal, &h) != TTC_OK) { ttc_clear_error(); return NULL; }
    lt_call c;
    void *pref = NULL;
    lt_result res;
    int n = 0;
    uint64_t wsb = ws;
    uint32_t al[4] = {align_of(g->b), align_of(g->a), align_of(g->res ? g->res : g->c), align_of(g->c)};
    /* a bias cuBLASLt reads with vector loads: 16-byte aligned ones only */
    bool ok = !(g->bias && align_of(g->bias) < 16) && call_make(g, &c);
    if (ok) {
        ok = !lt.pref_create(&pref) && !lt.pref_set(pref, PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof wsb) &&
             !lt.pref_set(pref, PREF_MIN_ALIGN_A, &al[0], 4) && !lt.pref_set(pref, PREF_MIN_ALIGN_B, &al[1], 4) &&
             !lt.pref_set(pref, PREF_MIN_ALIGN_C, &al[2], 4) && !lt.pref_set(pref, PREF_MIN_ALIGN_D, &al[3], 4) &&
             !lt.heuristic(h, c.desc, c.la, c.lb, c.lc, c.lc, pref, 1, &res, &n) && n > 0 && res.workspace <= ws;
        if (pref) lt.pref_destroy(pref);
        call_free(&c);
    }
    if (n_algos == ALGOS) return NULL;   /* table full: no new fused shapes */
    int32_t i = n_algos++;
    keys[i] = k;
    found[i] = ok;
    if (ok) algos[i] = res;
    return ok ? &algos[i] : NULL;
}

bool ttc_cublaslt_ready(int32_t ordinal, const ttc_cublas_gemm *g, size_t workspace_bytes) {
    if (ordinal < 0 || ordinal >= MAX_DEV || !ttc_cublas_gemm_fused(g) || !ttc_cublaslt_available(NULL, 0) ||
        !ttc_cublas_gemm_ok(g, NULL, 0))
        return false;
    pthread_mutex_lock(&lock);
    bool ok = algo_of(ordinal, g, workspace_bytes) != NULL;
    pthread_mutex_unlock(&lock);
    return ok;
}

ttc_status ttc_cublaslt_run(int32_t ordinal, const ttc_cublas_gemm *g, uint64_t stream, uint64_t workspace,
                            size_t workspace_bytes) {
    char why[128];
    if (!ttc_cublaslt_available(why, sizeof why)) return ttc_fail(TTC_ERR_UNSUPPORTED, "cuBLASLt unavailable: %s", why);
    if (!ttc_cublas_gemm_ok(g, why, sizeof why)) return ttc_fail(TTC_ERR_UNSUPPORTED, "cuBLASLt GEMM: %s", why);
    if (ordinal < 0 || ordinal >= MAX_DEV) return ttc_fail(TTC_ERR_INVALID_ARG, "CUDA device %d out of range", (int)ordinal);
    if (!workspace) workspace_bytes = 0;
    pthread_mutex_lock(&lock);
    ttc_status s = TTC_OK;
    const lt_result *a = algo_of(ordinal, g, workspace_bytes);
    void *h = NULL;
    lt_call c = {0};
    if (!a) s = ttc_fail(TTC_ERR_UNSUPPORTED, "cuBLASLt has no algorithm for this product and epilogue");
    if (s == TTC_OK) s = handle_of(ordinal, &h);
    if (s == TTC_OK && !call_make(g, &c)) s = ttc_fail(TTC_ERR_DEVICE, "cuBLASLt descriptors could not be made");
    if (s == TTC_OK) {
        const float one = 1.0f, beta = g->res ? 1.0f : 0.0f;
        void *d = (void *)(uintptr_t)g->c;
        const void *cin = g->res ? (const void *)(uintptr_t)g->res : d;
        lt_status r = lt.matmul(h, c.desc, &one, (const void *)(uintptr_t)g->b, c.la, (const void *)(uintptr_t)g->a,
                                c.lb, &beta, cin, c.lc, d, c.lc, a->algo, (void *)(uintptr_t)workspace,
                                workspace_bytes, (void *)(uintptr_t)stream);
        if (r) s = ttc_fail_device("cuBLASLt", (int32_t)r, NULL, "cublasLtMatmul failed (status %d)", r);
        call_free(&c);
    }
    pthread_mutex_unlock(&lock);
    return s;
}
