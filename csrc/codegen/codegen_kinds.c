/* The kernel kinds: one row each, everything the code generator and the engine decide by
 * an op's kind (see codegen.h, ttc_kind_row; csrc/codegen/README.md says how to add one).
 * Designated by kind, so that kinds added by different changes cannot shift each other's
 * rows; the static assert makes a new kind in kir.h ask for its row. */
#include "codegen_impl.h"

#define ROW(kind, nm, fn, rule, nat) [TTC_KOP_##kind] = {nm, fn, TTC_LAUNCH_##rule, nat}

static const ttc_kind_row rows[] = {
    ROW(ELEMENTWISE, "elementwise", ttc_gen_elementwise, OUT, true),   /* backend/cpu/native_ops.c says which */
    ROW(GEMM, "gemm", ttc_gen_gemm, OWN, true),
    ROW(CONV2D, "conv2d", ttc_gen_conv, OWN, true),
    ROW(REDUCE, "reduce", ttc_gen_reduce, OUT, true),    /* native: row max/min (native_reduce.h); the GPU row kernel sets its own */
    ROW(SOFTMAX, "softmax", ttc_gen_softmax, OWN, false),
    ROW(NORM, "norm", ttc_gen_norm, OWN, true),   /* backend/cpu/native_ops.c: image-shaped layer norms */
    ROW(POOL, "pool", ttc_gen_pool, OWN, true),
    ROW(GATHER, "gather", ttc_gen_gather, OUT, false),
    ROW(COPY, "copy", NULL, OWN, false),                 /* reserved: copies are ELEMENTWISE ops */
    ROW(CONCAT, "concat", ttc_gen_concat, OUT, true),   /* native between native ops */
    ROW(PAD, "pad", ttc_gen_pad, OUT, false),
    ROW(INDEX, "index", ttc_gen_index, OUT, false),
    ROW(RESIZE, "resize", ttc_gen_resize, OUT, false),
    ROW(ATTENTION, "attention", ttc_gen_attention, OWN, true),    /* one work-item per query row */
    ROW(CONV_TRANSPOSE, "conv_transpose", ttc_gen_conv_transpose, OWN, false),
    ROW(SORT, "sort", ttc_gen_sort, OWN, false),                  /* one work-item per input element */
    ROW(SCATTER, "scatter", ttc_gen_scatter, OUT, false),
    ROW(SCAN, "scan", ttc_gen_scan, OUT, false),
    ROW(SLOT_WRITE, "slot_write", ttc_gen_slot_write, OWN, true),       /* one work-item per new element; native: backend/cpu/native_kv.c */
    ROW(KV_ATTENTION, "kv_attention", ttc_gen_kv_attention, OWN, true),  /* a work-group per query row (or range); native: backend/cpu/native_kv.c */
    ROW(KV_REDUCE, "kv_reduce", ttc_gen_kv_reduce, OWN, false),         /* one work-item per output element */
    ROW(QGEMM, "qgemm", ttc_gen_qgemm, OUT, true),                      /* one work-item per output element; native: oneDNN int8 (native_qconv.c) */
    ROW(WQ_LINEAR, "wq_linear", ttc_gen_wq_linear, OWN, true),          /* codegen_wq.c; native: backend/cpu/native_wq.c */
    ROW(QCONV2D, "qconv2d", ttc_gen_qconv2d, OUT, true),                /* one work-item per output element; native: oneDNN int8 (native_qconv.c) */
};
_Static_assert(sizeof rows / sizeof rows[0] == TTC_KOP_KIND_COUNT, "a kernel kind of kir.h has no row in codegen_kinds.c");

const ttc_kind_row *ttc_codegen_kind_row(ttc_kop_kind kind) {
    return (unsigned)kind < TTC_KOP_KIND_COUNT && rows[kind].name ? &rows[kind] : NULL;
}

const char *ttc_codegen_kind_name(ttc_kop_kind kind) {
    const ttc_kind_row *r = ttc_codegen_kind_row(kind);
    return r ? r->name : "?";
}
