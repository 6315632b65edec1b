/*
 * Resident timing for bench/: an engine's kernel sequence with its inputs already in device
 * buffers, and a device-to-device copy as the memory-bandwidth yardstick.
 *
 *   double t[20];
 *   TTC_TRY(ttc_engine_benchmark(e, in, in_bytes, in_shapes, 20, 3, t));   // ms per run
 *   TTC_TRY(ttc_device_copy_benchmark(NULL, 64 << 20, 20, 3, t));
 *
 * Each run enqueues every kernel and waits once; the time is the host wall
 * clock around that, so it includes launch overhead but no host<->device transfers.
 * Execute is unaffected: the benchmark uses its own queue, kernels and buffers.
 */
#ifndef TTC_ENGINE_BENCH_H
#define TTC_ENGINE_BENCH_H

#include "engine.h"

/* Inputs are host buffers (as for ttc_engine_execute), uploaded once before warm-up. */
ttc_status ttc_engine_benchmark(ttc_engine *e, const void *const *inputs, const size_t *in_bytes,
                                const int64_t (*in_shapes)[TTC_MAX_RANK], int32_t runs, int32_t warmup,
                                double *times_ms);
/* Device time of each kernel (ms, mean over runs; from the queue's profiling events, so launch
 * gaps are excluded): kernel_ms has ttc_engine_n_kernels(e) entries, 0 for kernels the plan
 * skips. Pair them with ttc_engine_kernel_desc(e, i). */
ttc_status ttc_engine_profile(ttc_engine *e, const void *const *inputs, const size_t *in_bytes,
                              const int64_t (*in_shapes)[TTC_MAX_RANK], int32_t runs, int32_t warmup,
                              double *kernel_ms);
/* A copy of bytes between two device buffers; device as ttc_device_select. */
ttc_status ttc_device_copy_benchmark(const char *device, size_t bytes, int32_t runs, int32_t warmup,
                                     double *times_ms);

#endif
