/* Live OpenCL buffer counters, for leak checks: every clCreateBuffer / clReleaseMemObject
 * made through TTC_CL goes through the wrappers below (installed into the dispatch table
 * when libOpenCL is loaded), so buffers made anywhere in the library are counted without
 * each call site doing it. The library never calls clRetainMemObject, so each buffer it
 * creates is released exactly once: live = created - released, and the bytes of a buffer
 * (CL_MEM_SIZE, read just before its release) leave the total at its release. Buffers
 * wrapping host memory (CL_MEM_USE_HOST_PTR: zero-copy inputs/outputs on CPU devices) are
 * counted too; host_ptr_bytes says how much of live_bytes they are. */
#include "runtime.h"

static __typeof__(&clCreateBuffer) real_create;
static __typeof__(&clReleaseMemObject) real_release;

static int64_t n_live, n_created, n_released, bytes_live, bytes_peak, bytes_host;

static cl_mem CL_API_CALL counted_create(cl_context ctx, cl_mem_flags flags, size_t size, void *host, cl_int *err) {
    cl_int e = CL_SUCCESS;
    cl_mem m = real_create(ctx, flags, size, host, &e);
    if (err) *err = e;
    if (m && e == CL_SUCCESS) {
        __atomic_add_fetch(&n_live, 1, __ATOMIC_RELAXED);
        __atomic_add_fetch(&n_created, 1, __ATOMIC_RELAXED);
        if (flags & CL_MEM_USE_HOST_PTR) __atomic_add_fetch(&bytes_host, (int64_t)size, __ATOMIC_RELAXED);
        int64_t now = __atomic_add_fetch(&bytes_live, (int64_t)size, __ATOMIC_RELAXED);
        int64_t peak = __atomic_load_n(&bytes_peak, __ATOMIC_RELAXED);
        while (now > peak && !__atomic_compare_exchange_n(&bytes_peak, &peak, now, true, __ATOMIC_RELAXED,
                                                          __ATOMIC_RELAXED)) {
        }
    }
    return m;
}

static cl_int CL_API_CALL counted_release(cl_mem m) {
    size_t size = 0;
    cl_mem_flags flags = 0;
    bool known = m && TTC_CL(GetMemObjectInfo)(m, CL_MEM_SIZE, sizeof size, &size, NULL) == CL_SUCCESS &&
                 TTC_CL(GetMemObjectInfo)(m, CL_MEM_FLAGS, sizeof flags, &flags, NULL) == CL_SUCCESS;
    cl_int e = real_release(m);
    if (e == CL_SUCCESS && known) {
        __atomic_sub_fetch(&n_live, 1, __ATOMIC_RELAXED);
        __atomic_add_fetch(&n_released, 1, __ATOMIC_RELAXED);
        __atomic_sub_fetch(&bytes_live, (int64_t)size, __ATOMIC_RELAXED);
        if (flags & CL_MEM_USE_HOST_PTR) __atomic_sub_fetch(&bytes_host, (int64_t)size, __ATOMIC_RELAXED);
    }
    return e;
}

void ttc_cl_memstats_install(ttc_cl_api *api) {
    real_create = api->CreateBuffer;
    real_release = api->ReleaseMemObject;
    api->CreateBuffer = counted_create;
    api->ReleaseMemObject = counted_release;
}

ttc_cl_memstats ttc_cl_memstats_get(void) {
    ttc_cl_memstats s;
    s.live_buffers = __atomic_load_n(&n_live, __ATOMIC_RELAXED);
    s.live_bytes = __atomic_load_n(&bytes_live, __ATOMIC_RELAXED);
    s.peak_bytes = __atomic_load_n(&bytes_peak, __ATOMIC_RELAXED);
    s.host_ptr_bytes = __atomic_load_n(&bytes_host, __ATOMIC_RELAXED);
    s.created = __atomic_load_n(&n_created, __ATOMIC_RELAXED);
    s.released = __atomic_load_n(&n_released, __ATOMIC_RELAXED);
    return s;
}
