/*
 * Engines: a converted, fused, planned and compiled OpenCL segment, executed many times.
 *
 *   ttc_engine_options o = ttc_engine_options_default();
 *   ttc_engine *e;
 *   TTC_TRY(ttc_engine_build(graph, &o, &e));
 *   const void *in[1] = {x}; int64_t shape[1][TTC_MAX_RANK] = {{2, 3}}; void *out[1] = {y};
 *   TTC_TRY(ttc_engine_execute(e, in, in_sizes, in_shapes, out, out_sizes));
 *   ttc_engine_free(e);
 *
 * An engine may be executed from several threads at once: each call takes an execution
 * context (queue, kernels, intermediate arena) from a pool. Launch plans are made per
 * concrete set of symbol values and the last few are cached.
 */
#ifndef TTC_ENGINE_H
#define TTC_ENGINE_H

#include "../backend/backend.h"
#include "../codegen/codegen.h"
#include "../codegen/plan.h"
#include "../kir/kir.h"

typedef struct ttc_engine_options {
    const char *name;          /* "engine" */
    const char *device;        /* NULL: default device (see ttc_device_select) */
    bool fp16;                 /* precision "fp16" */
    int32_t optimization_level;/* 0..5; >= 3 tunes tile choices */
    const char *cache_dir;     /* NULL: default program cache, "": none */
    /* TF32 policy of fp32 work (the compile settings, after torch's switches): fp32 GEMMs /
     * convolutions may round their operands to TF32 on tensor cores. Requests: only NVIDIA
     * targets act on them (target.h tf32_matmul/tf32_conv). */
    bool tf32_matmul, tf32_conv;
    /* false: no path reads the index-error flag back (an out-of-range index gives 0 without an
     * error), for callers that validate their indices (the LLM step: compile_llm); the CUDA
     * launch path then never waits for the device, so its calls can be captured in a CUDA graph */
    bool check_indices;
} ttc_engine_options;

ttc_engine_options ttc_engine_options_default(void);


typedef struct ttc_engine ttc_engine;

ttc_status ttc_engine_build(const ttc_graph *g, const ttc_engine_options *opts, ttc_engine **out);
void ttc_engine_free(ttc_engine *e);
/* Engines made (built or deserialised) and not yet freed in this process (leak checks). */
int64_t ttc_engine_live_count(void);

int32_t ttc_engine_n_inputs(const ttc_engine *e);
int32_t ttc_engine_n_outputs(const ttc_engine *e);
/* What the executors below the engine (backend/cpu, backend/cuda) read of it (codegen/plan.h);
 * valid once the engine is built, for as long as it lives. */
const ttc_engine_view *ttc_engine_view_get(const ttc_engine *e);
const ttc_binding *ttc_engine_input(const ttc_engine *e, int32_t i);
const ttc_binding *ttc_engine_output(const ttc_engine *e, int32_t i);
const ttc_symbol *ttc_engine_symbols(const ttc_engine *e, int32_t *n);
const char *ttc_engine_name(const ttc_engine *e);
ttc_device *ttc_engine_device(const ttc_engine *e);
/* The target the engine was made for (device facts and the knobs in effect then). */
const ttc_target *ttc_engine_target(const ttc_engine *e);
/* The TF32 policy the engine was built with (its options; the target says what it acts on). */
void ttc_engine_tf32(const ttc_engine *e, bool *matmul, bool *conv);
/* Peak device memory of the plan for the symbols' opt values (bytes): constants + arena. */
size_t ttc_engine_peak_memory(ttc_engine *e);
/* Device bytes of the constants (weights) the kernels read. */
size_t ttc_engine_const_bytes(const ttc_engine *e);
const char *ttc_engine_source(const ttc_engine *e);
/* Kernel op count, fused op count, kernel names (for info()). */
int32_t ttc_engine_n_kernels(const ttc_engine *e);
const char *ttc_engine_kernel_desc(const ttc_engine *e, int32_t i); /* "k3 gemm: linear_1+relu" */
int32_t ttc_engine_n_fused(const ttc_engine *e);
/* GEMM kernels launched in their GEMV form ("<name>_v") through OpenCL so far. */
int64_t ttc_engine_gemv_launches(const ttc_engine *e);
/* GEMM tile choices: how many were tuned, and the choice of kernel i (-1: not a GEMM). */
int32_t ttc_engine_n_tuned(const ttc_engine *e);
int32_t ttc_engine_kernel_tile(const ttc_engine *e, int32_t i);
bool ttc_engine_program_from_cache(const ttc_engine *e);
/* A deserialised engine: true, with the device identity its blob was built for (platform,
 * device name, driver; owned by e). An engine built here: false. */
bool ttc_engine_built_for(const ttc_engine *e, const char **platform, const char **device, const char **driver);
/* Whether e runs on its device's caller-thread companion (small engines; engine_impl.h);
 * items: the size of its launches at its largest shapes (exec.c, launch_size; -1: not counted). */
bool ttc_engine_caller_thread(const ttc_engine *e, int64_t *items);
/* Where the engine's build went: seconds per step, and what the program build and the GEMM
 * tuning did (candidates timed vs choices read from the tuning cache). */
typedef struct ttc_build_profile {
    double convert_s, fuse_s, tune_s, codegen_s, program_s, consts_s;
    int32_t kernels, unique_kernels;  /* unique: distinct kernel bodies (names aside) */
    size_t source_bytes;
    int32_t programs;                 /* program builds of the engine itself (tuning's aside) */
    const char *program_origin;       /* "compiled", "cache" (on-disk binary), "blob" (stored binary) */
    int32_t gemms, tune_cached, tune_timed, tune_candidates;
    int32_t tune_capped;              /* GEMM shapes left to the heuristic by the per-engine cap */
} ttc_build_profile;
const ttc_build_profile *ttc_engine_build_profile(const ttc_engine *e);
/* How the engine computes: "float32", "float16 (half arithmetic)" (half loads, stores and
 * elementwise math) or "float16 (float arithmetic)" (half storage, float math: devices
 * without half support, or TORCHTRT_C_HALF_COMPUTE=0). */
const char *ttc_engine_compute(const ttc_engine *e);
/* Whether the engine uses the GPU kernel families (a GPU device, or TORCHTRT_C_KERNELS=gpu when
 * it was made): tests read which kernels to expect from here instead of assuming the device. */
bool ttc_engine_gpu_kernels(const ttc_engine *e);

/* Checks input shapes (count, rank, each dim against its symbol's [min, max] and
 * consistency) and computes the output shapes. shapes[i] has rank of input i. */
ttc_status ttc_engine_output_shapes(ttc_engine *e, const int64_t (*in_shapes)[TTC_MAX_RANK],
                                    int64_t (*out_shapes)[TTC_MAX_RANK]);
/* Runs the engine. Inputs/outputs are dense row-major host buffers of the bindings'
 * dtypes; sizes in bytes are checked against the shapes. */
ttc_status ttc_engine_execute(ttc_engine *e, const void *const *inputs, const size_t *in_bytes,
                              const int64_t (*in_shapes)[TTC_MAX_RANK], void *const *outputs,
                              const size_t *out_bytes);
/* Runs the engine on inputs and outputs that are already device buffers of the engine's
 * device (memory shared with CUDA: backend/xmem.h), so nothing is copied;
 * they are acquired/released around the launches (ttc_queue_acquire_external). A NULL buffer
 * is allowed for an empty binding. signal (may be NULL): the queue writes signal_value into it
 * after the kernels (ttc_queue_signal) and the call returns without waiting (*finished =
 * false); without it, or when the engine checks indices (its error flag has to be read), the
 * call waits for the kernels (*finished = true). */
ttc_status ttc_engine_execute_buffers(ttc_engine *e, ttc_buf *const *in_mem, const size_t *in_bytes,
                                      const int64_t (*in_shapes)[TTC_MAX_RANK], ttc_buf *const *out_mem,
                                      const size_t *out_bytes, ttc_buf *signal, uint32_t signal_value,
                                      bool *finished);

/* serialize.c */
ttc_status ttc_engine_serialize(ttc_engine *e, unsigned char **blob, size_t *len);
/* The same, the blob's memory (exactly *len bytes) from alloc(ctx, n) instead of malloc
 * (NULL from alloc: out of memory); the caller owns it as alloc's. */
typedef unsigned char *(*ttc_blob_alloc_fn)(void *ctx, size_t n);
ttc_status ttc_engine_serialize_with(ttc_engine *e, ttc_blob_alloc_fn alloc, void *ctx, unsigned char **blob,
                                     size_t *len);
ttc_status ttc_engine_deserialize(const unsigned char *blob, size_t len, const char *device,
                                  const char *cache_dir, ttc_engine **out);

#endif
