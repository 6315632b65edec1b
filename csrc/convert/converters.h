/*
 * Declarations of every converter and validator; registry.c puts them in the table.
 * One file per family: conv_elementwise.c, conv_matmul.c, conv_shape.c, conv_nn.c,
 * conv_reduce.c. A converter reads arguments with ttc_cx_* and emits kernel IR.
 */
#ifndef TTC_CONVERTERS_H
#define TTC_CONVERTERS_H

#include "convert.h"

#define TTC_DECLARE_CONVERTER(fn) ttc_status fn(ttc_conv_ctx *cx, const ttc_node *n)
#define TTC_DECLARE_VALIDATOR(fn) bool fn(const ttc_graph *g, const ttc_node *n, bool fp16, char **why_not)

/* conv_elementwise.c */
TTC_DECLARE_CONVERTER(ttc_convert_unary);
TTC_DECLARE_CONVERTER(ttc_convert_binary);
TTC_DECLARE_CONVERTER(ttc_convert_div_mode);
TTC_DECLARE_CONVERTER(ttc_convert_activation);
TTC_DECLARE_CONVERTER(ttc_convert_where);
TTC_DECLARE_CONVERTER(ttc_convert_cast);
TTC_DECLARE_VALIDATOR(ttc_validate_elementwise);
int32_t ttc_ew_operand(ttc_conv_ctx *cx, const ttc_node *n, int32_t i, ttc_expr *e, ttc_dtype ct, ttc_status *st);
ttc_status ttc_ew_finish(ttc_conv_ctx *cx, const ttc_node *n, ttc_expr *e, int32_t root);

/* conv_math.c (issue 11, converters A): bitwise, inverse/hyperbolic trig, log/exp variants,
 * trunc, isinf/isnan, atan2, fmod, remainder; conv_scan.c: cumsum; sym_numel */
TTC_DECLARE_CONVERTER(ttc_convert_math_unary);
TTC_DECLARE_CONVERTER(ttc_convert_math_binary);
TTC_DECLARE_VALIDATOR(ttc_validate_math);
TTC_DECLARE_CONVERTER(ttc_convert_cumsum);
TTC_DECLARE_VALIDATOR(ttc_validate_cumsum);
TTC_DECLARE_VALIDATOR(ttc_validate_sym_numel);

/* conv_matmul.c */
TTC_DECLARE_CONVERTER(ttc_convert_mm);
TTC_DECLARE_CONVERTER(ttc_convert_addmm);
TTC_DECLARE_CONVERTER(ttc_convert_linear);
TTC_DECLARE_CONVERTER(ttc_convert_matmul);
TTC_DECLARE_VALIDATOR(ttc_validate_matmul);

/* conv_shape.c */
TTC_DECLARE_CONVERTER(ttc_convert_reshape);
TTC_DECLARE_CONVERTER(ttc_convert_permute);
TTC_DECLARE_CONVERTER(ttc_convert_expand);
TTC_DECLARE_CONVERTER(ttc_convert_slice);
TTC_DECLARE_CONVERTER(ttc_convert_select);
TTC_DECLARE_CONVERTER(ttc_convert_identity);
TTC_DECLARE_VALIDATOR(ttc_validate_shape);
TTC_DECLARE_VALIDATOR(ttc_validate_sym_size);  /* aten.sym_size.int: evaluated in convert.c */

/* conv_nn.c */
TTC_DECLARE_CONVERTER(ttc_convert_conv);
TTC_DECLARE_VALIDATOR(ttc_validate_conv);
TTC_DECLARE_CONVERTER(ttc_convert_batch_norm);
TTC_DECLARE_VALIDATOR(ttc_validate_batch_norm);
TTC_DECLARE_CONVERTER(ttc_convert_pool);
TTC_DECLARE_VALIDATOR(ttc_validate_pool);
TTC_DECLARE_CONVERTER(ttc_convert_softmax);
TTC_DECLARE_CONVERTER(ttc_convert_norm);
TTC_DECLARE_VALIDATOR(ttc_validate_norm);

/* conv_transpose.c: aten.convolution, forward (conv_nn.c) or transposed */
TTC_DECLARE_CONVERTER(ttc_convert_convolution);
TTC_DECLARE_VALIDATOR(ttc_validate_convolution);

/* conv_reduce.c */
TTC_DECLARE_CONVERTER(ttc_convert_reduce);
TTC_DECLARE_VALIDATOR(ttc_validate_reduce);

#endif
