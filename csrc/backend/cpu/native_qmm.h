/*
 * aten._int_mm as a native oneDNN int8 matmul (backend/cpu/native_qmm.c).
 *
 * torchao's dynamic int8 linears (Int8DynamicActivationInt8WeightConfig) quantize each row of
 * the activations in the engine and multiply them by the int8 weights through aten._int_mm
 * (int8 x int8 -> int32), a TTC_KOP_QGEMM op with no zero point (convert/conv_quant.c). The
 * portable kernel takes one work-item per output element; on a CPU whose oneDNN loads the op
 * runs instead as oneDNN's matmul s8 x s8 -> s32 (AMX / VNNI int8 kernels; measured on this
 * machine's Sapphire Rapids with oneDNN 2.6: s8 activations directly, no u8 shift and
 * compensation needed: bench/RESULTS.md), the sums exact as torch's. Where the op's epilogue
 * converts the sums to float (the dynamic scales, the bias, an activation), the matmul writes
 * float32 (each int32 sum rounded to nearest even, as torch's .to(float32)) and the rest of the
 * epilogue runs after it (native_epi.c, or an OpenCL kernel). Constant weights are reordered
 * once per engine kernel into the primitive's blocked layout and kept.
 *
 *   ttc_qmm_shape s = {M, N, K, {A's row, column strides}, {B's row, column strides}, y_f32};
 *   ttc_qmm_run(engine, ki, &s, A, B, b_const, C);   // oneDNN, or plain C where it refuses
 *   ...
 *   ttc_qmm_forget(engine);
 */
#ifndef TTC_BACKEND_CPU_NATIVE_QMM_H
#define TTC_BACKEND_CPU_NATIVE_QMM_H

#include <stdbool.h>
#include <stdint.h>

typedef struct ttc_qmm_shape {
    int64_t m, n, k;
    int64_t sa[2];   /* A [M, K]: element strides of its rows and columns */
    int64_t sb[2];   /* B [K, N]: likewise (a linear's [N, K] weight read transposed: {1, K}) */
    int64_t y_f32;   /* 1: C float32 (each sum converted as torch converts int32), 0: C int32 */
} ttc_qmm_shape;

/* Whether oneDNN's int8 matmul can be called (the library loads; TORCHTRT_C_NATIVE_CONV does
 * not matter). */
bool ttc_qmm_available(void);
/* C [M, N] (dense) = A [M, K] x B [K, N], int8 operands at s's strides, as kernel ki of engine
 * owner; b_const: B never changes for this owner (its reordered copy is kept). Through oneDNN
 * where it takes the shape with a kernel of its own (not its reference one), else plain C. */
void ttc_qmm_run(const void *owner, int32_t ki, const ttc_qmm_shape *s, const int8_t *A, const int8_t *B,
                 bool b_const, void *C);
/* The plain C path alone (tests). */
void ttc_qmm_run_ref(const ttc_qmm_shape *s, const int8_t *A, const int8_t *B, void *C);
/* Calls that went through oneDNN in this process so far (tests, reports). */
int64_t ttc_qmm_dnnl_calls(void);
/* Drops the primitives and weight copies kept for owner. */
void ttc_qmm_forget(const void *owner);

#endif
