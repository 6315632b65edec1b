/*
 * Converters for data movement, indexing, creation, resizing, attention and the
 * reductions beyond sum/mean; registry.c puts them in the table next to converters.h's.
 *
 *   conv_movement.c   cat, stack, split.Tensor, split_with_sizes, chunk, unbind, constant_pad_nd
 *   conv_index.c      embedding, index_select, gather, index.Tensor
 *   conv_create.c     arange (3 overloads), full, zeros, ones, *_like, scalar_tensor
 *   conv_resize.c     upsample_nearest2d.vec, upsample_bilinear2d.vec
 *   conv_attention.c  scaled_dot_product_attention (one fused kernel)
 *   conv_select.c     sort (2 overloads), topk, scatter.src/value, index_put
 *   conv_reduce_multi.c  max.dim, var_mean.correction
 *
 * Example (registry.c):  [TTC_OP_CAT] = {ttc_convert_cat, ttc_validate_cat, TTC_CONVF_DYNAMIC},
 */
#ifndef TTC_CONVERTERS_DATA_H
#define TTC_CONVERTERS_DATA_H

#include "converters.h"

/* Shared checks (conv_movement.c): a tensor type of known rank and an engine dtype. */
bool ttc_data_type_ok(const ttc_type *t, const char *what, char **why_not);
/* The node's output i is a tensor of known rank with an engine dtype. */
bool ttc_data_output_ok(const ttc_node *n, int32_t i, char **why_not);

/* conv_movement.c */
TTC_DECLARE_CONVERTER(ttc_convert_cat);
TTC_DECLARE_CONVERTER(ttc_convert_split);
TTC_DECLARE_CONVERTER(ttc_convert_unbind);
TTC_DECLARE_CONVERTER(ttc_convert_pad);
TTC_DECLARE_VALIDATOR(ttc_validate_cat);
TTC_DECLARE_VALIDATOR(ttc_validate_split);
TTC_DECLARE_VALIDATOR(ttc_validate_pad);

/* conv_index.c */
TTC_DECLARE_CONVERTER(ttc_convert_embedding);
TTC_DECLARE_CONVERTER(ttc_convert_index_select);
TTC_DECLARE_CONVERTER(ttc_convert_gather);
TTC_DECLARE_CONVERTER(ttc_convert_index);
TTC_DECLARE_VALIDATOR(ttc_validate_embedding);
TTC_DECLARE_VALIDATOR(ttc_validate_index_select);
TTC_DECLARE_VALIDATOR(ttc_validate_gather);
TTC_DECLARE_VALIDATOR(ttc_validate_index);

/* conv_create.c */
TTC_DECLARE_CONVERTER(ttc_convert_arange);
TTC_DECLARE_CONVERTER(ttc_convert_full);
TTC_DECLARE_VALIDATOR(ttc_validate_arange);
TTC_DECLARE_VALIDATOR(ttc_validate_full);

/* conv_resize.c */
TTC_DECLARE_CONVERTER(ttc_convert_upsample);
TTC_DECLARE_VALIDATOR(ttc_validate_upsample);

/* conv_reduce_multi.c: two-output reductions (REDUCE kernel pairs) */
TTC_DECLARE_CONVERTER(ttc_convert_max_dim);
TTC_DECLARE_CONVERTER(ttc_convert_var_mean);
TTC_DECLARE_VALIDATOR(ttc_validate_max_dim);
TTC_DECLARE_VALIDATOR(ttc_validate_var_mean);

/* conv_attention.c */
TTC_DECLARE_CONVERTER(ttc_convert_sdpa);
TTC_DECLARE_VALIDATOR(ttc_validate_sdpa);

/* conv_select.c (issue 11: converters B): sort/topk, scatter.src/value, index_put */
TTC_DECLARE_CONVERTER(ttc_convert_sort);
TTC_DECLARE_CONVERTER(ttc_convert_scatter);
TTC_DECLARE_VALIDATOR(ttc_validate_sort);
TTC_DECLARE_VALIDATOR(ttc_validate_scatter);

#endif
