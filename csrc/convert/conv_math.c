/* Elementwise math added for issue 11 (converters A): bitwise and/or/xor, inverse and
 * hyperbolic trigonometry, expm1/log1p/log10/log2, trunc, isinf/isnan, atan2, fmod and
 * remainder. Each is one expression node (codegen/codegen_spell.c spells them), so they fuse like
 * the ops of conv_elementwise.c. Dtypes follow the IR's output type, which torch's type
 * promotion produced: int and bool operands of a floating op are cast to float first. */
#include "converters.h"

#include <stdlib.h>

static bool is_float(ttc_dtype d) {
    return d == TTC_DTYPE_FLOAT32 || d == TTC_DTYPE_FLOAT16 || d == TTC_DTYPE_FLOAT64 || d == TTC_DTYPE_BFLOAT16;
}

static ttc_dtype compute_dt(ttc_dtype d) { return is_float(d) ? TTC_DTYPE_FLOAT32 : d; }

typedef struct { ttc_op_id op; ttc_eop eop; } math_map;

static const math_map unary[] = {
    {TTC_OP_ACOS, TTC_EOP_ACOS}, {TTC_OP_ACOSH, TTC_EOP_ACOSH}, {TTC_OP_ASIN, TTC_EOP_ASIN},
    {TTC_OP_ASINH, TTC_EOP_ASINH}, {TTC_OP_ATAN, TTC_EOP_ATAN}, {TTC_OP_ATANH, TTC_EOP_ATANH},
    {TTC_OP_COSH, TTC_EOP_COSH}, {TTC_OP_SINH, TTC_EOP_SINH}, {TTC_OP_TAN, TTC_EOP_TAN},
    {TTC_OP_EXPM1, TTC_EOP_EXPM1}, {TTC_OP_LOG10, TTC_EOP_LOG10}, {TTC_OP_LOG1P, TTC_EOP_LOG1P},
    {TTC_OP_LOG2, TTC_EOP_LOG2}, {TTC_OP_TRUNC, TTC_EOP_TRUNC}, {TTC_OP_ISINF, TTC_EOP_ISINF},
    {TTC_OP_ISNAN, TTC_EOP_ISNAN},
};

static const math_map binary[] = {
    {TTC_OP_BITAND_TENSOR, TTC_EOP_BITAND}, {TTC_OP_BITAND_SCALAR, TTC_EOP_BITAND},
    {TTC_OP_BITOR_TENSOR, TTC_EOP_BITOR}, {TTC_OP_BITOR_SCALAR, TTC_EOP_BITOR},
    {TTC_OP_BITXOR_TENSOR, TTC_EOP_BITXOR}, {TTC_OP_BITXOR_SCALAR, TTC_EOP_BITXOR},
    {TTC_OP_ATAN2, TTC_EOP_ATAN2}, {TTC_OP_FMOD_TENSOR, TTC_EOP_FMOD}, {TTC_OP_FMOD_SCALAR, TTC_EOP_FMOD},
    {TTC_OP_REMAINDER_TENSOR, TTC_EOP_REMAINDER}, {TTC_OP_REMAINDER_SCALAR, TTC_EOP_REMAINDER},
};

static ttc_eop lookup(const math_map *m, size_t n, ttc_op_id op) {
    for (size_t i = 0; i < n; i++)
        if (m[i].op == op) return m[i].eop;
    return TTC_EOP_COUNT;
}

static bool is_bitwise(ttc_eop e) { return e == TTC_EOP_BITAND || e == TTC_EOP_BITOR || e == TTC_EOP_BITXOR; }

ttc_status ttc_convert_math_unary(ttc_conv_ctx *cx, const ttc_node *n) {
    ttc_eop eop = lookup(unary, sizeof unary / sizeof unary[0], n->op);
    if (eop == TTC_EOP_COUNT) return ttc_fail(TTC_ERR_INTERNAL, "no math mapping for %s", n->op_name);
    ttc_dtype od = n->outputs[0]->type.dtype;
    /* isinf/isnan test the input in its own category; the rest compute in the output's */
    ttc_dtype ct = eop == TTC_EOP_ISINF || eop == TTC_EOP_ISNAN ? compute_dt(n->inputs[0]->type.dtype) : compute_dt(od);
    ttc_dtype rd = eop == TTC_EOP_ISINF || eop == TTC_EOP_ISNAN ? TTC_DTYPE_BOOL : ct;
    ttc_expr e;
    ttc_expr_init(&e);
    ttc_status st = TTC_OK;
    int32_t a = ttc_ew_operand(cx, n, 0, &e, ct, &st);
    if (a < 0) { ttc_expr_free(&e); return st ? st : TTC_ERR_NOMEM; }
    return ttc_ew_finish(cx, n, &e, ttc_expr_op(&e, eop, a, -1, -1, rd));
}

ttc_status ttc_convert_math_binary(ttc_conv_ctx *cx, const ttc_node *n) {
    ttc_eop eop = lookup(binary, sizeof binary / sizeof binary[0], n->op);
    if (eop == TTC_EOP_COUNT) return ttc_fail(TTC_ERR_INTERNAL, "no math mapping for %s", n->op_name);
    ttc_dtype od = n->outputs[0]->type.dtype, ct = compute_dt(od);
    ttc_expr e;
    ttc_expr_init(&e);
    ttc_status st = TTC_OK;
    int32_t a = ttc_ew_operand(cx, n, 0, &e, ct, &st);
    int32_t b = a < 0 ? -1 : ttc_ew_operand(cx, n, 1, &e, ct, &st);
    if (a < 0 || b < 0) { ttc_expr_free(&e); return st ? st : TTC_ERR_NOMEM; }
    /* torch rounds a Python divisor to a 16-bit output dtype first (it computes fmod(x, 0.7)
     * of bfloat16 x with 0.69921875); these ops jump by a whole period where that matters */
    if ((eop == TTC_EOP_FMOD || eop == TTC_EOP_REMAINDER) && e.nodes[b].op == TTC_EOP_CONST)
        e.nodes[b].f = ttc_round_to_dtype(e.nodes[b].f, od);
    return ttc_ew_finish(cx, n, &e, ttc_expr_op(&e, eop, a, b, -1, ct));
}

bool ttc_validate_math(const ttc_graph *g, const ttc_node *n, bool fp16, char **why_not) {
    if (!ttc_validate_elementwise(g, n, fp16, why_not)) return false;
    ttc_eop eop = lookup(binary, sizeof binary / sizeof binary[0], n->op);
    if (is_bitwise(eop) && is_float(n->outputs[0]->type.dtype)) {
        if (why_not) *why_not = ttc_strdup("bitwise op on floating operands (torch rejects it too)");
        return false;
    }
    return true;
}
