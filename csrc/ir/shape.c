/*
 * Shape inference: output types of an op from its input types and constant arguments, with
 * dims affine in one symbol (ttc_dim). Used by the verifier (types must agree) and by passes
 * that create nodes.
 *
 *   ttc_type out;
 *   ttc_status s = ttc_infer_types(g, node, &out, 1);
 *   // TTC_ERR_UNSUPPORTED: no shape rule, non-constant arguments, or a result that is
 *   //   not affine in one symbol (e.g. s0*s1); callers keep the declared type.
 *   // TTC_ERR_INVALID_ARG: the inputs are definitely ill-typed (e.g. mm of 2x3 and 4x5).
 *
 * Which rule an op has is the shape column of its ops.def row; the rules live by family in
 * shape_elementwise.c, shape_reduce.c, shape_nn.c and shape_movement.c (shape_internal.h).
 */
#include "shape_internal.h"

/* The rule of ops whose row says `none`: their output types stay as imported. */
ttc_status ttc_shape_none(const ttc_graph *g, const ttc_node *n, ttc_type *out, int32_t n_out) {
    return UNSUP(n, "no shape function");
}

static const ttc_shape_fn rules[TTC_OP_COUNT] = {
#define TTC_OP(id, name, n_in, n_out, flags, shape, conv) [TTC_OP_##id] = ttc_shape_##shape,
#include "ops.def"
#undef TTC_OP
};

ttc_status ttc_infer_types(const ttc_graph *g, const ttc_node *n, ttc_type *out, int32_t n_out) {
    if (!g || !n || (n_out && !out)) return ttc_fail(TTC_ERR_INVALID_ARG, "infer_types: NULL argument");
    if (n->op >= TTC_OP_COUNT) return ttc_fail(TTC_ERR_UNSUPPORTED, "%s: opaque op", n->op_name);
    const ttc_op_info *info = ttc_op_info_get(n->op);
    if ((info->n_inputs >= 0 && n->n_inputs != info->n_inputs) || (info->n_outputs >= 0 && n_out != info->n_outputs))
        return ttc_fail(TTC_ERR_INVALID_ARG, "%s: wrong arity", n->op_name);
    if (n_out == 0) return TTC_OK;
    for (int i = 0; i < n->n_inputs; i++)
        if (!n->inputs[i]) return ttc_fail(TTC_ERR_INVALID_ARG, "%s: input %d is NULL", n->op_name, i);
    for (int i = 0; i < n_out; i++) out[i] = ttc_type_scalar(TTC_TYPE_ANY);
    ttc_status s = rules[n->op](g, n, out, n_out);
    if (s == TTC_OK && n_out >= 1 && info->n_outputs == 1 && out[0].kind == TTC_TYPE_TENSOR) {
        /* results must be valid types (e.g. a dim that went negative is an ill-typed input) */
        for (int i = 0; i < out[0].rank; i++)
            if (out[0].dims[i].sym < 0 && out[0].dims[i].add < 0)
                return ttc_fail(TTC_ERR_INVALID_ARG, "%s: output dim %d would be negative", n->op_name, i);
    }
    return s;
}

bool ttc_op_has_shape_rule(ttc_op_id op) {
    return (unsigned)op < TTC_OP_COUNT && rules[op] != ttc_shape_none;
}
