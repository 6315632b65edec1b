/*
 * The OpenCL runtime: a dlopen'd libOpenCL (so the library loads on machines without an
 * ICD), device discovery and selection, one shared context per device, program builds with
 * an on-disk binary cache, and OpenCL error names.
 *
 *   ttc_cl_device *dev;
 *   if (ttc_cl_device_select(NULL, &dev) != TTC_OK) puts(ttc_last_error());  // env / GPU / CPU
 *   ttc_cl_program prog;
 *   TTC_TRY(ttc_cl_program_build(dev, src, "-cl-mad-enable", NULL, &prog));
 *   cl_kernel k = TTC_CL(CreateKernel)(prog.program, "k0", &err);
 *
 * Every OpenCL failure becomes ttc_fail_cl(code, "clXxx(what) failed: CL_ERROR_NAME").
 */
#ifndef TTC_RUNTIME_H
#define TTC_RUNTIME_H

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <pthread.h>

#include "../common/status.h"

#define TTC_CL_FUNCS(X)                                                                         \
    X(GetPlatformIDs) X(GetPlatformInfo) X(GetDeviceIDs) X(GetDeviceInfo) X(CreateContext)     \
    X(ReleaseContext) X(CreateCommandQueue) X(ReleaseCommandQueue) X(CreateBuffer)             \
    X(ReleaseMemObject) X(EnqueueWriteBuffer) X(EnqueueReadBuffer) X(EnqueueMapBuffer)         \
    X(EnqueueUnmapMemObject) X(CreateProgramWithSource) X(CreateProgramWithBinary)             \
    X(BuildProgram) X(GetProgramBuildInfo) X(GetProgramInfo) X(ReleaseProgram) X(CreateKernel) \
    X(ReleaseKernel) X(SetKernelArg) X(EnqueueNDRangeKernel) X(Finish) X(Flush)               \
    X(WaitForEvents) X(GetEventProfilingInfo) X(ReleaseEvent) X(GetKernelWorkGroupInfo)        \
    X(EnqueueCopyBuffer) X(GetMemObjectInfo) X(EnqueueNativeKernel)

typedef struct ttc_cl_api {
#define X(name) __typeof__(&cl##name) name;
    TTC_CL_FUNCS(X)
#undef X
} ttc_cl_api;

extern ttc_cl_api ttc_cl_fns;
#define TTC_CL(name) (ttc_cl_fns.name)

/* Loads libOpenCL once; fails with a message saying what to install. */
ttc_status ttc_cl_load(void);

/* Live buffer counters (memstats.c): every buffer made through TTC_CL(CreateBuffer) and
 * released through TTC_CL(ReleaseMemObject), process-wide, for leak checks. */
typedef struct ttc_cl_memstats {
    int64_t live_buffers, live_bytes, peak_bytes;
    int64_t host_ptr_bytes;    /* of live_bytes: buffers over host memory (USE_HOST_PTR) */
    int64_t created, released; /* totals since libOpenCL was loaded */
} ttc_cl_memstats;
ttc_cl_memstats ttc_cl_memstats_get(void);
void ttc_cl_memstats_install(ttc_cl_api *api);  /* by ttc_cl_load: wraps CreateBuffer/ReleaseMemObject */
const char *ttc_cl_error_name(cl_int code);
/* Creation sequence number of a live buffer made through TTC_CL(CreateBuffer) (0: unknown). */
uint64_t ttc_cl_mem_seq(cl_mem m);

typedef struct ttc_cl_device {
    int32_t index;
    cl_platform_id platform_id;
    cl_device_id id;
    char platform[128], name[256], vendor[128], version[128], driver[128];
    bool is_gpu, is_cpu;
    bool fp16;                /* half arithmetic usable (cl_khr_fp16, or known-good GPU) */
    bool fp16_advertised;     /* cl_khr_fp16 is in the extension list */
    bool half_compute, half_probed; /* see ttc_cl_device_half_compute (under lock) */
    bool native_ok, native_probed;  /* see ttc_native_available (runtime/native.h, under lock) */
    bool host_in_place, host_probed; /* see ttc_cl_device_host_in_place (under lock) */
    bool opencl2;             /* OpenCL C 2.0+ */
    cl_uint compute_units;
    size_t max_work_group;
    cl_ulong local_mem, global_mem, max_alloc;
    cl_uint mem_align_bits;
    /* created on first use, shared by every engine on the device */
    pthread_mutex_t lock;
    cl_context context;
} ttc_cl_device;

/* All devices of all platforms (discovered once). */
ttc_status ttc_cl_devices(ttc_cl_device **devs, int32_t *n);
/* spec: NULL/"" (TORCHTRT_C_DEVICE, else first GPU, else first device), an index ("0"),
 * "cpu"/"gpu", or a substring of the device or platform name. */
ttc_status ttc_cl_device_select(const char *spec, ttc_cl_device **out);
int32_t ttc_cl_default_index(void);          /* -1 when there is no device (error set) */
ttc_status ttc_cl_device_context(ttc_cl_device *d, cl_context *out);
/* Whether generated code may compute in half on d: cl_khr_fp16 advertised, or a probe
 * program using half arithmetic builds and answers exactly (probed once; never fails, a
 * failed probe is "no"). TORCHTRT_C_HALF_COMPUTE=0 forces "no". */
bool ttc_cl_device_half_compute(ttc_cl_device *d);
/* Whether d's CL_MEM_USE_HOST_PTR buffers are the host memory itself: kernels' writes are in
 * the host memory after clFinish, and host writes are seen by the next kernel, with no map
 * (probed once on CPU devices, see hostmem_probe.c; never fails, a failed probe is "no").
 * TORCHTRT_C_HOST_IN_PLACE=0 forces "no". */
bool ttc_cl_device_host_in_place(ttc_cl_device *d);
/* An in-order queue (profiling enabled when asked); caller releases it. */
ttc_status ttc_cl_queue_new(ttc_cl_device *d, bool profiling, cl_command_queue *out);

/* ---- programs ---- */
typedef struct ttc_cl_program {
    cl_program program;
    unsigned char *binary;    /* the device binary (malloc'd), for engines to store */
    size_t binary_len;
    bool from_cache;          /* the binary came from the on-disk cache */
    bool from_binary;         /* built from a given binary */
} ttc_cl_program;

/* Builds src for d (one program); cache_dir NULL: $TORCHTRT_C_CACHE_DIR or
 * ~/.cache/torchtrt_c; "" disables the cache. Build errors: TTC_ERR_BUILD with the log. */
ttc_status ttc_cl_program_build(ttc_cl_device *d, const char *src, const char *options,
                                const char *cache_dir, ttc_cl_program *out);
/* Builds from a stored binary; fails (no error kept) when the device rejects it. */
ttc_status ttc_cl_program_from_binary(ttc_cl_device *d, const unsigned char *bin, size_t len,
                                      const char *options, ttc_cl_program *out);
void ttc_cl_program_release(ttc_cl_program *p);

/* The cache directory in effect (malloc'd) or NULL when disabled. */
char *ttc_cl_cache_dir(const char *cache_dir);
/* Process-wide program build counters (thread-safe): builds from source, hits of the on-disk
 * binary cache, builds from a given (engine blob) binary, and the seconds each took. */
typedef struct ttc_cl_program_stats {
    int64_t compiled, cache_hits, from_binary, failed;
    double compile_s, cache_s, binary_s;
} ttc_cl_program_stats;
void ttc_cl_program_stats_get(ttc_cl_program_stats *out);
/* Whether program builds on d fetch their binary (for the on-disk cache and engine blobs):
 * not on PoCL by default (see program.c); TORCHTRT_C_PROGRAM_BINARIES=0/1 overrides. */
bool ttc_cl_keep_binaries(const ttc_cl_device *d);
/* Seconds on a monotonic clock (for compile profiles). */
double ttc_now_s(void);
/* 64-bit FNV-1a, for cache keys and blob checksums. */
uint64_t ttc_hash64(const void *data, size_t len, uint64_t seed);

#endif
