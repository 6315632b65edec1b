/* cuBLAS through dlopen (cublas.h). */
#include "cublas.h"
#include "cuda_driver.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* cublas_api.h / library_types.h values, by layout */
enum { OP_N = 0, OP_T = 1 };
enum { R_32F = 0, R_16F = 2 };
enum { COMPUTE_32F = 68, COMPUTE_32F_FAST_TF32 = 77 };
enum { GEMM_DEFAULT = -1 };
#define WORKSPACE_BYTES ((size_t)32 << 20)   /* cuBLAS's recommendation for Hopper */
#define MAX_DEV 64

typedef int cb_status;
static struct {
    cb_status (*create)(void **);
    cb_status (*set_stream)(void *, void *);
    cb_status (*set_workspace)(void *, void *, size_t);
    cb_status (*gemm)(void *, int, int, int, int, int, const void *, const void *, int, int, long long, const void *,
                      int, int, long long, const void *, void *, int, int, long long, int, int, int);
    const char *(*status_string)(cb_status);
} cb;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static char load_msg[256];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static void *handles[MAX_DEV];

static void load(void) {
    /* torch's own first (already in the process), then any the loader finds */
    static const char *names[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so"};
    void *h = ttc_cuda_dlopen_first(names, sizeof names / sizeof names[0]);
    if (!h) { snprintf(load_msg, sizeof load_msg, "no libcublas could be loaded (torch without CUDA?)"); return; }
#define X(field, sym)                                                                                      \
    *(void **)&cb.field = dlsym(h, sym);                                                                   \
    if (!cb.field) { snprintf(load_msg, sizeof load_msg, "libcublas has no %s (too old)", sym); return; }
    X(create, "cublasCreate_v2")
    X(set_stream, "cublasSetStream_v2")
    X(set_workspace, "cublasSetWorkspace_v2")
    X(gemm, "cublasGemmStridedBatchedEx")
#undef X
    *(void **)&cb.status_string = dlsym(h, "cublasGetStatusString");
}

bool ttc_cublas_available(char *why, size_t why_len) {
    pthread_once(&once, load);
    if (why && why_len) snprintf(why, why_len, "%s", load_msg);
    return !load_msg[0];
}

size_t ttc_cublas_workspace_bytes(void) { return WORKSPACE_BYTES; }

static ttc_status cb_fail(cb_status r, const char *what) {
    const char *nm = cb.status_string ? cb.status_string(r) : NULL;
    return ttc_fail_device("cuBLAS", (int32_t)r, nm, "%s failed: %s (cuBLAS status %d)", what, nm ? nm : "unknown", r);
}

static bool fits_int(int64_t v) { return v >= 0 && v <= 2147483647; }

/* One operand of cuBLAS's column-major call: a row-major r x c matrix with row/column strides
 * rs/cs is, read column-major, its c x r transpose; cuBLAS needs unit stride down a column. */
static bool operand(int64_t r, int64_t c, int64_t rs, int64_t cs, int *op, int64_t *ld) {
    if (cs == 1 && (rs >= (c > 1 ? c : 1) || r == 1)) { *op = OP_N; *ld = rs > c ? rs : (c > 1 ? c : 1); return true; }
    if (rs == 1 && (cs >= (r > 1 ? r : 1) || c == 1)) { *op = OP_T; *ld = cs > r ? cs : (r > 1 ? r : 1); return true; }
    return false;
}

bool ttc_cublas_gemm_ok(const ttc_cublas_gemm *g, char *why, size_t why_len) {
    const char *w = NULL;
    int op;
    int64_t ld;
    bool ab = g->ab_type == TTC_DTYPE_FLOAT16 || g->ab_type == TTC_DTYPE_FLOAT32;
    bool c = g->c_type == TTC_DTYPE_FLOAT16 || g->c_type == TTC_DTYPE_FLOAT32;
    if (!ab || !c) w = "operands are not float16/float32";
    else if (g->ab_type == TTC_DTYPE_FLOAT32 && g->c_type != TTC_DTYPE_FLOAT32) w = "float32 operands, float16 result";
    else if (g->m <= 0 || g->n <= 0 || g->k <= 0 || g->batch <= 0) w = "an empty product";
    else if (!fits_int(g->m) || !fits_int(g->n) || !fits_int(g->k) || !fits_int(g->batch)) w = "sizes beyond int";
    else if (!operand(g->k, g->n, g->b_rs, g->b_cs, &op, &ld) || !fits_int(ld)) w = "B's strides";
    else if (!operand(g->m, g->k, g->a_rs, g->a_cs, &op, &ld) || !fits_int(ld)) w = "A's strides";
    else if (g->ldc < g->n || !fits_int(g->ldc)) w = "C's row stride";
    else if (g->a_bs < 0 || g->b_bs < 0 || g->c_bs < g->m * g->ldc * (g->batch > 1)) w = "batch strides";
    else if (ttc_cublas_gemm_fused(g) && g->batch != 1) w = "an epilogue in a batched product";
    else if (g->act != TTC_CUBLAS_ACT_NONE && g->act != TTC_CUBLAS_ACT_GELU_TANH) w = "an unknown activation";
    if (why && why_len) snprintf(why, why_len, "%s", w ? w : "");
    return !w;
}

void ttc_cublas_call_of(const ttc_cublas_gemm *g, ttc_cublas_call *c) {
    c->opa = c->opb = OP_N;
    c->lda = c->ldb = 1;
    operand(g->k, g->n, g->b_rs, g->b_cs, &c->opa, &c->lda);
    operand(g->m, g->k, g->a_rs, g->a_cs, &c->opb, &c->ldb);
    c->ab = g->ab_type == TTC_DTYPE_FLOAT16 ? R_16F : R_32F;
    c->ct = g->c_type == TTC_DTYPE_FLOAT16 ? R_16F : R_32F;
    c->compute = g->ab_type == TTC_DTYPE_FLOAT32 && g->tf32 ? COMPUTE_32F_FAST_TF32 : COMPUTE_32F;
}

ttc_status ttc_cublas_gemm_run(int32_t ordinal, const ttc_cublas_gemm *g, uint64_t stream, uint64_t workspace,
                               size_t workspace_bytes) {
    if (ttc_cublas_gemm_fused(g)) return ttc_cublaslt_run(ordinal, g, stream, workspace, workspace_bytes);
    char why[128];
    if (!ttc_cublas_available(why, sizeof why)) return ttc_fail(TTC_ERR_UNSUPPORTED, "cuBLAS unavailable: %s", why);
    if (!ttc_cublas_gemm_ok(g, why, sizeof why)) return ttc_fail(TTC_ERR_UNSUPPORTED, "cuBLAS GEMM: %s", why);
    if (ordinal < 0 || ordinal >= MAX_DEV) return ttc_fail(TTC_ERR_INVALID_ARG, "CUDA device %d out of range", (int)ordinal);
    ttc_cublas_call cc;
    ttc_cublas_call_of(g, &cc);
    const float one = 1.0f, zero = 0.0f;
    pthread_mutex_lock(&lock);
    cb_status r = 0;
    ttc_status s = TTC_OK;
    if (!handles[ordinal] && (r = cb.create(&handles[ordinal]))) { handles[ordinal] = NULL; s = cb_fail(r, "cublasCreate"); }
    void *h = handles[ordinal];
    /* SetStream resets the workspace to cuBLAS's own pool: set ours after it */
    if (s == TTC_OK && (r = cb.set_stream(h, (void *)(uintptr_t)stream))) s = cb_fail(r, "cublasSetStream");
    if (s == TTC_OK && (r = cb.set_workspace(h, (void *)(uintptr_t)workspace, workspace ? workspace_bytes : 0)))
        s = cb_fail(r, "cublasSetWorkspace");
    if (s == TTC_OK &&
        (r = cb.gemm(h, cc.opa, cc.opb, (int)g->n, (int)g->m, (int)g->k, &one, (const void *)(uintptr_t)g->b, cc.ab,
                     (int)cc.lda, (long long)g->b_bs, (const void *)(uintptr_t)g->a, cc.ab, (int)cc.ldb,
                     (long long)g->a_bs, &zero, (void *)(uintptr_t)g->c, cc.ct, (int)g->ldc, (long long)g->c_bs,
                     (int)g->batch, cc.compute, GEMM_DEFAULT)))
        s = cb_fail(r, "cublasGemmStridedBatchedEx");
    pthread_mutex_unlock(&lock);
    return s;
}
