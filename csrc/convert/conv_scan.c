/* cumsum, cumprod and logcumsumexp (a TTC_KOP_SCAN kernel, codegen/codegen_scan.c) and
 * aten.sym_numel (evaluated by the conversion context, like aten.sym_size.int). */
#include "converters.h"
#include "converters_data.h"

static const char *nname(const ttc_node *n) { return n->name ? n->name : n->op_name; }

static bool fail(char **why_not, const char *msg) {
    if (why_not) *why_not = ttc_strdup(msg);
    return false;
}

/* cumsum(self, dim, dtype), cumprod(self, dim, dtype), logcumsumexp(self, dim) */
bool ttc_validate_cumsum(const ttc_graph *g, const ttc_node *n, bool fp16, char **why_not) {
    if (!ttc_data_output_ok(n, 0, why_not)) return false;
    const ttc_type *x = &n->inputs[0]->type;
    if (x->kind != TTC_TYPE_TENSOR || x->rank < 1) return fail(why_not, "cumsum of a 0-d tensor or a non-tensor");
    if (!ttc_data_type_ok(x, "input", why_not)) return false;
    int64_t d;
    if (!ttc_value_const_int(n->inputs[1], &d) || d < -x->rank || d >= x->rank)
        return fail(why_not, "cumsum dim is not a constant within the rank");
    ttc_dtype od = n->outputs[0]->type.dtype;
    if (od == TTC_DTYPE_BOOL || od == TTC_DTYPE_INT8 || od == TTC_DTYPE_UINT8)
        return fail(why_not, "cumsum into a bool or 8-bit dtype (wraps around)");
    if (n->op == TTC_OP_LOGCUMSUMEXP && !ttc_dtype_engine_float(od))
        return fail(why_not, "logcumsumexp into a non-float dtype");
    return true;
}

ttc_status ttc_convert_cumsum(ttc_conv_ctx *cx, const ttc_node *n) {
    int32_t x;
    int64_t di;
    TTC_TRY(ttc_cx_tensor(cx, n, 0, &x));
    TTC_TRY(ttc_cx_int(cx, n, 1, &di));
    const ttc_type *ot = &n->outputs[0]->type;
    int32_t d;
    TTC_TRY(ttc_cx_dim(n, di, ot->rank, &d));
    if (cx->k->ts[x].rank != ot->rank)
        return ttc_fail(TTC_ERR_INVALID_ARG, "node %s: cumsum input rank %d, output rank %d", nname(n),
                        cx->k->ts[x].rank, ot->rank);
    int32_t oi = ttc_kir_op(cx->k, TTC_KOP_SCAN, ttc_cx_float_dtype(cx, ot->dtype), ot->rank, ot->dims,
                            n->outputs[0]->name);
    if (oi < 0) return ttc_fail_context(TTC_ERR_NOMEM, "node %s", nname(n));
    ttc_kop *op = &cx->k->ops[oi];
    op->in[0] = x;
    op->p.scan.dim = d;
    op->p.scan.kind = n->op == TTC_OP_CUMPROD ? TTC_SCAN_PROD : n->op == TTC_OP_LOGCUMSUMEXP ? TTC_SCAN_LOGSUMEXP
                                                                                          : TTC_SCAN_SUM;
    return ttc_cx_set_output(cx, n, 0, op->out);
}

/* aten.sym_numel(x): a number only when every dim of x is static; a symbolic numel feeds
 * view sizes, which converters take from the IR types (see eval_sym_size in convert.c). */
bool ttc_validate_sym_numel(const ttc_graph *g, const ttc_node *n, bool fp16, char **why_not) {
    const ttc_type *t = n->n_inputs == 1 ? &n->inputs[0]->type : NULL;
    if (!t || t->kind != TTC_TYPE_TENSOR || t->rank < 0) return fail(why_not, "sym_numel of a tensor of unknown rank");
    return true;
}
