/* Whether a device's CL_MEM_USE_HOST_PTR buffers are the host memory itself
 * (target.host_in_place, cached by backend.c), so that execute can skip mapping its outputs.
 *
 * The specification only promises that a USE_HOST_PTR buffer's host memory holds the kernels'
 * results once the buffer is mapped; an implementation may cache the contents elsewhere. On
 * PoCL's CPU drivers the buffer's storage is the host pointer itself, at any alignment, and a
 * blocking map plus unmap per output costs two commands and a wait (about 30 us per call on
 * two cores, more than ten small kernels). So it is decided by asking the device, not by its
 * name: a native kernel (clEnqueueNativeKernel) receives the device's own address of each
 * buffer in its mem list; given USE_HOST_PTR buffers over misaligned host addresses (1 and 4
 * bytes past a page boundary), every address it receives must be one of those host
 * addresses, and what it writes there must be in the host memory after clFinish with no map.
 * Building and running an OpenCL kernel for this would cost a program build (~100 ms on PoCL)
 * on the first call of every process; the native kernel costs one command. Devices that do not
 * run native kernels, non-CPU devices, and any failure give "no" (execute keeps its maps).
 * TORCHTRT_C_HOST_IN_PLACE=0 (target.c) forces "no" (A/B measurements, a suspect driver). */
#include <stdlib.h>
#include <string.h>

#include "cl.h"

enum { PROBE_BUFS = 3, PROBE_BYTES = 4096 };

typedef struct probe_args {
    void *mem[PROBE_BUFS];    /* cl_mem when enqueued, the device's addresses when run */
    void **seen;              /* host array: the addresses the function was given */
} probe_args;

static void probe_fn(void *p) {
    probe_args *a = p;
    for (int i = 0; i < PROBE_BUFS; i++) {
        memset(a->mem[i], 0x5a, 64);
        a->seen[i] = a->mem[i];
    }
}

static bool probe_run(ttc_cl_device *d) {
    cl_context ctx;
    if (ttc_cl_device_context(d, &ctx) != TTC_OK) return false;
    unsigned char *raw = aligned_alloc(4096, PROBE_BUFS * PROBE_BYTES);
    if (!raw) return false;
    memset(raw, 0, PROBE_BUFS * PROBE_BYTES);
    unsigned char *host[PROBE_BUFS] = {raw + 1, raw + PROBE_BYTES + 4, raw + 2 * PROBE_BYTES + 64};
    void *seen[PROBE_BUFS] = {NULL, NULL, NULL};
    cl_int qerr = CL_SUCCESS;
    cl_mem bufs[PROBE_BUFS] = {NULL, NULL, NULL};
    cl_command_queue q = TTC_CL(CreateCommandQueue)(ctx, d->id, 0, &qerr);
    bool ok = q && qerr == CL_SUCCESS;
    for (int i = 0; i < PROBE_BUFS && ok; i++) {
        cl_int err = CL_SUCCESS;
        bufs[i] = TTC_CL(CreateBuffer)(ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, 256, host[i], &err);
        ok = bufs[i] && err == CL_SUCCESS;
    }
    if (ok) {
        probe_args a = {{bufs[0], bufs[1], bufs[2]}, seen};
        const void *locs[PROBE_BUFS] = {&a.mem[0], &a.mem[1], &a.mem[2]};
        ok = TTC_CL(EnqueueNativeKernel)(q, probe_fn, &a, sizeof a, PROBE_BUFS, bufs, locs, 0, NULL, NULL) ==
                 CL_SUCCESS && TTC_CL(Finish)(q) == CL_SUCCESS;
    }
    /* every host address was given to the device as the buffer's own (in any order: see
     * backend/cpu/native_ops.c on PoCL's mem list), and what it wrote there is in host memory */
    for (int i = 0; i < PROBE_BUFS && ok; i++) {
        bool found = false;
        for (int j = 0; j < PROBE_BUFS; j++) found = found || seen[j] == (void *)host[i];
        ok = found;
        for (int b = 0; b < 64 && ok; b++) ok = host[i][b] == 0x5a;
    }
    for (int i = 0; i < PROBE_BUFS; i++)
        if (bufs[i]) TTC_CL(ReleaseMemObject)(bufs[i]);
    if (q) TTC_CL(ReleaseCommandQueue)(q);
    free(raw);
    return ok;
}

bool ttc_cl_probe_host_in_place(ttc_device *d) {
    return d->facts.is_cpu && d->facts.host_tasks && probe_run(ttc_cl_dev(d));
}
