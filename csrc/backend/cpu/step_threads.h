/*
 * A small persistent thread pool for the C steps of native calls (norms, epilogues, softmax,
 * pooling): a native call runs on one PoCL worker thread while the machine has more cores, and
 * between the library's GEMMs/convolutions the other cores sat idle. [0, n) is cut into chunks
 * (four a thread) that the caller and the pool's threads take in turn, so a thread that wakes
 * late costs little; every item is computed by the same code whatever the cut, so results do
 * not depend on the thread count.
 * TORCHTRT_C_STEP_POOL=omp (read on each call, like TORCHTRT_C_NATIVE_CONV, for A/B runs) runs
 * jobs on oneDNN's OpenMP runtime instead (libgomp's team of the calling thread, the same chunks
 * taken the same way, so the same bits): oneDNN's threads spin for a while after each GEMM, and
 * this pool's threads share the cores with those spinners between a layer's GEMMs. Not the
 * default: its end-of-job barrier waits for every team thread, and on a loaded machine (2 cores,
 * load 8-10) GPT-2 b8 ran 1.17x slower with it, where this pool does not wait for a worker that
 * has not woken.
 * One job at a time: a call that finds the pool busy (another engine's queue) runs serially.
 * Workers are started on first use and stay; after a job each polls for the next one for
 * TORCHTRT_C_STEP_SPIN microseconds (default 100, yielding between polls), then sleeps on a
 * condition variable: a decode step's native calls come tens of microseconds apart, and a
 * sleeping worker woke too late to share them (the caller had done every chunk).
 *
 *   ttc_steps_for(threads, rows, grain, row_fn, &ctx);   // row_fn(&ctx, lo, hi) on [lo, hi)
 */
#ifndef TTC_ENGINE_STEP_THREADS_H
#define TTC_ENGINE_STEP_THREADS_H

#include <stdint.h>

enum { TTC_STEP_MAX_THREADS = 16 };
/* Elements a part should have at least (about 10-20 us of a simple step on one core): steps
 * smaller than two of these stay on the calling thread. */
enum { TTC_STEP_GRAIN_ELEMS = 32768 };

typedef void (*ttc_step_fn)(void *ctx, int64_t lo, int64_t hi);

/* fn over [0, n) on up to `threads` threads (the caller included), at least `grain` items
 * (>= 1) a part; threads <= 1 or n < 2 * grain: fn(ctx, 0, n) here. */
void ttc_steps_for(int32_t threads, int64_t n, int64_t grain, ttc_step_fn fn, void *ctx);

/* Jobs this process split among more than one thread so far (tests, profiles). */
int64_t ttc_steps_parallel_jobs(void);

/* Items a part needs so that it holds TTC_STEP_GRAIN_ELEMS elements of per_item each. */
static inline int64_t ttc_steps_grain(int64_t per_item) {
    return per_item >= TTC_STEP_GRAIN_ELEMS ? 1 : TTC_STEP_GRAIN_ELEMS / (per_item > 0 ? per_item : 1);
}

#endif
