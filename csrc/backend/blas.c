/* The BLAS behind native GEMM/convolution (blas.h): OpenBLAS through dlopen, so that the
 * library loads (and the device's own kernels run) on machines without it. */
#include "blas.h"

#include <pthread.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* CBLAS enum values (cblas.h): fixed by the CBLAS standard */
enum { TTC_CBLAS_ROW_MAJOR = 101, TTC_CBLAS_NO_TRANS = 111, TTC_CBLAS_TRANS = 112 };

typedef void (*sgemm_fn)(int, int, int, int, int, int, float, const float *, int, const float *, int, float, float *,
                         int);
typedef char *(*config_fn)(void);

static pthread_once_t blas_once = PTHREAD_ONCE_INIT;
static sgemm_fn blas_sgemm;
static char blas_desc[256];

static void blas_load(void) {
    /* OpenBLAS's worker threads spin for 2^28 cycles (~0.1 s) after each call before they
     * sleep: on a CPU device the next commands are OpenCL kernels on PoCL's own threads, one per
     * core, which would share the cores with those spinners. 2^4 cycles: they sleep at once.
     * Read once, when the library initialises; a value the user set is kept. */
    setenv("OPENBLAS_THREAD_TIMEOUT", "4", 0);
    const char *names[] = {"libopenblas.so.0", "libopenblas.so"};
    void *h = NULL;
    for (size_t i = 0; i < 2 && !h; i++) h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(blas_desc, sizeof blas_desc, "OpenBLAS not found (apt-get install libopenblas0)");
        return;
    }
    blas_sgemm = (sgemm_fn)dlsym(h, "cblas_sgemm");
    config_fn cfg = (config_fn)dlsym(h, "openblas_get_config");
    if (!blas_sgemm) {
        snprintf(blas_desc, sizeof blas_desc, "libopenblas lacks cblas_sgemm");
        return;
    }
    snprintf(blas_desc, sizeof blas_desc, "%s", cfg ? cfg() : "OpenBLAS");
}

bool ttc_blas_available(void) {
    pthread_once(&blas_once, blas_load);
    return blas_sgemm != NULL;
}

const char *ttc_blas_library(void) {
    pthread_once(&blas_once, blas_load);
    return blas_desc;
}

void ttc_blas_sgemm(bool trans_b, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
                    const float *B, int64_t ldb, float *C, int64_t ldc) {
    if (M <= 0 || N <= 0) return;
    if (K <= 0) {  /* an empty sum: BLAS may leave C untouched */
        for (int64_t m = 0; m < M; m++) memset(C + m * ldc, 0, sizeof(float) * (size_t)N);
        return;
    }
    blas_sgemm(TTC_CBLAS_ROW_MAJOR, TTC_CBLAS_NO_TRANS, trans_b ? TTC_CBLAS_TRANS : TTC_CBLAS_NO_TRANS, (int)M, (int)N,
               (int)K, 1.0f, A, (int)lda, B, (int)ldb, 0.0f, C, (int)ldc);
}
