/* Whether a device computes in half precision (ttc_device_half_compute, cached by backend.c).
 *
 * Advertising cl_khr_fp16 settles it. Otherwise a tiny program with the extension pragma is
 * built and run once per device. NVIDIA's OpenCL computes in half without advertising the
 * extension, but only + - * /, comparisons, selection and conversions: the half overloads of
 * the built-in functions (fmax, fabs, exp, ...) are missing. So the probe uses exactly what
 * generated half code uses (see half_node in csrc/codegen/codegen.c): direct loads and stores
 * through __global half pointers, half arithmetic, comparisons, ?: and casts between half and
 * float/int, and checks exact answers. CPU devices are not probed (PoCL rejects the program
 * and its compiler prints the errors to stderr). Any failure means "no": the
 * engine keeps float arithmetic over half storage, so the probe never fails a build.
 * TORCHTRT_C_HALF_COMPUTE=0 (target.c) turns half arithmetic off whatever this answers. */
#include <stdlib.h>
#include <string.h>

#include "cl.h"

static const char *probe_src =
    "#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n"
    "__kernel void ttc_half_probe(__global const half *x, __global half *y, __global const float *f,\n"
    "                             __global float *g) {\n"
    "    int i = get_global_id(0);\n"
    "    half a = x[i], b = x[i + 8];\n"
    "    half m = (a >= b || b != b) ? a : b;\n"
    "    half r = a * b + (half)0.5f - m / (half)2.0f;\n"
    "    y[i] = r < (half)0.0f ? -r : r;\n"
    "    half c = (half)f[i] + (half)i;\n"
    "    g[i] = (float)(c * (half)3.0f) + 1.0f + (float)(int)c;\n"
    "}\n";

/* Bits of a float16 holding v, for the normal values the probe uses (exactly representable). */
static uint16_t half_bits(float v) {
    if (v == 0.0f) return 0;
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    uint32_t sign = u >> 31, exp = (u >> 23) & 0xff, mant = u & 0x7fffff;
    return (uint16_t)((sign << 15) | ((exp - 127 + 15) << 10) | (mant >> 13));
}

/* Runs the probe program; true only when it builds, runs and every answer is exact. */
static bool probe_run(ttc_cl_device *d) {
    ttc_program *prog = NULL;
    enum { N = 8 };
    uint16_t x[2 * N], y[N], want[N];
    float f[N], g[N], gwant[N];
    for (int i = 0; i < N; i++) {
        float a = (float)(i - 3) * 0.5f, b = (float)(2 * i + 1);   /* -1.5 .. 2 and 1 .. 15 */
        x[i] = half_bits(a);
        x[i + N] = half_bits(b);
        float r = a * b + 0.5f - (a >= b ? a : b) / 2.0f;           /* exact in half */
        want[i] = half_bits(r < 0 ? -r : r);
        f[i] = (float)i * 0.25f;
        gwant[i] = (f[i] + (float)i) * 3.0f + 1.0f + (float)(int)(f[i] + (float)i);
    }
    cl_context ctx;
    if (ttc_cl_device_context(d, &ctx) != TTC_OK) return false;
    if (ttc_cl_program_build(&d->base, probe_src, "-cl-std=CL1.2", "", &prog) != TTC_OK) return false;
    bool ok = false;
    cl_int err = CL_SUCCESS;
    cl_command_queue q = NULL;
    cl_mem m[4] = {NULL, NULL, NULL, NULL};
    cl_kernel kn = TTC_CL(CreateKernel)(ttc_cl_prog(prog), "ttc_half_probe", &err);
    if (!kn || err != CL_SUCCESS) goto done;
    m[0] = TTC_CL(CreateBuffer)(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof x, x, &err);
    if (err == CL_SUCCESS) m[1] = TTC_CL(CreateBuffer)(ctx, CL_MEM_WRITE_ONLY, sizeof y, NULL, &err);
    if (err == CL_SUCCESS) m[2] = TTC_CL(CreateBuffer)(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof f, f, &err);
    if (err == CL_SUCCESS) m[3] = TTC_CL(CreateBuffer)(ctx, CL_MEM_WRITE_ONLY, sizeof g, NULL, &err);
    if (err != CL_SUCCESS || !m[0] || !m[1] || !m[2] || !m[3]) goto done;
    q = TTC_CL(CreateCommandQueue)(ctx, d->id, 0, &err);
    if (!q || err != CL_SUCCESS) goto done;
    for (cl_uint a = 0; a < 4; a++)
        if (TTC_CL(SetKernelArg)(kn, a, sizeof m[a], &m[a]) != CL_SUCCESS) goto done;
    size_t global = N;
    if (TTC_CL(EnqueueNDRangeKernel)(q, kn, 1, NULL, &global, NULL, 0, NULL, NULL) != CL_SUCCESS ||
        TTC_CL(EnqueueReadBuffer)(q, m[1], CL_TRUE, 0, sizeof y, y, 0, NULL, NULL) != CL_SUCCESS ||
        TTC_CL(EnqueueReadBuffer)(q, m[3], CL_TRUE, 0, sizeof g, g, 0, NULL, NULL) != CL_SUCCESS)
        goto done;
    ok = memcmp(y, want, sizeof y) == 0 && memcmp(g, gwant, sizeof g) == 0;
done:
    if (q) TTC_CL(ReleaseCommandQueue)(q);
    for (int a = 0; a < 4; a++)
        if (m[a]) TTC_CL(ReleaseMemObject)(m[a]);
    if (kn) TTC_CL(ReleaseKernel)(kn);
    ttc_cl_program_free(prog);
    return ok;
}

bool ttc_cl_probe_half(ttc_device *d) {
    /* CPU drivers advertise half when they have it; probing PoCL only prints a failed build
     * to the user's stderr */
    return d->facts.fp16_advertised || (!d->facts.is_cpu && probe_run(ttc_cl_dev(d)));
}
