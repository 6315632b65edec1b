/* Channels-last tensors between the CUDA launch path's cuDNN convolutions (kir.h,
 * ttc_kir_nhwc_plan). cuDNN's NHWC kernels ran ResNet-50's convolutions 1.3-10x faster than
 * its NCHW ones at batch 32 on an H200 (TF32; bench/RESULTS.md, session 14), and torch's
 * Inductor runs them channels-last too. The engine's boundary stays NCHW.
 *
 * A tensor is kept NHWC when a dense convolution cuDNN may run (ttc_kir_nhwc_conv) makes it
 * and every reader takes it so:
 *   - the input of such a convolution (cuDNN reads it NHWC);
 *   - a dense leaf (the output's dims, contiguous) of such a convolution's epilogue whose own
 *     output is NHWC too: its "<kernel>_eh" walks both in stored order (an NCHW dense leaf of
 *     it is read at its own index).
 * Anything else (a view of it, another kernel, an engine output) keeps it NCHW. Dropping one
 * may drop others (an NHWC residual of an output now NCHW), so the plan drops tensors until
 * nothing disagrees (it only ever drops: it ends); then it keeps none where layout changes
 * would outnumber the convolutions that need none (below). Code generation and the CUDA path both call this,
 * from the kernel IR and the target alone, so they agree on every tensor. */
#include "kir.h"

#include <string.h>

bool ttc_kir_nhwc_conv(const ttc_kir *k, const ttc_kop *op) {
    if (op->dead || op->kind != TTC_KOP_CONV2D || op->p.conv.ksplit > 1 || op->p.conv.groups != 1) return false;
    const ttc_et *x = &k->ts[op->in[0]], *y = &k->ts[op->out];
    if (x->rank != 4 || y->rank != 4 || x->dtype != y->dtype ||
        (y->dtype != TTC_DTYPE_FLOAT32 && y->dtype != TTC_DTYPE_FLOAT16))
        return false;
    /* the weights cuDNN takes are made from the float32 constant on the host (exec_cuda.c) */
    int32_t w = ttc_kir_root(k, op->in[1]);
    if (w < 0 || k->ts[w].kind != TTC_ET_CONST || k->ts[w].rank != 4 || k->ts[w].dtype != TTC_DTYPE_FLOAT32 ||
        !k->ts[w].data || !k->ts[w].data->data)
        return false;
    for (int32_t i = 0; i < op->epi.n; i++)
        if (op->epi.nodes[i].op == TTC_EOP_INDEX) return false;   /* index nodes read logical dims */
    return true;
}

int32_t ttc_kir_nhwc_plan(const ttc_kir *k, bool *nhwc) {
    memset(nhwc, 0, sizeof(bool) * (size_t)k->n_ts);
    const ttc_target *tg = ttc_kir_target(k);
    if (!tg->cuda_nhwc || !ttc_target_lib_steps(tg)) return 0;
    for (int32_t i = 0; i < k->n_ops; i++) {
        const ttc_kop *op = &k->ops[i];
        if (ttc_kir_nhwc_conv(k, op) && k->ts[op->out].kind == TTC_ET_INTER && k->ts[op->out].binding < 0)
            nhwc[op->out] = true;
    }
    for (int32_t i = 0; i < k->n_outputs; i++) {
        int32_t r = ttc_kir_root(k, k->outputs[i]);
        if (r >= 0) nhwc[r] = false;
    }
    bool changed = true;
    while (changed) {
        changed = false;
        for (int32_t i = 0; i < k->n_ops; i++) {
            const ttc_kop *op = &k->ops[i];
            if (op->dead) continue;
            bool conv = ttc_kir_nhwc_conv(k, op);
            for (int32_t j = 0; j < TTC_KOP_MAX_IN; j++) {
                int32_t t = op->in[j], r = ttc_kir_root(k, t);
                if (r < 0 || !nhwc[r]) continue;
                if (!(conv && j == 0 && t == r)) { nhwc[r] = false; changed = true; }
            }
            for (int32_t l = 0; l < op->epi.n_leaves; l++) {
                int32_t t = op->epi.leaves[l], r = ttc_kir_root(k, t);
                if (r < 0) continue;
                /* an NHWC leaf is read at the output's stored index: the output must be NHWC too
                 * (an NCHW leaf of an NHWC output is read at its own index) */
                bool direct = t == r && conv && ttc_kir_dense_like(k, &k->ts[op->out], t) && nhwc[op->out];
                if (nhwc[r] && !direct) { nhwc[r] = false; changed = true; }
            }
        }
    }
    /* A convolution with one side NCHW pays a layout change (a pass over that tensor) for its
     * NHWC speed. Where those outnumber the convolutions with both sides NHWC, the engine stays
     * NCHW: MobileNetV2's and EfficientNet-B0's pointwise convolutions sit between depthwise
     * ones, each NHWC one changing a layout; at batch 32 fp32 on the H200 they ran 6% slower
     * so, while ResNet-50 (2 free for each 1 changing) ran 1.56x faster (bench/RESULTS.md). */
    int32_t both = 0, one = 0;
    for (int32_t i = 0; i < k->n_ops; i++) {
        const ttc_kop *op = &k->ops[i];
        if (!ttc_kir_nhwc_conv(k, op) || !(nhwc[op->in[0]] || nhwc[op->out])) continue;
        if (nhwc[op->in[0]] && nhwc[op->out]) both++;
        else one++;
    }
    if (both < one) memset(nhwc, 0, sizeof(bool) * (size_t)k->n_ts);
    int32_t n = 0;
    for (int32_t t = 0; t < k->n_ts; t++) n += nhwc[t];
    return n;
}
