/*
 * Engine internals shared by build.c, plan.c, exec.c, fuse.c and serialize.c.
 *
 * A plan (ttc_plan) is the engine instantiated for concrete symbol values: every tensor's
 * shape, where it lives (input/output/constant buffer or an arena offset) with offset and
 * strides, the arena size, and each kernel's argument values and launch size.
 */
#ifndef TTC_ENGINE_IMPL_H
#define TTC_ENGINE_IMPL_H

#include <pthread.h>

#include "engine.h"

enum { TTC_ROOT_INPUT = 0, TTC_ROOT_OUTPUT, TTC_ROOT_CONST, TTC_ROOT_ARENA, TTC_ROOT_NONE };

typedef struct ttc_res {
    int8_t root;              /* TTC_ROOT_* */
    int32_t idx;              /* binding index or constant tensor id */
    int64_t off;              /* element offset */
    int64_t shape[TTC_MAX_RANK], strides[TTC_MAX_RANK];
    int64_t numel;
} ttc_res;

typedef struct ttc_plan {
    int64_t *sv;              /* symbol values */
    int32_t n_syms;
    ttc_res *res;             /* per tensor */
    size_t arena_bytes;
    int64_t **argv;           /* per kernel, per arg: the value (tensor id for BUF args) */
    size_t (*gws)[3], (*lws)[3];
    bool *skip;               /* kernels with an empty launch */
    int32_t refs;             /* users in flight + 1 while cached */
} ttc_plan;

/* What one execution needs besides the plan: a queue, the kernels (their arguments are set
 * per call), the intermediate arena, device-side copies of inputs and outputs (devices without
 * host memory, and resident benchmarks), the index-error flag and the native scratch. */
typedef struct ttc_exec_ctx {
    ttc_queue *q;
    ttc_kernel **kernels;
    int32_t n_in, n_out;
    ttc_buf *arena;
    ttc_buf **dev_in, **dev_out;
    ttc_buf *errf;            /* index-error flag (one int), only when a kernel takes one */
    bool in_place;            /* host-backed buffers need no sync (target.host_in_place) */
    int32_t errv;             /* in place: errf's storage, read and written by the host */
    ttc_buf *scratch;         /* native convolutions' im2col buffer (engine/native_ops.h) */
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
    int32_t n_tuned;          /* GEMMs whose tile was tuned (or taken from the tuning cache) */
    int32_t *stored_tiles;    /* deserialising: tile per kernel op, applied instead of tuning */
    int32_t n_stored_tiles;
    char **kdesc;
    uint8_t *nhwc;            /* per tensor id: stored channels-last (engine/native_layout.h), or NULL */
    int32_t n_nhwc;
    ttc_build_profile prof;  /* build.c / tune.c fill it while building */
    pthread_mutex_t lock;
    ttc_plan *plans[TTC_PLAN_CACHE];
    int32_t n_plans, plan_next;
    ttc_exec_ctx **pool;      /* idle execution contexts */
    int32_t n_pool, cap_pool;
};

/* plan.c */
/* The plan of kernel IR k, generated as cg, for symbol values sv (engines: through
 * ttc_engine_get_plan; the tuner: for one-kernel programs of its own). */
ttc_status ttc_plan_make(const ttc_kir *k, const ttc_codegen *cg, const int64_t *sv, ttc_plan **out);
void ttc_plan_free(ttc_plan *p);
/* Symbol values from input shapes (checked against bindings and symbol ranges). */
ttc_status ttc_engine_symbols_from_shapes(ttc_engine *e, const int64_t (*in_shapes)[TTC_MAX_RANK], int64_t *sv);
/* Returns a plan (cached) with a reference the caller drops with ttc_plan_release. */
ttc_status ttc_engine_get_plan(ttc_engine *e, const int64_t *sv, ttc_plan **out);
void ttc_plan_release(ttc_engine *e, ttc_plan *p);
static inline bool ttc_kspec_has_errflag(const ttc_kspec *ks) {
    for (int32_t a = 0; a < ks->n_args; a++)
        if (ks->args[a].kind == TTC_ARG_ERRFLAG) return true;
    return false;
}
/* exec.c, shared with the benchmarks (bench.c) and the tuner (tune.c) */
/* Program build options of every engine program. */
#define TTC_PROGRAM_OPTIONS "-cl-std=CL1.2"
/* The buffers a launch binds: bindings, constants (per tensor id), the arena, the error flag. */
typedef struct ttc_exec_bufs {
    ttc_buf *const *in, *const *out, *const *consts;
    ttc_buf *arena, *errf;
} ttc_exec_bufs;
/* The buffer behind tensor t in plan p (the arena for empty tensors). */
ttc_buf *ttc_exec_buf(const ttc_plan *p, int32_t t, const ttc_exec_bufs *b);
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
/* exec.c: whether e runs on its device's caller-thread companion (target.caller_thread): sets
 * e->cdev for small engines without native steps (after codegen, before the program build,
 * which is then for e->cdev; build.c falls back to e->dev where that build fails). */
void ttc_exec_choose_thread(ttc_engine *e);
/* tune.c: picks GEMM tiles when optimization_level >= 3 (after fusion, before codegen). */
ttc_status ttc_engine_tune(ttc_engine *e);
ttc_status ttc_engine_new_for_load(const ttc_engine_options *o, ttc_engine **out);

#endif
