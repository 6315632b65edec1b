/*
 * Memory shared between CUDA and OpenCL (cl_khr_external_memory_opaque_fd): the CUDA driver
 * allocates exportable device memory (cuMemCreate with a POSIX file descriptor handle), maps
 * it into the current process's CUDA address space, and the OpenCL device with the same UUID
 * imports it as a cl_mem (backend/opencl/external_memory.c). torch reads and writes it through the CUDA pointer, engines through
 * the cl_mem: no host copy on either side.
 *
 *   char why[256];
 *   if (ttc_xmem_supported(dev, 0, why, sizeof why)) {
 *       ttc_xmem *m;
 *       TTC_TRY(ttc_xmem_alloc(dev, 0, nbytes, &m));   // m->cuda_ptr for torch, m->buf for engines
 *       ...
 *       ttc_xmem_free(m);
 *   }
 *
 * libcuda.so.1 is dlopen'd on first use, never linked: on machines without CUDA every other
 * part of the library works and ttc_xmem_supported says why this one does not.
 *
 * Ordering. NVIDIA's OpenCL exports no semaphore (only opaque-fd import), and the CUDA driver
 * only imports them, so no semaphore can be shared. The two directions are ordered this way:
 *  - CUDA -> OpenCL: the caller synchronises the CUDA stream that wrote the inputs (that
 *    stream only) before the engine is enqueued;
 *  - OpenCL -> CUDA: after the engine, the OpenCL queue writes a counter value into a small
 *    shared buffer (ttc_xmem_signal), and the CUDA stream waits for it on the device
 *    (cuStreamWaitValue32, ttc_xmem_stream_wait): the host does not wait for the engine.
 */
#ifndef TTC_BACKEND_XMEM_H
#define TTC_BACKEND_XMEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"

typedef struct ttc_xmem {
    uint64_t cuda_ptr;        /* CUdeviceptr in the CUDA device's primary context */
    size_t size;              /* bytes mapped (the request rounded up to the granularity) */
    size_t requested;
    void *mem;                /* the same memory as an OpenCL buffer (cl_mem) of the device's context */
    ttc_buf *buf;             /* mem as a backend buffer (owns mem), what engines bind */
    int32_t cuda_ordinal;
    /* private: CUDA handles */
    uint64_t handle;
    int fd;
} ttc_xmem;

/* Whether memory can be shared between CUDA device cuda_ordinal and OpenCL device d: libcuda
 * loads, d advertises cl_khr_external_memory_opaque_fd, and its UUID is the CUDA device's.
 * When not, why (if given) holds the reason. Never fails; the answer is cached per pair. */
bool ttc_xmem_supported(ttc_device *d, int32_t cuda_ordinal, char *why, size_t why_len);
/* Allocates nbytes (0 allowed: one granule) of shared memory. */
ttc_status ttc_xmem_alloc(ttc_device *d, int32_t cuda_ordinal, size_t nbytes, ttc_xmem **out);
void ttc_xmem_free(ttc_xmem *m);

/* Makes CUDA stream `stream` (a CUstream; 0 is the legacy default stream) wait on the device
 * until the value at flag's start is >= v (wrap-around is the caller's concern). */
ttc_status ttc_xmem_stream_wait(const ttc_xmem *flag, uint64_t stream, uint32_t v);

/* Process-wide counters of shared buffers, for leak checks. */
typedef struct ttc_xmem_stats {
    int64_t live, live_bytes, allocated, freed;
} ttc_xmem_stats;
ttc_xmem_stats ttc_xmem_stats_get(void);

#endif
