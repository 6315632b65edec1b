/*
 * Epilogues applied inside a native GEMM/convolution call (backend/cpu/native_epi.c).
 *
 * A native op's epilogue (bias, BN scale/shift, relu, residual add, ...) otherwise runs as a
 * separate OpenCL kernel reading the library's result back. On PoCL each switch between a
 * native command and an OpenCL kernel costs a launch and a hand-over between threads, which
 * on ResNet-18 took as long as all the convolutions. Epilogues made only of cheap float32
 * steps (no transcendental functions: those stay OpenCL kernels, which PoCL vectorises) are
 * evaluated in C right after the library call, over the output in tiles.
 *
 *   codegen:  ks->native_epi = op->epi.n > 0 && !ttc_native_epi_ok(k, op, ks->args, n_store_args);
 *   launch:   ttc_native_epi_bind(e, p, ki, &epi, bufs, &n_bufs, exec_bufs);
 *   run:      ttc_native_epi_apply(&epi, mems, y);
 */
#ifndef TTC_ENGINE_NATIVE_EPI_H
#define TTC_ENGINE_NATIVE_EPI_H

#include "../../codegen/plan.h"
#include "../backend.h"

#define TTC_NATIVE_MAX_MEMS (4 + TTC_EXPR_MAX_LEAVES)

typedef struct ttc_native_epi {
    bool on;
    const ttc_expr *expr;     /* the op's epilogue (lives as long as the engine) */
    int32_t rank;
    int64_t n;                /* output elements */
    int64_t dims[TTC_MAX_RANK];
    int32_t n_leaves;
    int8_t slot[TTC_EXPR_MAX_LEAVES];   /* leaf l's buffer: index into the call's slots */
    bool dense[TTC_EXPR_MAX_LEAVES];    /* laid out like the output */
    int64_t off[TTC_EXPR_MAX_LEAVES];
    int8_t leaf_q8[TTC_EXPR_MAX_LEAVES];   /* 0: float32 leaf; 1 / 2: uint8 / int8 (8-bit outputs only) */
    int64_t strides[TTC_EXPR_MAX_LEAVES][TTC_MAX_RANK];
    /* start >= 0: the library already computed node `start` (oneDNN post-ops) and y holds it;
     * only the nodes in `live` (bit i: node i) are evaluated, leaves in `live_leaves` gathered */
    int32_t start;
    uint32_t live, live_leaves;
    int32_t threads;          /* the target's step_threads (tiles split among them when many) */
    int8_t out_q8;            /* 0: y is float32; 1 / 2: uint8 / int8 (an elementwise op whose root
                               * is the 8-bit cast of a quantize), y then that type's pointer */
} ttc_native_epi;

/* Codegen: whether op's epilogue runs inside the native call. store_args: the store function's
 * n_store arguments (output, [output dims], per leaf buffer, offset, [strides]). False where
 * TORCHTRT_C_NATIVE_EPI=0 (read at build), a leaf or step is not float32, or a step is not
 * cheap (see above). */
bool ttc_native_epi_ok(const ttc_kir *k, const ttc_kop *op, const ttc_argspec *store_args, int32_t n_store);
/* The expression part of ttc_native_epi_ok (no store arguments yet): an ELEMENTWISE op that
 * passes runs as a native call (backend/cpu/native_ops.c); it must not read acc. */
bool ttc_native_epi_expr_ok(const ttc_kir *k, const ttc_kop *op);
/* The same for the part of the epilogue after node `start`, whose value the library call
 * leaves in the output: the nodes the root needs past `start` are cheap, and those before it
 * that they read are leaves or constants. */
bool ttc_native_epi_ok_from(const ttc_kir *k, const ttc_kop *op, const ttc_argspec *store_args, int32_t n_store,
                            int32_t start);
/* Launch: fills epi for kernel ki (whose epilogue ttc_native_epi_ok accepted) from the plan,
 * appending the leaves' buffers to slots (*n_slots grows; the host task's buffers). */
ttc_status ttc_native_epi_bind(const ttc_engine_view *e, const ttc_plan *p, int32_t ki, ttc_native_epi *epi, ttc_buf **slots,
                               int32_t *n_slots, const ttc_exec_bufs *b);
/* Bind with the library having computed node `start` (ttc_native_epi_ok_from accepted it):
 * every leaf gets its slot (the library may read one: a bias), only live ones are gathered;
 * epi->on stays false when nothing is left to do (start is the root). */
ttc_status ttc_native_epi_bind_from(const ttc_engine_view *e, const ttc_plan *p, int32_t ki, ttc_native_epi *epi,
                                    ttc_buf **slots, int32_t *n_slots, const ttc_exec_bufs *b, int32_t start);
/* Run (inside the native function): y[i] = epilogue(y[i], leaves at i) for every output
 * element; mems: host pointers by slot. With out_q8, y points at the 8-bit output (cast). */
void ttc_native_epi_apply(const ttc_native_epi *epi, void *const *mems, float *y);

#endif
