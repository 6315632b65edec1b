/* Resident benchmarks (see bench.h): execution (exec.c's context, buffers and launches) with
 * the inputs uploaded once into device buffers, then only kernel launches and one wait per
 * timed run; profiling adds the launches' events. The context is the benchmark's own (not
 * the pool's), so concurrent execute() calls are unaffected. */
#include "bench.h"

#include "engine_impl.h"

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

/* An execution context with the inputs resident and the outputs' device buffers. */
typedef struct bench_state {
    ttc_exec_ctx *x;
    ttc_buf **in, **out;      /* the context's device copies */
} bench_state;

static void bench_free(bench_state *b) {
    ttc_exec_ctx_free(b->x);
    free(b->in);
    free(b->out);
}

static ttc_status bench_setup(ttc_engine *e, const ttc_plan *p, const void *const *inputs, const size_t *in_bytes,
                              bool profiling, bench_state *b) {
    b->in = ttc_calloc((size_t)e->n_in + 1, sizeof(ttc_buf *));
    b->out = ttc_calloc((size_t)e->n_out + 1, sizeof(ttc_buf *));
    if (!b->in || !b->out) return TTC_ERR_NOMEM;
    TTC_TRY(ttc_exec_ctx_new(e, profiling, &b->x));
    TTC_TRY(ttc_exec_prepare(e, p, b->x));
    return ttc_exec_resident(e, p, b->x, inputs, in_bytes, b->in, b->out);
}

/* One run of every kernel, then a wait; ev as for ttc_exec_launch. */
static ttc_status bench_run_once(ttc_engine *e, const ttc_plan *p, bench_state *b, ttc_event **ev) {
    ttc_status s = ttc_exec_launch(e, p, b->x, b->in, b->out, ev);
    ttc_status fin = ttc_queue_finish(b->x->q);
    return s != TTC_OK ? s : fin;
}

ttc_status ttc_engine_profile(ttc_engine *e, const void *const *inputs, const size_t *in_bytes,
                              const int64_t (*in_shapes)[TTC_MAX_RANK], int32_t runs, int32_t warmup,
                              double *kernel_ms) {
    TTC_TRY(check_counts(runs, warmup, kernel_ms));
    ttc_plan *p;
    TTC_TRY(ttc_exec_plan_for(e, inputs, in_bytes, in_shapes, &p));
    int32_t nk = e->cg.n_kernels;
    for (int32_t ki = 0; ki < nk; ki++) kernel_ms[ki] = 0.0;
    bench_state b = {0};
    ttc_event **ev = ttc_calloc((size_t)nk + 1, sizeof(ttc_event *));
    ttc_status s = ev ? bench_setup(e, p, inputs, in_bytes, true, &b) : TTC_ERR_NOMEM;
    for (int32_t i = 0; i < warmup && s == TTC_OK; i++) s = bench_run_once(e, p, &b, NULL);
    for (int32_t i = 0; i < runs && s == TTC_OK; i++) {
        s = bench_run_once(e, p, &b, ev);
        for (int32_t ki = 0; ki < nk; ki++) {
            if (!ev[ki]) continue;
            uint64_t t0 = 0, t1 = 0;
            ttc_status es = ttc_event_times(ev[ki], &t0, &t1);
            if (es != TTC_OK && s == TTC_OK) s = ttc_fail_context(es, "profiling %s", e->cg.kernels[ki].name);
            if (t1 > t0) kernel_ms[ki] += (double)(t1 - t0) * 1e-6 / runs;
            ttc_event_free(ev[ki]);
            ev[ki] = NULL;
        }
    }
    for (int32_t ki = 0; ev && ki < nk; ki++) ttc_event_free(ev[ki]);
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
    TTC_TRY(ttc_exec_plan_for(e, inputs, in_bytes, in_shapes, &p));
    ttc_status s = TTC_OK;
    bench_state b = {0};
    if (s == TTC_OK) s = bench_setup(e, p, inputs, in_bytes, false, &b);
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
    ttc_device *dev;
    TTC_TRY(ttc_device_select(device, &dev));
    ttc_queue *q = NULL;
    ttc_buf *src = NULL, *dst = NULL;
    ttc_status s = ttc_queue_new(dev, false, &q);
    if (s == TTC_OK) s = ttc_buf_alloc(dev, bytes, NULL, "copy source", &src);
    if (s == TTC_OK) s = ttc_buf_alloc(dev, bytes, NULL, "copy destination", &dst);
    for (int32_t i = 0; i < warmup + runs && s == TTC_OK; i++) {
        double t0 = now_ms();
        s = ttc_buf_copy(q, src, dst, bytes);
        if (s == TTC_OK) s = ttc_queue_finish(q);
        if (s == TTC_OK && i >= warmup) times_ms[i - warmup] = now_ms() - t0;
    }
    ttc_buf_free(src);
    ttc_buf_free(dst);
    ttc_queue_free(q);
    return s;
}
