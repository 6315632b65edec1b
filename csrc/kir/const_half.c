/*
 * fp16 engines store float32 constants in half.
 *
 * Converters keep weights in their declared dtype (float32), and the kernels of an fp16
 * engine round them to half as they read them. At batch 1 a GEMM is bound by reading its
 * weights, so float32 storage doubles its bytes. This build step, run once after fusion
 * (the readers of each constant are final then) and before tuning and codegen, rewrites
 * every float32 constant of an fp16 engine as float16 (and the views of it), so kernels
 * read half while still accumulating in float. Every kernel family loads its operands
 * through dtype-keyed loaders (vload_half for half), which intermediates of fp16 engines
 * already exercise.
 *
 * A constant keeps float32 when
 *  - a finite value lies outside half's range (it would become infinite: masks of -1e9 and
 *    large scales read as float are not changed into different values);
 *  - a convolution or transposed convolution reads it as a primary input: those
 *    converters pack their weights themselves, already in half where the kernel wants it;
 *  - it is one of a norm's weight and bias and the other one keeps float32 (the norm
 *    kernel reads both through one loader).
 */
#include "kir.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static bool fits_half(const ttc_tensor_data *d, int64_t numel) {
    const float *v = (const float *)d->data;
    for (int64_t i = 0; i < numel; i++)
        if (isfinite(v[i]) && fabsf(v[i]) > 65504.0f) return false;
    return true;
}

static int64_t const_numel(const ttc_et *t) {
    int64_t n = 1;
    for (int32_t d = 0; d < t->rank; d++) n *= t->dims[d].add;
    return n;
}

/* want[t]: constant t would be stored in half (before the norm pairing rule) */
static void mark_candidates(const ttc_kir *k, bool *want) {
    for (int32_t t = 0; t < k->n_ts; t++) {
        const ttc_et *et = &k->ts[t];
        want[t] = et->kind == TTC_ET_CONST && et->dtype == TTC_DTYPE_FLOAT32 && et->data &&
                  et->data->nbytes >= (size_t)const_numel(et) * sizeof(float) && fits_half(et->data, const_numel(et));
    }
    for (int32_t i = 0; i < k->n_ops; i++) {
        const ttc_kop *op = &k->ops[i];
        if (op->dead || (op->kind != TTC_KOP_CONV2D && op->kind != TTC_KOP_CONV_TRANSPOSE)) continue;
        for (int32_t j = 0; j < TTC_KOP_MAX_IN; j++) {
            int32_t r = op->in[j] >= 0 ? ttc_kir_root(k, op->in[j]) : -1;
            if (r >= 0) want[r] = false;
        }
    }
    /* a norm's w and b share a loader: both become half or neither does (repeated because
     * one constant may feed several norms) */
    for (bool changed = true; changed;) {
        changed = false;
        for (int32_t i = 0; i < k->n_ops; i++) {
            const ttc_kop *op = &k->ops[i];
            if (op->dead || op->kind != TTC_KOP_NORM || op->in[1] < 0 || op->in[2] < 0) continue;
            int32_t w = ttc_kir_root(k, op->in[1]), b = ttc_kir_root(k, op->in[2]);
            bool hw = k->ts[op->in[1]].dtype == TTC_DTYPE_FLOAT16 || want[w];
            bool hb = k->ts[op->in[2]].dtype == TTC_DTYPE_FLOAT16 || want[b];
            if (hw == hb) continue;
            if (want[w]) want[w] = false;
            if (want[b]) want[b] = false;
            changed = true;
        }
    }
}

static ttc_status to_half(ttc_et *et) {
    int64_t n = const_numel(et);
    uint16_t *buf = ttc_malloc((size_t)n * sizeof(uint16_t) + 1);
    if (!buf) return TTC_ERR_NOMEM;
    const float *v = (const float *)et->data->data;
    for (int64_t i = 0; i < n; i++) buf[i] = ttc_half_from_float(v[i]);
    ttc_tensor_data *d = ttc_tensor_data_wrap(buf, (size_t)n * sizeof(uint16_t), free, buf);
    if (!d) { free(buf); return ttc_fail(TTC_ERR_NOMEM, "constant %s: no memory for its half copy", et->name); }
    ttc_tensor_data_unref(et->data);
    et->data = d;
    et->dtype = TTC_DTYPE_FLOAT16;
    return TTC_OK;
}

ttc_status ttc_kir_consts_to_half(ttc_kir *k, int32_t *n_converted) {
    if (n_converted) *n_converted = 0;
    if (!k->fp16 || k->n_ts == 0) return TTC_OK;
    bool *want = ttc_calloc((size_t)k->n_ts, sizeof(bool));
    if (!want) return TTC_ERR_NOMEM;
    mark_candidates(k, want);
    ttc_status s = TTC_OK;
    for (int32_t t = 0; t < k->n_ts && s == TTC_OK; t++) {
        if (!want[t]) continue;
        s = to_half(&k->ts[t]);
        if (s == TTC_OK && n_converted) (*n_converted)++;
    }
    /* views carry their base's dtype; views are created after their base, so one pass in
     * order sees every base already updated */
    for (int32_t t = 0; t < k->n_ts && s == TTC_OK; t++) {
        ttc_et *et = &k->ts[t];
        if (et->kind != TTC_ET_VIEW || et->dtype != TTC_DTYPE_FLOAT32) continue;
        int32_t r = ttc_kir_root(k, t);
        if (r >= 0 && want[r]) et->dtype = TTC_DTYPE_FLOAT16;
    }
    free(want);
    return s;
}
