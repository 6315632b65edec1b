/*
 * The OpenCL backend's internals: a dlopen'd libOpenCL (so the library loads on machines
 * without an ICD), devices with one shared context each, and the OpenCL objects behind the
 * generic handles of backend.h. Only files in csrc/backend/opencl/ include this header.
 *
 *   cl_int err;
 *   cl_kernel k = TTC_CL(CreateKernel)(ttc_cl_prog(p), "k0", &err);
 *   if (err != CL_SUCCESS) return ttc_fail_cl(err, "clCreateKernel(k0) failed: %s", ttc_cl_error_name(err));
 *
 * Every OpenCL failure becomes TTC_ERR_DEVICE carrying the code and its name ("OpenCL
 * CL_OUT_OF_RESOURCES (-5)") and a message saying which call failed on what.
 */
#ifndef TTC_BACKEND_OPENCL_CL_H
#define TTC_BACKEND_OPENCL_CL_H

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <pthread.h>

#include "../backend_impl.h"

#define TTC_CL_FUNCS(X)                                                                         \
    X(GetPlatformIDs) X(GetPlatformInfo) X(GetDeviceIDs) X(GetDeviceInfo) X(CreateContext)     \
    X(ReleaseContext) X(CreateCommandQueue) X(ReleaseCommandQueue) X(CreateBuffer)             \
    X(ReleaseMemObject) X(EnqueueWriteBuffer) X(EnqueueReadBuffer) X(EnqueueMapBuffer)         \
    X(EnqueueUnmapMemObject) X(CreateProgramWithSource) X(CreateProgramWithBinary)             \
    X(BuildProgram) X(GetProgramBuildInfo) X(GetProgramInfo) X(ReleaseProgram) X(CreateKernel) \
    X(ReleaseKernel) X(SetKernelArg) X(EnqueueNDRangeKernel) X(Finish) X(Flush)               \
    X(WaitForEvents) X(GetEventProfilingInfo) X(ReleaseEvent) X(GetKernelWorkGroupInfo)        \
    X(EnqueueCopyBuffer) X(GetMemObjectInfo) X(EnqueueNativeKernel)  \
    X(CreateUserEvent) X(SetUserEventStatus)

typedef struct ttc_cl_api {
#define X(name) __typeof__(&cl##name) name;
    TTC_CL_FUNCS(X)
#undef X
} ttc_cl_api;

extern ttc_cl_api ttc_cl_fns;
#define TTC_CL(name) (ttc_cl_fns.name)

/* Loads libOpenCL once; fails with a message saying what to install. */
ttc_status ttc_cl_load(void);
const char *ttc_cl_error_name(cl_int code);
#define ttc_fail_cl(code, ...) ttc_fail_device("OpenCL", (code), ttc_cl_error_name(code), __VA_ARGS__)

/* memstats.c: every buffer made through TTC_CL(CreateBuffer) and released through
 * TTC_CL(ReleaseMemObject) is counted, process-wide, for leak checks. */
void ttc_cl_memstats_install(ttc_cl_api *api);  /* by ttc_cl_load: wraps CreateBuffer/ReleaseMemObject */
void ttc_cl_memstats_add(ttc_memstats *acc);
/* Creation sequence number of a live buffer made through TTC_CL(CreateBuffer) (0: unknown). */
uint64_t ttc_cl_mem_seq(cl_mem m);

typedef struct ttc_cl_device {
    ttc_device base;
    cl_platform_id platform_id;
    cl_device_id id;
    cl_context context;       /* created on first use (under base.lock), shared by every engine */
    /* PoCL's basic device beside its pthread one (device.c): not listed, it shares its
     * owner's context (buffers, programs' context) and runs each launch on the enqueuing
     * thread; backend.h, ttc_device_caller_thread */
    struct ttc_cl_device *caller, *owner;
} ttc_cl_device;

typedef struct ttc_cl_buf { ttc_buf base; cl_mem m; } ttc_cl_buf;
/* gate: ttc_queue_hold's user event, which the first launch after the hold waits for
 * (gate_used once it does); completed at the queue's next submission point */
typedef struct ttc_cl_queue { ttc_queue base; cl_command_queue q; cl_event gate; bool gate_used; } ttc_cl_queue;
typedef struct ttc_cl_program { ttc_program base; cl_program p; } ttc_cl_program;
typedef struct ttc_cl_kernel { ttc_kernel base; cl_kernel k; } ttc_cl_kernel;
typedef struct ttc_cl_event { ttc_event base; cl_event ev; } ttc_cl_event;

static inline ttc_cl_device *ttc_cl_dev(ttc_device *d) { return (ttc_cl_device *)d; }
static inline cl_mem ttc_cl_mem(ttc_buf *b) { return b ? ((ttc_cl_buf *)b)->m : NULL; }
static inline cl_command_queue ttc_cl_q(ttc_queue *q) { return ((ttc_cl_queue *)q)->q; }
static inline cl_program ttc_cl_prog(ttc_program *p) { return ((ttc_cl_program *)p)->p; }

/* device.c */
ttc_status ttc_cl_devices(ttc_device *const **devs, int32_t *n);
ttc_status ttc_cl_device_context(ttc_cl_device *d, cl_context *out);
bool ttc_cl_device_uuid(ttc_device *d, unsigned char uuid[16]);   /* cl_khr_device_uuid */
bool ttc_cl_device_pci(ttc_device *d, ttc_pci_address *pci);      /* cl_khr_pci_bus_info / cl_nv_device_attribute_query */
ttc_device *ttc_cl_device_caller_thread(ttc_device *d);            /* PoCL basic beside pthread */
/* program.c */
ttc_status ttc_cl_program_build(ttc_device *d, const char *src, const char *options, const char *cache_dir,
                                ttc_program **out);
bool ttc_cl_program_cached(ttc_device *d, const char *src, const char *options, const char *cache_dir);
ttc_status ttc_cl_program_from_binary(ttc_device *d, const unsigned char *bin, size_t len, const char *options,
                                      ttc_program **out);
void ttc_cl_program_free(ttc_program *p);
void ttc_cl_program_stats_add(ttc_program_stats *acc);
/* half_probe.c: a program computing in half builds and answers exactly */
bool ttc_cl_probe_half(ttc_device *d);
/* host_task.c: native kernels (CL_EXEC_NATIVE_KERNEL) as host tasks */
ttc_status ttc_cl_host_task(ttc_queue *q, ttc_host_fn fn, const void *args, size_t args_size, ttc_buf *const *bufs,
                            int32_t n_bufs, const char *what, ttc_event **ev);
bool ttc_cl_probe_host_tasks(ttc_device *d);
/* hostmem_probe.c: USE_HOST_PTR buffers are the host memory itself (no map needed) */
bool ttc_cl_probe_host_in_place(ttc_device *d);
/* objects.c: an event handle for a cl_event (takes it over; on failure releases it) */
ttc_status ttc_cl_event_wrap(ttc_device *d, cl_event e, ttc_event **out);
/* The held launches of q (ttc_queue_hold) released: every queue operation other than a
 * launch calls it first, so that nothing waits for work that has not been submitted. */
ttc_status ttc_cl_queue_submit(ttc_queue *q);
/* The wait list of a launch on q: the hold's gate for the first launch after a hold (n 1),
 * else none (n 0). ttc_cl_queue_gate_used marks it taken once that launch is enqueued. */
static inline cl_uint ttc_cl_queue_gate(ttc_queue *q, const cl_event **wait) {
    ttc_cl_queue *cq = (ttc_cl_queue *)q;
    *wait = cq->gate && !cq->gate_used ? &cq->gate : NULL;
    return *wait ? 1 : 0;
}
static inline void ttc_cl_queue_gate_used(ttc_queue *q, cl_uint n) { if (n) ((ttc_cl_queue *)q)->gate_used = true; }

#endif
