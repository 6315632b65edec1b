/*
 * Shape rules of elementwise ops: broadcast shape, dtype by torch's promotion (shape_util.c).
 * Also the ops whose output is input 0's type (activations, identities at inference, norms,
 * scatters) and casts.
 */
#include "shape_internal.h"

static const int I0[] = {0}, I01[] = {0, 1};

/* add, sub, mul, pow, maximum, div with rounding_mode: the promoted type */
ttc_status ttc_shape_binary(const ttc_graph *g, const ttc_node *n, ttc_type *out, int32_t n_out) {
    return ttc_sh_elementwise(n, I01, 2, 0, out);
}

/* true division: the promoted type, made floating */
ttc_status ttc_shape_binary_float(const ttc_graph *g, const ttc_node *n, ttc_type *out, int32_t n_out) {
    return ttc_sh_elementwise(n, I01, 2, 1, out);
}

/* comparisons, logical and/or/xor */
ttc_status ttc_shape_compare(const ttc_graph *g, const ttc_node *n, ttc_type *out, int32_t n_out) {
    return ttc_sh_elementwise(n, I01, 2, 2, out);
}

ttc_status ttc_shape_unary_bool(const ttc_graph *g, const ttc_node *n, ttc_type *out, int32_t n_out) {
    return ttc_sh_elementwise(n, I0, 1, 2, out);
}

/* exp, log, sigmoid, gelu, ...: ints compute in float32 */
ttc_status ttc_shape_unary_float(const ttc_graph *g, const ttc_node *n, ttc_type *out, int32_t n_out) {
    return ttc_sh_elementwise(n, I0, 1, 1, out);
}

/* where(cond, self, other): shape of all three, dtype of the two values */
ttc_status ttc_shape_where(const ttc_graph *g, const ttc_node *n, ttc_type *out, int32_t n_out) {
    static const int I012[] = {0, 1, 2}, I12[] = {1, 2};
    TTC_TRY(ttc_sh_elementwise(n, I012, 3, 0, out));
    return ttc_sh_result_type(n, I12, 2, &out->dtype);
}

/* masked_fill(self, mask, value): self's dtype whatever the value's */
ttc_status ttc_shape_masked_fill(const ttc_graph *g, const ttc_node *n, ttc_type *out, int32_t n_out) {
    TTC_TRY(ttc_sh_need_tensor(n, 0));
    TTC_TRY(ttc_sh_elementwise(n, I01, 2, 0, out));
    out->dtype = T(n, 0)->dtype;
    return TTC_OK;
}

ttc_status ttc_shape_clamp(const ttc_graph *g, const ttc_node *n, ttc_type *out, int32_t n_out) {
    TTC_TRY(ttc_sh_need_tensor(n, 0));
    for (int i = 1; i < n->n_inputs; i++)
        if (T(n, i)->kind == TTC_TYPE_FLOAT && !is_float(T(n, 0)->dtype)) return UNSUP(n, "float bounds on an int tensor");
        else if (T(n, i)->kind == TTC_TYPE_TENSOR) return UNSUP(n, "tensor bounds");
    *out = *T(n, 0);
    return TTC_OK;
}

/* the type of input 0 */
ttc_status ttc_shape_same(const ttc_graph *g, const ttc_node *n, ttc_type *out, int32_t n_out) {
    TTC_TRY(ttc_sh_need_tensor(n, 0));
    *out = *T(n, 0);
    return TTC_OK;
}

/* (output, bool mask) */
ttc_status ttc_shape_native_dropout(const ttc_graph *g, const ttc_node *n, ttc_type *out, int32_t n_out) {
    TTC_TRY(ttc_sh_need_tensor(n, 0));
    if (n_out != 2) return BAD(n, "needs 2 outputs");
    out[0] = *T(n, 0);
    out[1] = with_dtype(T(n, 0), TTC_DTYPE_BOOL);
    return TTC_OK;
}

/* _to_copy(self, dtype, ...), to.dtype(self, dtype, ...) */
ttc_status ttc_shape_cast(const ttc_graph *g, const ttc_node *n, ttc_type *out, int32_t n_out) {
    ttc_dtype dt;
    bool given;
    TTC_TRY(ttc_sh_need_tensor(n, 0));
    if (!ttc_sh_dtype_arg(n, 1, &dt, &given)) return UNSUP(n, "dtype is not a constant");
    *out = with_dtype(T(n, 0), given ? dt : T(n, 0)->dtype);
    return TTC_OK;
}
