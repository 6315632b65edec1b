/*
 * Converters for data movement, indexing, creation, resizing, attention and the
 * reductions beyond sum/mean (declared by converters.h from ops.def), and their shared checks.
 *
 *   conv_movement.c   cat, stack, split.Tensor, split_with_sizes, chunk, unbind, constant_pad_nd
 *   conv_index.c      embedding, index_select, gather, index.Tensor
 *   conv_create.c     arange (3 overloads), full, zeros, ones, *_like, scalar_tensor
 *   conv_resize.c     upsample_nearest2d.vec, upsample_bilinear2d.vec
 *   conv_attention.c  scaled_dot_product_attention (one fused kernel)
 *   conv_select.c     sort (2 overloads), topk, scatter.src/value, index_put
 *   conv_reduce_multi.c  max.dim, var_mean.correction
 *
 * Example (ops.def):  TTC_OP(CAT, "aten.cat.default", 2, 1, 0, cat, CONV(cat, cat))
 */
#ifndef TTC_CONVERTERS_DATA_H
#define TTC_CONVERTERS_DATA_H

#include "converters.h"

/* Shared checks (conv_movement.c): a tensor type of known rank and an engine dtype. */
bool ttc_data_type_ok(const ttc_type *t, const char *what, char **why_not);
/* The node's output i is a tensor of known rank with an engine dtype. */
bool ttc_data_output_ok(const ttc_node *n, int32_t i, char **why_not);

#endif
