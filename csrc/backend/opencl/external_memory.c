/* CUDA <-> OpenCL shared memory (see external_memory.h): libcuda through dlopen, the CL
 * extension entry points through clGetExtensionFunctionAddressForPlatform. The CUDA types
 * below are declared here by layout (no CUDA headers at build time): only what the driver
 * API documents as stable ABI for these calls. */
#include "external_memory.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef CL_DEVICE_UUID_KHR
#define CL_DEVICE_UUID_KHR 0x106A
#endif
#define TTC_CL_EXTERNAL_MEMORY_HANDLE_OPAQUE_FD_KHR 0x2060
#define TTC_CL_DEVICE_HANDLE_LIST_KHR 0x2051

typedef int cu_result;
typedef struct { int type, id; } cu_mem_location;                  /* CUmemLocation */
typedef struct {                                                   /* CUmemAllocationProp */
    int type;                 /* CU_MEM_ALLOCATION_TYPE_PINNED = 1 */
    int requested_handle_types; /* CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 1 */
    cu_mem_location location; /* CU_MEM_LOCATION_TYPE_DEVICE = 1, ordinal */
    void *win32_meta;
    unsigned char alloc_flags[8];
} cu_alloc_prop;
typedef struct { cu_mem_location location; int flags; } cu_access_desc; /* CUmemAccessDesc */

#define CU_FUNCS(X)                                                                                 \
    X(cuInit, cu_result (*)(unsigned))                                                              \
    X(cuDeviceGetCount, cu_result (*)(int *))                                                       \
    X(cuDeviceGet, cu_result (*)(int *, int))                                                       \
    X(cuDevicePrimaryCtxRetain, cu_result (*)(void **, int))                                        \
    X(cuCtxPushCurrent_v2, cu_result (*)(void *))                                                   \
    X(cuCtxPopCurrent_v2, cu_result (*)(void **))                                                   \
    X(cuMemGetAllocationGranularity, cu_result (*)(size_t *, const cu_alloc_prop *, int))           \
    X(cuMemCreate, cu_result (*)(uint64_t *, size_t, const cu_alloc_prop *, unsigned long long))    \
    X(cuMemExportToShareableHandle, cu_result (*)(void *, uint64_t, int, unsigned long long))       \
    X(cuMemAddressReserve, cu_result (*)(uint64_t *, size_t, size_t, uint64_t, unsigned long long)) \
    X(cuMemMap, cu_result (*)(uint64_t, size_t, size_t, uint64_t, unsigned long long))              \
    X(cuMemSetAccess, cu_result (*)(uint64_t, size_t, const cu_access_desc *, size_t))              \
    X(cuMemUnmap, cu_result (*)(uint64_t, size_t))                                                  \
    X(cuMemAddressFree, cu_result (*)(uint64_t, size_t))                                            \
    X(cuMemRelease, cu_result (*)(uint64_t))                                                        \
    X(cuCtxSynchronize, cu_result (*)(void))                                                        \
    X(cuGetErrorName, cu_result (*)(cu_result, const char **))

static struct {
#define X(name, type) __typeof__(type) name;
    CU_FUNCS(X)
#undef X
    cu_result (*uuid)(unsigned char *, int);                      /* cuDeviceGetUuid(_v2) */
    cu_result (*wait32)(void *, uint64_t, uint32_t, unsigned);    /* cuStreamWaitValue32(_v2) */
    /* OpenCL entry points outside the runtime's table */
    cl_mem (*create_buffer_props)(cl_context, const cl_ulong *, cl_mem_flags, size_t, void *, cl_int *);
    cl_int (*fill)(cl_command_queue, cl_mem, const void *, size_t, size_t, size_t, cl_uint, const cl_event *, cl_event *);
    void *(*ext_addr)(cl_platform_id, const char *);
    cl_int (*acquire)(cl_command_queue, cl_uint, const cl_mem *, cl_uint, const cl_event *, cl_event *);
    cl_int (*release)(cl_command_queue, cl_uint, const cl_mem *, cl_uint, const cl_event *, cl_event *);
} cu;

static pthread_once_t cu_once = PTHREAD_ONCE_INIT;
static char cu_msg[256];          /* empty when libcuda loaded and initialised */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static ttc_xmem_stats stats;       /* under lock */

static void cu_load(void) {
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) { snprintf(cu_msg, sizeof cu_msg, "libcuda.so.1 could not be loaded (no NVIDIA CUDA driver)"); return; }
#define X(name, type)                                                                            \
    cu.name = (type)dlsym(h, #name);                                                             \
    if (!cu.name) { snprintf(cu_msg, sizeof cu_msg, "libcuda.so.1 has no %s (driver too old)", #name); return; }
    CU_FUNCS(X)
#undef X
    cu.uuid = (cu_result(*)(unsigned char *, int))dlsym(h, "cuDeviceGetUuid_v2");
    if (!cu.uuid) cu.uuid = (cu_result(*)(unsigned char *, int))dlsym(h, "cuDeviceGetUuid");
    cu.wait32 = (cu_result(*)(void *, uint64_t, uint32_t, unsigned))dlsym(h, "cuStreamWaitValue32_v2");
    if (!cu.wait32) cu.wait32 = (cu_result(*)(void *, uint64_t, uint32_t, unsigned))dlsym(h, "cuStreamWaitValue32");
    if (!cu.uuid || !cu.wait32) { snprintf(cu_msg, sizeof cu_msg, "libcuda.so.1 lacks cuDeviceGetUuid or cuStreamWaitValue32"); return; }
    cu_result r = cu.cuInit(0);
    if (r != 0) { snprintf(cu_msg, sizeof cu_msg, "cuInit failed (CUDA error %d)", r); return; }
    /* the runtime loaded libOpenCL already (RTLD_NOLOAD finds that copy) */
    void *cl = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!cl) cl = dlopen("libOpenCL.so", RTLD_NOW | RTLD_NOLOAD);
    if (cl) {
        cu.create_buffer_props = dlsym(cl, "clCreateBufferWithProperties");
        cu.fill = dlsym(cl, "clEnqueueFillBuffer");
        cu.ext_addr = dlsym(cl, "clGetExtensionFunctionAddressForPlatform");
    }
    if (!cu.create_buffer_props || !cu.fill || !cu.ext_addr)
        snprintf(cu_msg, sizeof cu_msg, "the OpenCL ICD loader has no clCreateBufferWithProperties (OpenCL 3.0 loader needed)");
}

static ttc_status cu_fail(cu_result r, const char *what) {
    const char *nm = NULL;
    if (cu.cuGetErrorName) cu.cuGetErrorName(r, &nm);
    /* a device error carrying CUDA's code and name ("CUDA CUDA_ERROR_OUT_OF_MEMORY (2)") */
    return ttc_fail_device("CUDA", (int32_t)r, nm, "%s failed: %s (CUDA error %d)", what, nm ? nm : "unknown", r);
}

/* The primary context of each ordinal: the one torch uses; retained once, for the process. */
#define MAX_CUDA 64
static void *primary[MAX_CUDA];

static ttc_status ctx_push(int32_t ordinal) {
    if (ordinal < 0 || ordinal >= MAX_CUDA) return ttc_fail(TTC_ERR_INVALID_ARG, "CUDA device %d out of range", (int)ordinal);
    pthread_mutex_lock(&lock);
    cu_result r = 0;
    if (!primary[ordinal]) {
        int dev = 0;
        r = cu.cuDeviceGet(&dev, ordinal);
        if (r == 0) r = cu.cuDevicePrimaryCtxRetain(&primary[ordinal], dev);
    }
    void *c = primary[ordinal];
    pthread_mutex_unlock(&lock);
    if (r != 0) return cu_fail(r, "cuDevicePrimaryCtxRetain");
    r = cu.cuCtxPushCurrent_v2(c);
    return r ? cu_fail(r, "cuCtxPushCurrent") : TTC_OK;
}

static void ctx_pop(void) {
    void *c;
    cu.cuCtxPopCurrent_v2(&c);
}

static bool has_ext(const char *exts, const char *name) {
    size_t n = strlen(name);
    for (const char *p = exts; (p = strstr(p, name)); p += n)
        if ((p == exts || p[-1] == ' ') && (p[n] == ' ' || p[n] == 0)) return true;
    return false;
}

static bool check(ttc_cl_device *d, int32_t ordinal, char *why, size_t why_len) {
    const char *dname = d->base.facts.name;
    pthread_once(&cu_once, cu_load);
    if (cu_msg[0]) { snprintf(why, why_len, "%s", cu_msg); return false; }
    int count = 0;
    if (cu.cuDeviceGetCount(&count) != 0 || ordinal < 0 || ordinal >= count || ordinal >= MAX_CUDA) {
        snprintf(why, why_len, "CUDA device %d does not exist (%d devices)", (int)ordinal, count);
        return false;
    }
    char exts[8192] = {0};
    if (TTC_CL(GetDeviceInfo)(d->id, CL_DEVICE_EXTENSIONS, sizeof exts - 1, exts, NULL) != CL_SUCCESS) exts[0] = 0;
    static const char *need[] = {"cl_khr_external_memory", "cl_khr_external_memory_opaque_fd", "cl_khr_device_uuid"};
    for (size_t i = 0; i < sizeof need / sizeof *need; i++)
        if (!has_ext(exts, need[i])) {
            snprintf(why, why_len, "OpenCL device %s does not advertise %s", dname, need[i]);
            return false;
        }
    unsigned char a[16] = {0}, b[16] = {0};
    int dev = 0;
    if (TTC_CL(GetDeviceInfo)(d->id, CL_DEVICE_UUID_KHR, sizeof a, a, NULL) != CL_SUCCESS ||
        cu.cuDeviceGet(&dev, ordinal) != 0 || cu.uuid(b, dev) != 0) {
        snprintf(why, why_len, "device UUIDs could not be read");
        return false;
    }
    if (memcmp(a, b, sizeof a)) {
        snprintf(why, why_len, "OpenCL device %s is not CUDA device %d (UUIDs differ)", dname, (int)ordinal);
        return false;
    }
    pthread_mutex_lock(&lock);
    if (!cu.acquire) {
        cu.acquire = cu.ext_addr(d->platform_id, "clEnqueueAcquireExternalMemObjectsKHR");
        cu.release = cu.ext_addr(d->platform_id, "clEnqueueReleaseExternalMemObjectsKHR");
    }
    pthread_mutex_unlock(&lock);
    return true;
}

/* Answers per (OpenCL device, CUDA ordinal), remembered: the check reads the extension list
 * and both UUIDs, too slow for every call. */
typedef struct { ttc_cl_device *d; int32_t ordinal; bool ok; char why[200]; } answer;
static answer answers[32];
static int n_answers;

bool ttc_xmem_supported(ttc_device *dev, int32_t cuda_ordinal, char *why, size_t why_len) {
    ttc_cl_device *d = ttc_cl_dev(dev);
    char tmp[200];
    if (!why || !why_len) { why = tmp; why_len = sizeof tmp; }
    if (!ttc_target_cuda_interop()) {
        snprintf(why, why_len, "TORCHTRT_C_CUDA_INTEROP=0");
        return false;
    }
    pthread_mutex_lock(&lock);
    for (int i = 0; i < n_answers; i++)
        if (answers[i].d == d && answers[i].ordinal == cuda_ordinal) {
            bool ok = answers[i].ok;
            snprintf(why, why_len, "%s", answers[i].why);
            pthread_mutex_unlock(&lock);
            return ok;
        }
    pthread_mutex_unlock(&lock);
    why[0] = 0;
    bool ok = check(d, cuda_ordinal, why, why_len);
    pthread_mutex_lock(&lock);
    if (n_answers < (int)(sizeof answers / sizeof *answers)) {
        answers[n_answers] = (answer){d, cuda_ordinal, ok, {0}};
        snprintf(answers[n_answers].why, sizeof answers[n_answers].why, "%s", why);
        n_answers++;
    }
    pthread_mutex_unlock(&lock);
    return ok;
}

/* clCreateBufferWithProperties (OpenCL 3.0), from the loader the runtime already loaded */
static pthread_once_t props_once = PTHREAD_ONCE_INIT;
static cl_mem (*import_props)(cl_context, const cl_ulong *, cl_mem_flags, size_t, void *, cl_int *);

static void props_load(void) {
    void *cl = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!cl) cl = dlopen("libOpenCL.so", RTLD_NOW | RTLD_NOLOAD);
    if (cl) import_props = (__typeof__(import_props))dlsym(cl, "clCreateBufferWithProperties");
}

ttc_status ttc_cl_buf_import(ttc_device *dev, const ttc_external_mem *m, const char *what, ttc_buf **out) {
    ttc_cl_device *d = ttc_cl_dev(dev);
    if (m->kind != TTC_EXTERNAL_OPAQUE_FD)
        return ttc_fail(TTC_ERR_UNSUPPORTED, "%s: external memory of kind %d cannot be imported into OpenCL "
                        "(opaque file descriptors only)", what, (int)m->kind);
    if (m->offset)
        return ttc_fail(TTC_ERR_UNSUPPORTED, "%s: OpenCL imports a file descriptor's memory whole (offset %zu given)",
                        what, m->offset);
    char exts[8192] = {0};
    if (TTC_CL(GetDeviceInfo)(d->id, CL_DEVICE_EXTENSIONS, sizeof exts - 1, exts, NULL) != CL_SUCCESS) exts[0] = 0;
    if (!has_ext(exts, "cl_khr_external_memory") || !has_ext(exts, "cl_khr_external_memory_opaque_fd"))
        return ttc_fail(TTC_ERR_UNSUPPORTED, "%s: OpenCL device %s does not advertise "
                        "cl_khr_external_memory_opaque_fd", what, dev->facts.name);
    pthread_once(&props_once, props_load);
    if (!import_props)
        return ttc_fail(TTC_ERR_UNSUPPORTED, "%s: the OpenCL ICD loader has no clCreateBufferWithProperties "
                        "(OpenCL 3.0 loader needed)", what);
    cl_context ctx;
    TTC_TRY(ttc_cl_device_context(d, &ctx));
    cl_ulong props[] = {TTC_CL_EXTERNAL_MEMORY_HANDLE_OPAQUE_FD_KHR, (cl_ulong)m->handle,
                        TTC_CL_DEVICE_HANDLE_LIST_KHR, (cl_ulong)(uintptr_t)d->id, 0, 0};
    cl_int err = CL_SUCCESS;
    cl_mem mem = import_props(ctx, props, CL_MEM_READ_WRITE, m->size, NULL, &err);
    if (!mem || err != CL_SUCCESS)
        return ttc_fail_cl(err, "clCreateBufferWithProperties(%s, external memory, %zu bytes) failed: %s", what, m->size,
                           ttc_cl_error_name(err));
    ttc_cl_buf *w = ttc_calloc(1, sizeof *w);
    if (!w) { TTC_CL(ReleaseMemObject)(mem); return TTC_ERR_NOMEM; }
    w->base.dev = dev;
    w->base.size = m->size;
    w->m = mem;
    *out = &w->base;
    return TTC_OK;
}

ttc_status ttc_xmem_alloc(ttc_device *dev, int32_t cuda_ordinal, size_t nbytes, ttc_xmem **out) {
    *out = NULL;
    char why[200];
    if (!ttc_xmem_supported(dev, cuda_ordinal, why, sizeof why))
        return ttc_fail(TTC_ERR_UNSUPPORTED, "CUDA/OpenCL shared memory unavailable: %s", why);
    ttc_xmem *m = ttc_calloc(1, sizeof *m);
    if (!m) return TTC_ERR_NOMEM;
    m->fd = -1;
    m->cuda_ordinal = cuda_ordinal;
    m->requested = nbytes;
    ttc_status s = ctx_push(cuda_ordinal);
    if (s != TTC_OK) { free(m); return s; }
    cu_alloc_prop prop = {1, 1, {1, cuda_ordinal}, NULL, {0}};
    size_t gran = 0;
    bool created = false, reserved = false, mapped = false;
    cu_result r = cu.cuMemGetAllocationGranularity(&gran, &prop, 0);
    if (r) { s = cu_fail(r, "cuMemGetAllocationGranularity"); goto fail; }
    m->size = ((nbytes ? nbytes : 1) + gran - 1) / gran * gran;
    r = cu.cuMemCreate(&m->handle, m->size, &prop, 0);
    if (r) { s = cu_fail(r, "cuMemCreate(exportable)"); goto fail; }
    created = true;
    r = cu.cuMemExportToShareableHandle(&m->fd, m->handle, 1, 0);
    if (r) { s = cu_fail(r, "cuMemExportToShareableHandle(POSIX fd)"); goto fail; }
    r = cu.cuMemAddressReserve(&m->cuda_ptr, m->size, 0, 0, 0);
    if (r) { s = cu_fail(r, "cuMemAddressReserve"); goto fail; }
    reserved = true;
    r = cu.cuMemMap(m->cuda_ptr, m->size, 0, m->handle, 0);
    if (r) { s = cu_fail(r, "cuMemMap"); goto fail; }
    mapped = true;
    cu_access_desc acc = {{1, cuda_ordinal}, 3 /* read-write */};
    r = cu.cuMemSetAccess(m->cuda_ptr, m->size, &acc, 1);
    if (r) { s = cu_fail(r, "cuMemSetAccess"); goto fail; }
    /* the driver keeps its own reference to the memory: the fd stays ours (closed in free) */
    ttc_external_mem em = {TTC_EXTERNAL_OPAQUE_FD, m->fd, m->size, 0};
    s = ttc_buf_import(dev, &em, "shared CUDA memory", &m->buf);
    if (s != TTC_OK) goto fail;
    m->mem = ttc_cl_mem(m->buf);
    ctx_pop();
    pthread_mutex_lock(&lock);
    stats.live++;
    stats.live_bytes += (int64_t)m->size;
    stats.allocated++;
    pthread_mutex_unlock(&lock);
    *out = m;
    return TTC_OK;
fail:
    if (mapped) cu.cuMemUnmap(m->cuda_ptr, m->size);
    if (reserved) cu.cuMemAddressFree(m->cuda_ptr, m->size);
    if (created) cu.cuMemRelease(m->handle);
    if (m->fd >= 0) close(m->fd);
    ctx_pop();
    free(m);
    return s;
}

void ttc_xmem_free(ttc_xmem *m) {
    if (!m) return;
    /* OpenCL defers the release until enqueued work using the buffer is done. CUDA does not:
     * buffers are freed rarely (a binding grew, a plan was dropped), so wait for the device
     * rather than ask every owner which stream used the buffer last */
    ttc_buf_free(m->buf);     /* releases mem */
    if (ctx_push(m->cuda_ordinal) == TTC_OK) {
        cu.cuCtxSynchronize();
        cu.cuMemUnmap(m->cuda_ptr, m->size);
        cu.cuMemAddressFree(m->cuda_ptr, m->size);
        cu.cuMemRelease(m->handle);
        ctx_pop();
    }
    if (m->fd >= 0) close(m->fd);
    pthread_mutex_lock(&lock);
    stats.live--;
    stats.live_bytes -= (int64_t)m->size;
    stats.freed++;
    pthread_mutex_unlock(&lock);
    free(m);
}

ttc_status ttc_xmem_acquire(ttc_queue *q, ttc_buf *const *bufs, int32_t n, bool release) {
    __typeof__(cu.acquire) f = release ? cu.release : cu.acquire;
    if (!f || n <= 0) return TTC_OK;
    cl_mem mems[64];
    if (n > 64) return ttc_fail(TTC_ERR_UNSUPPORTED, "more than 64 external buffers in one launch sequence");
    for (int32_t i = 0; i < n; i++) mems[i] = ttc_cl_mem(bufs[i]);
    TTC_TRY(ttc_cl_queue_submit(q));
    cl_int err = f(ttc_cl_q(q), (cl_uint)n, mems, 0, NULL, NULL);
    if (err != CL_SUCCESS)
        return ttc_fail_cl(err, "clEnqueue%sExternalMemObjectsKHR failed: %s", release ? "Release" : "Acquire",
                           ttc_cl_error_name(err));
    return TTC_OK;
}

ttc_status ttc_xmem_signal(ttc_queue *q, ttc_buf *flag, uint32_t v) {
    if (!cu.fill) return ttc_fail(TTC_ERR_UNSUPPORTED, "clEnqueueFillBuffer unavailable");
    TTC_TRY(ttc_cl_queue_submit(q));
    cl_int err = cu.fill(ttc_cl_q(q), ttc_cl_mem(flag), &v, sizeof v, 0, sizeof v, 0, NULL, NULL);
    if (err != CL_SUCCESS) return ttc_fail_cl(err, "clEnqueueFillBuffer(completion flag) failed: %s", ttc_cl_error_name(err));
    /* the wait on the CUDA side only sees work the OpenCL driver has submitted */
    err = TTC_CL(Flush)(ttc_cl_q(q));
    if (err != CL_SUCCESS) return ttc_fail_cl(err, "clFlush failed: %s", ttc_cl_error_name(err));
    return TTC_OK;
}

ttc_status ttc_xmem_stream_wait(const ttc_xmem *flag, uint64_t stream, uint32_t v) {
    TTC_TRY(ctx_push(flag->cuda_ordinal));
    /* GEQ (0): the counter only grows; one GPU, so the flag's writer finished its kernels
     * (in-order queue) and their writes are in the same memory the waiting stream reads */
    cu_result r = cu.wait32((void *)(uintptr_t)stream, flag->cuda_ptr, v, 0);
    ctx_pop();
    return r ? cu_fail(r, "cuStreamWaitValue32") : TTC_OK;
}

ttc_xmem_stats ttc_xmem_stats_get(void) {
    pthread_mutex_lock(&lock);
    ttc_xmem_stats s = stats;
    pthread_mutex_unlock(&lock);
    return s;
}
