/*
 * Code generation for the data-movement kinds of the kernel IR: concatenation/stacking,
 * constant padding, indexing (embedding, index_select, index.Tensor), torch.gather,
 * nearest/bilinear resizing and fused scaled-dot-product attention.
 *
 * Each kernel reads its inputs through (buffer, offset, per-dim strides) arguments, so views
 * (permutes, slices, expands) are read in place without a copy, and sizes are kernel
 * arguments, so one program serves every shape in the engine's symbol ranges. An epilogue
 * fused into the op is applied through the op's store function; without one the value is
 * written in the output's own type (int64 data is copied exactly).
 *
 *   case TTC_KOP_CONCAT: s = ttc_codegen_data(src, k, op, ks, gpu, P, A_); break;
 */
#ifndef TTC_CODEGEN_CODEGEN_DATA_H
#define TTC_CODEGEN_CODEGEN_DATA_H

#include "codegen.h"

/* Emits kernel ks->name for op (kinds GATHER, CONCAT, PAD, INDEX, RESIZE, ATTENTION, SORT, SCATTER) and
 * appends its arguments to ks. P/A_: the store function's parameters and arguments. */
ttc_status ttc_codegen_data(ttc_sbuf *src, const ttc_kir *k, const ttc_kop *op, ttc_kspec *ks, bool gpu,
                            const char *P, const char *A_);

#endif
