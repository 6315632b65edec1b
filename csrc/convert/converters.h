/*
 * Declarations of every converter and validator, generated from the op table (ops.def):
 * CONV(foo, bar) in a row declares ttc_convert_foo and ttc_validate_bar, registry.c puts
 * them in the table. A converter reads arguments with ttc_cx_* and emits kernel IR. One
 * file per family (converters_data.h lists the data-movement ones):
 *
 *   conv_elementwise.c  unary, binary, div_mode, activation, where, cast; validator elementwise
 *   conv_math.c         math_unary, math_binary (bitwise, inverse/hyperbolic trig, fmod, ...)
 *   conv_scan.c         cumsum; sym_numel (evaluated)
 *   conv_matmul.c       mm, addmm, linear, matmul
 *   conv_shape.c        reshape, permute, expand, slice, select, identity; validators shape,
 *                       dropout, sym_size
 *   conv_nn.c           conv, batch_norm, pool, softmax, norm; conv_transpose.c: convolution
 *   conv_reduce.c       reduce
 *   conv_quant.c        quantize, dequantize (PT2E Q/DQ), int_mm; validators qdq, int_mm
 */
#ifndef TTC_CONVERTERS_H
#define TTC_CONVERTERS_H

#include "convert.h"

#define TTC_DECLARE_CONVERTER(fn) ttc_status fn(ttc_conv_ctx *cx, const ttc_node *n)
#define TTC_DECLARE_VALIDATOR(fn) bool fn(const ttc_graph *g, const ttc_node *n, bool fp16, char **why_not)

/* Helpers shared by the elementwise families (conv_elementwise.c). */
int32_t ttc_ew_operand(ttc_conv_ctx *cx, const ttc_node *n, int32_t i, ttc_expr *e, ttc_dtype ct, ttc_status *st);
ttc_status ttc_ew_finish(ttc_conv_ctx *cx, const ttc_node *n, ttc_expr *e, int32_t root);

/* Every converter and validator the converter column of ops.def names, so that each
 * definition is checked against its table's signature. */
#define CONV(c, v) TTC_DECLARE_CONVERTER(ttc_convert_##c); TTC_DECLARE_VALIDATOR(ttc_validate_##v);
#define CONV_STATIC(c, v) CONV(c, v)
#define EVAL(v) TTC_DECLARE_VALIDATOR(ttc_validate_##v);
#define EVAL_ANY
#define NONE
#define NEVER(why)
#define TTC_OP(id, name, n_in, n_out, flags, shape, conv) conv
#include "../ir/ops.def"
#undef TTC_OP
#undef CONV
#undef CONV_STATIC
#undef EVAL
#undef EVAL_ANY
#undef NONE
#undef NEVER

#endif
