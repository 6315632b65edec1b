/*
 * oneDNN post-ops for a native convolution's epilogue (backend/cpu/native_post.c).
 *
 * Mobile CNNs end nearly every convolution with bias + activation (SiLU, ReLU6, hardswish,
 * sigmoid): in C after the call that is one more single-threaded pass over the output, and
 * with a transcendental step it was an OpenCL kernel (a launch and a hand-over on PoCL, 49
 * of them in EfficientNet-B0). oneDNN applies a per-channel bias and activations inside the
 * convolution, on its threads, while the output is in cache. The plan takes the longest
 * prefix of the epilogue that oneDNN can express (acc [+ bias[c]] [act ...]); what follows
 * (a residual add) runs in C from the node the primitive produced (ttc_native_epi_bind_from).
 *
 *   codegen: ks->native_post = ttc_native_post_plan(k, op, &pp) && ttc_native_epi_ok_from(..., pp.split);
 *   launch:  ttc_native_post_plan(k, op, &pp); bias leaf pp.bias_leaf; epilogue from pp.split;
 *   run:     ttc_dnnl_conv_post(..., &pp.dnnl, bias, &done); if (!done) ttc_native_post_ref(...);
 *
 * Native GEMMs (oneDNN's matmul, backend/cpu/native_gemm_dnnl.h) take the same plan with bias[N]
 * over their [.., M, N] rows: a Linear's bias + GELU (ConvNeXt's and BERT's fc1) ran as a second
 * pass in C over the 4x wider output after the matmul.
 *
 * TORCHTRT_C_NATIVE_POST=0 / TORCHTRT_C_NATIVE_GEMM_POST=0 (the target's native_post /
 * native_gemm_post, read at build) turn the plan off for convolutions / GEMMs.
 */
#ifndef TTC_ENGINE_NATIVE_POST_H
#define TTC_ENGINE_NATIVE_POST_H

#include "../../codegen/plan.h"
#include "../backend.h"
#include "native_conv_dnnl.h"

typedef struct ttc_native_post {
    ttc_dnnl_post dnnl;
    int32_t bias_leaf;        /* epilogue leaf holding bias[oc] (dnnl.bias), else -1 */
    int32_t split;            /* the epilogue node whose value the post-ops produce */
} ttc_native_post;

/* Whether op (a native float32 convolution or GEMM of an engine whose target allows it) starts
 * its epilogue with a bias and/or activations oneDNN expresses; fills pp. */
/* The one node of e reading node v, or -1 (none, or several). */
int32_t ttc_native_post_only_user(const ttc_expr *e, int32_t v);

bool ttc_native_post_plan(const ttc_kir *k, const ttc_kop *op, ttc_native_post *pp);
/* The post-ops in plain C over y [n, oc, hw] (NCHW), for the calls oneDNN did not run. */
void ttc_native_post_ref(const ttc_dnnl_post *post, const float *bias, float *y, int64_t n, int64_t oc, int64_t hw);
/* The same over y [rows, oc] (NHWC: rows = n * h * w; a GEMM's [M, N]). */
void ttc_native_post_ref_nhwc(const ttc_dnnl_post *post, const float *bias, float *y, int64_t rows, int64_t oc);

#endif
