/*
 * Launch plans, and the view of an engine that executors take (codegen/plan.c).
 *
 * A plan (ttc_plan) is a code generation result instantiated for concrete symbol values: every
 * tensor's shape, where it lives (input/output/constant buffer or an arena offset) with offset
 * and strides, the arena size, and each kernel's argument values and launch size. The engine
 * (csrc/engine/plan.c) caches plans per symbol values; the tuner makes its own.
 *
 * The executors below the engine (the native CPU steps in backend/cpu/, the CUDA launch path in
 * backend/cuda/exec_cuda.c) read a built engine through ttc_engine_view only, so that none of
 * them includes the engine's internals:
 *
 *   const ttc_engine_view *v = ttc_engine_view_get(e);        // engine/engine.h
 *   ttc_plan *p;
 *   TTC_TRY(v->plan_for(v->engine, in_shapes, &p));            // the engine's cached plan
 *   ... v->cg->kernels[ki], p->argv[ki], ttc_exec_buf(p, t, &bufs) ...
 *   v->plan_release(v->engine, p);
 */
#ifndef TTC_CODEGEN_PLAN_H
#define TTC_CODEGEN_PLAN_H

#include "codegen.h"

/* backend handles (backend/backend.h), by pointer only */
typedef struct ttc_buf ttc_buf;
typedef struct ttc_device ttc_device;
typedef struct ttc_program ttc_program;

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
    bool *gemv;               /* GEMM kernels launched as their "<name>_v" (ttc_kspec.gemm_v): at
                               * most TTC_GEMM_V_ROWS rows; geometry from ttc_plan_gemv_dims */
    int32_t refs;             /* users in flight + 1 while cached */
} ttc_plan;

/* The plan of kernel IR k, generated as cg, for symbol values sv (engines: through
 * ttc_engine_get_plan; the tuner: for one-kernel programs of its own). */
ttc_status ttc_plan_make(const ttc_kir *k, const ttc_codegen *cg, const int64_t *sv, ttc_plan **out);
void ttc_plan_free(ttc_plan *p);
/* The launch of GEMM kernel i as "<name>_v" in plan p (gemv_gpu.cl's grid: TTC_GEMM_V_WARPS
 * columns per work-group, TTC_GEMM_V_ROWS rows, the batch); returns the value of its M argument
 * (argument 4): batches that follow on over a shared B launch as one product of their rows. */
int32_t ttc_plan_gemv_dims(const ttc_plan *p, int32_t i, size_t gws[3], size_t lws[3]);
/* Whether argument spec as is passed to a "<name>_v" kernel (all but a tile's __local stages,
 * their count and tensor maps). */
static inline bool ttc_kspec_gemv_arg(const ttc_argspec *as) {
    return as->kind != TTC_ARG_LOCAL && as->kind != TTC_ARG_LOCAL_N &&
           !(as->kind == TTC_ARG_BUF && as->v == TTC_ARG_BUF_TMAP);
}
/* Whether kernel spec ks takes the execution's index-error flag. */
static inline bool ttc_kspec_has_errflag(const ttc_kspec *ks) {
    for (int32_t a = 0; a < ks->n_args; a++)
        if (ks->args[a].kind == TTC_ARG_ERRFLAG) return true;
    return false;
}

/* The buffers a launch binds: bindings, constants (per tensor id), the arena, the error flag. */
typedef struct ttc_exec_bufs {
    ttc_buf *const *in, *const *out, *const *consts;
    ttc_buf *arena, *errf;
} ttc_exec_bufs;
/* The buffer behind tensor t in plan p (the arena for empty tensors). */
ttc_buf *ttc_exec_buf(const ttc_plan *p, int32_t t, const ttc_exec_bufs *b);

/* An engine's named, typed input or output. */
typedef struct ttc_binding {
    char *name;
    ttc_dtype dtype;
    int32_t rank;
    ttc_dim dims[TTC_MAX_RANK];
    bool written;              /* inputs only: the engine writes it in place (a KV cache) */
} ttc_binding;

/* What an executor below the engine reads of a built engine (filled by the engine builder; it
 * lives as long as the engine). Its address also keys per-engine caches (native_conv_dnnl.h). */
typedef struct ttc_engine_view {
    const char *name;
    ttc_device *dev;
    const ttc_target *tg;     /* the engine's target (knobs as they were at build) */
    const ttc_kir *k;
    const ttc_codegen *cg;
    ttc_program *prog;
    ttc_buf *const *const_mem;/* per tensor id (NULL for non-constants) */
    int32_t n_in, n_out;
    const ttc_binding *ins, *outs;
    bool check_indices;       /* the index-error flag is read back after each call (engine option) */
    uint8_t *nhwc;            /* per tensor id: stored channels-last (backend/cpu/native_layout.h), or NULL */
    int32_t n_nhwc;
    /* the engine's plan for these input shapes (checked against the bindings), with a
     * reference dropped by plan_release */
    ttc_status (*plan_for)(void *engine, const int64_t (*in_shapes)[TTC_MAX_RANK], ttc_plan **out);
    void (*plan_release)(void *engine, ttc_plan *p);
    void *engine;
} ttc_engine_view;

#endif
