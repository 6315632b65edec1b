/* What one engine call costs the OpenCL runtime, without torchtrt_c: N small kernels on an
 * in-order queue, issued four ways, timed round robin (one call of each per round, so load from
 * other processes hits all of them alike). It decides two questions of issue 13 item 4:
 *
 *   enqueue+finish        N x clEnqueueNDRangeKernel over USE_HOST_PTR buffers made per call,
 *                         then clFinish: what execute does on PoCL (host memory in place)
 *   enqueue+map+finish    the same plus a blocking map and unmap of the output: what execute
 *                         did before the in-place probe (backend/opencl/hostmem_probe.c)
 *   replay+finish         the N launches recorded once into a cl_khr_command_buffer (stable
 *                         buffers, kernel objects of its own) and replayed with
 *                         clEnqueueCommandBufferKHR, then clFinish
 *   replay+map+finish     the same plus the blocking map/unmap
 *   held+finish           enqueue+finish with the first launch waiting for a user event that is
 *                         set complete just before clFinish: what execute does on CPU devices
 *                         since the batched launch (backend: ttc_queue_hold)
 *
 *   cc -O2 bench/cl_launch.c -o /tmp/cl_launch -lOpenCL && /tmp/cl_launch 10 2000
 *   POCL_MAX_PTHREAD_COUNT=1 /tmp/cl_launch 10 2000     # PoCL with one worker thread
 *
 * Measured on PoCL 3.1 (2 cores shared with other jobs, 2026-11-24, medians of 1000 rounds, 10
 * kernels, three runs): enqueue+finish 30-39 us, enqueue+map+finish 70-71 us, replay+finish
 * 34-39 us, replay+map+finish 70-72 us. PoCL 3.1's clEnqueueCommandBufferKHR turns every recorded
 * command back into an ordinary command (copying the kernel's arguments as they are at replay,
 * not as recorded) and adds one more command for the buffer's completion, so replay saves
 * nothing there; the blocking map is what cost. With POCL_MAX_PTHREAD_COUNT=1 (two runs of
 * three): enqueue+finish 19 us and the map 9 us more, replay 27 us: PoCL's two workers and the
 * enqueuing thread share two cores, and each hand-over between them costs.
 * held+finish (session 6, load 10 on the 2 cores, three runs of 2000-3000 rounds): median 40-47 us
 * against enqueue+finish 35-38 us, p10 19-21 us against 19-32 us. With kernels this empty,
 * overlapping the enqueues with their execution wins at the median; with kernels that compute
 * (bench/overhead.py --model chain10, ~1.7 us each) holding wins: Engine.execute 55 us held
 * against 87-101 us not held in the same process. */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* cl_khr_command_buffer 0.9 entry points, declared here so that any header version builds */
typedef struct cb_s *cb_t;
typedef cl_ulong cb_prop;
typedef cb_t (*create_fn)(cl_uint, const cl_command_queue *, const cb_prop *, cl_int *);
typedef cl_int (*ndrange_fn)(cb_t, cl_command_queue, const cb_prop *, cl_kernel, cl_uint, const size_t *,
                             const size_t *, const size_t *, cl_uint, const cl_uint *, cl_uint *, void *);
typedef cl_int (*finalize_fn)(cb_t);
typedef cl_int (*enqueue_fn)(cl_uint, cl_command_queue *, cb_t, cl_uint, const cl_event *, cl_event *);
#define CB_FLAGS 0x1293
#define CB_SIMULTANEOUS_USE 1

static const char *src =
    "__kernel void k(__global const float *a, __global float *b, int n) {\n"
    "    int i = get_global_id(0);\n"
    "    if (i < n) b[i] = a[i] * 0.5f + 1.0f;\n"
    "}\n";

enum { MODES = 5, N = 256 };
static const char *names[MODES] = {"enqueue+finish", "enqueue+map+finish", "replay+finish", "replay+map+finish",
                                   "held+finish"};
/* per mode: replays the command buffer, maps the output, holds the launches behind a user event */
static const int replays[MODES] = {0, 0, 1, 1, 0}, maps[MODES] = {0, 1, 0, 1, 0}, holds[MODES] = {0, 0, 0, 0, 1};

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    int nk = argc > 1 ? atoi(argv[1]) : 10, rounds = argc > 2 ? atoi(argv[2]) : 1000;
    if (nk < 1 || rounds < 10) return fprintf(stderr, "usage: %s [kernels >= 1] [rounds >= 10]\n", argv[0]), 2;
    cl_platform_id plat;
    cl_device_id dev;
    cl_int err;
    if (clGetPlatformIDs(1, &plat, NULL) != CL_SUCCESS || clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL))
        return fprintf(stderr, "no OpenCL device\n"), 1;
    char name[256] = "", ext[8192] = "";
    clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof name, name, NULL);
    clGetDeviceInfo(dev, CL_DEVICE_EXTENSIONS, sizeof ext, ext, NULL);
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx, dev, NULL, &err);
    cl_program prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
    if (clBuildProgram(prog, 1, &dev, "", NULL, NULL) != CL_SUCCESS) return fprintf(stderr, "build failed\n"), 1;
    int n = N;
    size_t global = N;
    float *in = aligned_alloc(128, N * sizeof(float)), *out = aligned_alloc(128, N * sizeof(float));
    for (int i = 0; i < N; i++) in[i] = (float)i;
    cl_kernel kern = clCreateKernel(prog, "k", &err), rec = clCreateKernel(prog, "k", &err);
    clSetKernelArg(kern, 2, sizeof n, &n);
    clSetKernelArg(rec, 2, sizeof n, &n);

    /* the recorded buffer: stable USE_HOST_PTR buffers, its own kernel object (never re-bound) */
    cb_t cb = NULL;
    enqueue_fn enqueue = NULL;
    cl_mem ra = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_USE_HOST_PTR, N * sizeof(float), in, &err);
    cl_mem rb = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, N * sizeof(float), out, &err);
    if (strstr(ext, "cl_khr_command_buffer")) {
        create_fn create = (create_fn)clGetExtensionFunctionAddressForPlatform(plat, "clCreateCommandBufferKHR");
        ndrange_fn ndrange = (ndrange_fn)clGetExtensionFunctionAddressForPlatform(plat, "clCommandNDRangeKernelKHR");
        finalize_fn finalize = (finalize_fn)clGetExtensionFunctionAddressForPlatform(plat, "clFinalizeCommandBufferKHR");
        enqueue = (enqueue_fn)clGetExtensionFunctionAddressForPlatform(plat, "clEnqueueCommandBufferKHR");
        /* PoCL 3.1 crashes on NULL properties: pass an explicit list */
        cb_prop props[] = {CB_FLAGS, CB_SIMULTANEOUS_USE, 0};
        if (create && ndrange && finalize && enqueue) cb = create(1, &q, props, &err);
        clSetKernelArg(rec, 0, sizeof ra, &ra);
        clSetKernelArg(rec, 1, sizeof rb, &rb);
        cl_uint sp = 0, prev = 0;
        for (int i = 0; cb && i < nk; i++) {  /* each launch waits for the previous one */
            if (ndrange(cb, NULL, NULL, rec, 1, NULL, &global, NULL, i ? 1 : 0, i ? &prev : NULL, &sp, NULL))
                cb = NULL;
            prev = sp;
        }
        if (cb && finalize(cb) != CL_SUCCESS) cb = NULL;
    }
    double *t = calloc((size_t)MODES * (size_t)rounds, sizeof(double));
    for (int r = -50; r < rounds; r++) {
        for (int m = 0; m < MODES; m++) {
            if (replays[m] && !cb) continue;
            double t0 = now_us();
            cl_mem a = ra, b = rb;
            cl_event gate = holds[m] ? clCreateUserEvent(ctx, &err) : NULL;
            if (!replays[m]) {
                a = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_USE_HOST_PTR, N * sizeof(float), in, &err);
                b = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, N * sizeof(float), out, &err);
                for (int i = 0; i < nk; i++) {
                    clSetKernelArg(kern, 0, sizeof a, &a);
                    clSetKernelArg(kern, 1, sizeof b, &b);
                    clEnqueueNDRangeKernel(q, kern, 1, NULL, &global, NULL, gate && !i ? 1 : 0, gate && !i ? &gate : NULL,
                                           NULL);
                }
            } else {
                enqueue(1, &q, cb, 0, NULL, NULL);
            }
            if (gate) {
                clSetUserEventStatus(gate, CL_COMPLETE);
                clReleaseEvent(gate);
            }
            if (maps[m]) {
                void *p = clEnqueueMapBuffer(q, b, CL_TRUE, CL_MAP_READ, 0, N * sizeof(float), 0, NULL, NULL, &err);
                clEnqueueUnmapMemObject(q, b, p, 0, NULL, NULL);
            }
            clFinish(q);
            if (!replays[m]) {
                clReleaseMemObject(a);
                clReleaseMemObject(b);
            }
            if (r >= 0) t[m * rounds + r] = now_us() - t0;
        }
    }
    printf("# %s, %d kernels per call, %d rounds%s\n", name, nk, rounds,
           cb ? "" : " (no cl_khr_command_buffer: replay rows skipped)");
    for (int m = 0; m < MODES; m++) {
        if (replays[m] && !cb) continue;
        double *v = t + (size_t)m * (size_t)rounds;
        qsort(v, (size_t)rounds, sizeof *v, cmp);
        printf("%-22s median %7.1f us  p10 %7.1f  p90 %7.1f\n", names[m], v[rounds / 2], v[rounds / 10],
               v[rounds * 9 / 10]);
    }
    int bad = 0;
    for (int i = 0; i < N; i++) bad += out[i] != (float)i * 0.5f + 1.0f;
    printf("results %s\n", bad ? "WRONG" : "ok");
    return bad != 0;
}
