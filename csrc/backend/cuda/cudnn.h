/*
 * cuDNN's forward convolution as a library step of the CUDA launch path (issue 12: a tuned
 * library where it beats our kernels). cuDNN's legacy (v7-style) API, dlopen'd like the driver
 * (cuda_driver.h): never linked, its handles and enums declared by value here, so the library
 * builds and imports without CUDA.
 *
 *   char why[256];
 *   if (ttc_cudnn_available(why, sizeof why)) {
 *       ttc_cudnn_conv d = {.dtype = TTC_DTYPE_FLOAT16, .n = 8, .c = 64, ...};
 *       ttc_cudnn_plan *p;
 *       size_t ws;
 *       TTC_TRY(ttc_cudnn_conv_prepare(&d, ordinal, true, &p, &ws));   // algorithm chosen once
 *       TTC_TRY(ttc_cudnn_conv_run(p, x, w, y, ws_ptr, ws, stream));   // y = conv(x, w)
 *   }
 *
 * Which library: the one torch already loaded (libcudnn.so.9, found with RTLD_NOLOAD), else
 * libcudnn.so.9 or .so.8 from the loader's path. A plan is made once per (device, descriptor)
 * and kept for the process: the algorithm (timed by cudnnFindConvolutionForwardAlgorithmEx on
 * scratch buffers, then each candidate timed again after warm-up calls, when time_it; else
 * cuDNN's heuristic choice: e.g. while a stream is being
 * captured, where timing would synchronise), its math type and its workspace. One cuDNN handle
 * per device, used under a lock (cudnnSetStream then the call), so runs from several threads
 * take turns on the host only.
 *
 * Math: fp16/bf16 on tensor cores (fp32 accumulation); fp32 with tf32 = true lets cuDNN use
 * TF32 tensor cores (CUDNN_DEFAULT_MATH, torch.backends.cudnn.allow_tf32's meaning), with
 * tf32 = false true fp32 (CUDNN_FMA_MATH).
 */
#ifndef TTC_BACKEND_CUDNN_H
#define TTC_BACKEND_CUDNN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../common/status.h"

/* Whether cuDNN (8 or later) and the CUDA driver load; why (if given) says what is missing.
 * Never fails; the answer is kept for the process. */
bool ttc_cudnn_available(char *why, size_t why_len);
/* cudnnGetVersion() (e.g. 91002), 0 when unavailable. */
size_t ttc_cudnn_version(void);

/* A 2-D convolution y = conv(x, w), no bias. nhwc: x and y are NHWC and w is OHWI (K, kh, kw,
 * C/groups); otherwise x, y are NCHW and w is OIHW (K, C/groups, kh, kw). All dense. dtype:
 * TTC_DTYPE_FLOAT32, _FLOAT16 or _BFLOAT16 for x, w and y alike. */
typedef struct ttc_cudnn_conv {
    ttc_dtype dtype;
    bool tf32;                   /* fp32 only: TF32 tensor cores allowed */
    bool nhwc;
    int32_t n, c, h, w, k, groups, kh, kw;
    int32_t stride[2], pad[2], dil[2];   /* [0]: height, [1]: width */
    int32_t oh, ow;              /* must be what the others give */
} ttc_cudnn_conv;

typedef struct ttc_cudnn_plan ttc_cudnn_plan;

/* The most workspace a plan takes (its algorithm is chosen among those within it): a few
 * convolutions gain from more, none enough to hold more of the caller's memory per call. */
#define TTC_CUDNN_WS_MAX ((size_t)32 << 20)

/* The plan for d on CUDA device ordinal (made now, or the one made before): *plan lives for
 * the process; *workspace_bytes: the device memory a run needs beside x, w, y (0: none).
 * TTC_ERR_INVALID_ARG: d is inconsistent; TTC_ERR_UNSUPPORTED: cuDNN is missing, or d has a
 * dtype it is not asked to do, or cuDNN has no algorithm for it. Makes torch's (primary)
 * context current for the call. time_it times the algorithms (synchronises the device). */
ttc_status ttc_cudnn_conv_prepare(const ttc_cudnn_conv *d, int32_t ordinal, bool time_it, ttc_cudnn_plan **plan,
                                  size_t *workspace_bytes);
/* The descriptor a plan was made for. */
const ttc_cudnn_conv *ttc_cudnn_plan_conv(const ttc_cudnn_plan *p);
/* Whether the plan's algorithm was timed (false: cuDNN's heuristic choice), which
 * (cudnnConvolutionFwdAlgo_t) with which math type (cudnnMathType_t), and its timed
 * microseconds per run (0 when not timed). Any pointer may be NULL. */
void ttc_cudnn_plan_algo(const ttc_cudnn_plan *p, bool *timed, int32_t *algo, int32_t *math, double *us);
/* y = conv(x, w) on stream (a CUstream; 0: the legacy default stream); nothing waits. ws:
 * at least the workspace_bytes prepare gave (ws_bytes says how much it is). Device pointers
 * of the plan's device, 16-byte aligned. */
ttc_status ttc_cudnn_conv_run(const ttc_cudnn_plan *p, uint64_t x, uint64_t w, uint64_t y, uint64_t ws,
                              size_t ws_bytes, uint64_t stream);

/* y = x in the other layout: NCHW -> NHWC (to_nhwc) or NHWC -> NCHW, dense n x c x h x w
 * tensors of dtype (float32, float16, bfloat16) on CUDA device ordinal, on stream; nothing
 * waits (cudnnTransformTensor). The CUDA path's way in and out of channels-last convolutions
 * (backend/cuda/exec_cuda.c). */
ttc_status ttc_cudnn_transform(int32_t ordinal, ttc_dtype dtype, int32_t n, int32_t c, int32_t h, int32_t w, bool to_nhwc,
                               uint64_t x, uint64_t y, uint64_t stream);

#endif
