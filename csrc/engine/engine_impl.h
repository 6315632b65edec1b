/*
 * Engine internals shared by build.c, plan.c, exec.c, fuse.c and serialize.c.
 *
 * A plan (ttc_plan) is the engine instantiated for concrete symbol values: every tensor's
 * shape, where it lives (input/output/constant buffer or an arena offset) with offset and
 * strides, the arena size, and each kernel's argument values and launch size.
 */
#ifndef TTC_ENGINE_IMPL_H
#define TTC_ENGINE_IMPL_H

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

typedef struct ttc_exec_ctx {
    cl_command_queue q;
    cl_kernel *kernels;
    cl_mem arena;
    size_t arena_cap;
    cl_mem *dev_in, *dev_out; /* device-side copies (non-CPU devices) */
    size_t *dev_in_cap, *dev_out_cap;
    cl_mem errf;              /* index-error flag (one int), only when a kernel takes one */
    bool in_place;            /* host memory buffers need no map (ttc_cl_device_host_in_place) */
    cl_int errv;              /* in place: errf's storage, read and written by the host */
    cl_mem scratch;           /* native convolutions' im2col buffer (engine/native_ops.h) */
    size_t scratch_cap;
} ttc_exec_ctx;

#define TTC_PLAN_CACHE 4

struct ttc_engine {
    char *name;
    ttc_cl_device *dev;
    cl_context ctx;
    ttc_graph *graph;         /* the segment IR (a clone sharing weights), for serialisation */
    char *stored_source;      /* deserialising: the source the stored binary was built from */
    ttc_kir *k;
    ttc_codegen cg;
    ttc_cl_program prog;
    char *options;
    char *cache_dir_opt;     /* program cache directory option (NULL: default) */
    bool fp16;
    bool gpu_kernels;         /* GPU kernel families (fixed when the engine is made) */
    int32_t opt_level;
    cl_mem *const_mem;        /* per tensor id (NULL for non-constants) */
    size_t const_bytes;
    ttc_binding *ins, *outs;
    int32_t n_in, n_out;
    int32_t n_fused;
    int32_t n_tuned;          /* GEMMs whose tile was tuned (or taken from the tuning cache) */
    int32_t *stored_tiles;    /* deserialising: tile per kernel op, applied instead of tuning */
    int32_t n_stored_tiles;
    char **kdesc;
    ttc_build_profile prof;  /* build.c / tune.c fill it while building */
    pthread_mutex_t lock;
    ttc_plan *plans[TTC_PLAN_CACHE];
    int32_t n_plans, plan_next;
    ttc_exec_ctx **pool;      /* idle execution contexts */
    int32_t n_pool, cap_pool;
};

/* plan.c */
ttc_status ttc_plan_make(ttc_engine *e, const int64_t *sv, ttc_plan **out);
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
/* Binds kernel ki's arguments for plan p (inputs, outputs, arena and error flag given), and
 * enqueues it on q: shared by execute (exec.c) and the resident benchmark (bench.c). */
/* The buffer behind tensor t in plan p (the arena for empty tensors). */
cl_mem ttc_exec_buf(const ttc_engine *e, const ttc_plan *p, int32_t t, const cl_mem *in_mem, const cl_mem *out_mem,
                    cl_mem arena);
ttc_status ttc_exec_set_args(const ttc_engine *e, const ttc_plan *p, int32_t ki, cl_kernel kern, const cl_mem *in_mem,
                             const cl_mem *out_mem, cl_mem arena, cl_mem errf);
ttc_status ttc_exec_enqueue(const ttc_engine *e, const ttc_plan *p, int32_t ki, cl_command_queue q, cl_kernel kern);
/* The same, returning the launch's event in *ev (when ev is not NULL; caller releases it). */
ttc_status ttc_exec_enqueue_ev(const ttc_engine *e, const ttc_plan *p, int32_t ki, cl_command_queue q, cl_kernel kern,
                               cl_event *ev);
/* build.c: everything after conversion (fusion, codegen, program, constants, bindings).
 * bin/bin_len: a stored program binary to try first (may be NULL). */
ttc_status ttc_engine_finish(ttc_engine *e, const unsigned char *bin, size_t bin_len);
void ttc_exec_ctx_free(ttc_exec_ctx *x);
void ttc_engine_pool_free(ttc_engine *e);
/* tune.c: picks GEMM tiles when optimization_level >= 3 (after fusion, before codegen). */
ttc_status ttc_engine_tune(ttc_engine *e);
ttc_status ttc_engine_new_for_load(const ttc_engine_options *o, ttc_engine **out);

#endif
