/*
 * Library steps of the CUDA launch path (exec_cuda.c): a GEMM kernel of an engine called with
 * CUDA tensors may run as a cuBLAS call (backend/cuda/cublas.h) writing the raw product into
 * the kernel's output, followed by the kernel's epilogue alone (codegen: "<name>_e", ttc_kspec
 * lib_epi) applied in place; a convolution kernel likewise as a cuDNN call
 * (backend/cuda/cudnn.h). Which one runs is decided per GEMM or convolution shape (target.cuda_libs,
 * TORCHTRT_C_CUDA_LIBS): "auto" times both once on the caller's stream, the first time the
 * shape is seen outside a graph recording, and remembers the faster for the process; "1"
 * takes cuBLAS wherever it can; "0" never.
 */
#ifndef TTC_BACKEND_CUDA_EXEC_CUDA_LIB_H
#define TTC_BACKEND_CUDA_EXEC_CUDA_LIB_H

#include "../../codegen/plan.h"
#include "../backend.h"
#include "cublas.h"
#include "cudnn.h"

/* The device address of tensor t's first element in one call (exec_cuda.c's mapping). */
typedef uint64_t (*ttc_cuda_addr_fn)(void *ctx, int32_t t);

/* GEMM kernel ki at plan p as a cuBLAS call; false (why, if given) where cuBLAS cannot run it
 * as the kernel does (layouts, dtypes, sizes). */
bool ttc_cuda_lib_gemm(const ttc_engine_view *e, const ttc_plan *p, int32_t ki, ttc_cuda_addr_fn addr, void *ctx,
                       ttc_cublas_gemm *g, char *why, size_t why_len);

/* GEMM kernel ki's epilogue as cuBLASLt's (g made by ttc_cuda_lib_gemm for the same call):
 * true, with g's bias, res and act set, where the whole epilogue is act(acc + bias + res)
 * (any order of the additions, float casts between them), act none or tanh GELU, bias a
 * leaf of the output's dtype along the output's innermost dim (= the product's N, dense), res
 * a dense leaf of the output's shape and dtype, each at most once, and the product not
 * batched; false, g unchanged, otherwise. */
bool ttc_cuda_lib_gemm_epi(const ttc_engine_view *e, const ttc_plan *p, int32_t ki, ttc_cuda_addr_fn addr, void *ctx,
                           ttc_cublas_gemm *g);

/* Convolution kernel ki at plan p as a cuDNN call (NCHW, the engine's own layout), x and y
 * its input's and output's addresses; false (why, if given) where cuDNN cannot run it as the
 * kernel does (split-K partials, dtypes, strided or misaligned tensors). The weights are the
 * caller's (OIHW in x's dtype, made at CUDA-engine creation). */
bool ttc_cuda_lib_conv(const ttc_engine_view *e, const ttc_plan *p, int32_t ki, ttc_cuda_addr_fn addr, void *ctx,
                       ttc_cudnn_conv *d, uint64_t *x, uint64_t *y, char *why, size_t why_len);

/* The process's choices between a GEMM kernel and cuBLAS, per shape: the call's sizes,
 * strides, dtypes, the kernel's tile and whether an epilogue follows. */
typedef struct ttc_cuda_lib_key {
    int64_t v[16];
} ttc_cuda_lib_key;
void ttc_cuda_lib_key_make(const ttc_cublas_gemm *g, int32_t tile, bool epi, ttc_cuda_lib_key *k);
/* The same for a convolution kernel against cuDNN (mma: the kernel's family, p.conv.mma). */
void ttc_cuda_lib_key_conv(const ttc_cudnn_conv *d, int32_t mma, bool epi, ttc_cuda_lib_key *k);
/* -1: not decided yet, 0: the kernel, 1: cuBLAS */
int ttc_cuda_lib_choice(const ttc_cuda_lib_key *k);
void ttc_cuda_lib_choose(const ttc_cuda_lib_key *k, bool lib);
/* Where no timing can be made (a stream being recorded, no event API): large products only. */
bool ttc_cuda_lib_guess(const ttc_cublas_gemm *g);
/* Convolutions: cuDNN for dense (ungrouped) ones, the kernel for grouped and depthwise ones
 * (bench/cudnn_ab.py, GPU times on an H100: our depthwise kernels run 1.5-3.6x faster than
 * cuDNN's, cuDNN's dense 3x3 ones 1.2-3x faster than ours). */
bool ttc_cuda_lib_conv_guess(const ttc_cudnn_conv *d);

#endif
