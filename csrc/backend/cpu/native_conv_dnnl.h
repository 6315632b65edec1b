/*
 * Native convolutions through oneDNN (backend/cpu/native_conv_dnnl.c), loaded with dlopen: an
 * engine's float32 convolution runs as one oneDNN primitive (the library's blocked layouts,
 * reorders from and to NCHW around it, weights reordered once per engine and kept) instead of
 * im2col + sgemm, when libdnnl.so.2 loads and TORCHTRT_C_NATIVE_CONV is not "blas". Anything
 * oneDNN refuses (a shape, a missing library) returns false and the caller runs im2col + sgemm.
 *
 *   ttc_dnnl_conv_shape s = {...};
 *   if (!ttc_dnnl_conv(e, ki, &s, x, w, w_const, y)) im2col_path(...);
 *   ...
 *   ttc_dnnl_forget(e);   // when engine e is freed
 */
#ifndef TTC_ENGINE_NATIVE_CONV_DNNL_H
#define TTC_ENGINE_NATIVE_CONV_DNNL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ttc_dnnl_conv_shape {
    int64_t n, c, h, w, oc, oh, ow, g, kh, kw, sh, sw, ph, pw, dh, dw;   /* torch's meaning (dilation 1 = none) */
    /* 1: x / y are stored NHWC (backend/cpu/native_layout.h: kept channels-last between native
     * convolutions), 0: NCHW */
    int64_t x_nhwc, y_nhwc;
    /* 1: a 3x3 stride-1 convolution asks for oneDNN's Winograd kernel first (F(4x4, 3x3) on its
     * blocked layout, reorders from and to x's/y's around it; the target's conv_winograd) */
    int64_t wino;
} ttc_dnnl_conv_shape;

/* What a convolution's epilogue begins with, done inside the oneDNN primitive (post-ops,
 * on its blocked output while it is in cache, on oneDNN's threads): a per-channel bias, then
 * up to TTC_DNNL_MAX_ACT activations in order (backend/cpu/native_post.h finds them). */
typedef enum ttc_dnnl_act {
    TTC_DNNL_RELU = 0, TTC_DNNL_CLIP, TTC_DNNL_SWISH, TTC_DNNL_LOGISTIC, TTC_DNNL_HARDSWISH, TTC_DNNL_LINEAR,
    TTC_DNNL_TANH, TTC_DNNL_GELU_ERF, TTC_DNNL_GELU_TANH
} ttc_dnnl_act;
#define TTC_DNNL_MAX_ACT 4
typedef struct ttc_dnnl_post {
    bool bias;
    int32_t n_act;
    ttc_dnnl_act act[TTC_DNNL_MAX_ACT];
    float alpha[TTC_DNNL_MAX_ACT], beta[TTC_DNNL_MAX_ACT];  /* CLIP: [alpha, beta]; LINEAR: alpha x + beta */
} ttc_dnnl_post;

/* Whether convolutions go through oneDNN: the library loads (once per process) and
 * TORCHTRT_C_NATIVE_CONV is not "blas" (read on each call, for A/B runs and tests). */
bool ttc_dnnl_available(void);
/* "oneDNN <version>" when loaded, else why not (dnnl_api.c). */
const char *ttc_dnnl_library(void);
/* y[n,oc,oh,ow] = conv(x[n,c,h,w], w[oc,c/g,kh,kw]) (contiguous, NCHW or NHWC as s says) as kernel ki of the
 * engine `owner`. w_const: w never changes for this owner, so its reordered copy is kept.
 * Returns false (nothing written) where oneDNN is unavailable or refuses the shape. */
bool ttc_dnnl_conv(const void *owner, int32_t ki, const ttc_dnnl_conv_shape *s, const float *x, const float *w,
                   bool w_const, float *y);
/* The same with post (NULL: none; the same for every call of (owner, ki)) and its bias[oc]:
 * *post_done says whether the primitive applied it (oneDNN may refuse a post-op, then the
 * caller applies it: ttc_native_post_ref). */
bool ttc_dnnl_conv_post(const void *owner, int32_t ki, const ttc_dnnl_conv_shape *s, const float *x, const float *w,
                        bool w_const, float *y, const ttc_dnnl_post *post, const float *bias, bool *post_done);
/* Winograd convolution primitives this process made so far (tests, reports). */
int64_t ttc_dnnl_wino_primitives(void);
/* Drops every primitive and weight copy kept for owner (call when it is freed). */
void ttc_dnnl_forget(const void *owner);
/* The loaded library (dnnl_api.c loads it once for every oneDNN user, with the table of their
 * entry points): its CPU engine (a dnnl_engine_t, NULL where it did not load, whatever
 * TORCHTRT_C_NATIVE_CONV says), an entry point by name, and "oneDNN <version>" or why not. */
void *ttc_dnnl_cpu_engine(void);
void *ttc_dnnl_sym(const char *name);
/* For them too: the calling thread's scratchpad buffer of at least n bytes (NULL: out of
 * memory; dnnl_api.c). Every primitive runs with the buffer of the thread that runs it: see
 * dnnl_api.c's scratchpads. */
void *ttc_dnnl_scratch(size_t n);
/* The calling thread's other kept buffers, beside the primitives' (TTC_SCRATCH_DNNL, the one
 * ttc_dnnl_scratch gives): TTC_SCRATCH_WQ, the weight-only linear's dequantized weight block
 * (native_wq.c; kept, so that every call does not fault in and zero fresh pages: 15% of a
 * 4096-row BERT FFN linear). Each grows to the largest size asked; freed when the thread ends. */
enum { TTC_SCRATCH_DNNL = 0, TTC_SCRATCH_WQ = 1, TTC_SCRATCH_SLOTS = 2 };
void *ttc_dnnl_scratch_at(int32_t slot, size_t n);

#endif
