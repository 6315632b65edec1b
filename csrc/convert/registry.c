/* The converter table, indexed by op id: the single source of truth for OpenCL support. */
#include "converters.h"
#include "converters_data.h"

#include <stdlib.h>
#include <string.h>

/* prim.Constant / prim.ListConstruct are evaluated on demand by the conversion context. */
static ttc_status convert_eval(ttc_conv_ctx *cx, const ttc_node *n) { return TTC_OK; }

#define EW(fn) {fn, ttc_validate_elementwise, TTC_CONVF_DYNAMIC}
#define RD {ttc_convert_reduce, ttc_validate_reduce, TTC_CONVF_DYNAMIC}
#define SH(fn) {fn, ttc_validate_shape, TTC_CONVF_DYNAMIC}

static bool validate_dropout(const ttc_graph *g, const ttc_node *n, bool fp16, char **why_not) {
    if (ttc_dropout_is_identity(n)) return ttc_validate_shape(g, n, fp16, why_not);
    if (why_not) *why_not = ttc_strdup("dropout in training mode (p > 0, train = true) runs in torch");
    return false;
}

static const ttc_converter table[TTC_OP_COUNT] = {
    [TTC_OP_CONSTANT] = {convert_eval, NULL, TTC_CONVF_DYNAMIC | TTC_CONVF_EVAL},
    [TTC_OP_LIST_CONSTRUCT] = {convert_eval, NULL, TTC_CONVF_DYNAMIC | TTC_CONVF_EVAL},
    [TTC_OP_SYM_SIZE] = {convert_eval, ttc_validate_sym_size, TTC_CONVF_DYNAMIC | TTC_CONVF_EVAL},
    /* elementwise binary */
    [TTC_OP_ADD_TENSOR] = EW(ttc_convert_binary), [TTC_OP_ADD_SCALAR] = EW(ttc_convert_binary),
    [TTC_OP_SUB_TENSOR] = EW(ttc_convert_binary), [TTC_OP_SUB_SCALAR] = EW(ttc_convert_binary),
    [TTC_OP_RSUB_SCALAR] = EW(ttc_convert_binary),
    [TTC_OP_MUL_TENSOR] = EW(ttc_convert_binary), [TTC_OP_MUL_SCALAR] = EW(ttc_convert_binary),
    [TTC_OP_DIV_TENSOR] = EW(ttc_convert_binary), [TTC_OP_DIV_SCALAR] = EW(ttc_convert_binary),
    [TTC_OP_DIV_TENSOR_MODE] = EW(ttc_convert_div_mode),
    [TTC_OP_POW_TS] = EW(ttc_convert_binary), [TTC_OP_POW_TT] = EW(ttc_convert_binary),
    [TTC_OP_MAXIMUM] = EW(ttc_convert_binary), [TTC_OP_MINIMUM] = EW(ttc_convert_binary),
    [TTC_OP_EQ_TENSOR] = EW(ttc_convert_binary), [TTC_OP_EQ_SCALAR] = EW(ttc_convert_binary),
    [TTC_OP_NE_TENSOR] = EW(ttc_convert_binary), [TTC_OP_NE_SCALAR] = EW(ttc_convert_binary),
    [TTC_OP_LT_TENSOR] = EW(ttc_convert_binary), [TTC_OP_LT_SCALAR] = EW(ttc_convert_binary),
    [TTC_OP_LE_TENSOR] = EW(ttc_convert_binary), [TTC_OP_LE_SCALAR] = EW(ttc_convert_binary),
    [TTC_OP_GT_TENSOR] = EW(ttc_convert_binary), [TTC_OP_GT_SCALAR] = EW(ttc_convert_binary),
    [TTC_OP_GE_TENSOR] = EW(ttc_convert_binary), [TTC_OP_GE_SCALAR] = EW(ttc_convert_binary),
    [TTC_OP_LOGICAL_AND] = EW(ttc_convert_binary), [TTC_OP_LOGICAL_OR] = EW(ttc_convert_binary),
    [TTC_OP_LOGICAL_XOR] = EW(ttc_convert_binary),
    [TTC_OP_WHERE_SELF] = EW(ttc_convert_where), [TTC_OP_MASKED_FILL_S] = EW(ttc_convert_where),
    [TTC_OP_MASKED_FILL_T] = EW(ttc_convert_where),
    [TTC_OP_CLAMP] = EW(ttc_convert_activation), [TTC_OP_CLAMP_MIN] = EW(ttc_convert_activation),
    [TTC_OP_CLAMP_MAX] = EW(ttc_convert_activation), [TTC_OP_HARDTANH] = EW(ttc_convert_activation),
    /* elementwise unary */
    [TTC_OP_NEG] = EW(ttc_convert_unary), [TTC_OP_ABS] = EW(ttc_convert_unary),
    [TTC_OP_EXP] = EW(ttc_convert_unary), [TTC_OP_LOG] = EW(ttc_convert_unary),
    [TTC_OP_SQRT] = EW(ttc_convert_unary), [TTC_OP_RSQRT] = EW(ttc_convert_unary),
    [TTC_OP_RECIPROCAL] = EW(ttc_convert_unary), [TTC_OP_SIN] = EW(ttc_convert_unary),
    [TTC_OP_COS] = EW(ttc_convert_unary), [TTC_OP_ERF] = EW(ttc_convert_unary),
    [TTC_OP_FLOOR] = EW(ttc_convert_unary), [TTC_OP_CEIL] = EW(ttc_convert_unary),
    [TTC_OP_ROUND] = EW(ttc_convert_unary), [TTC_OP_SIGN] = EW(ttc_convert_unary),
    [TTC_OP_LOGICAL_NOT] = EW(ttc_convert_unary), [TTC_OP_BITWISE_NOT] = EW(ttc_convert_unary),
    /* activations */
    [TTC_OP_RELU] = EW(ttc_convert_unary), [TTC_OP_SILU] = EW(ttc_convert_unary),
    [TTC_OP_SIGMOID] = EW(ttc_convert_unary), [TTC_OP_TANH] = EW(ttc_convert_unary),
    [TTC_OP_HARDSWISH] = EW(ttc_convert_unary), [TTC_OP_HARDSIGMOID] = EW(ttc_convert_unary),
    [TTC_OP_LOG_SIGMOID] = EW(ttc_convert_unary),
    [TTC_OP_LEAKY_RELU] = EW(ttc_convert_activation), [TTC_OP_GELU] = EW(ttc_convert_activation),
    [TTC_OP_ELU] = EW(ttc_convert_activation), [TTC_OP_SOFTPLUS] = EW(ttc_convert_activation),
    /* matmul family */
    [TTC_OP_MM] = {ttc_convert_mm, ttc_validate_matmul, TTC_CONVF_DYNAMIC},
    [TTC_OP_BMM] = {ttc_convert_mm, ttc_validate_matmul, TTC_CONVF_DYNAMIC},
    [TTC_OP_ADDMM] = {ttc_convert_addmm, ttc_validate_matmul, TTC_CONVF_DYNAMIC},
    [TTC_OP_LINEAR] = {ttc_convert_linear, ttc_validate_matmul, TTC_CONVF_DYNAMIC},
    [TTC_OP_MATMUL] = {ttc_convert_matmul, ttc_validate_matmul, TTC_CONVF_DYNAMIC},
    /* convolution, normalisation, pooling, softmax (static channels; dynamic batch/spatial) */
    [TTC_OP_CONVOLUTION] = {ttc_convert_convolution, ttc_validate_convolution, TTC_CONVF_DYNAMIC},
    [TTC_OP_CONV2D] = {ttc_convert_conv, ttc_validate_conv, TTC_CONVF_DYNAMIC},
    [TTC_OP_CONV1D] = {ttc_convert_conv, ttc_validate_conv, TTC_CONVF_DYNAMIC},
    [TTC_OP_BATCH_NORM] = {ttc_convert_batch_norm, ttc_validate_batch_norm, TTC_CONVF_DYNAMIC},
    [TTC_OP_BN_NO_TRAINING] = {ttc_convert_batch_norm, ttc_validate_batch_norm, TTC_CONVF_DYNAMIC},
    [TTC_OP_MAX_POOL2D] = {ttc_convert_pool, ttc_validate_pool, TTC_CONVF_DYNAMIC},
    [TTC_OP_MAX_POOL2D_IDX] = {ttc_convert_pool, ttc_validate_pool, TTC_CONVF_DYNAMIC},
    [TTC_OP_AVG_POOL2D] = {ttc_convert_pool, ttc_validate_pool, TTC_CONVF_DYNAMIC},
    [TTC_OP_ADAPTIVE_AVG_POOL2D] = {ttc_convert_pool, ttc_validate_pool, TTC_CONVF_DYNAMIC},
    [TTC_OP_ADAPTIVE_AVG_POOL2D_] = {ttc_convert_pool, ttc_validate_pool, TTC_CONVF_DYNAMIC},
    [TTC_OP_SOFTMAX] = {ttc_convert_softmax, ttc_validate_norm, TTC_CONVF_DYNAMIC},
    [TTC_OP_SOFTMAX_INT] = {ttc_convert_softmax, ttc_validate_norm, TTC_CONVF_DYNAMIC},
    [TTC_OP_LOG_SOFTMAX] = {ttc_convert_softmax, ttc_validate_norm, TTC_CONVF_DYNAMIC},
    [TTC_OP_LOG_SOFTMAX_INT] = {ttc_convert_softmax, ttc_validate_norm, TTC_CONVF_DYNAMIC},
    [TTC_OP_LAYER_NORM] = {ttc_convert_norm, ttc_validate_norm, TTC_CONVF_DYNAMIC},
    [TTC_OP_NATIVE_LAYER_NORM] = {ttc_convert_norm, ttc_validate_norm, TTC_CONVF_DYNAMIC},
    [TTC_OP_GROUP_NORM] = {ttc_convert_norm, ttc_validate_norm, TTC_CONVF_DYNAMIC},
    [TTC_OP_NATIVE_GROUP_NORM] = {ttc_convert_norm, ttc_validate_norm, TTC_CONVF_DYNAMIC},
    /* reductions */
    [TTC_OP_SUM] = RD, [TTC_OP_SUM_DIM] = RD, [TTC_OP_MEAN] = RD, [TTC_OP_MEAN_DIM] = RD,
    [TTC_OP_AMAX] = RD, [TTC_OP_AMIN] = RD, [TTC_OP_VAR_CORRECTION] = RD, [TTC_OP_VAR_DIM] = RD,
    [TTC_OP_ARGMAX] = RD, [TTC_OP_ARGMIN] = RD, [TTC_OP_PROD_DIM] = RD,
    /* views */
    [TTC_OP_VIEW] = SH(ttc_convert_reshape), [TTC_OP_RESHAPE] = SH(ttc_convert_reshape),
    [TTC_OP_UNSAFE_VIEW] = SH(ttc_convert_reshape), [TTC_OP_FLATTEN] = SH(ttc_convert_reshape),
    [TTC_OP_SQUEEZE] = SH(ttc_convert_reshape), [TTC_OP_SQUEEZE_DIM] = SH(ttc_convert_reshape),
    [TTC_OP_SQUEEZE_DIMS] = SH(ttc_convert_reshape), [TTC_OP_UNSQUEEZE] = SH(ttc_convert_reshape),
    [TTC_OP_PERMUTE] = SH(ttc_convert_permute), [TTC_OP_TRANSPOSE] = SH(ttc_convert_permute),
    [TTC_OP_T] = SH(ttc_convert_permute), [TTC_OP_EXPAND] = SH(ttc_convert_expand),
    [TTC_OP_SLICE] = SH(ttc_convert_slice), [TTC_OP_SELECT] = SH(ttc_convert_select),
    /* identities at inference */
    [TTC_OP_CLONE] = SH(ttc_convert_identity), [TTC_OP_CONTIGUOUS] = SH(ttc_convert_identity),
    [TTC_OP_DETACH] = SH(ttc_convert_identity), [TTC_OP_ALIAS] = SH(ttc_convert_identity),
    [TTC_OP_DROPOUT] = {ttc_convert_identity, validate_dropout, TTC_CONVF_DYNAMIC}, [TTC_OP_LIFT_FRESH_COPY] = SH(ttc_convert_identity),
    /* data movement, indexing, creation, resize, attention (converters_data.h) */
#define DATA(fn, val) {fn, val, TTC_CONVF_DYNAMIC}
    [TTC_OP_CAT] = DATA(ttc_convert_cat, ttc_validate_cat), [TTC_OP_STACK] = DATA(ttc_convert_cat, ttc_validate_cat),
    [TTC_OP_SPLIT] = DATA(ttc_convert_split, ttc_validate_split),
    [TTC_OP_SPLIT_WITH_SIZES] = DATA(ttc_convert_split, ttc_validate_split),
    [TTC_OP_CHUNK] = DATA(ttc_convert_split, ttc_validate_split),
    [TTC_OP_UNBIND] = DATA(ttc_convert_unbind, ttc_validate_split),
    [TTC_OP_CONSTANT_PAD_ND] = DATA(ttc_convert_pad, ttc_validate_pad),
    [TTC_OP_EMBEDDING] = DATA(ttc_convert_embedding, ttc_validate_embedding),
    [TTC_OP_INDEX_SELECT] = DATA(ttc_convert_index_select, ttc_validate_index_select),
    [TTC_OP_GATHER] = DATA(ttc_convert_gather, ttc_validate_gather),
    [TTC_OP_INDEX_TENSOR] = DATA(ttc_convert_index, ttc_validate_index),
    [TTC_OP_ARANGE] = DATA(ttc_convert_arange, ttc_validate_arange),
    [TTC_OP_ARANGE_START] = DATA(ttc_convert_arange, ttc_validate_arange),
    [TTC_OP_ARANGE_STEP] = DATA(ttc_convert_arange, ttc_validate_arange),
    [TTC_OP_FULL] = DATA(ttc_convert_full, ttc_validate_full), [TTC_OP_ZEROS] = DATA(ttc_convert_full, ttc_validate_full),
    [TTC_OP_ONES] = DATA(ttc_convert_full, ttc_validate_full),
    [TTC_OP_FULL_LIKE] = DATA(ttc_convert_full, ttc_validate_full),
    [TTC_OP_ZEROS_LIKE] = DATA(ttc_convert_full, ttc_validate_full),
    [TTC_OP_ONES_LIKE] = DATA(ttc_convert_full, ttc_validate_full),
    [TTC_OP_SCALAR_TENSOR] = DATA(ttc_convert_full, ttc_validate_full),
    [TTC_OP_UPSAMPLE_NEAREST2D] = DATA(ttc_convert_upsample, ttc_validate_upsample),
    [TTC_OP_UPSAMPLE_BILINEAR2D] = DATA(ttc_convert_upsample, ttc_validate_upsample),
    [TTC_OP_SDPA] = DATA(ttc_convert_sdpa, ttc_validate_sdpa),
    [TTC_OP_MAX_DIM] = DATA(ttc_convert_max_dim, ttc_validate_max_dim),
    [TTC_OP_VAR_MEAN_CORR] = DATA(ttc_convert_var_mean, ttc_validate_var_mean),
    /* issue 11: converters B (conv_select.c) */
    [TTC_OP_SORT] = DATA(ttc_convert_sort, ttc_validate_sort), [TTC_OP_SORT_STABLE] = DATA(ttc_convert_sort, ttc_validate_sort),
    [TTC_OP_TOPK] = DATA(ttc_convert_sort, ttc_validate_sort),
    [TTC_OP_SCATTER_SRC] = DATA(ttc_convert_scatter, ttc_validate_scatter),
    [TTC_OP_SCATTER_VALUE] = DATA(ttc_convert_scatter, ttc_validate_scatter),
    [TTC_OP_INDEX_PUT] = DATA(ttc_convert_scatter, ttc_validate_scatter),
#undef DATA
    /* casts */
    [TTC_OP_TO_COPY] = EW(ttc_convert_cast), [TTC_OP_TO_DTYPE] = EW(ttc_convert_cast),
    /* issue 11: converters A (conv_math.c, conv_scan.c) */
#define MU {ttc_convert_math_unary, ttc_validate_math, TTC_CONVF_DYNAMIC}
#define MB {ttc_convert_math_binary, ttc_validate_math, TTC_CONVF_DYNAMIC}
    [TTC_OP_BITAND_TENSOR] = MB, [TTC_OP_BITAND_SCALAR] = MB, [TTC_OP_BITOR_TENSOR] = MB,
    [TTC_OP_BITOR_SCALAR] = MB, [TTC_OP_BITXOR_TENSOR] = MB, [TTC_OP_BITXOR_SCALAR] = MB,
    [TTC_OP_ATAN2] = MB, [TTC_OP_FMOD_TENSOR] = MB, [TTC_OP_FMOD_SCALAR] = MB,
    [TTC_OP_REMAINDER_TENSOR] = MB, [TTC_OP_REMAINDER_SCALAR] = MB,
    [TTC_OP_ACOS] = MU, [TTC_OP_ACOSH] = MU, [TTC_OP_ASIN] = MU, [TTC_OP_ASINH] = MU, [TTC_OP_ATAN] = MU,
    [TTC_OP_ATANH] = MU, [TTC_OP_COSH] = MU, [TTC_OP_SINH] = MU, [TTC_OP_TAN] = MU, [TTC_OP_EXPM1] = MU,
    [TTC_OP_LOG10] = MU, [TTC_OP_LOG1P] = MU, [TTC_OP_LOG2] = MU, [TTC_OP_TRUNC] = MU, [TTC_OP_ISINF] = MU,
    [TTC_OP_ISNAN] = MU,
#undef MU
#undef MB
    [TTC_OP_CUMSUM] = {ttc_convert_cumsum, ttc_validate_cumsum, TTC_CONVF_DYNAMIC},
    [TTC_OP_SYM_NUMEL] = {convert_eval, ttc_validate_sym_numel, TTC_CONVF_DYNAMIC | TTC_CONVF_EVAL},
};

/* Known ops that stay with torch whatever their arguments, and why (shown in the partition
 * report): their output shape cannot be known ahead of time. (In-place ops such as resize_
 * are impure: the partitioner says so before asking the registry.) */
const char *ttc_never_converted_reason(ttc_op_id op) {
    switch (op) {
    case TTC_OP_NONZERO:
        return "data-dependent output shape (the number of nonzero elements is known only after "
               "reading the input): stays with torch";
    default: return NULL;
    }
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
    if (t->dtype == TTC_DTYPE_FLOAT64 || t->dtype == TTC_DTYPE_BFLOAT16) {
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
