/*
 * Shape rules, shared between the family files (shape_elementwise.c, shape_reduce.c,
 * shape_nn.c, shape_movement.c). A rule is named in the op's ops.def row (`foo` is
 * ttc_shape_foo) and has the ttc_shape_fn signature:
 *
 *   ttc_status ttc_shape_foo(const ttc_graph *g, const ttc_node *n, ttc_type *out, int32_t n_out) {
 *       TTC_TRY(ttc_sh_need_tensor(n, 0));
 *       *out = *T(n, 0);           // the type of input 0
 *       return TTC_OK;
 *   }
 *
 * Fail with UNSUP(n, ...) when the rule cannot tell (non-constant arguments, a result not
 * affine in one symbol: callers keep the declared type) and BAD(n, ...) when the inputs are
 * definitely ill-typed. shape.c checks arity before calling a rule.
 */
#ifndef TTC_IR_SHAPE_INTERNAL_H
#define TTC_IR_SHAPE_INTERNAL_H

#include "ir.h"

#include <stdlib.h>

ttc_status ttc_sh_fail(ttc_status s, const ttc_node *n, const char *fmt, ...) TTC_PRINTF(3, 4);
#define UNSUP(n, ...) ttc_sh_fail(TTC_ERR_UNSUPPORTED, (n), __VA_ARGS__)
#define BAD(n, ...) ttc_sh_fail(TTC_ERR_INVALID_ARG, (n), __VA_ARGS__)

/* ---- arguments ---- */
static inline bool d_is(ttc_dim d, int64_t v) { return d.sym < 0 && d.add == v; }
static inline const ttc_type *T(const ttc_node *n, int i) { return &n->inputs[i]->type; }
static inline bool is_tensor(const ttc_node *n, int i) { return i < n->n_inputs && T(n, i)->kind == TTC_TYPE_TENSOR; }
static inline bool arg_int(const ttc_node *n, int i, int64_t *v) {
    return i < n->n_inputs && ttc_value_const_int(n->inputs[i], v);
}
static inline bool arg_none(const ttc_node *n, int i) { return i >= n->n_inputs || ttc_value_is_none(n->inputs[i]); }

typedef struct ilist { int64_t *v; int32_t n; } ilist;  /* a constant int list; free(v) */
static inline bool arg_ints(const ttc_node *n, int i, ilist *l) {
    l->v = NULL;
    l->n = 0;
    return i < n->n_inputs && ttc_value_const_ints(n->inputs[i], &l->v, &l->n);
}

/* d in [-rank, rank) (a 0-d tensor takes dims -1 and 0) into [0, rank). */
static inline bool norm_dim(int64_t d, int32_t rank, int32_t *out) {
    int64_t r = rank > 0 ? rank : 1;
    if (d < -r || d >= r) return false;
    *out = (int32_t)(d < 0 ? d + r : d);
    return true;
}

/* Input i is a tensor of known rank. */
ttc_status ttc_sh_need_tensor(const ttc_node *n, int i);
/* A dtype argument: None (*given false), torch's ScalarType code or a dtype name. */
bool ttc_sh_dtype_arg(const ttc_node *n, int i, ttc_dtype *dt, bool *given);
/* a and b are the same dim (BAD when both are known and differ). */
ttc_status ttc_sh_same_dim(const ttc_node *n, ttc_dim a, ttc_dim b, const char *what);

/* ---- dtypes: torch.result_type ---- */
static inline int ttc_sh_category(ttc_dtype d) {  /* bool < int < float */
    if (d == TTC_DTYPE_BOOL) return 0;
    if (d == TTC_DTYPE_FLOAT16 || d == TTC_DTYPE_BFLOAT16 || d == TTC_DTYPE_FLOAT32 || d == TTC_DTYPE_FLOAT64) return 2;
    return 1;
}
static inline bool is_float(ttc_dtype d) { return ttc_sh_category(d) == 2; }
static inline ttc_type with_dtype(const ttc_type *t, ttc_dtype d) { ttc_type r = *t; r.dtype = d; return r; }
/* torch.promote_types; false where the result is a dtype we do not have (int16). */
bool ttc_sh_promote(ttc_dtype a, ttc_dtype b, ttc_dtype *r);
/* Result dtype over inputs idx[0..k) (tensors and scalars). */
ttc_status ttc_sh_result_type(const ttc_node *n, const int *idx, int k, ttc_dtype *out);
/* Broadcast shape and result dtype of inputs idx[0..k). promo: 0 result type, 1 result type
 * made floating, 2 bool. */
ttc_status ttc_sh_elementwise(const ttc_node *n, const int *idx, int k, int promo, ttc_type *out);

/* ---- the rules: one prototype per name in ops.def's shape column ---- */
#define TTC_OP(id_, name_, nin_, nout_, flags_, shape_, conv_) \
    ttc_status ttc_shape_##shape_(const ttc_graph *g, const ttc_node *n, ttc_type *out, int32_t n_out);
#include "ops.def"
#undef TTC_OP

#endif
