/* The converter table, indexed by op id, from the converter column of ops.def: the single
 * source of truth for OpenCL support. */
#include "converters.h"

#include <stdlib.h>
#include <string.h>

/* prim.Constant / prim.ListConstruct / sym_size are evaluated on demand by the conversion
 * context: no kernel. */
static ttc_status convert_eval(ttc_conv_ctx *cx, const ttc_node *n) { return TTC_OK; }

#define CONV(c, v) {ttc_convert_##c, ttc_validate_##v, TTC_CONVF_DYNAMIC, NULL}
#define CONV_STATIC(c, v) {ttc_convert_##c, ttc_validate_##v, 0, NULL}
#define EVAL(v) {convert_eval, ttc_validate_##v, TTC_CONVF_DYNAMIC | TTC_CONVF_EVAL, NULL}
#define EVAL_ANY {convert_eval, NULL, TTC_CONVF_DYNAMIC | TTC_CONVF_EVAL, NULL}
#define NONE {NULL, NULL, 0, NULL}
#define NEVER(why) {NULL, NULL, 0, why}
static const ttc_converter table[TTC_OP_COUNT] = {
#define TTC_OP(id, name, n_in, n_out, flags, shape, conv) [TTC_OP_##id] = conv,
#include "../ir/ops.def"
#undef TTC_OP
};
#undef CONV
#undef CONV_STATIC
#undef EVAL
#undef EVAL_ANY
#undef NONE
#undef NEVER

/* Known ops that stay with torch whatever their arguments, and why (shown in the partition
 * report): NEVER("why") in their rows. (In-place ops such as resize_ are impure: the
 * partitioner says so before asking the registry.) */
const char *ttc_never_converted_reason(ttc_op_id op) {
    return (unsigned)op < TTC_OP_COUNT ? table[op].never : NULL;
}

const ttc_converter *ttc_converter_get(ttc_op_id op) {
    if ((unsigned)op >= TTC_OP_COUNT || !table[op].convert) return NULL;
    return &table[op];
}

static bool type_ok(const ttc_type *t, char **why, const char *what, int32_t i) {
    if (t->kind != TTC_TYPE_TENSOR) return true;
    if (t->rank < 0 || t->rank > TTC_MAX_RANK) {
        if (why) *why = ttc_strfmt("%s %d has unknown or too large rank", what, i);
        return false;
    }
    if (t->dtype == TTC_DTYPE_FLOAT64) {
        if (why) *why = ttc_strfmt("%s %d has dtype %s (not supported on OpenCL)", what, i, ttc_dtype_name(t->dtype));
        return false;
    }
    return true;
}

const char *const ttc_symint_arith_ops[] = {"py.mul", "py.add", "py.sub", "py.floordiv", "py.mod", "py.neg",
                                            "py.sym_max", "py.sym_min", NULL};

bool ttc_is_symint_arith(const ttc_node *n) {
    if (n->op != TTC_OP_OPAQUE || !n->op_name || n->n_outputs != 1 || n->outputs[0]->type.kind != TTC_TYPE_INT)
        return false;
    for (int32_t i = 0; i < n->n_inputs; i++)
        if (n->inputs[i]->type.kind != TTC_TYPE_INT) return false;
    for (size_t i = 0; ttc_symint_arith_ops[i]; i++)
        if (!strcmp(n->op_name, ttc_symint_arith_ops[i])) return true;
    return false;
}

bool ttc_op_supported(const ttc_graph *g, const ttc_node *n, bool fp16, char **why_not, bool *dynamic_ok) {
    if (why_not) *why_not = NULL;
    if (dynamic_ok) *dynamic_ok = false;
    if (ttc_is_symint_arith(n)) {
        if (dynamic_ok) *dynamic_ok = true;
        return true;
    }
    const ttc_converter *c = ttc_converter_get(n->op);
    if (!c) {
        const char *never = ttc_never_converted_reason(n->op);
        if (why_not && !(*why_not = ttc_node_schema_mismatch(n)))
            *why_not = never ? ttc_strfmt("%s: %s", n->op_name, never)
                             : ttc_strfmt("no OpenCL converter for %s", n->op_name);
        return false;
    }
    if (!(c->flags & TTC_CONVF_EVAL)) {
        for (int32_t i = 0; i < n->n_inputs; i++)
            if (!type_ok(&n->inputs[i]->type, why_not, "input", i)) return false;
        for (int32_t i = 0; i < n->n_outputs; i++)
            if (!type_ok(&n->outputs[i]->type, why_not, "output", i)) return false;
    }
    if (c->validate && !c->validate(g, n, fp16, why_not)) {
        if (why_not && !*why_not) *why_not = ttc_strfmt("%s: arguments not supported", n->op_name);
        return false;
    }
    if (dynamic_ok) *dynamic_ok = (c->flags & TTC_CONVF_DYNAMIC) != 0;
    return true;
}
