/*
 * Constant folding. A node whose inputs are all constants becomes a prim.Constant in place
 * (ttc_pass_make_constant: same output value, no insertion), so one forward scan folds
 * whole chains. Folded:
 *   - aten.sym_size.int of a static dim;
 *   - int/float scalar arithmetic (aten.{add,sub,mul,floordiv,...}.int, _operator.*);
 *   - prim.ListConstruct of int constants (one int[] literal), prim.getitem of a literal;
 *   - on constant tensors of at most TTC_FOLD_MAX_NUMEL elements: elementwise unary and
 *     binary arithmetic (with broadcasting, computed in double, float outputs), casts,
 *     expand, and the views (view/reshape/flatten/squeeze/unsqueeze share the data;
 *     permute/transpose/t copy it). Half-precision tensors are left alone.
 */
#include "pass_manager.h"
#include "pass_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- scalars ---- */
static bool scalar_binop(const char *op, char *kind) {
    static const char *const names[][2] = {
        {"add", "+"}, {"sub", "-"}, {"mul", "*"}, {"floordiv", "/"}, {"mod", "%"}, {"truediv", "d"},
    };
    const char *base = NULL;
    if (!strncmp(op, "_operator.", 10)) base = op + 10;
    else if (!strncmp(op, "operator.", 9)) base = op + 9;
    else if (!strncmp(op, "aten.", 5) && strlen(op) > 9 && !strcmp(op + strlen(op) - 4, ".int")) base = op + 5;
    if (!base) return false;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        size_t l = strlen(names[i][0]);
        if (!strncmp(base, names[i][0], l) && (base[l] == 0 || base[l] == '.')) { *kind = names[i][1][0]; return true; }
    }
    return false;
}

static bool fold_scalar(ttc_node *n, ttc_attr *out) {
    char k;
    if (n->n_inputs != 2 || n->n_outputs != 1 || !scalar_binop(n->op_name, &k)) return false;
    int64_t a, b;
    if (ttc_value_const_int(n->inputs[0], &a) && ttc_value_const_int(n->inputs[1], &b) &&
        n->outputs[0]->type.kind == TTC_TYPE_INT) {
        int64_t r;
        switch (k) {
        case '+': r = (int64_t)((uint64_t)a + (uint64_t)b); break;
        case '-': r = (int64_t)((uint64_t)a - (uint64_t)b); break;
        case '*': r = (int64_t)((uint64_t)a * (uint64_t)b); break;
        case '/': case '%': {
            if (b == 0 || (a == INT64_MIN && b == -1)) return false;
            int64_t q = a / b;
            if ((a % b != 0) && ((a < 0) != (b < 0))) q--; /* Python floors */
            r = k == '/' ? q : a - q * b;
            break;
        }
        default: return false;
        }
        *out = (ttc_attr){.kind = TTC_ATTR_INT, .i = r};
        return true;
    }
    double x, y;
    if (n->outputs[0]->type.kind != TTC_TYPE_FLOAT || !ttc_value_const_float(n->inputs[0], &x) ||
        !ttc_value_const_float(n->inputs[1], &y))
        return false;
    double r;
    switch (k) {
    case '+': r = x + y; break;
    case '-': r = x - y; break;
    case '*': r = x * y; break;
    case 'd': if (y == 0) return false; r = x / y; break;
    default: return false;
    }
    *out = (ttc_attr){.kind = TTC_ATTR_FLOAT, .f = r};
    return true;
}

/* ---- tensors ---- */
static bool dtype_ok(ttc_dtype d) { return d != TTC_DTYPE_FLOAT16 && d != TTC_DTYPE_BFLOAT16; }

static double rd(const void *p, ttc_dtype dt, int64_t i) {
    switch (dt) {
    case TTC_DTYPE_FLOAT32: return ((const float *)p)[i];
    case TTC_DTYPE_FLOAT64: return ((const double *)p)[i];
    case TTC_DTYPE_INT64: return (double)((const int64_t *)p)[i];
    case TTC_DTYPE_INT32: return ((const int32_t *)p)[i];
    case TTC_DTYPE_INT8: return ((const int8_t *)p)[i];
    case TTC_DTYPE_UINT8: return ((const uint8_t *)p)[i];
    case TTC_DTYPE_BOOL: return ((const uint8_t *)p)[i] != 0;
    default: return 0;
    }
}

static void wr(void *p, ttc_dtype dt, int64_t i, double v) {
    switch (dt) {
    case TTC_DTYPE_FLOAT32: ((float *)p)[i] = (float)v; break;
    case TTC_DTYPE_FLOAT64: ((double *)p)[i] = v; break;
    case TTC_DTYPE_INT64: ((int64_t *)p)[i] = (int64_t)v; break;
    case TTC_DTYPE_INT32: ((int32_t *)p)[i] = (int32_t)v; break;
    case TTC_DTYPE_INT8: ((int8_t *)p)[i] = (int8_t)v; break;
    case TTC_DTYPE_UINT8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case TTC_DTYPE_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    default: break;
    }
}

/* An operand broadcast to the output: a tensor constant (strides in elements, 0 on
 * broadcast dims) or a scalar. */
typedef struct operand {
    const void *data;
    ttc_dtype dtype;
    int64_t stride[TTC_MAX_RANK];
    double scalar;
} operand;

static bool make_operand(const ttc_value *v, const ttc_type *out, operand *o) {
    memset(o, 0, sizeof *o);
    const ttc_attr *a = ttc_pass_tensor_const(v);
    if (!a) return ttc_value_const_float(v, &o->scalar) && v->type.kind != TTC_TYPE_TENSOR;
    const ttc_type *t = &v->type;
    if (!ttc_type_is_static(t) || t->rank > out->rank || !dtype_ok(t->dtype)) return false;
    o->data = a->tensor->data;
    o->dtype = t->dtype;
    int64_t st = 1;
    for (int j = t->rank - 1; j >= 0; j--) {
        int k = j + out->rank - t->rank;
        int64_t sz = t->dims[j].add, osz = out->dims[k].add;
        if (sz != osz && sz != 1) return false;
        o->stride[k] = sz == 1 && osz != 1 ? 0 : st;
        st *= sz;
    }
    return true;
}

static double get(const operand *o, const int64_t *idx, int32_t rank) {
    if (!o->data) return o->scalar;
    int64_t off = 0;
    for (int k = 0; k < rank; k++) off += idx[k] * o->stride[k];
    return rd(o->data, o->dtype, off);
}

static bool next_index(int64_t *idx, const ttc_type *t) {
    for (int k = t->rank - 1; k >= 0; k--) {
        if (++idx[k] < t->dims[k].add) return true;
        idx[k] = 0;
    }
    return false;
}

static double unary(ttc_op_id op, double x) {
    switch (op) {
    case TTC_OP_NEG: return -x;
    case TTC_OP_ABS: return fabs(x);
    case TTC_OP_EXP: return exp(x);
    case TTC_OP_LOG: return log(x);
    case TTC_OP_SQRT: return sqrt(x);
    case TTC_OP_RSQRT: return 1.0 / sqrt(x);
    case TTC_OP_RECIPROCAL: return 1.0 / x;
    case TTC_OP_RELU: return x > 0 ? x : (x == x ? 0 : x);
    case TTC_OP_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case TTC_OP_TANH: return tanh(x);
    case TTC_OP_SIN: return sin(x);
    case TTC_OP_COS: return cos(x);
    case TTC_OP_FLOOR: return floor(x);
    case TTC_OP_CEIL: return ceil(x);
    default: return x; /* casts and expand */
    }
}

static bool is_unary(ttc_op_id op) {
    switch (op) {
    case TTC_OP_NEG: case TTC_OP_ABS: case TTC_OP_EXP: case TTC_OP_LOG: case TTC_OP_SQRT: case TTC_OP_RSQRT:
    case TTC_OP_RECIPROCAL: case TTC_OP_RELU: case TTC_OP_SIGMOID: case TTC_OP_TANH: case TTC_OP_SIN:
    case TTC_OP_COS: case TTC_OP_FLOOR: case TTC_OP_CEIL: case TTC_OP_TO_COPY: case TTC_OP_TO_DTYPE:
    case TTC_OP_EXPAND:
        return true;
    default: return false;
    }
}

static bool is_binary(ttc_op_id op) {
    switch (op) {
    case TTC_OP_ADD_TENSOR: case TTC_OP_ADD_SCALAR: case TTC_OP_SUB_TENSOR: case TTC_OP_SUB_SCALAR:
    case TTC_OP_RSUB_SCALAR: case TTC_OP_MUL_TENSOR: case TTC_OP_MUL_SCALAR: case TTC_OP_DIV_TENSOR:
    case TTC_OP_DIV_SCALAR: case TTC_OP_MAXIMUM: case TTC_OP_MINIMUM:
        return true;
    default: return false;
    }
}

static double binary(ttc_op_id op, double a, double b, double alpha) {
    switch (op) {
    case TTC_OP_ADD_TENSOR: case TTC_OP_ADD_SCALAR: return a + alpha * b;
    case TTC_OP_SUB_TENSOR: case TTC_OP_SUB_SCALAR: return a - alpha * b;
    case TTC_OP_RSUB_SCALAR: return b - alpha * a;
    case TTC_OP_MUL_TENSOR: case TTC_OP_MUL_SCALAR: return a * b;
    case TTC_OP_DIV_TENSOR: case TTC_OP_DIV_SCALAR: return a / b;
    case TTC_OP_MAXIMUM: return a > b || a != a ? a : b;
    case TTC_OP_MINIMUM: return a < b || a != a ? a : b;
    default: return 0;
    }
}

static bool all_inputs_const(const ttc_node *n) {
    for (int i = 0; i < n->n_inputs; i++) {
        const ttc_node *p = n->inputs[i]->producer;
        if (!p) return false;
        if (p->op == TTC_OP_CONSTANT) continue;
        int64_t *v; int32_t k;
        if (!ttc_value_const_ints(n->inputs[i], &v, &k)) return false;
        free(v);
    }
    return true;
}

/* Elementwise (and cast / expand) folds. Returns the new data or NULL when not folded. */
static ttc_tensor_data *fold_elementwise(const ttc_node *n) {
    const ttc_type *out = &n->outputs[0]->type;
    bool un = is_unary(n->op), bin = is_binary(n->op);
    if ((!un && !bin) || !ttc_type_is_static(out) || !dtype_ok(out->dtype)) return NULL;
    bool int_ok = un && (n->op == TTC_OP_TO_COPY || n->op == TTC_OP_TO_DTYPE || n->op == TTC_OP_EXPAND);
    if (!int_ok && out->dtype != TTC_DTYPE_FLOAT32 && out->dtype != TTC_DTYPE_FLOAT64) return NULL;
    int64_t numel = ttc_type_numel_static(out);
    if (numel < 0 || numel > TTC_FOLD_MAX_NUMEL || n->n_inputs < (bin ? 2 : 1)) return NULL;
    operand a, b;
    if (!make_operand(n->inputs[0], out, &a) || !a.data) return NULL;
    double alpha = 1;
    if (bin) {
        if (!make_operand(n->inputs[1], out, &b)) return NULL;
        if (n->n_inputs > 2 && !ttc_pass_float_arg(n->inputs[2], 1, &alpha)) return NULL;
    }
    ttc_tensor_data *d = ttc_tensor_data_copy(NULL, (size_t)numel * ttc_dtype_size(out->dtype));
    if (!d) return NULL;
    int64_t idx[TTC_MAX_RANK] = {0};
    for (int64_t i = 0; i < numel; i++) {
        double x = get(&a, idx, out->rank);
        wr(d->data, out->dtype, i, bin ? binary(n->op, x, get(&b, idx, out->rank), alpha) : unary(n->op, x));
        next_index(idx, out);
    }
    return d;
}

/* Views: the same bytes under a new type, or a permuted copy. */
static ttc_tensor_data *fold_view(const ttc_node *n) {
    const ttc_attr *a = n->n_inputs ? ttc_pass_tensor_const(n->inputs[0]) : NULL;
    const ttc_type *in = n->n_inputs ? &n->inputs[0]->type : NULL, *out = &n->outputs[0]->type;
    if (!a || !ttc_type_is_static(in) || !ttc_type_is_static(out) || in->dtype != out->dtype) return NULL;
    int64_t numel = ttc_type_numel_static(out);
    if (numel != ttc_type_numel_static(in)) return NULL;
    switch (n->op) {
    case TTC_OP_VIEW: case TTC_OP_RESHAPE: case TTC_OP_UNSAFE_VIEW: case TTC_OP_FLATTEN:
    case TTC_OP_SQUEEZE: case TTC_OP_SQUEEZE_DIM: case TTC_OP_SQUEEZE_DIMS: case TTC_OP_UNSQUEEZE:
        return ttc_tensor_data_ref(a->tensor);
    case TTC_OP_PERMUTE: case TTC_OP_TRANSPOSE: case TTC_OP_T: break;
    default: return NULL;
    }
    if (numel > TTC_FOLD_MAX_NUMEL || in->rank != out->rank) return NULL;
    int32_t r = in->rank;
    int64_t perm[TTC_MAX_RANK];
    for (int k = 0; k < r; k++) perm[k] = k;
    if (n->op == TTC_OP_T) {
        if (r == 2) { perm[0] = 1; perm[1] = 0; }
    } else if (n->op == TTC_OP_TRANSPOSE) {
        int64_t d0, d1;
        if (n->n_inputs < 3 || !ttc_value_const_int(n->inputs[1], &d0) || !ttc_value_const_int(n->inputs[2], &d1) ||
            !ttc_pass_norm_dim(d0, r, &d0) || !ttc_pass_norm_dim(d1, r, &d1))
            return NULL;
        perm[d0] = d1;
        perm[d1] = d0;
    } else {
        int64_t *p; int32_t k;
        if (n->n_inputs < 2 || !ttc_value_const_ints(n->inputs[1], &p, &k)) return NULL;
        bool ok = k == r;
        bool used[TTC_MAX_RANK] = {0};
        for (int i = 0; ok && i < r; i++) {
            ok = ttc_pass_norm_dim(p[i], r, &perm[i]) && !used[perm[i]];
            if (ok) used[perm[i]] = true;
        }
        free(p);
        if (!ok) return NULL;
    }
    for (int k = 0; k < r; k++)
        if (out->dims[k].add != in->dims[perm[k]].add) return NULL;
    int64_t in_stride[TTC_MAX_RANK], st = 1;
    for (int k = r - 1; k >= 0; k--) { in_stride[k] = st; st *= in->dims[k].add; }
    size_t esz = ttc_dtype_size(out->dtype);
    ttc_tensor_data *d = ttc_tensor_data_copy(NULL, (size_t)numel * esz);
    if (!d) return NULL;
    int64_t idx[TTC_MAX_RANK] = {0};
    for (int64_t i = 0; i < numel; i++) {
        int64_t off = 0;
        for (int k = 0; k < r; k++) off += idx[k] * in_stride[perm[k]];
        memcpy((char *)d->data + (size_t)i * esz, (const char *)a->tensor->data + (size_t)off * esz, esz);
        next_index(idx, out);
    }
    return d;
}

ttc_status ttc_pass_constant_fold(ttc_graph *g, void *ctx, bool *changed) {
    (void)ctx;
    *changed = false;
    for (int32_t i = 0; i < g->n_nodes; i++) {
        ttc_node *n = g->nodes[i];
        if (n->op == TTC_OP_CONSTANT || n->n_outputs != 1) continue;
        const ttc_op_info *info = ttc_op_info_get(n->op);
        if (info && (info->flags & TTC_OPF_IMPURE)) continue;
        ttc_attr a = {0};
        bool fold = false;
        int64_t *ints = NULL;
        if (n->op == TTC_OP_SYM_SIZE) {
            int64_t d;
            const ttc_type *t = &n->inputs[0]->type;
            if (t->kind == TTC_TYPE_TENSOR && ttc_value_const_int(n->inputs[1], &d) && ttc_pass_norm_dim(d, t->rank, &d) &&
                t->rank > 0 && ttc_dim_is_const(t->dims[d])) {
                a = (ttc_attr){.kind = TTC_ATTR_INT, .i = t->dims[d].add};
                fold = true;
            }
        } else if (n->op == TTC_OP_LIST_CONSTRUCT) {
            int32_t k;
            if (n->outputs[0]->type.kind == TTC_TYPE_LIST && n->outputs[0]->type.elem == TTC_TYPE_INT &&
                ttc_value_const_ints(n->outputs[0], &ints, &k)) {
                int64_t dummy = 0;
                a = (ttc_attr){.kind = TTC_ATTR_INTS, .ints = k ? ints : &dummy, .n = k};
                fold = true;
            }
        } else if (n->op == TTC_OP_GETITEM) {
            int32_t k;
            int64_t idx;
            if (ttc_value_const_ints(n->inputs[0], &ints, &k) && ttc_value_const_int(n->inputs[1], &idx)) {
                if (idx < 0) idx += k;
                if (idx >= 0 && idx < k && n->outputs[0]->type.kind == TTC_TYPE_INT) {
                    a = (ttc_attr){.kind = TTC_ATTR_INT, .i = ints[idx]};
                    fold = true;
                }
            }
        } else if (n->op == TTC_OP_OPAQUE) {
            fold = fold_scalar(n, &a);
        } else if (n->outputs[0]->type.kind == TTC_TYPE_TENSOR && n->n_inputs && all_inputs_const(n)) {
            ttc_tensor_data *d = fold_view(n);
            if (!d) d = fold_elementwise(n);
            if (d) {
                a = (ttc_attr){.kind = TTC_ATTR_TENSOR, .tensor = d};
                fold = true;
                ttc_status s = ttc_pass_make_constant(n, &a);
                ttc_tensor_data_unref(d);
                if (s) return s;
                *changed = true;
                continue;
            }
        }
        if (fold) {
            ttc_status s = ttc_pass_make_constant(n, &a);
            free(ints);
            if (s) return s;
            *changed = true;
        } else {
            free(ints);
        }
    }
    return TTC_OK;
}
