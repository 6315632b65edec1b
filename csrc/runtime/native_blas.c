/* The BLAS behind native CPU kernels (runtime/native.h): OpenBLAS through dlopen, so that
 * the library loads (and the OpenCL kernels run) on machines without it. */
#include "native.h"

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

static bool env_disabled(void) {
    const char *v = getenv("TORCHTRT_C_NATIVE");
    return v && (!strcmp(v, "0") || !strcmp(v, "off") || !strcmp(v, "false"));
}

/* The probe's native function: reads one int from each of its three buffers. */
typedef struct probe_args { void *mem[3]; int *seen; } probe_args;

static void CL_CALLBACK probe_run(void *arg) {
    const probe_args *a = arg;
    for (int i = 0; i < 3; i++) a->seen[i] = a->mem[i] ? *(const int *)a->mem[i] : -1;
}

/* Whether a native kernel given three buffers, oldest first, sees each at its own
 * args_mem_loc (engine/native_ops.c relies on it); any failure is a "no". */
static bool probe_native(ttc_cl_device *d) {
    cl_context ctx;
    if (ttc_cl_device_context(d, &ctx) != TTC_OK) { ttc_clear_error(); return false; }
    cl_command_queue q = NULL;
    if (ttc_cl_queue_new(d, false, &q) != TTC_OK) { ttc_clear_error(); return false; }
    cl_mem bufs[3] = {NULL, NULL, NULL};
    int vals[3] = {11, 22, 33}, seen[3] = {0, 0, 0};
    bool ok = true;
    for (int i = 0; i < 3 && ok; i++) {
        cl_int err = CL_SUCCESS;
        bufs[i] = TTC_CL(CreateBuffer)(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof(int), &vals[i], &err);
        ok = bufs[i] && err == CL_SUCCESS;
    }
    if (ok) {
        probe_args a = {{bufs[0], bufs[1], bufs[2]}, seen};
        const void *locs[3] = {&a.mem[0], &a.mem[1], &a.mem[2]};
        ok = TTC_CL(EnqueueNativeKernel)(q, probe_run, &a, sizeof a, 3, bufs, locs, 0, NULL, NULL) == CL_SUCCESS &&
             TTC_CL(Finish)(q) == CL_SUCCESS && seen[0] == 11 && seen[1] == 22 && seen[2] == 33;
    }
    for (int i = 0; i < 3; i++)
        if (bufs[i]) TTC_CL(ReleaseMemObject)(bufs[i]);
    TTC_CL(ReleaseCommandQueue)(q);
    return ok;
}

bool ttc_native_available(ttc_cl_device *d) {
    if (env_disabled() || !d) return false;
    cl_device_exec_capabilities caps = 0;
    if (TTC_CL(GetDeviceInfo)(d->id, CL_DEVICE_EXECUTION_CAPABILITIES, sizeof caps, &caps, NULL) != CL_SUCCESS ||
        !(caps & CL_EXEC_NATIVE_KERNEL))
        return false;
    pthread_once(&blas_once, blas_load);
    if (!blas_sgemm) return false;
    pthread_mutex_lock(&d->lock);
    bool probed = d->native_probed, ok = d->native_ok;
    pthread_mutex_unlock(&d->lock);
    if (!probed) {
        ok = probe_native(d);
        pthread_mutex_lock(&d->lock);
        d->native_ok = ok;
        d->native_probed = true;
        pthread_mutex_unlock(&d->lock);
    }
    return ok;
}

const char *ttc_native_library(void) {
    pthread_once(&blas_once, blas_load);
    return blas_desc;
}

void ttc_native_sgemm(bool trans_b, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
                      const float *B, int64_t ldb, float *C, int64_t ldc) {
    if (M <= 0 || N <= 0) return;
    if (K <= 0) {  /* an empty sum: BLAS may leave C untouched */
        for (int64_t m = 0; m < M; m++) memset(C + m * ldc, 0, sizeof(float) * (size_t)N);
        return;
    }
    blas_sgemm(TTC_CBLAS_ROW_MAJOR, TTC_CBLAS_NO_TRANS, trans_b ? TTC_CBLAS_TRANS : TTC_CBLAS_NO_TRANS, (int)M, (int)N,
               (int)K, 1.0f, A, (int)lda, B, (int)ldb, 0.0f, C, (int)ldc);
}
