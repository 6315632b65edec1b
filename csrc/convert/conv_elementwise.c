/* Converters for elementwise ops: unary math, binary arithmetic with broadcasting and type
 * promotion, comparisons, logical ops, activations, clamps, where/masked_fill and casts.
 * Each emits one ELEMENTWISE kernel op; the fusion pass merges chains of them. */
#include "converters.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static bool is_float(ttc_dtype d) {
    return d == TTC_DTYPE_FLOAT32 || d == TTC_DTYPE_FLOAT16 || d == TTC_DTYPE_FLOAT64 || d == TTC_DTYPE_BFLOAT16;
}

/* The compute dtype of an expression value: floats compute in float (FLOAT32 in the expr). */
static ttc_dtype compute_dt(ttc_dtype d) { return is_float(d) ? TTC_DTYPE_FLOAT32 : d; }

/* Argument i as an expression node in compute dtype ct (a tensor leaf or a literal). */
static int32_t operand(ttc_conv_ctx *cx, const ttc_node *n, int32_t i, ttc_expr *e, ttc_dtype ct,
                       ttc_status *st) {
    if (ttc_cx_is_tensor(cx, n, i)) {
        int32_t t;
        if ((*st = ttc_cx_tensor(cx, n, i, &t)) != TTC_OK) return -1;
        int32_t l = ttc_expr_leaf(e, t, compute_dt(cx->k->ts[t].dtype));
        return ttc_expr_cast(e, l, ct);
    }
    double v;
    if ((*st = ttc_cx_float(cx, n, i, &v)) != TTC_OK) return -1;
    return ttc_expr_const(e, v, ct);
}

/* Dtype of argument i (tensor dtype, or the literal's kind). */
static ttc_dtype arg_dtype(const ttc_node *n, int32_t i) {
    const ttc_value *v = n->inputs[i];
    if (v->type.kind == TTC_TYPE_TENSOR) return v->type.dtype;
    if (v->type.kind == TTC_TYPE_FLOAT) return TTC_DTYPE_FLOAT32;
    if (v->type.kind == TTC_TYPE_BOOL) return TTC_DTYPE_BOOL;
    double f;
    if (ttc_value_const_float(v, &f) && f != floor(f)) return TTC_DTYPE_FLOAT32;
    return TTC_DTYPE_INT64;
}

/* Emits the finished expression as the node's output. */
static ttc_status finish(ttc_conv_ctx *cx, const ttc_node *n, ttc_expr *e, int32_t root) {
    if (root < 0) { ttc_expr_free(e); return ttc_fail(TTC_ERR_NOMEM, "building expression for %s", n->op_name); }
    const ttc_type *ot = &n->outputs[0]->type;
    ttc_dtype store = ttc_cx_float_dtype(cx, ot->dtype);
    if (ttc_expr_cast(e, root, compute_dt(store)) < 0) { ttc_expr_free(e); return TTC_ERR_NOMEM; }
    int32_t t = ttc_kir_elementwise(cx->k, e, store, ot->rank, ot->dims, n->outputs[0]->name);
    if (t < 0) return ttc_fail_context(TTC_ERR_UNSUPPORTED, "node %s", n->name ? n->name : n->op_name);
    return ttc_cx_set_output(cx, n, 0, t);
}

typedef struct { ttc_op_id op; ttc_eop eop; } op_map;

static const op_map unary_map[] = {
    {TTC_OP_NEG, TTC_EOP_NEG}, {TTC_OP_ABS, TTC_EOP_ABS}, {TTC_OP_EXP, TTC_EOP_EXP},
    {TTC_OP_LOG, TTC_EOP_LOG}, {TTC_OP_SQRT, TTC_EOP_SQRT}, {TTC_OP_RSQRT, TTC_EOP_RSQRT},
    {TTC_OP_RECIPROCAL, TTC_EOP_RECIP}, {TTC_OP_SIN, TTC_EOP_SIN}, {TTC_OP_COS, TTC_EOP_COS},
    {TTC_OP_ERF, TTC_EOP_ERF}, {TTC_OP_FLOOR, TTC_EOP_FLOOR}, {TTC_OP_CEIL, TTC_EOP_CEIL},
    {TTC_OP_ROUND, TTC_EOP_ROUND}, {TTC_OP_SIGN, TTC_EOP_SIGN}, {TTC_OP_RELU, TTC_EOP_RELU},
    {TTC_OP_SILU, TTC_EOP_SILU}, {TTC_OP_SIGMOID, TTC_EOP_SIGMOID}, {TTC_OP_TANH, TTC_EOP_TANH},
    {TTC_OP_HARDSWISH, TTC_EOP_HARDSWISH}, {TTC_OP_HARDSIGMOID, TTC_EOP_HARDSIGMOID},
    {TTC_OP_LOG_SIGMOID, TTC_EOP_LOG_SIGMOID}, {TTC_OP_LOGICAL_NOT, TTC_EOP_NOT},
    {TTC_OP_BITWISE_NOT, TTC_EOP_BITNOT}, {TTC_OP_LGAMMA, TTC_EOP_LGAMMA},
};

static const op_map binary_map[] = {
    {TTC_OP_ADD_TENSOR, TTC_EOP_ADD}, {TTC_OP_ADD_SCALAR, TTC_EOP_ADD},
    {TTC_OP_SUB_TENSOR, TTC_EOP_SUB}, {TTC_OP_SUB_SCALAR, TTC_EOP_SUB},
    {TTC_OP_RSUB_SCALAR, TTC_EOP_SUB},
    {TTC_OP_MUL_TENSOR, TTC_EOP_MUL}, {TTC_OP_MUL_SCALAR, TTC_EOP_MUL},
    {TTC_OP_DIV_TENSOR, TTC_EOP_DIV}, {TTC_OP_DIV_SCALAR, TTC_EOP_DIV},
    {TTC_OP_POW_TS, TTC_EOP_POW}, {TTC_OP_POW_TT, TTC_EOP_POW},
    {TTC_OP_MAXIMUM, TTC_EOP_MAX}, {TTC_OP_MINIMUM, TTC_EOP_MIN},
    {TTC_OP_EQ_TENSOR, TTC_EOP_EQ}, {TTC_OP_EQ_SCALAR, TTC_EOP_EQ},
    {TTC_OP_NE_TENSOR, TTC_EOP_NE}, {TTC_OP_NE_SCALAR, TTC_EOP_NE},
    {TTC_OP_LT_TENSOR, TTC_EOP_LT}, {TTC_OP_LT_SCALAR, TTC_EOP_LT},
    {TTC_OP_LE_TENSOR, TTC_EOP_LE}, {TTC_OP_LE_SCALAR, TTC_EOP_LE},
    {TTC_OP_GT_TENSOR, TTC_EOP_GT}, {TTC_OP_GT_SCALAR, TTC_EOP_GT},
    {TTC_OP_GE_TENSOR, TTC_EOP_GE}, {TTC_OP_GE_SCALAR, TTC_EOP_GE},
    {TTC_OP_LOGICAL_AND, TTC_EOP_AND}, {TTC_OP_LOGICAL_OR, TTC_EOP_OR},
    {TTC_OP_LOGICAL_XOR, TTC_EOP_XOR},
};

ttc_status ttc_convert_unary(ttc_conv_ctx *cx, const ttc_node *n) {
    ttc_eop eop = TTC_EOP_COUNT;
    for (size_t i = 0; i < sizeof unary_map / sizeof unary_map[0]; i++)
        if (unary_map[i].op == n->op) eop = unary_map[i].eop;
    if (eop == TTC_EOP_COUNT) return ttc_fail(TTC_ERR_INTERNAL, "no unary mapping for %s", n->op_name);
    ttc_dtype od = n->outputs[0]->type.dtype;
    ttc_dtype ct = compute_dt(od);
    if (eop == TTC_EOP_NOT) ct = TTC_DTYPE_BOOL;
    if (eop == TTC_EOP_BITNOT || eop == TTC_EOP_NEG || eop == TTC_EOP_ABS || eop == TTC_EOP_SIGN)
        ct = compute_dt(od);
    ttc_expr e; ttc_expr_init(&e);
    ttc_status st = TTC_OK;
    int32_t a = operand(cx, n, 0, &e, eop == TTC_EOP_NOT ? TTC_DTYPE_BOOL : ct, &st);
    if (a < 0) { ttc_expr_free(&e); return st ? st : TTC_ERR_NOMEM; }
    return finish(cx, n, &e, ttc_expr_op(&e, eop, a, -1, -1, ct));
}

ttc_status ttc_convert_binary(ttc_conv_ctx *cx, const ttc_node *n) {
    ttc_eop eop = TTC_EOP_COUNT;
    for (size_t i = 0; i < sizeof binary_map / sizeof binary_map[0]; i++)
        if (binary_map[i].op == n->op) eop = binary_map[i].eop;
    if (eop == TTC_EOP_COUNT) return ttc_fail(TTC_ERR_INTERNAL, "no binary mapping for %s", n->op_name);
    ttc_dtype od = n->outputs[0]->type.dtype;
    ttc_dtype ct = compute_dt(od);
    if (ttc_eop_is_compare(eop)) {
        ttc_dtype a = arg_dtype(n, 0), b = arg_dtype(n, 1);
        ct = is_float(a) || is_float(b) ? TTC_DTYPE_FLOAT32 : TTC_DTYPE_INT64;
    } else if (eop == TTC_EOP_AND || eop == TTC_EOP_OR || eop == TTC_EOP_XOR) {
        ct = TTC_DTYPE_BOOL;
    }
    ttc_expr e; ttc_expr_init(&e);
    ttc_status st = TTC_OK;
    int32_t a = operand(cx, n, 0, &e, ct, &st);
    int32_t b = a < 0 ? -1 : operand(cx, n, 1, &e, ct, &st);
    if (a < 0 || b < 0) { ttc_expr_free(&e); return st ? st : TTC_ERR_NOMEM; }
    bool has_alpha = n->op == TTC_OP_ADD_TENSOR || n->op == TTC_OP_ADD_SCALAR || n->op == TTC_OP_SUB_TENSOR ||
                     n->op == TTC_OP_SUB_SCALAR || n->op == TTC_OP_RSUB_SCALAR;
    /* rsub(self, other, alpha) = other - alpha * self: swap first, alpha scales self */
    if (n->op == TTC_OP_RSUB_SCALAR) { int32_t t = a; a = b; b = t; }
    if (has_alpha && n->n_inputs > 2 && !ttc_cx_is_none(cx, n, 2)) {
        double alpha;
        TTC_TRY(ttc_cx_float(cx, n, 2, &alpha));
        if (alpha != 1.0) b = ttc_expr_op(&e, TTC_EOP_MUL, b, ttc_expr_const(&e, alpha, ct), -1, ct);
    }
    ttc_dtype rd = ttc_eop_is_compare(eop) ? TTC_DTYPE_BOOL : ct;
    /* Integer true division promotes to float in torch. */
    if (eop == TTC_EOP_DIV && !is_float(ct)) {
        a = ttc_expr_cast(&e, a, TTC_DTYPE_FLOAT32);
        b = ttc_expr_cast(&e, b, TTC_DTYPE_FLOAT32);
        rd = TTC_DTYPE_FLOAT32;
    }
    return finish(cx, n, &e, ttc_expr_op(&e, eop, a, b, -1, rd));
}

/* div.Tensor_mode(self, other, rounding_mode) */
ttc_status ttc_convert_div_mode(ttc_conv_ctx *cx, const ttc_node *n) {
    const ttc_ival *mode;
    TTC_TRY(ttc_cx_eval(cx, n, 2, &mode));
    ttc_dtype ct = compute_dt(n->outputs[0]->type.dtype);
    ttc_expr e; ttc_expr_init(&e);
    ttc_status st = TTC_OK;
    int32_t a = operand(cx, n, 0, &e, ct, &st);
    int32_t b = a < 0 ? -1 : operand(cx, n, 1, &e, ct, &st);
    if (a < 0 || b < 0) { ttc_expr_free(&e); return st ? st : TTC_ERR_NOMEM; }
    ttc_eop op = TTC_EOP_DIV;
    if (mode->kind == TTC_IVAL_STR && !strcmp(mode->s, "floor")) op = TTC_EOP_FLOORDIV;
    else if (mode->kind == TTC_IVAL_STR && !strcmp(mode->s, "trunc")) op = TTC_EOP_TRUNCDIV;
    return finish(cx, n, &e, ttc_expr_op(&e, op, a, b, -1, ct));
}

/* Activations and clamps with literal parameters. */
ttc_status ttc_convert_activation(ttc_conv_ctx *cx, const ttc_node *n) {
    ttc_dtype ct = compute_dt(n->outputs[0]->type.dtype);
    ttc_expr e; ttc_expr_init(&e);
    ttc_status st = TTC_OK;
    int32_t x = operand(cx, n, 0, &e, ct, &st), r = -1;
    if (x < 0) { ttc_expr_free(&e); return st ? st : TTC_ERR_NOMEM; }
    double p0 = 0, p1 = 0, p2 = 0;
#define C(v) ttc_expr_const(&e, (v), ct)
#define OP(o, a, b) ttc_expr_op(&e, (o), (a), (b), -1, ct)
    switch (n->op) {
    case TTC_OP_LEAKY_RELU:
        if (n->n_inputs > 1 && !ttc_cx_is_none(cx, n, 1)) st = ttc_cx_float(cx, n, 1, &p0); else p0 = 0.01;
        /* max(x,0) + slope*min(x,0) */
        r = OP(TTC_EOP_ADD, OP(TTC_EOP_MAX, x, C(0)), OP(TTC_EOP_MUL, C(p0), OP(TTC_EOP_MIN, x, C(0))));
        break;
    case TTC_OP_GELU: {
        const ttc_ival *ap = NULL;
        if (n->n_inputs > 1) st = ttc_cx_eval(cx, n, 1, &ap);
        bool tanh_form = ap && ap->kind == TTC_IVAL_STR && !strcmp(ap->s, "tanh");
        r = ttc_expr_op(&e, tanh_form ? TTC_EOP_GELU_TANH : TTC_EOP_GELU_ERF, x, -1, -1, ct);
        break;
    }
    case TTC_OP_ELU: {  /* elu(x, alpha, scale, input_scale) */
        p0 = 1; p1 = 1; p2 = 1;
        if (n->n_inputs > 1) st = ttc_cx_float(cx, n, 1, &p0);
        if (st == TTC_OK && n->n_inputs > 2) st = ttc_cx_float(cx, n, 2, &p1);
        if (st == TTC_OK && n->n_inputs > 3) st = ttc_cx_float(cx, n, 3, &p2);
        /* expm1, as torch: exp(x) - 1 cancels for small |x| (all digits lost below 6e-8) */
        int32_t neg = OP(TTC_EOP_MUL, C(p0), ttc_expr_op(&e, TTC_EOP_EXPM1,
                          OP(TTC_EOP_MUL, OP(TTC_EOP_MIN, x, C(0)), C(p2)), -1, -1, ct));
        int32_t cond = ttc_expr_op(&e, TTC_EOP_GT, x, C(0), -1, TTC_DTYPE_BOOL);
        r = OP(TTC_EOP_MUL, C(p1), ttc_expr_op(&e, TTC_EOP_WHERE, cond, x, neg, ct));
        break;
    }
    case TTC_OP_SOFTPLUS: {  /* softplus(x, beta, threshold) */
        p0 = 1; p1 = 20;
        if (n->n_inputs > 1) st = ttc_cx_float(cx, n, 1, &p0);
        if (st == TTC_OK && n->n_inputs > 2) st = ttc_cx_float(cx, n, 2, &p1);
        int32_t bx = OP(TTC_EOP_MUL, x, C(p0));
        /* log1p, as torch: log(1 + e) returns 0 once e < 6e-8 (bx < -16.6) */
        int32_t sp = OP(TTC_EOP_DIV, ttc_expr_op(&e, TTC_EOP_LOG1P,
                         ttc_expr_op(&e, TTC_EOP_EXP, bx, -1, -1, ct), -1, -1, ct), C(p0));
        int32_t cond = ttc_expr_op(&e, TTC_EOP_GT, bx, C(p1), -1, TTC_DTYPE_BOOL);
        r = ttc_expr_op(&e, TTC_EOP_WHERE, cond, x, sp, ct);
        break;
    }
    case TTC_OP_HARDTANH:
        p0 = -1; p1 = 1;
        if (n->n_inputs > 1) st = ttc_cx_float(cx, n, 1, &p0);
        if (st == TTC_OK && n->n_inputs > 2) st = ttc_cx_float(cx, n, 2, &p1);
        r = OP(TTC_EOP_MIN, OP(TTC_EOP_MAX, x, C(p0)), C(p1));
        break;
    case TTC_OP_CLAMP: case TTC_OP_CLAMP_MIN: case TTC_OP_CLAMP_MAX: {
        r = x;
        bool lo = n->op != TTC_OP_CLAMP_MAX, hi = n->op != TTC_OP_CLAMP_MIN;
        int32_t hi_arg = n->op == TTC_OP_CLAMP ? 2 : 1;
        if (lo && !ttc_cx_is_none(cx, n, 1)) {
            int32_t m = operand(cx, n, 1, &e, ct, &st);
            r = m < 0 ? -1 : OP(TTC_EOP_MAX, r, m);
        }
        if (r >= 0 && hi && !ttc_cx_is_none(cx, n, hi_arg)) {
            int32_t m = operand(cx, n, hi_arg, &e, ct, &st);
            r = m < 0 ? -1 : OP(TTC_EOP_MIN, r, m);
        }
        break;
    }
    default:
        st = ttc_fail(TTC_ERR_INTERNAL, "no activation mapping for %s", n->op_name);
    }
#undef C
#undef OP
    if (st != TTC_OK) { ttc_expr_free(&e); return st; }
    return finish(cx, n, &e, r);
}

/* where.self(cond, a, b); masked_fill(x, mask, value) */
ttc_status ttc_convert_where(ttc_conv_ctx *cx, const ttc_node *n) {
    ttc_dtype ct = compute_dt(n->outputs[0]->type.dtype);
    ttc_expr e; ttc_expr_init(&e);
    ttc_status st = TTC_OK;
    int32_t c, a, b;
    if (n->op == TTC_OP_WHERE_SELF) {
        c = operand(cx, n, 0, &e, TTC_DTYPE_BOOL, &st);
        a = c < 0 ? -1 : operand(cx, n, 1, &e, ct, &st);
        b = a < 0 ? -1 : operand(cx, n, 2, &e, ct, &st);
    } else {
        b = operand(cx, n, 0, &e, ct, &st);
        c = b < 0 ? -1 : operand(cx, n, 1, &e, TTC_DTYPE_BOOL, &st);
        a = c < 0 ? -1 : operand(cx, n, 2, &e, ct, &st);
    }
    if (a < 0 || b < 0 || c < 0) { ttc_expr_free(&e); return st ? st : TTC_ERR_NOMEM; }
    return finish(cx, n, &e, ttc_expr_op(&e, TTC_EOP_WHERE, c, a, b, ct));
}

/* _to_copy / to.dtype: a cast to the output dtype (device/layout arguments are ignored). */
ttc_status ttc_convert_cast(ttc_conv_ctx *cx, const ttc_node *n) {
    ttc_dtype ct = compute_dt(n->outputs[0]->type.dtype);
    ttc_expr e; ttc_expr_init(&e);
    ttc_status st = TTC_OK;
    int32_t a = operand(cx, n, 0, &e, ct, &st);
    if (a < 0) { ttc_expr_free(&e); return st ? st : TTC_ERR_NOMEM; }
    return finish(cx, n, &e, a);
}

bool ttc_validate_elementwise(const ttc_graph *g, const ttc_node *n, bool fp16, char **why_not) {
    if (n->n_outputs < 1 || n->outputs[0]->type.kind != TTC_TYPE_TENSOR || n->outputs[0]->type.rank < 0) {
        if (why_not) *why_not = ttc_strdup("output is not a tensor of known rank");
        return false;
    }
    ttc_dtype d = n->outputs[0]->type.dtype;
    if (d == TTC_DTYPE_FLOAT64) {
        if (why_not) *why_not = ttc_strfmt("dtype %s is not supported by OpenCL engines", ttc_dtype_name(d));
        return false;
    }
    for (int32_t i = 0; i < n->n_inputs; i++) {
        const ttc_type *t = &n->inputs[i]->type;
        if (t->kind == TTC_TYPE_TENSOR && t->dtype == TTC_DTYPE_FLOAT64) {
            if (why_not) *why_not = ttc_strfmt("input %d has dtype %s", i, ttc_dtype_name(t->dtype));
            return false;
        }
        if (i > 0 && (t->kind == TTC_TYPE_INT || t->kind == TTC_TYPE_FLOAT || t->kind == TTC_TYPE_BOOL) &&
            !ttc_value_const(n->inputs[i])) {
            if (why_not) *why_not = ttc_strfmt("scalar argument %d is not a constant", i);
            return false;
        }
    }
    return true;
}

/* For other elementwise families (conv_math.c): argument i as an expression node in compute
 * dtype ct, and the finished expression as the node's output. */
int32_t ttc_ew_operand(ttc_conv_ctx *cx, const ttc_node *n, int32_t i, ttc_expr *e, ttc_dtype ct, ttc_status *st) {
    return operand(cx, n, i, e, ct, st);
}

ttc_status ttc_ew_finish(ttc_conv_ctx *cx, const ttc_node *n, ttc_expr *e, int32_t root) {
    return finish(cx, n, e, root);
}
