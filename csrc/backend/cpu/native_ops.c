/* GEMM and convolution as native kernels calling the BLAS (backend/cpu/native_ops.h). */
#include "native_ops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../blas.h"
#include "native_attn.h"
#include "native_conv_dnnl.h"
#include "native_epi.h"
#include "native_gemm_dnnl.h"
#include "native_gemv.h"
#include "native_kv.h"
#include "native_layout.h"
#include "native_norm.h"
#include "native_pool.h"
#include "native_post.h"
#include "native_qconv.h"
#include "native_qmm.h"
#include "native_reduce.h"
#include "native_wq.h"

enum { NATIVE_GEMM = 1, NATIVE_CONV = 2, NATIVE_POOL = 3, NATIVE_EW = 4, NATIVE_NORM = 5, NATIVE_ATTN = 6, NATIVE_CAT = 7, NATIVE_WQ = 8, NATIVE_KV = 9,
       NATIVE_QCONV = 10, NATIVE_SLOT = 11, NATIVE_QMM = 12, NATIVE_RED = 13 };
_Static_assert(NATIVE_CONV == 2 && NATIVE_POOL == 3 && NATIVE_EW == 4 && NATIVE_QCONV == 10, "native_layout.c reads these kinds by number");

/* Argument slots of the native part of a kernel spec (p->argv values, int64). */
enum { GA_A, GA_AOFF, GA_B, GA_BOFF, GA_C, GA_COFF, GA_M, GA_N, GA_K, GA_BATCH, GA_SA, GA_SB, GA_COUNT };
enum { CA_X, CA_XOFF, CA_W, CA_WOFF, CA_Y, CA_YOFF, CA_N, CA_H, CA_W_, CA_OH, CA_OW, CA_C, CA_OC, CA_G, CA_KH,
       CA_KW, CA_SH, CA_SW, CA_PH, CA_PW, CA_DH, CA_DW, CA_COUNT };
enum { PA_X, PA_XOFF, PA_Y, PA_YOFF, PA_PLANES, PA_H, PA_W, PA_OH, PA_OW, PA_AVG, PA_KH, PA_KW, PA_SH, PA_SW, PA_PH,
       PA_PW, PA_DH, PA_DW, PA_CP, PA_DIV, PA_COUNT };
enum { NA_X, NA_XOFF, NA_W, NA_WOFF, NA_B, NA_BOFF, NA_Y, NA_YOFF, NA_ROWS, NA_N, NA_HAS_W, NA_HAS_B, NA_COUNT };
/* attention: q, k, v, out and the mask (literal 0s without one) as (buffer, offset) pairs, the
 * leading dims, queries, keys, then each operand's strides over (d0, d1, row, column) */
enum { AT_Q, AT_QOFF, AT_K, AT_KOFF, AT_V, AT_VOFF, AT_O, AT_OOFF, AT_M, AT_MOFF, AT_D0, AT_D1, AT_L, AT_S,
       AT_QS, AT_KS = AT_QS + 4, AT_VS = AT_KS + 4, AT_MS = AT_VS + 4, AT_COUNT = AT_MS + 4 };
/* concatenation of up to 4 inputs, padded to rank 4 (leading dims of 1): out, each input's
 * (buffer, offset), out's dims, then per input its length along the dim and its strides */
enum { CT_MAX_IN = 4, CT_O = 0, CT_OOFF, CT_X, CT_ODIMS = CT_X + 2 * CT_MAX_IN, CT_IN = CT_ODIMS + 4,
       CT_COUNT = CT_IN + 5 * CT_MAX_IN };
/* weight-only quantized linear (native_wq.h): x, q, y, scales, zero points (the scales again
 * without), then M, N, K, group, bits, whether there are zero points */
enum { WA_X, WA_XOFF, WA_Q, WA_QOFF, WA_Y, WA_YOFF, WA_S, WA_SOFF, WA_Z, WA_ZOFF, WA_M, WA_N, WA_K, WA_GROUP, WA_BITS,
       WA_HASZ, WA_COUNT };
/* KV-cache attention (native_kv.h): q, the caches, slots, key mask and out as (buffer, offset)
 * pairs, B, S, then the strides of q, the caches (four each), slots and the key mask */
enum { KV_Q, KV_QOFF, KV_K, KV_KOFF, KV_V, KV_VOFF, KV_SL, KV_SLOFF, KV_M, KV_MOFF, KV_O, KV_OOFF, KV_B, KV_S,
       KV_QS, KV_KS = KV_QS + 4, KV_VS = KV_KS + 4, KV_SLS = KV_VS + 4, KV_MS, KV_COUNT = KV_MS + 2 };
/* int8 convolution / linear (native_qconv.h): x, w, y, the per-channel scales, the bias and the
 * residual (the scales again where there is none) as (buffer, offset) pairs, then the shape (a
 * linear: N = M rows, C = K, OC = N, the rest 1) */
enum { QA_X, QA_XOFF, QA_W, QA_WOFF, QA_Y, QA_YOFF, QA_S, QA_SOFF, QA_B, QA_BOFF, QA_R, QA_ROFF, QA_N, QA_H, QA_W_,
       QA_OH, QA_OW, QA_C, QA_OC, QA_G, QA_KH, QA_KW, QA_SH, QA_SW, QA_PH, QA_PW, QA_DH, QA_DW, QA_COUNT };
/* slot_write (native_kv.h): x, slots, the cache as (buffer, offset) pairs, x's dims and strides
 * right-aligned to rank 4, the cache length, the slots' stride, then the error flag */
enum { SW_X, SW_XOFF, SW_SL, SW_SLOFF, SW_O, SW_OOFF, SW_DIMS, SW_XS = SW_DIMS + 4, SW_L = SW_XS + 4, SW_SLS, SW_ERRF,
       SW_COUNT };
/* aten._int_mm (native_qmm.h): A, B, C as (buffer, offset) pairs, M, N, K, A's and B's strides */
enum { QM_A, QM_AOFF, QM_B, QM_BOFF, QM_C, QM_COFF, QM_M, QM_N, QM_K, QM_SA0, QM_SA1, QM_SB0, QM_SB1, QM_COUNT };
/* row max / min (native_reduce.h): x, y as (buffer, offset) pairs, rows, columns */
enum { RA_X, RA_XOFF, RA_Y, RA_YOFF, RA_ROWS, RA_COLS, RA_COUNT };
enum { NATIVE_MAX_ARGS = 40 };
_Static_assert((int)PA_COUNT <= NATIVE_MAX_ARGS && (int)CA_COUNT <= NATIVE_MAX_ARGS && (int)AT_COUNT <= NATIVE_MAX_ARGS &&
               (int)NA_COUNT <= NATIVE_MAX_ARGS && (int)CT_COUNT <= NATIVE_MAX_ARGS && (int)WA_COUNT <= NATIVE_MAX_ARGS &&
               (int)KV_COUNT <= NATIVE_MAX_ARGS && (int)QA_COUNT <= NATIVE_MAX_ARGS &&
               (int)SW_COUNT <= NATIVE_MAX_ARGS && (int)QM_COUNT <= NATIVE_MAX_ARGS, "native_call.v holds every layout");
_Static_assert(TTC_NATIVE_MAX_MEMS <= TTC_HOST_TASK_BUFS, "a native call's buffers fit a host task");

/* The host task's argument block; its buffers come as ptrs[0..2] (A/x, B/w, C/y; pooling: x, y),
 * then the scratch when the convolution needs one, then the epilogue's leaves. */
typedef struct native_call {
    ttc_native_epi epi;       /* epilogue applied here (epi.on), else by an OpenCL kernel or none */
    bool post;                /* the epilogue starts with pp's post-ops (bias: leaf pp.bias_leaf) */
    float eps;                /* layer norm */
    bool rms;                 /* the layer norm is an RMS norm */
    int32_t threads;          /* the target's step_threads (norms, pooling, softmax) */
    ttc_native_post pp;
    int32_t kind;
    bool trans_b;
    bool w_const;             /* the weights (convolution) or B (GEMM) are an engine constant
                               * (oneDNN keeps its reordered copy) */
    bool gemm_dnnl;           /* the GEMM goes to oneDNN's matmul first (target.native_gemm) */
    int32_t gemv_rows;        /* GEMMs of at most this many rows run as the C GEMV (native_gemv.h) */
    int32_t ki;
    const void *owner;        /* the engine, for the oneDNN cache */
    ttc_native_attn_shape attn;
    ttc_native_kv_shape kv;
    ttc_native_slot_shape slot;
    bool mask_bool;           /* attention: the mask (ptrs[4]) is bool bytes, else float32 */
    int8_t scratch_slot;      /* ptrs index of the scratch buffer, -1: none */
    int32_t cat_n, cat_dim;   /* concatenation: inputs, dim (of the rank-4 padding) */
    uint32_t cat_neg;         /* ... and the inputs read negated (bit i: input i) */
    bool x_nhwc, y_nhwc;      /* convolution / pool: input / output stored NHWC (native_layout.h) */
    int8_t pool_q8;           /* pool: 0 float32, 1 uint8, 2 int8 (max only) */
    bool wino;                /* convolution: Winograd where oneDNN has it (target.conv_winograd) */
    int64_t chans;            /* pool with x_nhwc: channels */
    ttc_qconv_plan qplan;     /* int8 convolution / linear: the epilogue's post-ops */
    ttc_qconv_shape qs;       /* ... and the call's shape, dtypes and layouts */
    ttc_qmm_shape qm;         /* aten._int_mm: the product's shape, strides and output dtype */
    bool red_max;             /* row reduction: max, else min */
    int64_t v[NATIVE_MAX_ARGS];
} native_call;
_Static_assert(sizeof(native_call) <= TTC_HOST_TASK_ARGS, "a native call fits a host task's argument block");

/* TORCHTRT_C_NATIVE_POOL=0 at build: the target's native_pool (target/target.c) */
static bool native_pool_off(const ttc_kir *k) { return !ttc_kir_target(k)->native_pool; }

static bool static_one(const ttc_dim *d) { return d->sym < 0 && d->add == 1; }

/* An elementwise op runs natively when the ops producing its operands do (through views):
 * squeeze-excite's channel scale in EfficientNet/MobileNetV3 and ConvNeXt's layer scale +
 * residual sat as OpenCL kernels between native calls, each a launch and two hand-overs.
 * Image-shaped (rank 4) only: single-threaded C is no match for PoCL's threads on the large
 * elementwise chains of other models, and there is no hand-over to save next to OpenCL ops. */
static bool native_ew_ok(const ttc_kir *k, const ttc_kop *op, int *budget) {
    /* the walk up through elementwise producers (ConvNeXt's residual chain is one per block)
     * visits at most 64 ops */
    if (!k->native || !ttc_kir_target(k)->native_ew || --*budget < 0 || k->ts[op->out].rank != 4 ||
        !ttc_native_epi_expr_ok(k, op))
        return false;
    for (int32_t l = 0; l < op->epi.n_leaves; l++) {
        int32_t t = op->epi.leaves[l];
        while (k->ts[t].kind == TTC_ET_VIEW) t = k->ts[t].base;
        const ttc_et *et = &k->ts[t];
        if (et->kind != TTC_ET_INTER) continue;
        if (et->producer < 0) return false;
        const ttc_kop *q = &k->ops[et->producer];
        if (q->kind == TTC_KOP_ELEMENTWISE ? !native_ew_ok(k, q, budget) : !ttc_native_op_ok(k, q)) return false;
    }
    return true;
}

/* Whether tensor t (through views) is made by a native transformer op: a GEMM, attention or
 * layer norm running natively, or a native elementwise op reading one (depth: how far to follow
 * such chains). */
static bool from_native(const ttc_kir *k, int32_t t, int depth) {
    while (t >= 0 && k->ts[t].kind == TTC_ET_VIEW) t = k->ts[t].base;
    if (t < 0 || k->ts[t].kind != TTC_ET_INTER || k->ts[t].producer < 0 || depth <= 0) return false;
    const ttc_kop *p = &k->ops[k->ts[t].producer];
    switch (p->kind) {
    case TTC_KOP_GEMM: case TTC_KOP_ATTENTION: case TTC_KOP_NORM: case TTC_KOP_CONCAT: case TTC_KOP_WQ_LINEAR:
    case TTC_KOP_KV_ATTENTION: case TTC_KOP_QGEMM:
        return ttc_native_op_ok(k, p);
    case TTC_KOP_ELEMENTWISE:
        for (int32_t l = 0; l < p->epi.n_leaves; l++)
            if (from_native(k, p->epi.leaves[l], depth - 1)) return ttc_native_op_ok(k, p);
        return false;
    default:
        return false;
    }
}

/* An elementwise op runs natively (the epilogue machinery of native_epi.c over its output, on
 * one thread) where it would otherwise sit between native calls as an OpenCL kernel: float32
 * steps native epilogues take, no acc, and a leaf from a native transformer op (a permuted
 * copy of attention's output, a q/k/v split, an RMS norm's scaling). Elsewhere PoCL's
 * vectorised kernels on every core are the better choice. */
static bool elementwise_ok(const ttc_kir *k, const ttc_kop *op) {
    if (!ttc_kir_target(k)->native_elementwise || !ttc_native_epi_expr_ok(k, op)) return false;
    for (int32_t i = 0; i < op->epi.n; i++)
        if (op->epi.nodes[i].op == TTC_EOP_LEAF && op->epi.nodes[i].a < 0) return false;
    for (int32_t l = 0; l < op->epi.n_leaves; l++)
        if (from_native(k, op->epi.leaves[l], 4)) return true;
    return false;
}

/* Concatenations likewise (a decoder's cache update of k/v, rotary's halves): float32, at most
 * 4 inputs of rank <= 4, none stacked, one from a native transformer op. */
static bool concat_ok(const ttc_kir *k, const ttc_kop *op) {
    int32_t n = op->p.concat.n, R = k->ts[op->out].rank;
    if (!ttc_kir_target(k)->native_elementwise || n < 1 || n > CT_MAX_IN || R < 1 || R > 4 || op->p.concat.stacked)
        return false;
    if (op->epi.n > 0 && !ttc_native_epi_expr_ok(k, op)) return false;
    bool fed = false;
    for (int32_t i = 0; i < n; i++) {
        if (op->in[i] < 0 || k->ts[op->in[i]].dtype != TTC_DTYPE_FLOAT32 || k->ts[op->in[i]].rank != R) return false;
        fed = fed || from_native(k, op->in[i], 4);
    }
    return fed;
}

/* A max pool of 8-bit values (PT2E's stem, its quantize moved before the pool: dynamo/_quant.py)
 * with no epilogue: between int8 native steps, in either layout. */
static bool q8_max_pool(const ttc_kir *k, const ttc_kop *op) {
    const ttc_et *x = &k->ts[op->in[0]], *o = &k->ts[op->out];
    return op->p.pool.kind == TTC_POOL_MAX && op->epi.n == 0 && x->rank == 4 && o->rank == 4 &&
           (x->dtype == TTC_DTYPE_UINT8 || x->dtype == TTC_DTYPE_INT8) && o->dtype == x->dtype && x->dims[1].sym < 0;
}

/* An int8 convolution / linear whose operands and epilogue oneDNN's int8 convolution takes. */
static bool qconv_ok(const ttc_kir *k, const ttc_kop *op) {
    ttc_qconv_plan plan;
    return k->native && ttc_kir_target(k)->native_qconv && ttc_qconv_available() && ttc_qconv_plan_op(k, op, &plan);
}

/* The epilogue node whose value the int8 matmul leaves in the output: float(acc), the int32 sums
 * converted as torch converts them (fusion wrote the _int_mm result's .to(float32) as acc ->
 * int32 -> float32); the acc node where it is read otherwise (the OpenCL epilogue kernel then
 * runs all of it on the stored float sums). -1: no epilogue. */
static int32_t qmm_start(const ttc_kop *op) {
    const ttc_expr *e = &op->epi;
    int32_t acc = -1;
    for (int32_t i = 0; i < e->n; i++)
        if (e->nodes[i].op == TTC_EOP_LEAF && e->nodes[i].a < 0) acc = acc < 0 ? i : -2;
    if (acc < 0) return acc == -2 ? -2 : -1;
    int32_t j = ttc_native_post_only_user(e, acc);
    if (j < 0 || e->nodes[j].op != TTC_EOP_CAST || e->nodes[j].dtype != TTC_DTYPE_INT32) return acc;
    int32_t f = ttc_native_post_only_user(e, j);
    return f >= 0 && e->nodes[f].op == TTC_EOP_CAST && e->nodes[f].dtype == TTC_DTYPE_FLOAT32 ? f : acc;
}

/* aten._int_mm (torchao's dynamic int8 linears; not a PT2E linear, which qconv_ok takes): int8 x
 * int8 of rank 2 with no zero point into int32 as it is, or into float32 read by the epilogue
 * (native_qmm.h). */
static bool qmm_ok(const ttc_kir *k, const ttc_kop *op) {
    if (!k->native || !ttc_kir_target(k)->native_qmm || !ttc_qmm_available() || op->p.qgemm.a_zp != 0 ||
        op->in[0] < 0 || op->in[1] < 0)
        return false;
    const ttc_et *a = &k->ts[op->in[0]], *b = &k->ts[op->in[1]], *o = &k->ts[op->out];
    if (a->dtype != TTC_DTYPE_INT8 || b->dtype != TTC_DTYPE_INT8 || a->rank != 2 || b->rank != 2 || o->rank != 2)
        return false;
    if (o->dtype == TTC_DTYPE_INT32) return op->epi.n == 0;
    return o->dtype == TTC_DTYPE_FLOAT32 && op->epi.n > 0 && qmm_start(op) >= 0;
}

/* A max / min over the trailing dims of a native op's dense float32 result (torchao's per-row
 * quantization scales: native_reduce.h), under the native elementwise setting. */
static bool red_ok(const ttc_kir *k, const ttc_kop *op) {
    if (!k->native || !ttc_kir_target(k)->native_elementwise || op->in[0] < 0 ||
        (op->p.red.kind != TTC_RED_MAX && op->p.red.kind != TTC_RED_MIN))
        return false;
    const ttc_et *x = &k->ts[op->in[0]];
    int32_t R = x->rank, nred = __builtin_popcount(op->p.red.mask);
    /* dense (a reshape of the row-major result: choose_qparams' [.., 1, K] blocks), of a
     * transformer-shaped tensor (image tensors may be kept channels-last: native_layout.h) */
    int32_t base = op->in[0];
    while (k->ts[base].kind == TTC_ET_VIEW) base = k->ts[base].base;
    if (x->dtype != TTC_DTYPE_FLOAT32 || !x->contig || k->ts[base].rank > 3 || R < 1 || R > 8 || nred < 1 || nred > R)
        return false;
    if (op->p.red.mask != (((1u << R) - 1) & ~((1u << (R - nred)) - 1))) return false;   /* the trailing dims */
    return from_native(k, op->in[0], 4);
}

bool ttc_native_op_ok(const ttc_kir *k, const ttc_kop *op) {
    /* an inlined op has no call of its own, and its reader's OpenCL kernel computes it */
    if (op->inlined) return false;
    for (int32_t j = 0; j < TTC_KOP_MAX_IN; j++) {
        int32_t t = op->in[j];
        if (t >= 0 && k->ts[t].kind == TTC_ET_INTER && k->ts[t].producer >= 0 && k->ops[k->ts[t].producer].inlined)
            return false;
    }
    if (op->kind == TTC_KOP_QCONV2D) return !op->dead && qconv_ok(k, op);
    if (op->kind == TTC_KOP_QGEMM) return !op->dead && (qconv_ok(k, op) || qmm_ok(k, op));
    if (op->kind == TTC_KOP_POOL && !op->dead && q8_max_pool(k, op)) return k->native && !native_pool_off(k);
    /* a quantize to 8 bits of a native op's float32 result (torchao's dynamic per-row quantize
     * of the activations before _int_mm: PoCL's kernel took ~6 ns an element on BERT-base's
     * FFN rows); transformer-shaped (rank <= 3), the image layouts stay float32-only */
    if (op->kind == TTC_KOP_ELEMENTWISE && !op->dead && k->ts[op->out].rank <= 3 &&
        (k->ts[op->out].dtype == TTC_DTYPE_INT8 || k->ts[op->out].dtype == TTC_DTYPE_UINT8))
        return k->native && elementwise_ok(k, op);
    if (op->dead || k->ts[op->out].dtype != TTC_DTYPE_FLOAT32) return false;
    if (op->kind == TTC_KOP_CONCAT) return k->native && concat_ok(k, op);
    if (op->kind == TTC_KOP_REDUCE) return red_ok(k, op);
    if (op->kind == TTC_KOP_WQ_LINEAR) {   /* float32 activations, scales and zero points */
        if (op->p.wq.glu) return false;    /* the gated form: the GPU GEMV's alone (kir/fuse.c) */
        for (int i = 0; i < 4; i++)
            if (op->in[i] >= 0 && i != 1 && k->ts[op->in[i]].dtype != TTC_DTYPE_FLOAT32) return false;
        return k->native;
    }
    if (op->kind == TTC_KOP_ATTENTION) {
        /* rank 3 or 4 (one or two leading dims); a float32 or bool mask */
        int32_t R = k->ts[op->out].rank, m = op->in[3];
        for (int32_t i = 0; i < 3; i++)
            if (k->ts[op->in[i]].dtype != TTC_DTYPE_FLOAT32 || k->ts[op->in[i]].rank != R) return false;
        if (m >= 0 && ((k->ts[m].dtype != TTC_DTYPE_FLOAT32 && k->ts[m].dtype != TTC_DTYPE_BOOL) || k->ts[m].rank > R))
            return false;
        return k->native && ttc_kir_target(k)->native_attn && (R == 3 || R == 4) && op->p.attn.group >= 1;
    }
    if (op->kind == TTC_KOP_SLOT_WRITE) {   /* float32 into a float32 cache, the slots along dim R - 2 */
        int32_t R = k->ts[op->in[0]].rank;
        return k->native && ttc_kir_target(k)->native_attn && k->ts[op->in[0]].dtype == TTC_DTYPE_FLOAT32 &&
               R >= 2 && R <= 4 && k->ts[op->out].rank == R && op->p.slot.dim == R - 2 && op->epi.n == 0 &&
               op->in[2] < 0;   /* one tensor and cache (the OpenCL kernel writes two) */
    }
    if (op->kind == TTC_KOP_KV_ATTENTION) {   /* float32 q and caches, the unsplit (CPU) form */
        for (int32_t i = 0; i < 3; i++)
            if (k->ts[op->in[i]].dtype != TTC_DTYPE_FLOAT32 || k->ts[op->in[i]].rank != 4) return false;
        return k->native && ttc_kir_target(k)->native_attn && op->p.kva.splits == 0 && op->p.kva.group >= 1 &&
               op->p.kva.ev >= 1 && op->p.kva.ev <= TTC_NATIVE_KV_MAX_EV;
    }
    if (op->kind == TTC_KOP_GEMM)
        return k->ts[op->in[0]].dtype == TTC_DTYPE_FLOAT32 && k->ts[op->in[1]].dtype == TTC_DTYPE_FLOAT32;
    if (op->kind == TTC_KOP_ELEMENTWISE) {
        int budget = 64;
        return native_ew_ok(k, op, &budget) || (k->native && elementwise_ok(k, op));
    }
    if (op->kind == TTC_KOP_NORM) {   /* layer norms of image-shaped tensors (ConvNeXt's channels-last) */
        const ttc_et *x = &k->ts[op->in[0]];
        for (int i = 1; i < 3; i++)
            if (op->in[i] >= 0 && k->ts[op->in[i]].dtype != TTC_DTYPE_FLOAT32) return false;
        /* and of any rank where the transformer knob allows (BERT/GPT-2's layer norms between
         * native GEMMs) */
        bool image = ttc_kir_target(k)->native_ew && x->rank == 4;
        return k->native && (image || ttc_kir_target(k)->native_norm) && !op->p.norm.group &&
               x->dtype == TTC_DTYPE_FLOAT32 && op->p.norm.axis_from >= 0 && op->p.norm.axis_from < x->rank;
    }
    if (op->kind == TTC_KOP_POOL) {   /* max / average; of the adaptive pools the global average */
        const ttc_et *x = &k->ts[op->in[0]], *o = &k->ts[op->out];
        if (native_pool_off(k) || x->dtype != TTC_DTYPE_FLOAT32 || x->rank < 3 || x->rank != o->rank) return false;
        return op->p.pool.kind != TTC_POOL_ADAPTIVE_AVG ||
               (static_one(&o->dims[o->rank - 2]) && static_one(&o->dims[o->rank - 1]));
    }
    if (op->kind != TTC_KOP_CONV2D || op->p.conv.ksplit > 1 || op->p.conv.mma) return false;
    const ttc_et *x = &k->ts[op->in[0]], *w = &k->ts[op->in[1]];
    int32_t G = op->p.conv.groups;
    /* depthwise: through im2col one tiny GEMM per channel, the OpenCL kernel is better; oneDNN
     * has a direct depthwise kernel (chosen when the engine is built) */
    if (G > 1 && x->dims[1].add == G && !ttc_dnnl_available()) return false;
    return x->dtype == TTC_DTYPE_FLOAT32 && w->dtype == TTC_DTYPE_FLOAT32 && x->rank == 4 && w->rank == 4 &&
           x->dims[1].sym < 0;
}

#define ARG(kind, t, d, r, v) TTC_TRY(ttc_codegen_add_arg(ks, kind, t, d, r, v))

/* Both native kernels take their two operands and the output as (buffer, offset) pairs. */
static ttc_status operand_args(const ttc_kop *op, ttc_kspec *ks) {
    const int32_t ts[3] = {op->in[0], op->in[1], op->out};
    for (int i = 0; i < 3; i++) {
        ARG(TTC_ARG_BUF, ts[i], 0, 0, 0);
        ARG(TTC_ARG_OFF, ts[i], 0, 0, 0);
    }
    return TTC_OK;
}

static ttc_status gemm_args(const ttc_kir *k, const ttc_kop *op, ttc_kspec *ks) {
    int32_t st = ttc_kop_gemm_shape(op), R = k->ts[st].rank;
    int32_t ra = k->ts[op->in[0]].rank, rb = k->ts[op->in[1]].rank;
    TTC_TRY(operand_args(op, ks));
    ARG(TTC_ARG_DIM, st, R - 2, 0, 0);
    ARG(TTC_ARG_DIM, st, R - 1, 0, 0);
    ARG(TTC_ARG_DIM, op->in[0], ra - 1, 0, 0);
    ARG(TTC_ARG_PROD, st, 0, R - 2, 0);
    /* batch strides as the OpenCL GEMM takes them: a 2-D operand is shared by every batch */
    if (ra > 2) ARG(TTC_ARG_PROD, op->in[0], ra - 2, ra, 0);
    else ARG(TTC_ARG_INT, 0, 0, 0, 0);
    if (rb > 2) ARG(TTC_ARG_PROD, op->in[1], rb - 2, rb, 0);
    else ARG(TTC_ARG_INT, 0, 0, 0, 0);
    return TTC_OK;
}

static ttc_status conv_args(const ttc_kir *k, const ttc_kop *op, ttc_kspec *ks) {
    const ttc_et *x = &k->ts[op->in[0]], *out = &k->ts[op->out];
    TTC_TRY(operand_args(op, ks));
    ARG(TTC_ARG_DIM, op->out, 0, 0, 0);
    ARG(TTC_ARG_DIM, op->in[0], 2, 0, 0);
    ARG(TTC_ARG_DIM, op->in[0], 3, 0, 0);
    ARG(TTC_ARG_DIM, op->out, 2, 0, 0);
    ARG(TTC_ARG_DIM, op->out, 3, 0, 0);
    int64_t lit[] = {x->dims[1].add, out->dims[1].add, op->p.conv.groups, op->p.conv.k[0], op->p.conv.k[1],
                     op->p.conv.stride[0], op->p.conv.stride[1], op->p.conv.pad[0], op->p.conv.pad[1],
                     op->p.conv.dil[0], op->p.conv.dil[1]};
    for (size_t i = 0; i < sizeof lit / sizeof lit[0]; i++) ARG(TTC_ARG_INT, 0, 0, 0, lit[i]);
    return TTC_OK;
}

static ttc_status pool_args(const ttc_kir *k, const ttc_kop *op, ttc_kspec *ks) {
    int32_t R = k->ts[op->out].rank;
    ARG(TTC_ARG_BUF, op->in[0], 0, 0, 0);
    ARG(TTC_ARG_OFF, op->in[0], 0, 0, 0);
    ARG(TTC_ARG_BUF, op->out, 0, 0, 0);
    ARG(TTC_ARG_OFF, op->out, 0, 0, 0);
    ARG(TTC_ARG_PROD, op->out, 0, R - 2, 0);
    ARG(TTC_ARG_DIM, op->in[0], R - 2, 0, 0);
    ARG(TTC_ARG_DIM, op->in[0], R - 1, 0, 0);
    ARG(TTC_ARG_DIM, op->out, R - 2, 0, 0);
    ARG(TTC_ARG_DIM, op->out, R - 1, 0, 0);
    if (op->p.pool.kind == TTC_POOL_ADAPTIVE_AVG) {   /* global: an average over the whole image */
        ARG(TTC_ARG_INT, 0, 0, 0, 1);
        ARG(TTC_ARG_DIM, op->in[0], R - 2, 0, 0);
        ARG(TTC_ARG_DIM, op->in[0], R - 1, 0, 0);
        int64_t rest[] = {1, 1, 0, 0, 1, 1, 0, 0};
        for (size_t i = 0; i < sizeof rest / sizeof rest[0]; i++) ARG(TTC_ARG_INT, 0, 0, 0, rest[i]);
        return TTC_OK;
    }
    int64_t lit[] = {op->p.pool.kind == TTC_POOL_AVG, op->p.pool.k[0], op->p.pool.k[1], op->p.pool.stride[0],
                     op->p.pool.stride[1], op->p.pool.pad[0], op->p.pool.pad[1], op->p.pool.dil[0], op->p.pool.dil[1],
                     op->p.pool.count_pad, op->p.pool.divisor};
    for (size_t i = 0; i < sizeof lit / sizeof lit[0]; i++) ARG(TTC_ARG_INT, 0, 0, 0, lit[i]);
    return TTC_OK;
}

static ttc_status concat_args(const ttc_kir *k, const ttc_kop *op, ttc_kspec *ks) {
    int32_t R = k->ts[op->out].rank, n = op->p.concat.n, D = op->p.concat.dim;
    ARG(TTC_ARG_BUF, op->out, 0, 0, 0);
    ARG(TTC_ARG_OFF, op->out, 0, 0, 0);
    for (int32_t i = 0; i < CT_MAX_IN; i++) {
        int32_t t = op->in[i < n ? i : 0];   /* unused slots repeat the first input (never read) */
        ARG(TTC_ARG_BUF, t, 0, 0, 0);
        ARG(TTC_ARG_OFF, t, 0, 0, 0);
    }
    for (int32_t d = R - 4; d < R; d++) {
        if (d < 0) ARG(TTC_ARG_INT, 0, 0, 0, 1);
        else ARG(TTC_ARG_DIM, op->out, d, 0, 0);
    }
    for (int32_t i = 0; i < CT_MAX_IN; i++) {
        if (i < n) ARG(TTC_ARG_DIM, op->in[i], D, 0, 0);
        else ARG(TTC_ARG_INT, 0, 0, 0, 0);
        for (int32_t d = R - 4; d < R; d++) {
            if (d < 0 || i >= n) ARG(TTC_ARG_INT, 0, 0, 0, 0);
            else ARG(TTC_ARG_STRIDE, op->in[i], d, R, 0);
        }
    }
    return TTC_OK;
}

static ttc_status wq_args(const ttc_kir *k, const ttc_kop *op, ttc_kspec *ks) {
    int32_t R = k->ts[op->out].rank;
    const int32_t ts[5] = {op->in[0], op->in[1], op->out, op->in[2], op->in[3] >= 0 ? op->in[3] : op->in[2]};
    for (int i = 0; i < 5; i++) {
        ARG(TTC_ARG_BUF, ts[i], 0, 0, 0);
        ARG(TTC_ARG_OFF, ts[i], 0, 0, 0);
    }
    ARG(TTC_ARG_PROD, op->out, 0, R - 1, 0);
    int64_t lit[] = {op->p.wq.n, op->p.wq.k, op->p.wq.group, op->p.wq.bits, op->in[3] >= 0};
    for (size_t i = 0; i < sizeof lit / sizeof lit[0]; i++) ARG(TTC_ARG_INT, 0, 0, 0, lit[i]);
    return TTC_OK;
}

static ttc_status attn_args(const ttc_kir *k, const ttc_kop *op, ttc_kspec *ks) {
    int32_t R = k->ts[op->out].rank;
    const int32_t ts[5] = {op->in[0], op->in[1], op->in[2], op->out, op->in[3]};
    for (int i = 0; i < 5; i++) {
        if (ts[i] < 0) {
            ARG(TTC_ARG_INT, 0, 0, 0, 0);
            ARG(TTC_ARG_INT, 0, 0, 0, 0);
            continue;
        }
        ARG(TTC_ARG_BUF, ts[i], 0, 0, 0);
        ARG(TTC_ARG_OFF, ts[i], 0, 0, 0);
    }
    if (R == 4) ARG(TTC_ARG_DIM, op->out, 0, 0, 0);
    else ARG(TTC_ARG_INT, 0, 0, 0, 1);
    ARG(TTC_ARG_DIM, op->out, R - 3, 0, 0);
    ARG(TTC_ARG_DIM, op->out, R - 2, 0, 0);
    ARG(TTC_ARG_DIM, op->in[1], R - 2, 0, 0);
    const int32_t st[4] = {op->in[0], op->in[1], op->in[2], op->in[3]};
    for (int i = 0; i < 4; i++)   /* four strides each: rank 3 has no d0 (stride 0) */
        for (int32_t d = R - 4; d < R; d++) {
            if (st[i] < 0 || d < 0) ARG(TTC_ARG_INT, 0, 0, 0, 0);
            else ARG(TTC_ARG_STRIDE, st[i], d, R, 0);
        }
    return TTC_OK;
}

static ttc_status kv_args(const ttc_kop *op, ttc_kspec *ks) {
    const int32_t ts[6] = {op->in[0], op->in[1], op->in[2], op->in[3], op->in[4], op->out};
    for (int i = 0; i < 6; i++) {
        ARG(TTC_ARG_BUF, ts[i], 0, 0, 0);
        ARG(TTC_ARG_OFF, ts[i], 0, 0, 0);
    }
    ARG(TTC_ARG_DIM, op->out, 0, 0, 0);
    ARG(TTC_ARG_DIM, op->out, 2, 0, 0);
    for (int i = 0; i < 3; i++)
        for (int32_t d = 0; d < 4; d++) ARG(TTC_ARG_STRIDE, op->in[i], d, 4, 0);
    ARG(TTC_ARG_STRIDE, op->in[3], 0, 1, 0);
    ARG(TTC_ARG_STRIDE, op->in[4], 0, 2, 0);
    ARG(TTC_ARG_STRIDE, op->in[4], 1, 2, 0);
    return TTC_OK;
}

static ttc_status slot_args(const ttc_kir *k, const ttc_kop *op, ttc_kspec *ks) {
    int32_t R = k->ts[op->in[0]].rank;
    const int32_t ts[3] = {op->in[0], op->in[1], op->out};
    for (int i = 0; i < 3; i++) {
        ARG(TTC_ARG_BUF, ts[i], 0, 0, 0);
        ARG(TTC_ARG_OFF, ts[i], 0, 0, 0);
    }
    for (int32_t d = R - 4; d < R; d++) {
        if (d < 0) ARG(TTC_ARG_INT, 0, 0, 0, 1);
        else ARG(TTC_ARG_DIM, op->in[0], d, 0, 0);
    }
    for (int32_t d = R - 4; d < R; d++) {
        if (d < 0) ARG(TTC_ARG_INT, 0, 0, 0, 0);
        else ARG(TTC_ARG_STRIDE, op->in[0], d, R, 0);
    }
    ARG(TTC_ARG_DIM, op->out, R - 2, 0, 0);
    ARG(TTC_ARG_STRIDE, op->in[1], 0, 1, 0);
    ARG(TTC_ARG_ERRFLAG, op->out, 0, 0, 0);   /* the execution then has a flag (bound in ttc_native_launch) */
    return TTC_OK;
}

/* A GEMM runs through oneDNN's matmul (the choice ttc_native_launch makes: the target's library,
 * constant weights for "auto"; a weight-only linear's dequantized blocks at large M for "auto"
 * and "dnnl", gemm_lib), so its post-ops are worth planning: on OpenBLAS they would run in plain
 * C after it (ttc_native_post_ref_nhwc), slower than native_epi's vectorised steps. */
static bool gemm_lib(int32_t lib, const ttc_kop *op, bool w_const) {
    return ttc_dnnl_gemm_available() &&
           (lib == TTC_NATIVE_GEMM_DNNL || (lib == TTC_NATIVE_GEMM_AUTO && (w_const || op->kind == TTC_KOP_WQ_LINEAR)));
}

/* A weight-only linear's rows when every call has the same number, else -1. */
static int64_t wq_static_rows(const ttc_kir *k, const ttc_kop *op) {
    const ttc_et *out = &k->ts[op->out];
    int64_t m = 1;
    for (int32_t d = 0; d + 1 < out->rank; d++) {
        if (out->dims[d].sym >= 0) return -1;
        m *= out->dims[d].add;
    }
    return m;
}

static bool gemm_post_lib(const ttc_kir *k, const ttc_kop *op) {
    int32_t t = op->in[1];
    while (t >= 0 && k->ts[t].kind == TTC_ET_VIEW) t = k->ts[t].base;
    /* a weight-only linear of static rows that take the GEMV (ttc_native_wq_gemv_max_m, as
     * ttc_native_wq_linear asks it) keeps its epilogue in native_epi's vectorised steps: on the
     * GEMV the post-ops would run in plain C after it */
    if (op->kind == TTC_KOP_WQ_LINEAR) {
        int64_t m = wq_static_rows(k, op);
        if (m >= 0 && m <= ttc_native_wq_gemv_max_m(op->p.wq.n, op->p.wq.k, op->p.wq.group, op->p.wq.bits)) return false;
    }
    return gemm_lib(ttc_kir_target(k)->native_gemm, op, t >= 0 && k->ts[t].kind == TTC_ET_CONST);
}

static ttc_status qconv_args(const ttc_kir *k, const ttc_kop *op, ttc_kspec *ks) {
    ttc_qconv_plan pl;
    if (!ttc_qconv_plan_op(k, op, &pl))
        return ttc_fail(TTC_ERR_INTERNAL, "native %s: the int8 layer's epilogue has no plan", op->name);
    const int32_t ts[6] = {op->in[0], op->in[1], op->out, op->epi.leaves[pl.scale_leaf],
                           op->epi.leaves[pl.bias_leaf >= 0 ? pl.bias_leaf : pl.scale_leaf],
                           op->epi.leaves[pl.res_leaf >= 0 ? pl.res_leaf : pl.scale_leaf]};
    for (int i = 0; i < 6; i++) {
        ARG(TTC_ARG_BUF, ts[i], 0, 0, 0);
        ARG(TTC_ARG_OFF, ts[i], 0, 0, 0);
    }
    ARG(TTC_ARG_DIM, op->out, 0, 0, 0);
    if (op->kind == TTC_KOP_QGEMM) {   /* [M, K] x [K, N]: a 1x1 convolution of [M, K, 1, 1] */
        const ttc_et *x = &k->ts[op->in[0]], *o = &k->ts[op->out];
        int64_t lit[] = {1, 1, 1, 1, x->dims[1].add, o->dims[1].add, 1, 1, 1, 1, 1, 0, 0, 1, 1};
        for (size_t i = 0; i < sizeof lit / sizeof lit[0]; i++) ARG(TTC_ARG_INT, 0, 0, 0, lit[i]);
        return TTC_OK;
    }
    const ttc_et *x = &k->ts[op->in[0]], *w = &k->ts[op->in[1]], *out = &k->ts[op->out];
    ARG(TTC_ARG_DIM, op->in[0], 2, 0, 0);
    ARG(TTC_ARG_DIM, op->in[0], 3, 0, 0);
    ARG(TTC_ARG_DIM, op->out, 2, 0, 0);
    ARG(TTC_ARG_DIM, op->out, 3, 0, 0);
    int64_t lit[] = {x->dims[1].add, out->dims[1].add, op->p.qconv.groups, w->dims[2].add, w->dims[3].add,
                     op->p.qconv.stride[0], op->p.qconv.stride[1], op->p.qconv.pad[0], op->p.qconv.pad[1],
                     op->p.qconv.dil[0], op->p.qconv.dil[1]};
    for (size_t i = 0; i < sizeof lit / sizeof lit[0]; i++) ARG(TTC_ARG_INT, 0, 0, 0, lit[i]);
    return TTC_OK;
}

static ttc_status qmm_args(const ttc_kop *op, ttc_kspec *ks) {
    TTC_TRY(operand_args(op, ks));
    ARG(TTC_ARG_DIM, op->out, 0, 0, 0);
    ARG(TTC_ARG_DIM, op->out, 1, 0, 0);
    ARG(TTC_ARG_DIM, op->in[0], 1, 0, 0);
    for (int i = 0; i < 2; i++)
        for (int32_t d = 0; d < 2; d++) ARG(TTC_ARG_STRIDE, op->in[i], d, 2, 0);
    return TTC_OK;
}

ttc_status ttc_codegen_native(ttc_sbuf *src, const ttc_kir *k, const ttc_kop *op, ttc_kspec *ks, const char *P,
                              const char *A_) {
    int32_t before = ks->n_args;
    bool qmm = op->kind == TTC_KOP_QGEMM && !qconv_ok(k, op);
    if (op->kind == TTC_KOP_QCONV2D || (op->kind == TTC_KOP_QGEMM && !qmm)) {
        /* the whole epilogue runs inside oneDNN's primitive (post-ops) */
        TTC_TRY(qconv_args(k, op, ks));
        ks->native = NATIVE_QCONV;
        ks->n_native_args = ks->n_args - before;
        ks->native_post = ks->native_epi = false;
        const ttc_et *out = &k->ts[op->out];
        ttc_sbuf_printf(src, "__kernel void %s(int n%s) {\n    int lin = get_global_id(0);\n    if (lin >= n) return;\n"
                        "    %s_store(0.0f, lin%s);\n}\n", ks->name, P, ks->name, A_);
        ARG(TTC_ARG_PROD, op->out, 0, out->rank, 0);
        ttc_codegen_gdim(ks, 0, op->out, 0, out->rank, 1, 0);
        return TTC_OK;
    }
    if (qmm) {
        TTC_TRY(qmm_args(op, ks));
        ks->native = NATIVE_QMM;
    } else if (op->kind == TTC_KOP_REDUCE) {
        int32_t R = k->ts[op->in[0]].rank, from = R - __builtin_popcount(op->p.red.mask);
        ARG(TTC_ARG_BUF, op->in[0], 0, 0, 0);
        ARG(TTC_ARG_OFF, op->in[0], 0, 0, 0);
        ARG(TTC_ARG_BUF, op->out, 0, 0, 0);
        ARG(TTC_ARG_OFF, op->out, 0, 0, 0);
        ARG(TTC_ARG_PROD, op->in[0], 0, from, 0);
        ARG(TTC_ARG_PROD, op->in[0], from, R, 0);
        ks->native = NATIVE_RED;
    } else if (op->kind == TTC_KOP_GEMM) {
        TTC_TRY(gemm_args(k, op, ks));
        ks->native = NATIVE_GEMM;
    } else if (op->kind == TTC_KOP_POOL) {
        TTC_TRY(pool_args(k, op, ks));
        ks->native = NATIVE_POOL;
    } else if (op->kind == TTC_KOP_NORM) {
        int32_t R = k->ts[op->in[0]].rank, from = op->p.norm.axis_from;
        bool hw = op->in[1] >= 0, hb = op->in[2] >= 0;
        const int32_t ts[4] = {op->in[0], hw ? op->in[1] : op->in[0], hb ? op->in[2] : op->in[0], op->out};
        for (int i = 0; i < 4; i++) {
            ARG(TTC_ARG_BUF, ts[i], 0, 0, 0);
            ARG(TTC_ARG_OFF, ts[i], 0, 0, 0);
        }
        ARG(TTC_ARG_PROD, op->in[0], 0, from, 0);
        ARG(TTC_ARG_PROD, op->in[0], from, R, 0);
        ARG(TTC_ARG_INT, 0, 0, 0, hw);
        ARG(TTC_ARG_INT, 0, 0, 0, hb);
        ks->native = NATIVE_NORM;
    } else if (op->kind == TTC_KOP_ATTENTION) {
        TTC_TRY(attn_args(k, op, ks));
        ks->native = NATIVE_ATTN;
    } else if (op->kind == TTC_KOP_KV_ATTENTION) {
        TTC_TRY(kv_args(op, ks));
        ks->native = NATIVE_KV;
    } else if (op->kind == TTC_KOP_SLOT_WRITE) {
        TTC_TRY(slot_args(k, op, ks));
        ks->native = NATIVE_SLOT;
    } else if (op->kind == TTC_KOP_WQ_LINEAR) {
        TTC_TRY(wq_args(k, op, ks));
        ks->native = NATIVE_WQ;
    } else if (op->kind == TTC_KOP_CONCAT) {
        TTC_TRY(concat_args(k, op, ks));
        ks->native = NATIVE_CAT;
    } else if (op->kind == TTC_KOP_ELEMENTWISE) {   /* only the epilogue, evaluated into the output */
        ARG(TTC_ARG_BUF, op->out, 0, 0, 0);
        ARG(TTC_ARG_OFF, op->out, 0, 0, 0);
        ks->native = NATIVE_EW;
    } else {
        TTC_TRY(conv_args(k, op, ks));
        ks->native = NATIVE_CONV;
    }
    ks->n_native_args = ks->n_args - before;
    /* the store arguments are ks->args[0, before) until gen_op rotates them behind ours */
    ttc_native_post pp;
    bool lib = op->kind == TTC_KOP_CONV2D ? ttc_dnnl_available()
                                          : (op->kind == TTC_KOP_GEMM || op->kind == TTC_KOP_WQ_LINEAR) && gemm_post_lib(k, op);
    ks->native_post = !qmm && lib && op->epi.n > 0 && ttc_native_post_plan(k, op, &pp) &&
                      ttc_native_epi_ok_from(k, op, ks->args, before, pp.split);
    /* _int_mm: the epilogue from the float sums the matmul stores (qmm_start) in C, else all of
     * it in the OpenCL kernel below reading them as its accumulator */
    ks->native_epi = op->epi.n > 0 && !ks->native_post &&
                     !(qmm ? ttc_native_epi_ok_from(k, op, ks->args, before, qmm_start(op))
                           : ttc_native_epi_ok(k, op, ks->args, before));
    /* the epilogue, in place: each work-item reads the library's result and stores f(result) */
    const ttc_et *out = &k->ts[op->out];
    ttc_sbuf_printf(src, "__kernel void %s(int n%s) {\n    int lin = get_global_id(0);\n    if (lin >= n) return;\n"
                    "    %s_store(o_[o_off + lin], lin%s);\n}\n", ks->name, P, ks->name, A_);
    ARG(TTC_ARG_PROD, op->out, 0, out->rank, 0);
    ttc_codegen_gdim(ks, 0, op->out, 0, out->rank, 1, 0);
    return TTC_OK;
}

const ttc_codegen_native_ops ttc_native_codegen_ops = {ttc_native_op_ok, ttc_codegen_native};

/* Column matrix of image n, group g: col[(ic*KH + kh)*KW + kw][oh*OW + ow] (zero padding). */
static void im2col(const float *x, float *col, const int64_t *v, int64_t ic0, int64_t icg) {
    int64_t H = v[CA_H], W = v[CA_W_], OH = v[CA_OH], OW = v[CA_OW], KH = v[CA_KH], KW = v[CA_KW];
    int64_t SH = v[CA_SH], SW = v[CA_SW], PH = v[CA_PH], PW = v[CA_PW], DH = v[CA_DH], DW = v[CA_DW];
    for (int64_t ic = 0; ic < icg; ic++) {
        const float *xc = x + (ic0 + ic) * H * W;
        for (int64_t kh = 0; kh < KH; kh++)
            for (int64_t kw = 0; kw < KW; kw++) {
                float *row = col + ((ic * KH + kh) * KW + kw) * OH * OW;
                /* output columns whose input column lies inside the image: [lo, hi) */
                int64_t off = kw * DW - PW, lo = 0, hi = OW;
                while (lo < OW && lo * SW + off < 0) lo++;
                while (hi > lo && (hi - 1) * SW + off >= W) hi--;
                for (int64_t oh = 0; oh < OH; oh++) {
                    float *r = row + oh * OW;
                    int64_t ih = oh * SH - PH + kh * DH;
                    if (ih < 0 || ih >= H) { memset(r, 0, sizeof(float) * (size_t)OW); continue; }
                    const float *xr = xc + ih * W + off;
                    for (int64_t ow = 0; ow < lo; ow++) r[ow] = 0.0f;
                    if (SW == 1) memcpy(r + lo, xr + lo, sizeof(float) * (size_t)(hi - lo));
                    else for (int64_t ow = lo; ow < hi; ow++) r[ow] = xr[ow * SW];
                    for (int64_t ow = hi; ow < OW; ow++) r[ow] = 0.0f;
                }
            }
    }
}

static bool conv_is_1x1(const int64_t *v) {
    return v[CA_KH] == 1 && v[CA_KW] == 1 && v[CA_SH] == 1 && v[CA_SW] == 1 && v[CA_PH] == 0 && v[CA_PW] == 0;
}

/* Scratch floats of the im2col path: the column matrix (not for 1x1), then one image of x and
 * one of y in NCHW where they are stored NHWC. */
static int64_t conv_scratch(const int64_t *v, bool x_nhwc, bool y_nhwc) {
    int64_t n = conv_is_1x1(v) ? 0 : v[CA_C] / v[CA_G] * v[CA_KH] * v[CA_KW] * v[CA_OH] * v[CA_OW];
    if (x_nhwc) n += v[CA_C] * v[CA_H] * v[CA_W_];
    if (y_nhwc) n += v[CA_OC] * v[CA_OH] * v[CA_OW];
    return n;
}

/* The bias[channel] the post-ops add (NULL: none). */
static const float *post_bias(const native_call *c, void *const *ptrs) {
    return c->post && c->pp.dnnl.bias ? (const float *)ptrs[c->epi.slot[c->pp.bias_leaf]] + c->epi.off[c->pp.bias_leaf]
                                      : NULL;
}

static void epilogue(const native_call *c, void *const *ptrs, float *y) {
    if (c->epi.on) ttc_native_epi_apply(&c->epi, ptrs, y);
}

/* out (dense, dims od) = the inputs one after another along dim D (all padded to rank 4) */
static void concat_run(const native_call *c, void *const *ptrs, float *out) {
    const int64_t *v = c->v, *od = v + CT_ODIMS;
    int64_t at = 0, D = c->cat_dim;
    for (int32_t i = 0; i < c->cat_n; i++) {
        const float *x = (const float *)ptrs[1 + i] + v[CT_X + 2 * i + 1];
        const int64_t *in = v + CT_IN + 5 * i, len = in[0], *st = in + 1;
        int64_t dims[4] = {od[0], od[1], od[2], od[3]};
        dims[D] = len;
        int64_t os[4] = {od[1] * od[2] * od[3], od[2] * od[3], od[3], 1};
        for (int64_t a = 0; a < dims[0]; a++)
            for (int64_t b = 0; b < dims[1]; b++)
                for (int64_t r = 0; r < dims[2]; r++) {
                    int64_t idx[4] = {a, b, r, 0};
                    idx[D] += at;
                    float *o = out + idx[0] * os[0] + idx[1] * os[1] + idx[2] * os[2] + idx[3];
                    const float *xr = x + a * st[0] + b * st[1] + r * st[2];
                    if ((c->cat_neg >> i) & 1u) for (int64_t j = 0; j < dims[3]; j++) o[j] = -xr[j * st[3]];
                    else if (st[3] == 1) memcpy(o, xr, sizeof(float) * (size_t)dims[3]);
                    else for (int64_t j = 0; j < dims[3]; j++) o[j] = xr[j * st[3]];
                }
        at += len;
    }
}

static void native_run(void *arg, void *const *ptrs) {
    const native_call *c = arg;
    const int64_t *v = c->v;
    void *m0 = ptrs[0];   /* ptrs[1], ptrs[2]: read only by the kinds that pass them */
    if (c->kind == NATIVE_QCONV) {
        const ttc_qconv_shape *s = &c->qs;
        size_t xs = ttc_dtype_size((ttc_dtype)s->x_dt), ys = ttc_dtype_size((ttc_dtype)s->y_dt);
        const void *res = s->r_dt >= 0 ? (const char *)ptrs[5] + v[QA_ROFF] * (int64_t)ttc_dtype_size((ttc_dtype)s->r_dt)
                                       : NULL;
        ttc_qconv_run(c->owner, c->ki, s, &c->qplan, (const char *)m0 + v[QA_XOFF] * (int64_t)xs,
                      (const int8_t *)ptrs[1] + v[QA_WOFF], (const float *)ptrs[3] + v[QA_SOFF],
                      c->qplan.bias_leaf >= 0 ? (const float *)ptrs[4] + v[QA_BOFF] : NULL, res,
                      (char *)ptrs[2] + v[QA_YOFF] * (int64_t)ys);
        return;
    }
    if (c->kind == NATIVE_RED) {
        float *y = (float *)ptrs[1] + v[RA_YOFF];
        ttc_native_row_minmax((const float *)m0 + v[RA_XOFF], y, v[RA_ROWS], v[RA_COLS], c->red_max, c->threads);
        epilogue(c, ptrs, y);
        return;
    }
    if (c->kind == NATIVE_QMM) {
        void *C = (char *)ptrs[2] + v[QM_COFF] * 4;   /* int32 or float32 */
        ttc_qmm_run(c->owner, c->ki, &c->qm, (const int8_t *)m0 + v[QM_AOFF], (const int8_t *)ptrs[1] + v[QM_BOFF],
                    c->w_const, C);
        if (c->qm.y_f32) epilogue(c, ptrs, C);
        return;
    }
    if (c->kind == NATIVE_GEMM) {
        const float *A = (const float *)m0 + v[GA_AOFF], *B = (const float *)ptrs[1] + v[GA_BOFF];
        float *C = (float *)ptrs[2] + v[GA_COFF];
        int64_t M = v[GA_M], N = v[GA_N], K = v[GA_K], batch = v[GA_BATCH];
        /* a shared B under dense A rows (a linear over [batch, seq, K]) is one GEMM of
         * batch * M rows: one call, and one shape for oneDNN's kept primitive */
        if (batch > 1 && v[GA_SB] == 0 && v[GA_SA] == M * K) {
            M *= batch;
            batch = 1;
        }
        ttc_dnnl_gemm_shape gs = {M, N, K, c->trans_b};
        const float *bias = post_bias(c, ptrs);
        for (int64_t b = 0; b < batch; b++) {
            const float *Ab = A + b * v[GA_SA], *Bb = B + b * v[GA_SB];
            float *Cb = C + b * M * N;
            bool done = false;
            if (M <= c->gemv_rows)
                ttc_native_gemv(Ab, Bb, Cb, M, N, K, c->threads);
            else if (!(c->gemm_dnnl && ttc_dnnl_gemm_post(c->owner, c->ki, &gs, Ab, Bb, c->w_const && v[GA_SB] == 0, Cb,
                                                     c->post ? &c->pp.dnnl : NULL, bias, &done)))
                ttc_blas_sgemm(c->trans_b, M, N, K, Ab, K, Bb, c->trans_b ? K : N, Cb, N);
            if (c->post && !done) ttc_native_post_ref_nhwc(&c->pp.dnnl, bias, Cb, M, N);
        }
        epilogue(c, ptrs, C);
        return;
    }
    if (c->kind == NATIVE_WQ) {
        float *y = (float *)ptrs[2] + v[WA_YOFF];
        const float *bias = post_bias(c, ptrs);
        ttc_native_wq a = {(const float *)m0 + v[WA_XOFF], (const int8_t *)ptrs[1] + v[WA_QOFF],
                           (const float *)ptrs[3] + v[WA_SOFF], v[WA_HASZ] ? (const float *)ptrs[4] + v[WA_ZOFF] : NULL,
                           y, v[WA_M], v[WA_N], v[WA_K], v[WA_GROUP], (int32_t)v[WA_BITS], c->threads,
                           c->gemm_dnnl ? c->owner : NULL, c->ki, c->post ? &c->pp.dnnl : NULL, bias};
        ttc_native_wq_linear(&a);
        epilogue(c, ptrs, y);
        return;
    }
    if (c->kind == NATIVE_SLOT) {
        size_t sl_bytes = c->slot.slots64 ? sizeof(int64_t) : sizeof(int32_t);
        ttc_native_slot_write(&c->slot, (const float *)m0 + v[SW_XOFF], (const char *)ptrs[1] + v[SW_SLOFF] * sl_bytes,
                              (float *)ptrs[2] + v[SW_OOFF], c->scratch_slot >= 0 ? ptrs[c->scratch_slot] : NULL);
        return;
    }
    if (c->kind == NATIVE_KV) {
        const ttc_native_kv_shape *ks = &c->kv;
        size_t sl_bytes = ks->slots64 ? sizeof(int64_t) : sizeof(int32_t);
        float *o = (float *)ptrs[5] + v[KV_OOFF];
        ttc_native_kv_attention(ks, (const float *)m0 + v[KV_QOFF], (const float *)ptrs[1] + v[KV_KOFF],
                                (const float *)ptrs[2] + v[KV_VOFF], (const char *)ptrs[3] + v[KV_SLOFF] * sl_bytes,
                                (const uint8_t *)ptrs[4] + v[KV_MOFF], o);
        epilogue(c, ptrs, o);
        return;
    }
    if (c->kind == NATIVE_CAT) {
        float *o = (float *)m0 + v[CT_OOFF];
        concat_run(c, ptrs, o);
        epilogue(c, ptrs, o);
        return;
    }
    if (c->kind == NATIVE_ATTN) {
        float *o = (float *)ptrs[3] + v[AT_OOFF];
        const void *mask = NULL;   /* with a mask, ptrs[4] (the scratch comes after it) */
        if (c->scratch_slot == 5)
            mask = (const char *)ptrs[4] + v[AT_MOFF] * (c->mask_bool ? 1 : (int64_t)sizeof(float));
        ttc_native_attention(&c->attn, (const float *)m0 + v[AT_QOFF], (const float *)ptrs[1] + v[AT_KOFF],
                             (const float *)ptrs[2] + v[AT_VOFF], mask, c->mask_bool, o, ptrs[c->scratch_slot]);
        epilogue(c, ptrs, o);
        return;
    }
    if (c->kind == NATIVE_NORM) {
        float *y = (float *)ptrs[3] + v[NA_YOFF];
        ttc_native_layer_norm((const float *)m0 + v[NA_XOFF], v[NA_HAS_W] ? (const float *)ptrs[1] + v[NA_WOFF] : NULL,
                              v[NA_HAS_B] ? (const float *)ptrs[2] + v[NA_BOFF] : NULL, v[NA_ROWS], v[NA_N], c->eps, c->rms,
                              c->threads, y);
        epilogue(c, ptrs, y);
        return;
    }
    if (c->kind == NATIVE_EW) {   /* an 8-bit output (a quantize) at a byte offset */
        epilogue(c, ptrs, c->epi.out_q8 ? (float *)(void *)((char *)m0 + v[1]) : (float *)m0 + v[1]);
        return;
    }
    if (c->kind == NATIVE_POOL) {
        ttc_native_pool_shape ps = {v[PA_PLANES], v[PA_H], v[PA_W], v[PA_OH], v[PA_OW], v[PA_AVG], v[PA_KH],
                                    v[PA_KW], v[PA_SH], v[PA_SW], v[PA_PH], v[PA_PW], v[PA_DH], v[PA_DW],
                                    v[PA_CP], v[PA_DIV], c->threads};
        if (c->pool_q8) {   /* 8-bit max pool: no epilogue (q8_max_pool) */
            int64_t ch = c->chans > 0 ? c->chans : 1;
            ttc_native_max_pool_q8(&ps, v[PA_PLANES] / ch, ch, c->x_nhwc, c->pool_q8 == 2,
                                   (const uint8_t *)m0 + v[PA_XOFF], (uint8_t *)ptrs[1] + v[PA_YOFF]);
            return;
        }
        float *y = (float *)ptrs[1] + v[PA_YOFF];
        if (c->x_nhwc) {   /* a max pool NHWC -> NHWC or a global average (native_layout.c) */
            int64_t ch = c->chans > 0 ? c->chans : 1;
            if (c->y_nhwc) ttc_nhwc_max_pool(&ps, v[PA_PLANES] / ch, ch, (const float *)m0 + v[PA_XOFF], y);
            else ttc_nhwc_global_avg((const float *)m0 + v[PA_XOFF], y, v[PA_PLANES] / ch, v[PA_H] * v[PA_W], ch);
            epilogue(c, ptrs, y);
            return;
        }
        ttc_native_pool(&ps, (const float *)m0 + v[PA_XOFF], y);
        epilogue(c, ptrs, y);
        return;
    }
    const float *x = (const float *)m0 + v[CA_XOFF], *w = (const float *)ptrs[1] + v[CA_WOFF];
    float *y = (float *)ptrs[2] + v[CA_YOFF], *col = conv_is_1x1(v) ? NULL : ptrs[c->scratch_slot];
    int64_t G = v[CA_G], C = v[CA_C], OC = v[CA_OC], ICG = C / G, OCG = OC / G;
    int64_t HW = v[CA_H] * v[CA_W_], OHW = v[CA_OH] * v[CA_OW], KK = ICG * v[CA_KH] * v[CA_KW];
    bool direct = conv_is_1x1(v);
    ttc_dnnl_conv_shape ds = {v[CA_N], C, v[CA_H], v[CA_W_], OC, v[CA_OH], v[CA_OW], G, v[CA_KH], v[CA_KW],
                              v[CA_SH], v[CA_SW], v[CA_PH], v[CA_PW], v[CA_DH], v[CA_DW], c->x_nhwc, c->y_nhwc,
                              c->wino};
    const float *bias = post_bias(c, ptrs);
    bool post_done = false;
    if (ttc_dnnl_conv_post(c->owner, c->ki, &ds, x, w, c->w_const, y, c->post ? &c->pp.dnnl : NULL, bias,
                           &post_done)) {
        if (c->post && !post_done) {
            if (c->y_nhwc) ttc_native_post_ref_nhwc(&c->pp.dnnl, bias, y, v[CA_N] * OHW, OC);
            else ttc_native_post_ref(&c->pp.dnnl, bias, y, v[CA_N], OC, OHW);
        }
        epilogue(c, ptrs, y);
        return;
    }
    /* tensors kept NHWC go through one NCHW image at a time in the scratch after the columns */
    float *tx = NULL, *ty = NULL;
    if (c->x_nhwc || c->y_nhwc) {
        tx = (float *)ptrs[c->scratch_slot] + conv_scratch(v, false, false);
        ty = tx + (c->x_nhwc ? C * HW : 0);
    }
    for (int64_t n = 0; n < v[CA_N]; n++) {
        const float *xn = x + n * C * HW;
        float *yn = c->y_nhwc ? ty : y + n * OC * OHW;
        if (c->x_nhwc) {
            ttc_nhwc_to_nchw(xn, tx, 1, C, HW);
            xn = tx;
        }
        for (int64_t g = 0; g < G; g++) {
            const float *bm = xn + g * ICG * HW;
            if (!direct) {
                im2col(xn, col, v, g * ICG, ICG);
                bm = col;
            }
            ttc_blas_sgemm(false, OCG, OHW, KK, w + g * OCG * KK, KK, bm, OHW, yn + g * OCG * OHW, OHW);
        }
        if (c->y_nhwc) {
            if (c->post) ttc_native_post_ref(&c->pp.dnnl, bias, yn, 1, OC, OHW);
            ttc_nchw_to_nhwc(yn, y + n * OC * OHW, 1, OC, OHW);
        }
    }
    if (c->post && !c->y_nhwc) ttc_native_post_ref(&c->pp.dnnl, bias, y, v[CA_N], OC, OHW);
    epilogue(c, ptrs, y);
}

/* The attention call's shape from its arguments (attn_args' layout) and the op. */
static void attn_shape(const ttc_kop *op, const int64_t *a, ttc_native_attn_shape *s) {
    memset(s, 0, sizeof *s);
    s->d0 = a[AT_D0];
    s->d1 = a[AT_D1];
    s->l = a[AT_L];
    s->s = a[AT_S];
    s->e = op->p.attn.e;
    s->ev = op->p.attn.ev;
    s->group = op->p.attn.group;
    s->causal = op->p.attn.causal;
    s->scale = (float)op->p.attn.scale;
    for (int i = 0; i < 4; i++) {
        s->qs[i] = a[AT_QS + i];
        s->ks[i] = a[AT_KS + i];
        s->vs[i] = a[AT_VS + i];
        s->ms[i] = a[AT_MS + i];
    }
}

size_t ttc_native_scratch_bytes(const ttc_engine_view *e, const ttc_plan *p) {
    size_t most = 0;
    for (int32_t ki = 0; ki < e->cg->n_kernels; ki++) {
        const ttc_kspec *ks = &e->cg->kernels[ki];
        if (p->skip[ki]) continue;
        const int64_t *a = p->argv[ki];
        if (ks->native == NATIVE_ATTN) {
            ttc_native_attn_shape sh;
            attn_shape(&e->k->ops[ks->op], a, &sh);
            size_t n = ttc_native_attn_scratch(&sh) * sizeof(float);
            if (n > most) most = n;
        }
        if (ks->native != NATIVE_CONV) continue;
        const ttc_kop *op = &e->k->ops[ks->op];
        size_t n = (size_t)conv_scratch(a, ttc_native_nhwc(e, op->in[0]), ttc_native_nhwc(e, op->out)) * sizeof(float);
        if (n > most) most = n;
    }
    return most;
}

/* The plan checked the bias tensor's dims; its values must lie at off + channel (dim 1 of a
 * convolution's output, the last of a GEMM's). */
static ttc_status post_bias_check(const ttc_kop *op, const native_call *c) {
    if (!c->pp.dnnl.bias) return TTC_OK;
    int32_t bl = c->pp.bias_leaf, R = c->epi.rank, ch = op->kind == TTC_KOP_CONV2D ? 1 : R - 1;
    if (bl < 0 || ch < 0)
        return ttc_fail(TTC_ERR_INTERNAL, "native %s: a bias post-op without its tensor", op->name);
    const int64_t *st = c->epi.strides[bl], *od = c->epi.dims;
    int64_t others = 1;
    bool ok = true;
    for (int32_t d = 0; d < R; d++) {
        if (d == ch) ok = ok && (st[d] == 1 || od[d] == 1);
        else ok = ok && (st[d] == 0 || od[d] == 1);
        if (d != ch) others *= od[d];
    }
    if (c->epi.dense[bl] ? others != 1 : !ok)
        return ttc_fail(TTC_ERR_INTERNAL, "native %s: bias laid out %s", op->name,
                        c->epi.dense[bl] ? "like the output" : "with other strides than bias[channel]");
    return TTC_OK;
}

ttc_status ttc_native_launch(const ttc_engine_view *e, const ttc_plan *p, int32_t ki, ttc_queue *q,
                             const ttc_exec_bufs *b, ttc_buf *scratch, ttc_event **ev) {
    const ttc_kspec *ks = &e->cg->kernels[ki];
    const ttc_kop *op = &e->k->ops[ks->op];
    native_call c;
    memset(&c, 0, sizeof c);
    c.kind = ks->native;
    c.trans_b = op->kind == TTC_KOP_GEMM && op->p.gemm.trans_b;
    c.owner = e;
    c.ki = ki;
    c.threads = ttc_kir_target(e->k)->step_threads;
    c.wino = ttc_kir_target(e->k)->conv_winograd;
    c.w_const = (op->kind == TTC_KOP_CONV2D || op->kind == TTC_KOP_GEMM || op->kind == TTC_KOP_QGEMM) &&
                p->res[op->in[1]].root == TTC_ROOT_CONST;
    if (c.kind == NATIVE_GEMM || c.kind == NATIVE_WQ) c.gemm_dnnl = gemm_lib(ttc_kir_target(e->k)->native_gemm, op, c.w_const);
    if (c.kind == NATIVE_GEMM) {
        /* a linear's weight [N, K] in place: the GEMV reads its rows */
        int32_t gr = ttc_kir_target(e->k)->native_gemv;
        if (c.trans_b && c.w_const) c.gemv_rows = gr < 0 ? 0 : gr > TTC_GEMV_MAX_M ? TTC_GEMV_MAX_M : gr;
    }
    for (int32_t a = 0; a < ks->n_native_args && a < NATIVE_MAX_ARGS; a++) c.v[a] = p->argv[ki][a];
    ttc_buf *bufs[TTC_NATIVE_MAX_MEMS] = {NULL};
    int32_t n_bufs = c.kind == NATIVE_EW ? 1 : c.kind == NATIVE_POOL || c.kind == NATIVE_RED ? 2 : c.kind == NATIVE_NORM ? 4
                   : c.kind == NATIVE_ATTN ? 4 + (op->in[3] >= 0) : c.kind == NATIVE_CAT ? 1 + op->p.concat.n : c.kind == NATIVE_WQ ? 5
                   : c.kind == NATIVE_KV ? 6 : c.kind == NATIVE_QCONV ? 6 : 3;   /* NATIVE_SLOT: x, slots, cache (+ the flag below) */
    c.red_max = c.kind == NATIVE_RED && op->p.red.kind == TTC_RED_MAX;
    if (c.kind == NATIVE_NORM) {
        c.eps = (float)op->p.norm.eps;
        c.rms = op->p.norm.rms;
    }
    if (c.kind == NATIVE_CAT) {
        c.cat_n = op->p.concat.n;
        c.cat_dim = op->p.concat.dim + 4 - e->k->ts[op->out].rank;
        c.cat_neg = op->p.concat.neg;
    }
    for (int32_t i = 0; i < n_bufs; i++)  /* buffers sit at argument slots 0, 2, 4, ... in every layout */
        bufs[i] = ttc_exec_buf(p, (int32_t)c.v[2 * i], b);
    if (c.kind == NATIVE_ATTN) {
        attn_shape(op, c.v, &c.attn);
        c.attn.threads = c.threads;
        c.attn.dnnl = ttc_kir_target(e->k)->native_attn_dnnl && ttc_dnnl_gemm_available();
        c.attn.owner = e;
        c.attn.ki = ki;
        c.mask_bool = op->in[3] >= 0 && e->k->ts[op->in[3]].dtype == TTC_DTYPE_BOOL;
    }
    if (c.kind == NATIVE_KV) {
        ttc_native_kv_shape *kv = &c.kv;
        const ttc_et *kc = &e->k->ts[op->in[1]];
        kv->b = c.v[KV_B];
        kv->s = c.v[KV_S];
        kv->hq = e->k->ts[op->in[0]].dims[1].add;   /* static (the converter's check) */
        kv->l = kc->dims[2].add;
        kv->e = op->p.kva.e;
        kv->ev = op->p.kva.ev;
        kv->group = op->p.kva.group;
        for (int i = 0; i < 4; i++) {
            kv->qs[i] = c.v[KV_QS + i];
            kv->ks[i] = c.v[KV_KS + i];
            kv->vs[i] = c.v[KV_VS + i];
        }
        kv->sls = c.v[KV_SLS];
        kv->kms[0] = c.v[KV_MS];
        kv->kms[1] = c.v[KV_MS + 1];
        kv->slots64 = e->k->ts[op->in[3]].dtype == TTC_DTYPE_INT64;
        kv->scale = (float)op->p.kva.scale;
        kv->softcap = (float)op->p.kva.softcap;
        kv->window = op->p.kva.window;
        kv->threads = c.threads;
    }
    if (c.kind == NATIVE_SLOT) {
        for (int i = 0; i < 4; i++) {
            c.slot.dims[i] = c.v[SW_DIMS + i];
            c.slot.xs[i] = c.v[SW_XS + i];
        }
        c.slot.l = c.v[SW_L];
        c.slot.sls = c.v[SW_SLS];
        c.slot.slots64 = e->k->ts[op->in[1]].dtype == TTC_DTYPE_INT64;
        c.slot.err_code = (int32_t)(op - e->k->ops) + 1;   /* as the OpenCL kernel's: the op's number */
    }
    if (c.kind == NATIVE_QCONV) {
        if (!ttc_qconv_plan_op(e->k, op, &c.qplan))
            return ttc_fail(TTC_ERR_INTERNAL, "native %s: the int8 layer's epilogue has no plan at launch", op->name);
        const int64_t *v = c.v;
        ttc_qconv_shape qs = {v[QA_N], v[QA_C], v[QA_H], v[QA_W_], v[QA_OC], v[QA_OH], v[QA_OW], v[QA_G], v[QA_KH],
                              v[QA_KW], v[QA_SH], v[QA_SW], v[QA_PH], v[QA_PW], v[QA_DH], v[QA_DW],
                              op->kind == TTC_KOP_QCONV2D ? op->p.qconv.a_zp : op->p.qgemm.a_zp,
                              e->k->ts[op->in[0]].dtype, e->k->ts[op->out].dtype, -1,
                              ttc_native_nhwc(e, op->in[0]), ttc_native_nhwc(e, op->out), 0};
        if (c.qplan.res_leaf >= 0) {
            int32_t r = op->epi.leaves[c.qplan.res_leaf];
            qs.r_dt = e->k->ts[r].dtype;
            qs.r_nhwc = ttc_native_nhwc(e, r);
        }
        c.qs = qs;
        char what[160];
        snprintf(what, sizeof what, "%s: %s", ks->name, op->name ? op->name : "");
        return ttc_queue_host_task(q, native_run, &c, sizeof c, bufs, n_bufs, what, ev);
    }
    if (c.kind == NATIVE_CONV || c.kind == NATIVE_POOL) {
        c.x_nhwc = ttc_native_nhwc(e, op->in[0]);
        c.y_nhwc = ttc_native_nhwc(e, op->out);
        c.chans = p->res[op->in[0]].shape[1];
        ttc_dtype xd = e->k->ts[op->in[0]].dtype;
        c.pool_q8 = c.kind == NATIVE_POOL ? (xd == TTC_DTYPE_UINT8 ? 1 : xd == TTC_DTYPE_INT8 ? 2 : 0) : 0;
    }
    c.scratch_slot = -1;
    if (c.kind == NATIVE_SLOT && b->errf) {   /* the flag rides in the scratch slot */
        c.scratch_slot = (int8_t)n_bufs;
        bufs[n_bufs++] = b->errf;
    }
    if ((c.kind == NATIVE_CONV && conv_scratch(c.v, c.x_nhwc, c.y_nhwc) > 0) || c.kind == NATIVE_ATTN) {
        if (!scratch) return ttc_fail(TTC_ERR_INTERNAL, "native %s: no scratch buffer", op->name);
        c.scratch_slot = (int8_t)n_bufs;
        bufs[n_bufs++] = scratch;
    }
    if (c.kind == NATIVE_QMM) {
        const int64_t *v = c.v;
        c.qm = (ttc_qmm_shape){v[QM_M], v[QM_N], v[QM_K], {v[QM_SA0], v[QM_SA1]}, {v[QM_SB0], v[QM_SB1]},
                               e->k->ts[op->out].dtype == TTC_DTYPE_FLOAT32};
        if (op->epi.n > 0 && !ks->native_epi)
            TTC_TRY(ttc_native_epi_bind_from(e, p, ki, &c.epi, bufs, &n_bufs, b, qmm_start(op)));
    } else if (ks->native_post) {
        c.post = ttc_native_post_plan(e->k, op, &c.pp);
        if (!c.post) return ttc_fail(TTC_ERR_INTERNAL, "native %s: no post-op plan at launch", op->name);
        TTC_TRY(ttc_native_epi_bind_from(e, p, ki, &c.epi, bufs, &n_bufs, b, c.pp.split));
        TTC_TRY(post_bias_check(op, &c));
    } else if (op->epi.n > 0 && !ks->native_epi) {
        TTC_TRY(ttc_native_epi_bind(e, p, ki, &c.epi, bufs, &n_bufs, b));
    }
    /* after the bias checks above, which read the logical strides */
    if (ks->native_post || (op->epi.n > 0 && !ks->native_epi)) ttc_native_layout_epi(e, op, &c.epi);
    char what[160];
    snprintf(what, sizeof what, "%s: %s", ks->name, op->name ? op->name : "");
    return ttc_queue_host_task(q, native_run, &c, sizeof c, bufs, n_bufs, what, ev);
}

void ttc_native_forget(const ttc_engine_view *e) {
    ttc_dnnl_forget(e);
    ttc_qconv_forget(e);
    ttc_qmm_forget(e);
    ttc_dnnl_gemm_forget(e);
}
