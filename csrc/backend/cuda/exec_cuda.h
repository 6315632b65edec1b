/*
 * Engines launched through the CUDA driver on torch's stream (backend/cuda/cuda_driver.h):
 * the engine's OpenCL program is PTX on NVIDIA, loaded once into torch's context; a call maps
 * each kernel's launch-plan arguments to device pointers (inputs/outputs: the torch tensors'
 * memory, constants: uploaded once here, intermediates: an arena the caller allocates on the
 * stream, e.g. a torch tensor) and launches every kernel on the caller's stream. Nothing
 * waits, except engines that check indices (their error flag is read back after the stream).
 *
 *   ttc_cuda_engine *c;
 *   if (ttc_cuda_engine_new(e, ordinal, &c) == TTC_OK) {       // UNSUPPORTED: the reason
 *       size_t arena;
 *       TTC_TRY(ttc_cuda_engine_arena_bytes(c, shapes, &arena));
 *       TTC_TRY(ttc_cuda_engine_run(c, in_ptrs, shapes, out_ptrs, arena_ptr, arena, stream));
 *       ttc_cuda_engine_free(c);
 *   }
 *
 * Graphs (target.cuda_graphs, TORCHTRT_C_CUDA_GRAPHS): the second call with the same device
 * pointers and shapes records the call's launches as a CUDA graph (on a private stream) and
 * every later one replays it with one launch on the caller's stream. Launch-bound engines
 * (many small kernels: batch 1) then spend about one launch per call on the host instead of one
 * per kernel. Not for engines that check indices, nor on a stream being recorded by the caller.
 *
 * Engines this cannot run are refused at _new with TTC_ERR_UNSUPPORTED (the caller keeps the
 * OpenCL path): the knob TORCHTRT_C_CUDA_LAUNCH=0 (target.cuda_launch), no libcuda, an OpenCL
 * device that is not that CUDA device, host tasks, a binary that is not PTX or reads launch
 * state a CUDA launch does not give. _run answers TTC_ERR_UNSUPPORTED before launching
 * anything when a launch does not fit CUDA's limits (grid, threads per block).
 * A ttc_cuda_engine may be used from several threads at once; it must not outlive e.
 */
#ifndef TTC_BACKEND_CUDA_EXEC_CUDA_H
#define TTC_BACKEND_CUDA_EXEC_CUDA_H

#include "../../codegen/plan.h"

typedef struct ttc_cuda_engine ttc_cuda_engine;

ttc_status ttc_cuda_engine_new(const ttc_engine_view *e, int32_t cuda_ordinal, ttc_cuda_engine **out);
void ttc_cuda_engine_free(ttc_cuda_engine *c);
/* Bytes of device memory a call with these input shapes needs for its intermediates. */
ttc_status ttc_cuda_engine_arena_bytes(ttc_cuda_engine *c, const int64_t (*in_shapes)[TTC_MAX_RANK], size_t *out);
/* One call on stream (a CUstream; 0: the legacy default stream). in/out: device pointers of
 * dense tensors of the bindings' dtypes and the shapes given (outputs: the shapes
 * ttc_engine_output_shapes gives), aligned to 16 bytes; arena: arena_bytes of device memory. */
ttc_status ttc_cuda_engine_run(ttc_cuda_engine *c, const uint64_t *in, const int64_t (*in_shapes)[TTC_MAX_RANK],
                               const uint64_t *out, uint64_t arena, size_t arena_bytes, uint64_t stream);
/* Counters for tests: launches made (a graph's kernels count as theirs), calls that read the
 * index-error flag back, calls made as one graph launch, graphs recorded, graph slots (0: the
 * engine launches plainly: target.cuda_graphs 0 or no graph API); and the most dynamic shared
 * memory a kernel's launch takes (its __local argument). */
typedef struct ttc_cuda_engine_stats {
    int64_t calls, launches, flag_reads;
    size_t const_bytes;
    int64_t graph_calls, graphs_recorded;
    int32_t graph_slots;
    size_t dyn_shared_max;
    /* library steps (exec_cuda_lib.h): kernels cuBLAS or cuDNN may run, library calls made,
     * GEMM and convolution shapes this engine timed against the library */
    int32_t lib_kernels;
    int64_t lib_calls, lib_timed;
    int64_t lib_fused;   /* library calls that applied the kernel's epilogue themselves (cuBLASLt) */
    /* channels-last (kir/nhwc.c): cuDNN NHWC convolutions run, calls run channels-last, tensors
     * the engine keeps NHWC (0: none, or it cannot) */
    int64_t lib_nhwc, nhwc_calls;
    int32_t nhwc_tensors;
    /* GEMM kernels loaded with "<name>_w" (ttc_kspec.gemm_w), its launches, shapes timed */
    int32_t wide_kernels;
    int64_t wide_calls, wide_timed;
    /* GEMM kernels loaded with "<name>_v" (ttc_kspec.gemm_v), its launches */
    int32_t gemv_kernels;
    int64_t gemv_calls;
} ttc_cuda_engine_stats;
ttc_cuda_engine_stats ttc_cuda_engine_stats_get(const ttc_cuda_engine *c);

#endif
