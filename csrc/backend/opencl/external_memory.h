/*
 * The OpenCL side of memory shared with CUDA (backend/xmem.h says how it works): importing
 * an opaque file descriptor as a cl_mem, acquiring and signalling on a queue.
 */
#ifndef TTC_EXTERNAL_MEMORY_H
#define TTC_EXTERNAL_MEMORY_H

#include "../xmem.h"
#include "cl.h"

/* backend.h's ttc_buf_import: an opaque file descriptor (TTC_EXTERNAL_OPAQUE_FD, offset 0)
 * imported whole where the device advertises cl_khr_external_memory_opaque_fd and the loader
 * has clCreateBufferWithProperties; TTC_ERR_UNSUPPORTED saying which is missing elsewhere.
 * The descriptor stays the caller's. ttc_xmem_alloc imports its CUDA allocation this way. */
ttc_status ttc_cl_buf_import(ttc_device *d, const ttc_external_mem *m, const char *what, ttc_buf **out);
/* The backend entries (backend.h: ttc_queue_acquire_external, ttc_queue_signal). Acquire
 * (release) of external buffers on q, where the driver has the entry points
 * (cl_khr_external_memory asks for them around any use); a write of the 32-bit value v at
 * the start of flag after everything before it, then a flush. */
ttc_status ttc_xmem_acquire(ttc_queue *q, ttc_buf *const *bufs, int32_t n, bool release);
ttc_status ttc_xmem_signal(ttc_queue *q, ttc_buf *flag, uint32_t v);
#endif
