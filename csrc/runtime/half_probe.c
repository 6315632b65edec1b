/* Whether a device computes in half precision (device->half_compute).
 *
 * Advertising cl_khr_fp16 settles it. Otherwise a tiny program with the extension pragma and
 * half arithmetic is built and run once per device: NVIDIA's OpenCL computes in half without
 * advertising the extension, while PoCL's CPU device rejects the program (or, were it to
 * build, would have to give exact answers on values every half format holds exactly). Any
 * failure means "no": the caller keeps float arithmetic, so the probe never fails a build.
 * TORCHTRT_C_HALF_COMPUTE=0 turns half arithmetic off (A/B measurements, a suspect driver). */
#include <stdlib.h>
#include <string.h>

#include "runtime.h"

static const char *probe_src =
    "#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n"
    "__kernel void ttc_half_probe(__global const float *x, __global float *y) {\n"
    "    int i = get_global_id(0);\n"
    "    half a = (half)x[i], b = (half)x[i + 8];\n"
    "    half r = a * b + (half)0.5f - fmax(a, b) / (half)2.0f;\n"
    "    y[i] = (float)(r > (half)0 ? r : -r);\n"
    "}\n";

/* Runs the probe program; true only when it builds, runs and every answer is exact. */
static bool probe_run(ttc_cl_device *d) {
    enum { N = 8 };
    float x[2 * N], y[N], want[N];
    for (int i = 0; i < N; i++) {
        x[i] = (float)(i - 3) * 0.5f;   /* -1.5 .. 2: products/sums below are exact in half */
        x[i + N] = (float)(2 * i + 1);
        float a = x[i], b = x[i + N], r = a * b + 0.5f - (a > b ? a : b) / 2.0f;
        want[i] = r > 0 ? r : -r;
    }
    cl_context ctx;
    if (ttc_cl_device_context(d, &ctx) != TTC_OK) return false;
    ttc_cl_program prog = {0};
    if (ttc_cl_program_build(d, probe_src, "-cl-std=CL1.2", "", &prog) != TTC_OK) return false;
    bool ok = false;
    cl_int err = CL_SUCCESS;
    cl_command_queue q = NULL;
    cl_mem bx = NULL, by = NULL;
    cl_kernel kn = TTC_CL(CreateKernel)(prog.program, "ttc_half_probe", &err);
    if (!kn || err != CL_SUCCESS) goto done;
    bx = TTC_CL(CreateBuffer)(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof x, x, &err);
    if (!bx || err != CL_SUCCESS) goto done;
    by = TTC_CL(CreateBuffer)(ctx, CL_MEM_WRITE_ONLY, sizeof y, NULL, &err);
    if (!by || err != CL_SUCCESS) goto done;
    if (ttc_cl_queue_new(d, false, &q) != TTC_OK) goto done;
    size_t global = N;
    if (TTC_CL(SetKernelArg)(kn, 0, sizeof bx, &bx) != CL_SUCCESS || TTC_CL(SetKernelArg)(kn, 1, sizeof by, &by) != CL_SUCCESS ||
        TTC_CL(EnqueueNDRangeKernel)(q, kn, 1, NULL, &global, NULL, 0, NULL, NULL) != CL_SUCCESS ||
        TTC_CL(EnqueueReadBuffer)(q, by, CL_TRUE, 0, sizeof y, y, 0, NULL, NULL) != CL_SUCCESS)
        goto done;
    ok = memcmp(y, want, sizeof y) == 0;
done:
    if (q) TTC_CL(ReleaseCommandQueue)(q);
    if (bx) TTC_CL(ReleaseMemObject)(bx);
    if (by) TTC_CL(ReleaseMemObject)(by);
    if (kn) TTC_CL(ReleaseKernel)(kn);
    ttc_cl_program_release(&prog);
    return ok;
}

bool ttc_cl_device_half_compute(ttc_cl_device *d) {
    const char *env = getenv("TORCHTRT_C_HALF_COMPUTE");
    if (env && strcmp(env, "0") == 0) return false;
    pthread_mutex_lock(&d->lock);
    bool probed = d->half_probed, v = d->half_compute;
    pthread_mutex_unlock(&d->lock);
    if (!probed) {
        /* outside the lock: the probe creates the context, which takes it */
        v = d->fp16_advertised || probe_run(d);
        ttc_clear_error();
        pthread_mutex_lock(&d->lock);
        d->half_compute = v;
        d->half_probed = true;
        pthread_mutex_unlock(&d->lock);
    }
    return v;
}
