/*
 * Engine internals shared by build.c, plan.c, exec.c, tune.c, bench.c and serialize.c.
 *
 * Plans (ttc_plan: the engine instantiated for concrete symbol values) are made by
 * codegen/plan.h; the engine caches them. What the executors below the engine (backend/cpu,
 * backend/cuda) read of it is e->view (ttc_engine_view), never this struct.
 */
#ifndef TTC_ENGINE_IMPL_H
#define TTC_ENGINE_IMPL_H

#include <pthread.h>

#include "engine.h"

/* What one execution needs besides the plan: a queue, the kernels (their arguments are set
 * per call), the intermediate arena, device-side copies of inputs and outputs (devices without
 * host memory, and resident benchmarks), the index-error flag and the native scratch. */
typedef struct ttc_exec_ctx {
    ttc_queue *q;
    ttc_kernel **kernels;
    ttc_kernel **vkernels;    /* per kernel: its "<name>_v" (ttc_kspec.gemm_v), else NULL */
    int32_t n_kernels, n_in, n_out;
    ttc_buf *arena;
    ttc_buf **dev_in, **dev_out;
    ttc_buf *errf;            /* index-error flag (one int), only when a kernel takes one */
    bool in_place;            /* host-backed buffers need no sync (target.host_in_place) */
    int32_t errv;             /* in place: errf's storage, read and written by the host */
    ttc_buf *scratch;         /* native convolutions' im2col buffer (backend/cpu/native_ops.h) */
} ttc_exec_ctx;

#define TTC_PLAN_CACHE 4

struct ttc_engine {
    char *name;
    ttc_device *dev;
    ttc_target tg;            /* the device's target when the engine was made (knobs included) */
    ttc_graph *graph;         /* the segment IR (a clone sharing weights), for serialisation */
    char *stored_source;      /* deserialising: the source the stored binary was built from */
    /* deserialising: the device identity stored in the blob (NULL for an engine built here);
     * differs from tg's when the blob came from another device and was rebuilt for this one */
    char *blob_platform, *blob_device, *blob_driver;
    ttc_kir *k;
    ttc_codegen cg;
    ttc_program *prog;
    /* small engines: the device's caller-thread companion (exec.c, ttc_exec_choose_thread):
     * the program is built for it and every execution context queues there; NULL otherwise */
    ttc_device *cdev;
    int64_t launch_items;     /* size of all launches at the largest shapes (exec.c, launch_size; -1: not counted) */
    char *options;
    char *cache_dir_opt;     /* program cache directory option (NULL: default) */
    bool fp16;
    bool tf32_matmul, tf32_conv; /* the TF32 policy requested (options; tg: what NVIDIA acts on) */
    bool check_indices;       /* options: the index-error flag is read back after each call */
    int32_t opt_level;
    ttc_buf **const_mem;      /* per tensor id (NULL for non-constants) */
    size_t const_bytes;
    ttc_binding *ins, *outs;
    int32_t n_in, n_out;
    int32_t n_fused;
    int64_t gemv_launches;    /* "<name>_v" launches through OpenCL (exec.c; atomic) */
    int32_t n_tuned;          /* GEMMs whose tile was tuned (or taken from the tuning cache) */
    int32_t *stored_tiles;    /* deserialising: tile per kernel op, applied instead of tuning */
    int32_t n_stored_tiles;
    char **kdesc;
    /* what the executors below the engine read (codegen/plan.h): filled by ttc_engine_view_sync;
     * view.nhwc: per tensor id, stored channels-last (backend/cpu/native_layout.h), or NULL */
    ttc_engine_view view;
    ttc_build_profile prof;  /* build.c / tune.c fill it while building */
    pthread_mutex_t lock;
    ttc_plan *plans[TTC_PLAN_CACHE];
    int32_t n_plans, plan_next;
    ttc_exec_ctx **pool;      /* idle execution contexts */
    int32_t n_pool, cap_pool;
};

/* plan.c (the plans themselves: codegen/plan.h) */
/* Symbol values from input shapes (checked against bindings and symbol ranges). */
ttc_status ttc_engine_symbols_from_shapes(ttc_engine *e, const int64_t (*in_shapes)[TTC_MAX_RANK], int64_t *sv);
/* Returns a plan (cached) with a reference the caller drops with ttc_plan_release. */
ttc_status ttc_engine_get_plan(ttc_engine *e, const int64_t *sv, ttc_plan **out);
void ttc_plan_release(ttc_engine *e, ttc_plan *p);
/* Symbols from the input shapes, then the plan (ttc_engine_get_plan): the view's plan_for. */
ttc_status ttc_engine_plan_for_shapes(ttc_engine *e, const int64_t (*in_shapes)[TTC_MAX_RANK], ttc_plan **out);
/* exec.c, shared with the benchmarks (bench.c) and the tuner (tune.c) */
/* Program build options of every engine program. */
#define TTC_PROGRAM_OPTIONS "-cl-std=CL1.2"
/* Sets the arguments of kernel ki (spec ks) of plan p on kern. */
ttc_status ttc_exec_bind(const ttc_kspec *ks, const ttc_plan *p, int32_t ki, ttc_kernel *kern, const ttc_exec_bufs *b);
/* Enqueues kernel ki's launch on q (ev: its event, or NULL). */
ttc_status ttc_exec_enqueue(ttc_queue *q, const ttc_kspec *ks, const ttc_plan *p, int32_t ki, ttc_kernel *kern,
                            ttc_event **ev);
/* The plan for these inputs (symbols from their shapes), their byte sizes checked; the caller
 * drops it with ttc_plan_release. */
ttc_status ttc_exec_plan_for(ttc_engine *e, const void *const *inputs, const size_t *in_bytes,
                             const int64_t (*in_shapes)[TTC_MAX_RANK], ttc_plan **out);
/* A context of e's own (profiling: its launches' events carry times); ttc_exec_ctx_free. */
ttc_status ttc_exec_ctx_new(ttc_engine *e, bool profiling, ttc_exec_ctx **out);
void ttc_exec_ctx_free(ttc_exec_ctx *x);
/* The arena and native scratch of x sized for plan p. */
ttc_status ttc_exec_prepare(ttc_engine *e, const ttc_plan *p, ttc_exec_ctx *x);
/* Inputs uploaded into x's device copies (waits), outputs given device copies: in_mem and
 * out_mem (n_in / n_out entries) receive the buffers. For resident benchmarks. */
ttc_status ttc_exec_resident(ttc_engine *e, const ttc_plan *p, ttc_exec_ctx *x, const void *const *inputs,
                             const size_t *in_bytes, ttc_buf **in_mem, ttc_buf **out_mem);
/* Sets every kernel's arguments and enqueues every launch of plan p on x's queue (no wait).
 * ev: NULL, or one slot per kernel receiving its launch's event (native ops: the library
 * call's), NULL for kernels the plan skips; the caller frees them. */
ttc_status ttc_exec_launch(const ttc_engine *e, const ttc_plan *p, ttc_exec_ctx *x, ttc_buf *const *in_mem,
                           ttc_buf *const *out_mem, ttc_event **ev);
/* build.c: everything after conversion (fusion, codegen, program, constants, bindings).
 * bin/bin_len: a stored program binary to try first (may be NULL). */
ttc_status ttc_engine_finish(ttc_engine *e, const unsigned char *bin, size_t bin_len);
void ttc_engine_pool_free(ttc_engine *e);
/* build.c: (re)fills e->view from the engine's fields (after codegen, and once built). */
void ttc_engine_view_sync(ttc_engine *e);
/* exec.c: whether e runs on its device's caller-thread companion (target.caller_thread): sets
 * e->cdev for small engines without native steps (after codegen, before the program build,
 * which is then for e->cdev; build.c falls back to e->dev where that build fails). */
void ttc_exec_choose_thread(ttc_engine *e);
/* tune.c: picks GEMM tiles when optimization_level >= 3 (after fusion, before codegen). */
ttc_status ttc_engine_tune(ttc_engine *e);
ttc_status ttc_engine_new_for_load(const ttc_engine_options *o, ttc_engine **out);

#endif
