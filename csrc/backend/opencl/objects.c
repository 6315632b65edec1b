/* The OpenCL backend's buffers, kernels, queues and events, and its function table. */
#include "cl.h"
#include "external_memory.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static ttc_status buf_new(ttc_device *dev, cl_mem_flags flags, size_t n, void *host, const char *what,
                          ttc_buf **out) {
    cl_context ctx;
    TTC_TRY(ttc_cl_device_context(ttc_cl_dev(dev), &ctx));
    ttc_cl_buf *b = ttc_calloc(1, sizeof *b);
    if (!b) return TTC_ERR_NOMEM;
    cl_int err = CL_SUCCESS;
    b->m = TTC_CL(CreateBuffer)(ctx, flags, n, host, &err);
    if (!b->m || err != CL_SUCCESS) {
        free(b);
        return ttc_fail_cl(err, "clCreateBuffer(%s, %zu bytes%s) failed: %s", what, n,
                           (flags & CL_MEM_USE_HOST_PTR) ? ", USE_HOST_PTR" : "", ttc_cl_error_name(err));
    }
    b->base.dev = dev;
    b->base.size = n;
    b->base.host = (flags & CL_MEM_USE_HOST_PTR) != 0;
    *out = &b->base;
    return TTC_OK;
}

static ttc_status cl_buf_alloc(ttc_device *d, size_t n, const void *init, const char *what, ttc_buf **out) {
    return buf_new(d, CL_MEM_READ_WRITE | (n && init ? CL_MEM_COPY_HOST_PTR : 0), n ? n : 16,
                   n && init ? (void *)init : NULL, what, out);
}

static ttc_status cl_buf_wrap_host(ttc_device *d, void *host, size_t n, bool read_only, const char *what,
                                   ttc_buf **out) {
    return buf_new(d, (read_only ? CL_MEM_READ_ONLY : CL_MEM_READ_WRITE) | CL_MEM_USE_HOST_PTR, n, host, what, out);
}

static void cl_buf_free(ttc_buf *b) {
    TTC_CL(ReleaseMemObject)(ttc_cl_mem(b));
    free(b);
}

static ttc_status cl_buf_write(ttc_queue *q, ttc_buf *b, size_t off, size_t n, const void *src, bool blocking) {
    TTC_TRY(ttc_cl_queue_submit(q));
    cl_int err = TTC_CL(EnqueueWriteBuffer)(ttc_cl_q(q), ttc_cl_mem(b), blocking ? CL_TRUE : CL_FALSE, off, n, src, 0,
                                            NULL, NULL);
    if (err != CL_SUCCESS) return ttc_fail_cl(err, "clEnqueueWriteBuffer(%zu bytes) failed: %s", n, ttc_cl_error_name(err));
    return TTC_OK;
}

static ttc_status cl_buf_read(ttc_queue *q, ttc_buf *b, size_t off, size_t n, void *dst, bool blocking) {
    TTC_TRY(ttc_cl_queue_submit(q));
    cl_int err = TTC_CL(EnqueueReadBuffer)(ttc_cl_q(q), ttc_cl_mem(b), blocking ? CL_TRUE : CL_FALSE, off, n, dst, 0,
                                           NULL, NULL);
    if (err != CL_SUCCESS) return ttc_fail_cl(err, "clEnqueueReadBuffer(%zu bytes) failed: %s", n, ttc_cl_error_name(err));
    return TTC_OK;
}

static ttc_status cl_buf_copy(ttc_queue *q, ttc_buf *src, ttc_buf *dst, size_t n) {
    TTC_TRY(ttc_cl_queue_submit(q));
    cl_int err = TTC_CL(EnqueueCopyBuffer)(ttc_cl_q(q), ttc_cl_mem(src), ttc_cl_mem(dst), 0, 0, n, 0, NULL, NULL);
    if (err != CL_SUCCESS) return ttc_fail_cl(err, "clEnqueueCopyBuffer(%zu bytes) failed: %s", n, ttc_cl_error_name(err));
    return TTC_OK;
}

/* Mapping a USE_HOST_PTR buffer makes its host memory current (a no-op where the device
 * computes in it, as PoCL does); the copy covers drivers that map elsewhere. */
static ttc_status cl_buf_sync_host(ttc_queue *q, ttc_buf *b, void *host, size_t n) {
    TTC_TRY(ttc_cl_queue_submit(q));
    cl_int err = CL_SUCCESS;
    void *mp = TTC_CL(EnqueueMapBuffer)(ttc_cl_q(q), ttc_cl_mem(b), CL_TRUE, CL_MAP_READ, 0, n, 0, NULL, NULL, &err);
    if (!mp || err != CL_SUCCESS) return ttc_fail_cl(err, "clEnqueueMapBuffer(%zu bytes) failed: %s", n, ttc_cl_error_name(err));
    if (mp != host) memcpy(host, mp, n);
    TTC_CL(EnqueueUnmapMemObject)(ttc_cl_q(q), ttc_cl_mem(b), mp, 0, NULL, NULL);
    return TTC_OK;
}

static ttc_status cl_kernel_new(ttc_program *p, const char *name, ttc_kernel **out) {
    ttc_cl_kernel *k = ttc_calloc(1, sizeof *k);
    if (!k) return TTC_ERR_NOMEM;
    cl_int err = CL_SUCCESS;
    k->k = TTC_CL(CreateKernel)(ttc_cl_prog(p), name, &err);
    if (!k->k || err != CL_SUCCESS) {
        free(k);
        return ttc_fail_cl(err, "clCreateKernel(%s) failed: %s", name, ttc_cl_error_name(err));
    }
    k->base.dev = p->dev;
    snprintf(k->base.name, sizeof k->base.name, "%s", name);
    *out = &k->base;
    return TTC_OK;
}

static void cl_kernel_free(ttc_kernel *k) {
    TTC_CL(ReleaseKernel)(((ttc_cl_kernel *)k)->k);
    free(k);
}

static ttc_status set_arg(ttc_kernel *k, uint32_t i, size_t size, const void *v) {
    cl_int err = TTC_CL(SetKernelArg)(((ttc_cl_kernel *)k)->k, i, size, v);
    if (err != CL_SUCCESS)
        return ttc_fail_cl(err, "clSetKernelArg(%s, arg %u) failed: %s", k->name, i, ttc_cl_error_name(err));
    return TTC_OK;
}

static ttc_status cl_kernel_set_buf(ttc_kernel *k, uint32_t i, ttc_buf *b) {
    cl_mem m = ttc_cl_mem(b);
    return set_arg(k, i, sizeof m, &m);
}

static ttc_status cl_kernel_set_i32(ttc_kernel *k, uint32_t i, int32_t v) {
    cl_int iv = v;
    return set_arg(k, i, sizeof iv, &iv);
}

static ttc_status cl_kernel_set_local(ttc_kernel *k, uint32_t i, size_t bytes) { return set_arg(k, i, bytes, NULL); }

static ttc_status cl_queue_new(ttc_device *d, bool profiling, ttc_queue **out) {
    ttc_cl_device *cd = ttc_cl_dev(d);
    cl_context ctx;
    TTC_TRY(ttc_cl_device_context(cd, &ctx));
    ttc_cl_queue *q = ttc_calloc(1, sizeof *q);
    if (!q) return TTC_ERR_NOMEM;
    cl_int err = CL_SUCCESS;
    q->q = TTC_CL(CreateCommandQueue)(ctx, cd->id, profiling ? CL_QUEUE_PROFILING_ENABLE : 0, &err);
    if (!q->q || err != CL_SUCCESS) {
        free(q);
        return ttc_fail_cl(err, "clCreateCommandQueue(%s) failed: %s", d->facts.name, ttc_cl_error_name(err));
    }
    q->base.dev = d;
    q->base.profiling = profiling;
    *out = &q->base;
    return TTC_OK;
}

static void cl_queue_free(ttc_queue *q) {
    ttc_cl_queue_submit(q);
    TTC_CL(Finish)(ttc_cl_q(q));
    TTC_CL(ReleaseCommandQueue)(ttc_cl_q(q));
    free(q);
}

/* On PoCL the enqueuing thread and the device's worker threads share the CPU's cores: a launch
 * wakes the workers, which then compete with the thread enqueuing the next ones (10 small
 * kernels: 37 us of enqueueing, 6 us when none has started). A user event that the first
 * launch after the hold waits for keeps the workers asleep until the whole sequence is there. */
static ttc_status cl_queue_hold(ttc_queue *q) {
    ttc_cl_queue *cq = (ttc_cl_queue *)q;
    /* a caller-thread device runs a launch when its wait list is complete, inside the call
     * that completes it: clSetUserEventStatus would run them under the event's own lock
     * (PoCL 3.1 deadlocks there), and there are no workers to keep asleep anyway */
    if (ttc_cl_dev(q->dev)->owner) return TTC_OK;
    if (cq->gate && !cq->gate_used) return TTC_OK;
    TTC_TRY(ttc_cl_queue_submit(q));
    cl_context ctx;
    TTC_TRY(ttc_cl_device_context(ttc_cl_dev(q->dev), &ctx));
    cl_int err = CL_SUCCESS;
    cl_event g = TTC_CL(CreateUserEvent)(ctx, &err);
    if (!g || err != CL_SUCCESS) return ttc_fail_cl(err, "clCreateUserEvent failed: %s", ttc_cl_error_name(err));
    cq->gate = g;
    cq->gate_used = false;
    return TTC_OK;
}

ttc_status ttc_cl_queue_submit(ttc_queue *q) {
    ttc_cl_queue *cq = (ttc_cl_queue *)q;
    if (!cq->gate) return TTC_OK;
    cl_int err = TTC_CL(SetUserEventStatus)(cq->gate, CL_COMPLETE);
    TTC_CL(ReleaseEvent)(cq->gate);
    cq->gate = NULL;
    if (err != CL_SUCCESS) return ttc_fail_cl(err, "clSetUserEventStatus(held launches) failed: %s", ttc_cl_error_name(err));
    return TTC_OK;
}

static ttc_status cl_queue_finish(ttc_queue *q) {
    TTC_TRY(ttc_cl_queue_submit(q));
    cl_int err = TTC_CL(Finish)(ttc_cl_q(q));
    if (err != CL_SUCCESS) return ttc_fail_cl(err, "clFinish(%s) failed: %s", q->dev->facts.name, ttc_cl_error_name(err));
    return TTC_OK;
}

ttc_status ttc_cl_event_wrap(ttc_device *d, cl_event e, ttc_event **out) {
    ttc_cl_event *w = ttc_calloc(1, sizeof *w);
    if (!w) { if (e) TTC_CL(ReleaseEvent)(e); return TTC_ERR_NOMEM; }
    w->base.dev = d;
    w->ev = e;
    *out = &w->base;
    return TTC_OK;
}

static ttc_status cl_launch(ttc_queue *q, ttc_kernel *k, int32_t dims, const size_t *gws, const size_t *lws,
                            ttc_event **ev) {
    cl_event e = NULL;
    const cl_event *wait;
    cl_uint n_wait = ttc_cl_queue_gate(q, &wait);
    cl_int err = TTC_CL(EnqueueNDRangeKernel)(ttc_cl_q(q), ((ttc_cl_kernel *)k)->k, (cl_uint)dims, NULL, gws, lws,
                                              n_wait, wait, ev ? &e : NULL);
    if (err == CL_SUCCESS) ttc_cl_queue_gate_used(q, n_wait);
    if (err != CL_SUCCESS)
        return ttc_fail_cl(err, "clEnqueueNDRangeKernel(%s) failed: %s", k->name, ttc_cl_error_name(err));
    return ev ? ttc_cl_event_wrap(q->dev, e, ev) : TTC_OK;
}

static ttc_status cl_event_times(ttc_event *ev, uint64_t *start_ns, uint64_t *end_ns) {
    cl_event e = ((ttc_cl_event *)ev)->ev;
    cl_ulong t0 = 0, t1 = 0;
    cl_int err = TTC_CL(GetEventProfilingInfo)(e, CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL);
    if (err == CL_SUCCESS) err = TTC_CL(GetEventProfilingInfo)(e, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL);
    if (err != CL_SUCCESS) return ttc_fail_cl(err, "clGetEventProfilingInfo failed: %s", ttc_cl_error_name(err));
    *start_ns = t0;
    *end_ns = t1;
    return TTC_OK;
}

static void cl_event_free(ttc_event *ev) {
    cl_event e = ((ttc_cl_event *)ev)->ev;
    if (e) TTC_CL(ReleaseEvent)(e);
    free(ev);
}

static const char *cl_error_name(int32_t code) { return ttc_cl_error_name(code); }
static void cl_program_stats(ttc_program_stats *acc) { ttc_cl_program_stats_add(acc); }
static void cl_memstats(ttc_memstats *acc) { ttc_cl_memstats_add(acc); }

const ttc_backend_iface ttc_opencl_backend = {
    .name = "OpenCL",
    .error_name = cl_error_name,
    .devices = ttc_cl_devices,
    .probe_half = ttc_cl_probe_half,
    .probe_host_tasks = ttc_cl_probe_host_tasks,
    .probe_host_in_place = ttc_cl_probe_host_in_place,
    .device_uuid = ttc_cl_device_uuid,
    .device_pci = ttc_cl_device_pci,
    .caller_thread = ttc_cl_device_caller_thread,
    .buf_alloc = cl_buf_alloc,
    .buf_wrap_host = cl_buf_wrap_host,
    .buf_import = ttc_cl_buf_import,
    .buf_free = cl_buf_free,
    .buf_write = cl_buf_write,
    .buf_read = cl_buf_read,
    .buf_copy = cl_buf_copy,
    .buf_sync_host = cl_buf_sync_host,
    .program_build = ttc_cl_program_build,
    .program_from_binary = ttc_cl_program_from_binary,
    .program_free = ttc_cl_program_free,
    .program_cached = ttc_cl_program_cached,
    .kernel_new = cl_kernel_new,
    .kernel_free = cl_kernel_free,
    .kernel_set_buf = cl_kernel_set_buf,
    .kernel_set_i32 = cl_kernel_set_i32,
    .kernel_set_local = cl_kernel_set_local,
    .queue_new = cl_queue_new,
    .queue_free = cl_queue_free,
    .queue_finish = cl_queue_finish,
    .hold = cl_queue_hold,
    .launch = cl_launch,
    .host_task = ttc_cl_host_task,
    .acquire_external = ttc_xmem_acquire,
    .signal = ttc_xmem_signal,
    .record_begin = NULL,            /* not implemented: README.md, "Optional entries" */
    .record_end = NULL,
    .replay = NULL,
    .recording_free = NULL,
    .event_times = cl_event_times,
    .event_free = cl_event_free,
    .memstats = cl_memstats,
    .program_stats = cl_program_stats,
};
