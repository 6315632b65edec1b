/* Converters for upsample_nearest2d.vec and upsample_bilinear2d.vec (NCHW): one RESIZE
 * kernel that reproduces torch's source-index rules (scale factors when given, else
 * in/out; align_corners for bilinear). Output sizes come from the IR type. */
#include "converters_data.h"

static const char *nname(const ttc_node *n) { return n->name ? n->name : n->op_name; }

/* Position of the scale_factors argument. */
static int32_t scales_arg(const ttc_node *n) { return n->op == TTC_OP_UPSAMPLE_BILINEAR2D ? 3 : 2; }

bool ttc_validate_upsample(const ttc_graph *g, const ttc_node *n, bool fp16, char **why_not) {
    if (!ttc_data_type_ok(&n->inputs[0]->type, "the input", why_not) || !ttc_data_output_ok(n, 0, why_not)) return false;
    const ttc_type *t = &n->inputs[0]->type;
    if (t->rank != 4 || n->outputs[0]->type.rank != 4) {
        if (why_not) *why_not = ttc_strdup("only 4-d (NCHW) inputs");
        return false;
    }
    bool bilinear = n->op == TTC_OP_UPSAMPLE_BILINEAR2D;
    bool fl = ttc_dtype_engine_float(t->dtype);
    if (!fl && (bilinear || t->dtype != TTC_DTYPE_UINT8)) {   /* as torch's kernels */
        if (why_not) *why_not = ttc_strfmt("%s upsampling of %s", bilinear ? "bilinear" : "nearest", ttc_dtype_name(t->dtype));
        return false;
    }
    int64_t ac;
    if (bilinear && (n->n_inputs < 3 || !ttc_value_const_int(n->inputs[2], &ac))) {
        if (why_not) *why_not = ttc_strdup("align_corners is not a constant");
        return false;
    }
    int32_t sa = scales_arg(n);
    if (sa < n->n_inputs && !ttc_value_is_none(n->inputs[sa])) {
        const ttc_node *p = n->inputs[sa]->producer;
        const ttc_attr *a = p && p->op == TTC_OP_CONSTANT ? ttc_node_attr(p, "value") : NULL;
        bool ok = (a && (a->kind == TTC_ATTR_FLOATS || a->kind == TTC_ATTR_INTS) && a->n == 2);
        if (!ok && p && p->op == TTC_OP_LIST_CONSTRUCT && p->n_inputs == 2) {
            double v;
            ok = ttc_value_const_float(p->inputs[0], &v) && ttc_value_const_float(p->inputs[1], &v);
        }
        if (!ok) {
            if (why_not) *why_not = ttc_strdup("scale_factors is not a constant list of two numbers");
            return false;
        }
    }
    return true;
}

/* upsample_nearest2d.vec(x, output_size, scale_factors),
 * upsample_bilinear2d.vec(x, output_size, align_corners, scale_factors) */
ttc_status ttc_convert_upsample(ttc_conv_ctx *cx, const ttc_node *n) {
    int32_t x;
    TTC_TRY(ttc_cx_tensor(cx, n, 0, &x));
    bool bilinear = n->op == TTC_OP_UPSAMPLE_BILINEAR2D, align = false;
    if (bilinear) TTC_TRY(ttc_cx_bool(cx, n, 2, &align));
    double scale[2] = {0, 0};
    int32_t sa = scales_arg(n);
    if (sa < n->n_inputs && !ttc_cx_is_none(cx, n, sa)) {
        const ttc_ival *iv;
        TTC_TRY(ttc_cx_eval(cx, n, sa, &iv));
        if ((iv->kind != TTC_IVAL_FLOATS && iv->kind != TTC_IVAL_INTS) || iv->n != 2)
            return ttc_fail(TTC_ERR_UNSUPPORTED, "node %s: scale_factors is not a list of two numbers", nname(n));
        for (int32_t a = 0; a < 2; a++) {
            scale[a] = iv->floats ? iv->floats[a] : (double)iv->ints[a];
            if (!(scale[a] > 0)) return ttc_fail(TTC_ERR_INVALID_ARG, "node %s: scale factor %g", nname(n), scale[a]);
        }
    }
    const ttc_type *ot = &n->outputs[0]->type;
    int32_t oi = ttc_kir_op(cx->k, TTC_KOP_RESIZE, ttc_cx_float_dtype(cx, ot->dtype), 4, ot->dims, n->outputs[0]->name);
    if (oi < 0) return ttc_fail_context(TTC_ERR_NOMEM, "node %s", nname(n));
    ttc_kop *op = &cx->k->ops[oi];
    op->in[0] = x;
    op->p.resize.bilinear = bilinear;
    op->p.resize.align_corners = align;
    op->p.resize.scale[0] = scale[0];
    op->p.resize.scale[1] = scale[1];
    return ttc_cx_set_output(cx, n, 0, op->out);
}
