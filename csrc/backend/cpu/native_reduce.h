/*
 * Row max / min as native steps (backend/cpu/native_reduce.c).
 *
 * torchao's dynamic int8 linears choose each row's scale from its max and min
 * (choose_qparams_affine: amax / amin over the row, then the scale in the reduction's epilogue)
 * before quantizing the row for _int_mm. On PoCL those were OpenCL reductions between native
 * steps (BERT-base at 32 x 128 rows: ~30 ms of the 3072-wide FFN rows' each); here a C loop over
 * dense rows on the step threads, its epilogue then in C too (native_epi.c) where it is cheap.
 * NaN propagates as torch's amax/amin do.
 */
#ifndef TTC_BACKEND_CPU_NATIVE_REDUCE_H
#define TTC_BACKEND_CPU_NATIVE_REDUCE_H

#include <stdbool.h>
#include <stdint.h>

/* y[r] = max (is_max) or min of x[r * cols .. r * cols + cols) for r < rows (cols >= 1). */
void ttc_native_row_minmax(const float *x, float *y, int64_t rows, int64_t cols, bool is_max, int32_t threads);

#endif
