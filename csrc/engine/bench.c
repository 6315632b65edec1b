/* Resident benchmarks (see bench.h): device buffers made and filled once, then only kernel
 * launches and one clFinish per timed run. Its own queue and kernel objects, so that
 * arguments are set once and concurrent execute() calls keep their pooled contexts. */
#include "bench.h"

#include "engine_impl.h"
#include "native_ops.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static ttc_status check_counts(int32_t runs, int32_t warmup, const double *times_ms) {
    if (runs < 1) return ttc_fail(TTC_ERR_INVALID_ARG, "benchmark: runs must be >= 1, got %d", runs);
    if (warmup < 0) return ttc_fail(TTC_ERR_INVALID_ARG, "benchmark: warmup must be >= 0, got %d", warmup);
    if (!times_ms) return ttc_fail(TTC_ERR_INVALID_ARG, "benchmark: no array for the times");
    return TTC_OK;
}

static ttc_status new_buf(cl_context ctx, size_t n, const char *what, cl_mem *out) {
    cl_int err = CL_SUCCESS;
    *out = TTC_CL(CreateBuffer)(ctx, CL_MEM_READ_WRITE, n ? n : 16, NULL, &err);
    if (!*out || err != CL_SUCCESS) {
        *out = NULL;
        return ttc_fail_cl(err, "clCreateBuffer(%s, %zu bytes) failed: %s", what, n, ttc_cl_error_name(err));
    }
    return TTC_OK;
}

/* Everything one resident run needs; released by bench_free. */
typedef struct bench_state {
    cl_command_queue q;
    cl_kernel *kernels;
    cl_mem *in, *out, arena, errf;   /* errf: index kernels' error flag (not read when timing) */
    cl_mem scratch;                  /* native convolutions' im2col buffer */
    int32_t n_in, n_out, n_k;
    bool profiling;
} bench_state;

static void bench_free(bench_state *b) {
    if (b->q) TTC_CL(Finish)(b->q);
    for (int32_t i = 0; b->kernels && i < b->n_k; i++)
        if (b->kernels[i]) TTC_CL(ReleaseKernel)(b->kernels[i]);
    for (int32_t i = 0; b->in && i < b->n_in; i++)
        if (b->in[i]) TTC_CL(ReleaseMemObject)(b->in[i]);
    for (int32_t i = 0; b->out && i < b->n_out; i++)
        if (b->out[i]) TTC_CL(ReleaseMemObject)(b->out[i]);
    if (b->arena) TTC_CL(ReleaseMemObject)(b->arena);
    if (b->errf) TTC_CL(ReleaseMemObject)(b->errf);
    if (b->scratch) TTC_CL(ReleaseMemObject)(b->scratch);
    if (b->q) TTC_CL(ReleaseCommandQueue)(b->q);
    free(b->kernels);
    free(b->in);
    free(b->out);
}

/* Queue, kernels, buffers (inputs uploaded), every kernel argument set. */
static ttc_status bench_setup(ttc_engine *e, const ttc_plan *p, const void *const *inputs, const size_t *in_bytes,
                              bench_state *b) {
    const ttc_kir *k = e->k;
    b->n_in = e->n_in;
    b->n_out = e->n_out;
    b->n_k = e->cg.n_kernels;
    b->kernels = ttc_calloc((size_t)b->n_k + 1, sizeof(cl_kernel));
    b->in = ttc_calloc((size_t)b->n_in + 1, sizeof(cl_mem));
    b->out = ttc_calloc((size_t)b->n_out + 1, sizeof(cl_mem));
    if (!b->kernels || !b->in || !b->out) return TTC_ERR_NOMEM;
    TTC_TRY(ttc_cl_queue_new(e->dev, b->profiling, &b->q));
    TTC_TRY(new_buf(e->ctx, p->arena_bytes, "arena", &b->arena));
    size_t scratch = ttc_native_scratch_bytes(e, p);
    if (scratch) TTC_TRY(new_buf(e->ctx, scratch, "native scratch", &b->scratch));
    cl_int err = CL_SUCCESS;
    for (int32_t i = 0; i < b->n_in; i++) {
        TTC_TRY(new_buf(e->ctx, in_bytes[i], e->ins[i].name, &b->in[i]));
        if (!in_bytes[i]) continue;
        err = TTC_CL(EnqueueWriteBuffer)(b->q, b->in[i], CL_TRUE, 0, in_bytes[i], inputs[i], 0, NULL, NULL);
        if (err != CL_SUCCESS)
            return ttc_fail_cl(err, "clEnqueueWriteBuffer(input %s) failed: %s", e->ins[i].name, ttc_cl_error_name(err));
    }
    for (int32_t i = 0; i < b->n_out; i++) {
        size_t n = (size_t)p->res[k->outputs[i]].numel * ttc_dtype_size(e->outs[i].dtype);
        TTC_TRY(new_buf(e->ctx, n, e->outs[i].name, &b->out[i]));
    }
    for (int32_t ki = 0; ki < b->n_k; ki++) {
        const ttc_kspec *ks = &e->cg.kernels[ki];
        b->kernels[ki] = TTC_CL(CreateKernel)(e->prog.program, ks->name, &err);
        if (!b->kernels[ki] || err != CL_SUCCESS) {
            b->kernels[ki] = NULL;
            return ttc_fail_cl(err, "clCreateKernel(%s) failed: %s", ks->name, ttc_cl_error_name(err));
        }
        if (!b->errf && ttc_kspec_has_errflag(ks))
            TTC_TRY(new_buf(e->ctx, sizeof(cl_int), "index error flag", &b->errf));
        TTC_TRY(ttc_exec_set_args(e, p, ki, b->kernels[ki], b->in, b->out, b->arena, b->errf));
    }
    return TTC_OK;
}

/* One run of every kernel, then clFinish. With ev (profiling queue), kernel ki's event goes
 * to ev[ki] (NULL for skipped kernels); the caller reads and releases them. */
static ttc_status bench_run_once(ttc_engine *e, const ttc_plan *p, bench_state *b, cl_event *ev) {
    for (int32_t ki = 0; ki < b->n_k; ki++) {
        if (p->skip[ki]) continue;
        const ttc_kspec *ks = &e->cg.kernels[ki];
        /* native ops: the library call's event stands for the kernel (the epilogue is small) */
        if (ks->native)
            TTC_TRY(ttc_native_launch(e, p, ki, b->q, b->in, b->out, b->arena, b->scratch, ev ? &ev[ki] : NULL));
        if (ks->native && !ks->native_epi) continue;
        TTC_TRY(ttc_exec_enqueue_ev(e, p, ki, b->q, b->kernels[ki], ev && !ks->native ? &ev[ki] : NULL));
    }
    cl_int err = TTC_CL(Finish)(b->q);
    if (err != CL_SUCCESS) return ttc_fail_cl(err, "clFinish(%s) failed: %s", e->name, ttc_cl_error_name(err));
    return TTC_OK;
}

/* Symbols, plan and input sizes for the given inputs (shared by benchmark and profile). */
static ttc_status bench_plan(ttc_engine *e, const size_t *in_bytes, const void *const *inputs,
                             const int64_t (*in_shapes)[TTC_MAX_RANK], ttc_plan **out) {
    int64_t sv[64] = {0};
    if (e->k->n_syms > 64) return ttc_fail(TTC_ERR_UNSUPPORTED, "more than 64 symbols");
    TTC_TRY(ttc_engine_symbols_from_shapes(e, in_shapes, sv));
    ttc_plan *p;
    TTC_TRY(ttc_engine_get_plan(e, sv, &p));
    for (int32_t i = 0; i < e->n_in; i++) {
        size_t need = (size_t)p->res[e->k->inputs[i]].numel * ttc_dtype_size(e->ins[i].dtype);
        ttc_status s = TTC_OK;
        if (in_bytes[i] != need)
            s = ttc_fail(TTC_ERR_INPUT, "input %s: %zu bytes given, %zu expected for its shape", e->ins[i].name,
                         in_bytes[i], need);
        else if (!inputs[i] && need)
            s = ttc_fail(TTC_ERR_INPUT, "input %s: no data", e->ins[i].name);
        if (s != TTC_OK) { ttc_plan_release(e, p); return s; }
    }
    *out = p;
    return TTC_OK;
}

ttc_status ttc_engine_profile(ttc_engine *e, const void *const *inputs, const size_t *in_bytes,
                              const int64_t (*in_shapes)[TTC_MAX_RANK], int32_t runs, int32_t warmup,
                              double *kernel_ms) {
    TTC_TRY(check_counts(runs, warmup, kernel_ms));
    ttc_plan *p;
    TTC_TRY(bench_plan(e, in_bytes, inputs, in_shapes, &p));
    int32_t nk = e->cg.n_kernels;
    for (int32_t ki = 0; ki < nk; ki++) kernel_ms[ki] = 0.0;
    bench_state b = {0};
    b.profiling = true;
    cl_event *ev = ttc_calloc((size_t)nk + 1, sizeof(cl_event));
    ttc_status s = ev ? bench_setup(e, p, inputs, in_bytes, &b) : TTC_ERR_NOMEM;
    for (int32_t i = 0; i < warmup && s == TTC_OK; i++) s = bench_run_once(e, p, &b, NULL);
    for (int32_t i = 0; i < runs && s == TTC_OK; i++) {
        s = bench_run_once(e, p, &b, ev);
        for (int32_t ki = 0; ki < nk; ki++) {
            if (!ev[ki]) continue;
            cl_ulong t0 = 0, t1 = 0;
            cl_int err = TTC_CL(GetEventProfilingInfo)(ev[ki], CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL);
            if (err == CL_SUCCESS) err = TTC_CL(GetEventProfilingInfo)(ev[ki], CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL);
            if (err != CL_SUCCESS && s == TTC_OK)
                s = ttc_fail_cl(err, "clGetEventProfilingInfo(%s) failed: %s", e->cg.kernels[ki].name,
                                ttc_cl_error_name(err));
            if (t1 > t0) kernel_ms[ki] += (double)(t1 - t0) * 1e-6 / runs;
            TTC_CL(ReleaseEvent)(ev[ki]);
            ev[ki] = NULL;
        }
    }
    for (int32_t ki = 0; ev && ki < nk; ki++)
        if (ev[ki]) TTC_CL(ReleaseEvent)(ev[ki]);
    free(ev);
    bench_free(&b);
    ttc_plan_release(e, p);
    return s;
}

ttc_status ttc_engine_benchmark(ttc_engine *e, const void *const *inputs, const size_t *in_bytes,
                                const int64_t (*in_shapes)[TTC_MAX_RANK], int32_t runs, int32_t warmup,
                                double *times_ms) {
    TTC_TRY(check_counts(runs, warmup, times_ms));
    ttc_plan *p;
    TTC_TRY(bench_plan(e, in_bytes, inputs, in_shapes, &p));
    ttc_status s = TTC_OK;
    bench_state b = {0};
    if (s == TTC_OK) s = bench_setup(e, p, inputs, in_bytes, &b);
    for (int32_t i = 0; i < warmup && s == TTC_OK; i++) s = bench_run_once(e, p, &b, NULL);
    for (int32_t i = 0; i < runs && s == TTC_OK; i++) {
        double t0 = now_ms();
        s = bench_run_once(e, p, &b, NULL);
        times_ms[i] = now_ms() - t0;
    }
    bench_free(&b);
    ttc_plan_release(e, p);
    return s;
}

ttc_status ttc_device_copy_benchmark(const char *device, size_t bytes, int32_t runs, int32_t warmup,
                                     double *times_ms) {
    TTC_TRY(check_counts(runs, warmup, times_ms));
    if (!bytes) return ttc_fail(TTC_ERR_INVALID_ARG, "copy benchmark: bytes must be > 0");
    ttc_cl_device *dev;
    cl_context ctx;
    TTC_TRY(ttc_cl_device_select(device, &dev));
    TTC_TRY(ttc_cl_device_context(dev, &ctx));
    cl_command_queue q = NULL;
    cl_mem src = NULL, dst = NULL;
    ttc_status s = ttc_cl_queue_new(dev, false, &q);
    if (s == TTC_OK) s = new_buf(ctx, bytes, "copy source", &src);
    if (s == TTC_OK) s = new_buf(ctx, bytes, "copy destination", &dst);
    for (int32_t i = 0; i < warmup + runs && s == TTC_OK; i++) {
        double t0 = now_ms();
        cl_int err = TTC_CL(EnqueueCopyBuffer)(q, src, dst, 0, 0, bytes, 0, NULL, NULL);
        if (err == CL_SUCCESS) err = TTC_CL(Finish)(q);
        if (err != CL_SUCCESS)
            s = ttc_fail_cl(err, "clEnqueueCopyBuffer(%zu bytes) failed: %s", bytes, ttc_cl_error_name(err));
        else if (i >= warmup)
            times_ms[i - warmup] = now_ms() - t0;
    }
    if (q) TTC_CL(Finish)(q);
    if (src) TTC_CL(ReleaseMemObject)(src);
    if (dst) TTC_CL(ReleaseMemObject)(dst);
    if (q) TTC_CL(ReleaseCommandQueue)(q);
    return s;
}
