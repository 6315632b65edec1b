/* Code generation for the kernel IR: expressions and epilogues are generated here; the
 * heavy kernels (GEMM, convolution, ...) are templates from csrc/kernels/ specialised with
 * #defines around their text, so that all kernels of an engine form one program. */
#include "codegen.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/kernels.h"
#include "codegen_data.h"
#include "../engine/native_ops.h"

const ttc_gemm_tile ttc_gemm_tiles[TTC_GEMM_TILES] = {
    {TTC_GEMM_CPU, 0, 0, 0, 0, 0, 1},        {TTC_GEMM_CPU, 4, 0, 0, 0, 0, 1},       {TTC_GEMM_CPU, 16, 0, 0, 0, 0, 1},
    {TTC_GEMM_SIMT, 64, 64, 16, 4, 4, 1},    {TTC_GEMM_SIMT, 128, 128, 8, 8, 8, 1},  {TTC_GEMM_SIMT, 128, 64, 16, 8, 4, 1},
    {TTC_GEMM_SIMT, 64, 32, 16, 4, 2, 1},    {TTC_GEMM_SIMT, 32, 32, 16, 2, 2, 1},   {TTC_GEMM_SIMT, 16, 64, 16, 1, 4, 1},
    {TTC_GEMM_MMA, 128, 128, 32, 2, 4, 1},   {TTC_GEMM_MMA, 128, 64, 32, 2, 2, 1},   {TTC_GEMM_MMA, 64, 64, 32, 2, 2, 1},
    {TTC_GEMM_MMA, 32, 64, 32, 1, 2, 1},     {TTC_GEMM_MMA, 16, 64, 32, 1, 4, 1},
    /* k-split warps for skinny, deep problems */
    {TTC_GEMM_MMA, 16, 64, 128, 1, 1, 4},    {TTC_GEMM_MMA, 32, 64, 64, 1, 2, 2},    {TTC_GEMM_MMA, 16, 64, 64, 1, 2, 2},
    /* SIMT with kw k-groups per work-group, for small-M problems (few tiles), deep K; and
     * 16-deep stages of 8x8 per work-item for large ones */
    {TTC_GEMM_SIMT, 32, 32, 8, 4, 4, 4},     {TTC_GEMM_SIMT, 32, 64, 8, 4, 4, 2},    {TTC_GEMM_SIMT, 32, 64, 8, 4, 4, 4},
    {TTC_GEMM_SIMT, 16, 64, 8, 4, 4, 4},     {TTC_GEMM_SIMT, 64, 64, 8, 4, 4, 2},    {TTC_GEMM_SIMT, 128, 128, 16, 8, 8, 1},
    {TTC_GEMM_SIMT, 64, 64, 8, 8, 4, 2},     {TTC_GEMM_SIMT, 64, 128, 16, 8, 8, 1},  {TTC_GEMM_SIMT, 128, 64, 16, 8, 8, 1},
};

const char *ttc_cl_storage_type(ttc_dtype d) {
    switch (d) {
    case TTC_DTYPE_FLOAT32: return "float";
    case TTC_DTYPE_FLOAT16: return "half";
    case TTC_DTYPE_INT64: return "long";
    case TTC_DTYPE_INT32: return "int";
    case TTC_DTYPE_INT8: return "char";
    default: return "uchar";   /* bool, uint8 */
    }
}

static bool is_floatish(ttc_dtype d) {
    return d == TTC_DTYPE_FLOAT32 || d == TTC_DTYPE_FLOAT16 || d == TTC_DTYPE_FLOAT64 || d == TTC_DTYPE_BFLOAT16;
}

static const char *ctype(ttc_dtype d) {
    if (is_floatish(d)) return "float";
    if (d == TTC_DTYPE_INT64) return "long";
    return "int";
}

static void gdim(ttc_kspec *ks, int32_t i, int32_t t, int32_t from, int32_t to, int32_t div, int32_t local);
static ttc_status emit_template(ttc_sbuf *src, const char *tmpl, const char *const *defs);

static ttc_status add_arg(ttc_kspec *ks, ttc_arg_kind kind, int32_t t, int32_t d, int32_t r, int64_t v) {
    TTC_TRY(ttc_grow((void **)&ks->args, &ks->cap_args, ks->n_args + 1, sizeof(ttc_argspec)));
    ttc_argspec a = {kind, t, d, r, v};
    ks->args[ks->n_args++] = a;
    return TTC_OK;
}

/* A leaf reads with the output's linear index when it is dense with the output's dims. */
static bool leaf_dense(const ttc_kir *k, const ttc_et *out, int32_t t) {
    const ttc_et *lt = &k->ts[t];
    return lt->contig && ttc_dims_eq(out->rank, out->dims, lt->rank, lt->dims);
}

static void emit_load(ttc_sbuf *b, const ttc_kir *k, ttc_dtype sd, const char *ptr, const char *idx) {
    if (sd == TTC_DTYPE_FLOAT16 && !k->half_compute) ttc_sbuf_printf(b, "vload_half(%s, %s)", idx, ptr);
    else ttc_sbuf_printf(b, "%s[%s]", ptr, idx);
}

/* Half arithmetic (k->half_compute: an fp16 engine on a device that computes in half).
 * float16 tensors are loaded and stored directly, and a float expression node computes in
 * half when its op is a correctly rounded arithmetic step or a selection: add, sub, mul, div,
 * reciprocal, min/max, neg/abs, sign, where, casts, constants, relu, hardswish, hardsigmoid.
 * These are emitted with operators, comparisons and ?: only (no built-in functions): NVIDIA's
 * OpenCL has half arithmetic but none of the half overloads of the built-ins, and the device
 * probe (csrc/runtime/half_probe.c) checks exactly these constructs. Ops that call a math
 * library function (exp, log, sqrt, rsqrt, erf, tanh, sin, cos, pow, lgamma, floor, ceil,
 * rint and the activations built from them: sigmoid, silu, gelu, log_sigmoid) and floor/trunc
 * division compute in float from their half operands and are rounded to half once, where the
 * next half node reads them: half versions would lose several ulps (or overflow inside, as exp
 * does past 11). Reductions, softmax, norms, attention, GEMM and convolution accumulate in
 * float; their store functions take a float accumulator. */
static bool half_op(ttc_eop op) {
    switch (op) {
    case TTC_EOP_LEAF: case TTC_EOP_CONST: case TTC_EOP_CAST: case TTC_EOP_ADD: case TTC_EOP_SUB:
    case TTC_EOP_MUL: case TTC_EOP_DIV: case TTC_EOP_RECIP: case TTC_EOP_MAX: case TTC_EOP_MIN:
    case TTC_EOP_NEG: case TTC_EOP_ABS: case TTC_EOP_SIGN: case TTC_EOP_WHERE: case TTC_EOP_RELU:
    case TTC_EOP_HARDSWISH: case TTC_EOP_HARDSIGMOID:
        return true;
    default: return false;
    }
}

/* Whether node i of e computes in half. Expression nodes carry FLOAT32 for every float value;
 * an fp16 engine stores them in half (ttc_cx_float_dtype). A value is half-safe unless it
 * depends on a leaf read from a tensor that stayed float32 (a constant beyond half's range,
 * see const_half.c) or on a literal beyond +-65504: rounding those to half would give inf.
 * A node computes in half when its op is one of half_op's and its value is half-safe; other
 * half-safe nodes (libm calls) compute in float and are rounded to half where a half node
 * reads them; the rest compute in float throughout. Nodes are in topological order, so one
 * forward pass decides; expressions are small. */
static bool half_node(const ttc_kir *k, const ttc_expr *e, int32_t i) {
    if (!k->half_compute || i < 0 || i >= e->n || !is_floatish(e->nodes[i].dtype)) return false;
    bool *safe = ttc_malloc(sizeof(bool) * (size_t)(i + 1));
    if (!safe) return false;  /* float is always a correct answer */
    for (int32_t j = 0; j <= i; j++) {
        const ttc_enode *nd = &e->nodes[j];
        bool h = true;
#define TTC_HALF_OPERAND(x) \
    (h = h && ((x) < 0 || (x) >= j || !is_floatish(e->nodes[(x)].dtype) || safe[(x)]))
        switch (nd->op) {
        case TTC_EOP_LEAF:
            if (nd->a >= 0 && nd->a < e->n_leaves && is_floatish(k->ts[e->leaves[nd->a]].dtype))
                h = k->ts[e->leaves[nd->a]].dtype == TTC_DTYPE_FLOAT16;
            break;
        case TTC_EOP_CONST: h = !(fabs(nd->f) > 65504.0); break;
        case TTC_EOP_WHERE: TTC_HALF_OPERAND(nd->b); TTC_HALF_OPERAND(nd->c); break;
        default:
            if (ttc_eop_is_binary(nd->op)) TTC_HALF_OPERAND(nd->b);
            TTC_HALF_OPERAND(nd->a);
            break;
        }
#undef TTC_HALF_OPERAND
        safe[j] = h;
    }
    bool r = safe[i] && half_op(e->nodes[i].op);
    free(safe);
    return r;
}

/* The OpenCL type node i of e is computed and held in. */
static const char *node_type(const ttc_kir *k, const ttc_expr *e, int32_t i) {
    return half_node(k, e, i) ? "half" : ctype(e->nodes[i].dtype);
}

/* Operand x of a node held in type t: cast when exactly one side is half, so that half
 * overloads (fmax, exp, ...) are neither ambiguous nor picked for float nodes. Without half
 * arithmetic no cast is ever emitted (the float path's source is unchanged). */
static void operand(ttc_sbuf *b, const ttc_kir *k, const ttc_expr *e, int32_t x, const char *t) {
    const char *xt = node_type(k, e, x);
    if (strcmp(xt, t) != 0 && (!strcmp(xt, "half") || !strcmp(t, "half"))) ttc_sbuf_printf(b, "((%s)v%d)", t, x);
    else ttc_sbuf_printf(b, "v%d", x);
}

static void emit_const(ttc_sbuf *b, double v, ttc_dtype dt) {
    if (!is_floatish(dt)) { ttc_sbuf_printf(b, "((%s)%lld)", ctype(dt), (long long)v); return; }
    if (isnan(v)) ttc_sbuf_printf(b, "NAN");
    else if (isinf(v)) ttc_sbuf_printf(b, v > 0 ? "INFINITY" : "(-INFINITY)");
    else ttc_sbuf_printf(b, "%.9ef", v);
}

/* The right-hand side of the ops added for issue 11 (converters A). Floating ops compute in
 * float (half_op says no), so oa/ob are float operands. Integer %: a zero divisor gives 0
 * and -1 gives 0 (INT_MIN % -1 traps on x86 CPUs): torch raises on the first, and the
 * second is 0 mathematically; a kernel must never trap. */
static ttc_status emit_expr_ext(ttc_sbuf *b, const ttc_enode *nd, int32_t a, int32_t c2, const char *ct,
                                const char *oa, const char *ob, bool fl, bool afl) {
    switch (nd->op) {
    case TTC_EOP_BITAND: ttc_sbuf_printf(b, "%s & %s", oa, ob); break;
    case TTC_EOP_BITOR: ttc_sbuf_printf(b, "%s | %s", oa, ob); break;
    case TTC_EOP_BITXOR: ttc_sbuf_printf(b, "%s ^ %s", oa, ob); break;
    case TTC_EOP_ATAN2: ttc_sbuf_printf(b, "atan2(%s, %s)", oa, ob); break;
    case TTC_EOP_FMOD:
        if (fl) ttc_sbuf_printf(b, "fmod(%s, %s)", oa, ob);
        else ttc_sbuf_printf(b, "(%s == 0 || %s == -1) ? (%s)0 : %s %% %s", ob, ob, ct, oa, ob);
        break;
    case TTC_EOP_REMAINDER:   /* torch: r = fmod(a, b); r += b where r and b differ in sign */
        if (fl)
            ttc_sbuf_printf(b, "(fmod(%s, %s) != 0.0f && ((fmod(%s, %s) < 0.0f) != (%s < 0.0f))) ? fmod(%s, %s) + %s : "
                            "fmod(%s, %s)", oa, ob, oa, ob, ob, oa, ob, ob, oa, ob);
        else
            ttc_sbuf_printf(b, "(%s == 0 || %s == -1) ? (%s)0 : ((%s %% %s != 0 && ((%s %% %s < 0) != (%s < 0))) ? "
                            "%s %% %s + %s : %s %% %s)", ob, ob, ct, oa, ob, oa, ob, ob, oa, ob, ob, oa, ob);
        break;
    case TTC_EOP_ACOS: ttc_sbuf_printf(b, "acos(%s)", oa); break;
    case TTC_EOP_ACOSH: ttc_sbuf_printf(b, "acosh(%s)", oa); break;
    case TTC_EOP_ASIN: ttc_sbuf_printf(b, "asin(%s)", oa); break;
    case TTC_EOP_ASINH: ttc_sbuf_printf(b, "asinh(%s)", oa); break;
    case TTC_EOP_ATAN: ttc_sbuf_printf(b, "atan(%s)", oa); break;
    case TTC_EOP_ATANH: ttc_sbuf_printf(b, "atanh(%s)", oa); break;
    case TTC_EOP_COSH: ttc_sbuf_printf(b, "cosh(%s)", oa); break;
    case TTC_EOP_SINH: ttc_sbuf_printf(b, "sinh(%s)", oa); break;
    case TTC_EOP_TAN: ttc_sbuf_printf(b, "tan(%s)", oa); break;
    case TTC_EOP_EXPM1: ttc_sbuf_printf(b, "expm1(%s)", oa); break;
    case TTC_EOP_LOG10: ttc_sbuf_printf(b, "log10(%s)", oa); break;
    case TTC_EOP_LOG1P: ttc_sbuf_printf(b, "log1p(%s)", oa); break;
    case TTC_EOP_LOG2: ttc_sbuf_printf(b, "log2(%s)", oa); break;
    case TTC_EOP_TRUNC: if (afl) ttc_sbuf_printf(b, "trunc(%s)", oa); else ttc_sbuf_printf(b, "%s", oa); break;
    /* the scalar built-ins return int 0/1; integer operands are never inf or nan */
    case TTC_EOP_ISINF: if (afl) ttc_sbuf_printf(b, "(isinf(%s) != 0)", oa); else ttc_sbuf_printf(b, "0"); break;
    case TTC_EOP_ISNAN: if (afl) ttc_sbuf_printf(b, "(isnan(%s) != 0)", oa); else ttc_sbuf_printf(b, "0"); break;
    case TTC_EOP_INDEX: ttc_sbuf_printf(b, "(%s)i%d", ct, (int)nd->f); break;
    default: return ttc_fail(TTC_ERR_INTERNAL, "codegen: unknown expression op %d", nd->op);
    }
    (void)a; (void)c2;
    return TTC_OK;
}

/* Emits "v<i> = ..." for every node of e. acc_name names the produced value. */
static ttc_status emit_expr(ttc_sbuf *b, const ttc_kir *k, const ttc_expr *e, const char *acc_name) {
    for (int32_t i = 0; i < e->n; i++) {
        const ttc_enode *nd = &e->nodes[i];
        const char *ct = node_type(k, e, i);
        bool fl = is_floatish(nd->dtype);
        /* hc prefixes the literals of half nodes ("" otherwise) */
        const char *hc = strcmp(ct, "half") == 0 ? "(half)" : "";
        ttc_sbuf_printf(b, "    %s v%d = ", ct, i);
        int32_t a = nd->a, c2 = nd->b, c3 = nd->c;
        bool afl = a >= 0 && nd->op != TTC_EOP_LEAF && nd->op != TTC_EOP_CONST && is_floatish(e->nodes[a].dtype);
        /* operands in the node's type (comparisons, casts and the condition read theirs raw) */
        ttc_sbuf ops[3] = {{0}, {0}, {0}};
        int32_t idx[3] = {a, c2, c3};
        for (int32_t j = 0; j < 3; j++)
            if (idx[j] >= 0 && idx[j] < i && nd->op != TTC_EOP_LEAF && nd->op != TTC_EOP_CONST) operand(&ops[j], k, e, idx[j], ct);
        const char *oa = ops[0].data ? ops[0].data : "", *ob = ops[1].data ? ops[1].data : "", *oc = ops[2].data ? ops[2].data : "";
#define A ttc_sbuf_printf(b, "%s", oa)
        ttc_status st = TTC_OK;
        switch (nd->op) {
        case TTC_EOP_LEAF:
            if (a < 0) ttc_sbuf_printf(b, "(%s)%s", ct, acc_name);
            else ttc_sbuf_printf(b, "(%s)l%d_v", ct, a);
            break;
        case TTC_EOP_CONST: emit_const(b, nd->f, nd->dtype); break;
        case TTC_EOP_CAST:
            if (nd->dtype == TTC_DTYPE_BOOL) ttc_sbuf_printf(b, "(v%d != 0)", a);
            else ttc_sbuf_printf(b, "(%s)v%d", ct, a);
            break;
        case TTC_EOP_ADD: ttc_sbuf_printf(b, "%s + %s", oa, ob); break;
        case TTC_EOP_SUB: ttc_sbuf_printf(b, "%s - %s", oa, ob); break;
        case TTC_EOP_MUL: ttc_sbuf_printf(b, "%s * %s", oa, ob); break;
        case TTC_EOP_DIV: ttc_sbuf_printf(b, "%s / %s", oa, ob); break;
        /* torch's maximum/minimum (and clamp, hardtanh, leaky_relu built from them): a NaN
         * operand wins, where OpenCL's fmax/fmin return the other one; on equal values (+-0)
         * the first. Selects only, so PoCL keeps them vectorised and half needs no built-in. */
        case TTC_EOP_MAX:
            if (fl) ttc_sbuf_printf(b, "(%s < %s || %s != %s) ? %s : %s", oa, ob, ob, ob, ob, oa);
            else ttc_sbuf_printf(b, "max(%s, %s)", oa, ob);
            break;
        case TTC_EOP_MIN:
            if (fl) ttc_sbuf_printf(b, "(%s > %s || %s != %s) ? %s : %s", oa, ob, ob, ob, ob, oa);
            else ttc_sbuf_printf(b, "min(%s, %s)", oa, ob);
            break;
        case TTC_EOP_POW: {
            const ttc_enode *bn = &e->nodes[c2];
            if (bn->op == TTC_EOP_CONST && bn->f == 2.0) ttc_sbuf_printf(b, "%s * %s", oa, oa);
            else if (bn->op == TTC_EOP_CONST && bn->f == 0.5 && fl) ttc_sbuf_printf(b, "sqrt(%s)", oa);
            else if (fl) ttc_sbuf_printf(b, "pow(%s, %s)", oa, ob);
            else ttc_sbuf_printf(b, "(%s)pow((float)v%d, (float)v%d)", ct, a, c2);
            break;
        }
        case TTC_EOP_EQ: ttc_sbuf_printf(b, "v%d == v%d", a, c2); break;
        case TTC_EOP_NE: ttc_sbuf_printf(b, "v%d != v%d", a, c2); break;
        case TTC_EOP_LT: ttc_sbuf_printf(b, "v%d < v%d", a, c2); break;
        case TTC_EOP_LE: ttc_sbuf_printf(b, "v%d <= v%d", a, c2); break;
        case TTC_EOP_GT: ttc_sbuf_printf(b, "v%d > v%d", a, c2); break;
        case TTC_EOP_GE: ttc_sbuf_printf(b, "v%d >= v%d", a, c2); break;
        case TTC_EOP_AND: ttc_sbuf_printf(b, "(v%d != 0) && (v%d != 0)", a, c2); break;
        case TTC_EOP_OR: ttc_sbuf_printf(b, "(v%d != 0) || (v%d != 0)", a, c2); break;
        case TTC_EOP_XOR: ttc_sbuf_printf(b, "(v%d != 0) != (v%d != 0)", a, c2); break;
        case TTC_EOP_FLOORDIV:
            if (fl) ttc_sbuf_printf(b, "ttc_floordiv(%s, %s)", oa, ob);
            else ttc_sbuf_printf(b, "v%d / v%d - ((v%d %% v%d != 0) && ((v%d < 0) != (v%d < 0)))", a, c2, a, c2, a, c2);
            break;
        case TTC_EOP_TRUNCDIV:
            if (fl) ttc_sbuf_printf(b, "trunc(%s / %s)", oa, ob);
            else ttc_sbuf_printf(b, "v%d / v%d", a, c2);
            break;
        case TTC_EOP_NEG: ttc_sbuf_printf(b, "-%s", oa); break;
        case TTC_EOP_ABS:
            if (*hc) ttc_sbuf_printf(b, "(%s < (half)0.0f ? -%s : %s)", oa, oa, oa);
            else if (afl) ttc_sbuf_printf(b, "fabs(%s)", oa);
            else ttc_sbuf_printf(b, "(v%d < 0 ? -v%d : v%d)", a, a, a);
            break;
        case TTC_EOP_EXP: ttc_sbuf_printf(b, "exp(%s)", oa); break;
        case TTC_EOP_LOG: ttc_sbuf_printf(b, "log(%s)", oa); break;
        case TTC_EOP_SQRT: ttc_sbuf_printf(b, "sqrt(%s)", oa); break;
        case TTC_EOP_RSQRT: ttc_sbuf_printf(b, "rsqrt(%s)", oa); break;
        case TTC_EOP_RECIP: ttc_sbuf_printf(b, "%s1.0f / %s", hc, oa); break;
        case TTC_EOP_SIN: ttc_sbuf_printf(b, "sin(%s)", oa); break;
        case TTC_EOP_COS: ttc_sbuf_printf(b, "cos(%s)", oa); break;
        case TTC_EOP_ERF: ttc_sbuf_printf(b, "ttc_erf(%s)", oa); break;
        case TTC_EOP_FLOOR: if (afl) ttc_sbuf_printf(b, "floor(%s)", oa); else A; break;
        case TTC_EOP_CEIL: if (afl) ttc_sbuf_printf(b, "ceil(%s)", oa); else A; break;
        case TTC_EOP_ROUND: if (afl) ttc_sbuf_printf(b, "rint(%s)", oa); else A; break;
        case TTC_EOP_SIGN: ttc_sbuf_printf(b, "(%s)((v%d > 0) - (v%d < 0))", ct, a, a); break;
        case TTC_EOP_NOT: ttc_sbuf_printf(b, "!v%d", a); break;
        case TTC_EOP_BITNOT:
            if (nd->dtype == TTC_DTYPE_BOOL) ttc_sbuf_printf(b, "!v%d", a); else ttc_sbuf_printf(b, "~v%d", a);
            break;
        case TTC_EOP_LGAMMA: ttc_sbuf_printf(b, "lgamma(%s)", oa); break;
        case TTC_EOP_RELU:
            /* NaN and -0 pass through, as in torch */
            if (fl) ttc_sbuf_printf(b, "(%s < %s0.0f ? %s0.0f : %s)", oa, hc, hc, oa);
            else ttc_sbuf_printf(b, "max(%s, (%s)0)", oa, ct);
            break;
        case TTC_EOP_SIGMOID: ttc_sbuf_printf(b, "1.0f / (1.0f + exp(-%s))", oa); break;
        case TTC_EOP_TANH: ttc_sbuf_printf(b, "ttc_tanh(%s)", oa); break;
        case TTC_EOP_GELU_ERF: ttc_sbuf_printf(b, "ttc_gelu_erf(%s)", oa); break;
        case TTC_EOP_GELU_TANH: ttc_sbuf_printf(b, "ttc_gelu_tanh(%s)", oa); break;
        case TTC_EOP_SILU: ttc_sbuf_printf(b, "%s / (1.0f + exp(-%s))", oa, oa); break;
        case TTC_EOP_HARDSWISH:
            if (*hc) ttc_sbuf_printf(b, "%s * (%s < (half)-3.0f ? (half)0.0f : %s > (half)3.0f ? (half)6.0f : %s + (half)3.0f) / (half)6.0f",
                                     oa, oa, oa, oa);
            else ttc_sbuf_printf(b, "%s * (%s < -3.0f ? 0.0f : %s > 3.0f ? 6.0f : %s + 3.0f) / 6.0f", oa, oa, oa, oa);
            break;
        case TTC_EOP_HARDSIGMOID:
            if (*hc) ttc_sbuf_printf(b, "(%s < (half)-3.0f ? (half)0.0f : %s > (half)3.0f ? (half)6.0f : %s + (half)3.0f) / (half)6.0f",
                                     oa, oa, oa);
            else ttc_sbuf_printf(b, "(%s < -3.0f ? 0.0f : %s > 3.0f ? 6.0f : %s + 3.0f) / 6.0f", oa, oa, oa);
            break;
        case TTC_EOP_LOG_SIGMOID: ttc_sbuf_printf(b, "fmin(%s, 0.0f) - log1p(exp(-fabs(%s)))", oa, oa); break;
        case TTC_EOP_WHERE: ttc_sbuf_printf(b, "v%d ? %s : %s", a, ob, oc); break;
        default: st = emit_expr_ext(b, nd, a, c2, ct, oa, ob, fl, afl); break;
        }
#undef A
        bool oom = ops[0].oom || ops[1].oom || ops[2].oom;
        for (int32_t j = 0; j < 3; j++) ttc_sbuf_free(&ops[j]);
        if (st != TTC_OK) return st;
        if (oom) return ttc_fail(TTC_ERR_NOMEM, "generating an expression");
        ttc_sbuf_printf(b, ";\n");
    }
    return TTC_OK;
}

/* Emits the store function "<kname>_store(acc, lin, ...)" computing op's expression at
 * output index lin, and appends its arguments to ks. params/args get the parameter list
 * and the argument names (each starting with ", "). */
static ttc_status emit_store_fn(ttc_sbuf *src, const ttc_kir *k, const ttc_kop *op, ttc_kspec *ks,
                                ttc_sbuf *params, ttc_sbuf *args) {
    const ttc_et *out = &k->ts[op->out];
    const ttc_expr *e = &op->epi;
    int32_t R = out->rank;
    bool need_idx = false;
    for (int32_t l = 0; l < e->n_leaves; l++)
        if (!leaf_dense(k, out, e->leaves[l])) need_idx = true;
    for (int32_t i = 0; i < e->n; i++)
        if (e->nodes[i].op == TTC_EOP_INDEX) {
            if ((int32_t)e->nodes[i].f >= R)
                return ttc_fail(TTC_ERR_INTERNAL, "%s: index of dim %d in a rank-%d output", op->name, (int)e->nodes[i].f, R);
            need_idx = true;
        }
    ttc_sbuf_printf(params, ", __global %s *o_, int o_off", ttc_cl_storage_type(out->dtype));
    ttc_sbuf_printf(args, ", o_, o_off");
    TTC_TRY(add_arg(ks, TTC_ARG_BUF, op->out, 0, 0, 0));
    TTC_TRY(add_arg(ks, TTC_ARG_OFF, op->out, 0, 0, 0));
    if (need_idx)
        for (int32_t d = 0; d < R; d++) {
            ttc_sbuf_printf(params, ", int od%d", d);
            ttc_sbuf_printf(args, ", od%d", d);
            TTC_TRY(add_arg(ks, TTC_ARG_DIM, op->out, d, 0, 0));
        }
    for (int32_t l = 0; l < e->n_leaves; l++) {
        int32_t t = e->leaves[l];
        ttc_sbuf_printf(params, ", __global const %s *l%d, int l%d_off", ttc_cl_storage_type(k->ts[t].dtype), l, l);
        ttc_sbuf_printf(args, ", l%d, l%d_off", l, l);
        TTC_TRY(add_arg(ks, TTC_ARG_BUF, t, 0, 0, 0));
        TTC_TRY(add_arg(ks, TTC_ARG_OFF, t, 0, 0, 0));
        if (!leaf_dense(k, out, t))
            for (int32_t d = 0; d < R; d++) {
                ttc_sbuf_printf(params, ", int l%d_s%d", l, d);
                ttc_sbuf_printf(args, ", l%d_s%d", l, d);
                TTC_TRY(add_arg(ks, TTC_ARG_STRIDE, t, d, R, 0));
            }
    }
    ttc_sbuf_printf(src, "static inline void %s_store(float acc, int lin%s) {\n", ks->name,
                    params->data ? params->data : "");
    if (need_idx) {
        ttc_sbuf_printf(src, "    int rem = lin;\n");
        for (int32_t d = R - 1; d >= 0; d--)
            ttc_sbuf_printf(src, "    int i%d = rem %% od%d; rem /= od%d;\n", d, d, d);
    }
    for (int32_t l = 0; l < e->n_leaves; l++) {
        int32_t t = e->leaves[l];
        ttc_sbuf_printf(src, "    int l%d_p = l%d_off", l, l);
        if (leaf_dense(k, out, t)) ttc_sbuf_printf(src, " + lin");
        else for (int32_t d = 0; d < R; d++) ttc_sbuf_printf(src, " + i%d * l%d_s%d", d, l, d);
        bool hl = k->half_compute && k->ts[t].dtype == TTC_DTYPE_FLOAT16;
        ttc_sbuf_printf(src, ";\n    %s l%d_v = ", hl ? "half" : ctype(k->ts[t].dtype), l);
        char ptr[16], idx[16];
        snprintf(ptr, sizeof ptr, "l%d", l);
        snprintf(idx, sizeof idx, "l%d_p", l);
        emit_load(src, k, k->ts[t].dtype, ptr, idx);
        ttc_sbuf_printf(src, ";\n");
    }
    const char *res = "acc";
    char rbuf[16];
    if (e->n > 0) {
        TTC_TRY(emit_expr(src, k, e, "acc"));
        snprintf(rbuf, sizeof rbuf, "v%d", e->root);
        res = rbuf;
    }
    if (out->dtype == TTC_DTYPE_FLOAT16 && k->half_compute) ttc_sbuf_printf(src, "    o_[o_off + lin] = (half)%s;\n}\n", res);
    else if (out->dtype == TTC_DTYPE_FLOAT16) ttc_sbuf_printf(src, "    vstore_half((float)%s, o_off + lin, o_);\n}\n", res);
    else if (out->dtype == TTC_DTYPE_BOOL) ttc_sbuf_printf(src, "    o_[o_off + lin] = (uchar)(%s != 0);\n}\n", res);
    else ttc_sbuf_printf(src, "    o_[o_off + lin] = (%s)%s;\n}\n", ttc_cl_storage_type(out->dtype), res);
    return TTC_OK;
}

ttc_status ttc_codegen_add_arg(ttc_kspec *ks, ttc_arg_kind kind, int32_t t, int32_t d, int32_t r, int64_t v) {
    return add_arg(ks, kind, t, d, r, v);
}

void ttc_codegen_loader(ttc_sbuf *src, const char *name, ttc_dtype d, bool vec8) {
    if (d == TTC_DTYPE_FLOAT16)
        ttc_sbuf_printf(src, vec8 ? "#define %s(p,i) vload_half8(0, (p) + (i))\n" : "#define %s(p,i) vload_half((i), (p))\n", name);
    else
        ttc_sbuf_printf(src, vec8 ? "#define %s(p,i) convert_float8(vload8(0, (p) + (i)))\n" : "#define %s(p,i) ((float)(p)[i])\n", name);
}

ttc_status ttc_codegen_template(ttc_sbuf *src, const char *tmpl, const char *const *defs) {
    return emit_template(src, tmpl, defs);
}

void ttc_codegen_gdim(ttc_kspec *ks, int32_t i, int32_t t, int32_t from, int32_t to, int32_t div, int32_t local) {
    gdim(ks, i, t, from, to, div, local);
}

static void gdim(ttc_kspec *ks, int32_t i, int32_t t, int32_t from, int32_t to, int32_t div, int32_t local) {
    ttc_gdim g = {t, from, to, div, local, 1};
    ks->g[i] = g;
    if (i + 1 > ks->work_dims) ks->work_dims = i + 1;
}

/* Appends the template `name` specialised by defines (a NULL-terminated list of
 * name/value pairs), undefining them afterwards. */
static ttc_status emit_template(ttc_sbuf *src, const char *tmpl, const char *const *defs) {
    const char *body = ttc_kernel_source_get(tmpl);
    if (!body) return ttc_fail(TTC_ERR_INTERNAL, "kernel template %s.cl is missing", tmpl);
    for (int i = 0; defs[i]; i += 2) ttc_sbuf_printf(src, "#define %s %s\n", defs[i], defs[i + 1]);
    ttc_sbuf_append(src, body, strlen(body));
    for (int i = 0; defs[i]; i += 2) ttc_sbuf_printf(src, "#undef %s\n", defs[i]);
    return TTC_OK;
}

static void ld_macros(ttc_dtype d, char *ld, char *ld8, size_t cap) {
    if (d == TTC_DTYPE_FLOAT16) {
        snprintf(ld, cap, "(p,i) vload_half((i), (p))");
        snprintf(ld8, cap, "(p,i) vload_half8(0, (p) + (i))");
    } else {
        snprintf(ld, cap, "(p,i) ((float)(p)[i])");
        snprintf(ld8, cap, "(p,i) convert_float8(vload8(0, (p) + (i)))");
    }
}

static ttc_status gen_gemm(ttc_sbuf *src, const ttc_kir *k, const ttc_kop *op, ttc_kspec *ks, bool gpu,
                           const char *P, const char *A_) {
    /* dims [.., M, N] come from the GEMM's shape tensor: the store index (b * M + m) * N + n is
     * the same linear index in a fused consumer's output that reshapes it (fuse.c) */
    int32_t st = ttc_kop_gemm_shape(op);
    const ttc_et *a = &k->ts[op->in[0]], *b = &k->ts[op->in[1]];
    int32_t R = k->ts[st].rank;
    char lda[96], lda8[96], ldb[96], ldb8[96], kname[24], store[32], tb[8];
    ld_macros(a->dtype, lda, lda8, sizeof lda);
    ld_macros(b->dtype, ldb, ldb8, sizeof ldb);
    /* function-like macros: name and parameter list are glued by the #define line */
    char dA[16] = "LDA", dA8[16] = "LDA8", dB[16] = "LDB", dB8[16] = "LDB8";
    snprintf(kname, sizeof kname, "%s", ks->name);
    snprintf(store, sizeof store, "%s_store", ks->name);
    snprintf(tb, sizeof tb, "%d", op->p.gemm.trans_b ? 1 : 0);
    /* an index outside the table (never chosen by tune.c) falls back to the device's plainest kernel */
    int32_t ti = op->tile >= 0 && op->tile < TTC_GEMM_TILES ? op->tile : (gpu ? 3 : 0);
    ttc_gemm_tile t = ttc_gemm_tiles[ti];
    bool f16a = a->dtype == TTC_DTYPE_FLOAT16, f16b = b->dtype == TTC_DTYPE_FLOAT16;
    if (t.family == TTC_GEMM_MMA && ((!f16a && a->dtype != TTC_DTYPE_FLOAT32) || (!f16b && b->dtype != TTC_DTYPE_FLOAT32)))
        return ttc_fail(TTC_ERR_INTERNAL, "codegen: tensor-core GEMM candidate %d needs float16/float32 inputs", ti);
    char v[6][8];
    int16_t tv[6] = {t.bm, t.bn, t.bk, t.tm, t.tn, t.kw > 1 ? t.kw : 1};
    for (int i = 0; i < 6; i++) snprintf(v[i], sizeof v[i], "%d", tv[i]);
    ttc_sbuf_printf(src, "#define %s%s\n#define %s%s\n#define %s%s\n#define %s%s\n", dA, lda, dA8, lda8, dB, ldb, dB8, ldb8);
    const char *defs[] = {"KNAME", kname, "STORE_FN", store, "EPI_PARAMS", P, "EPI_ARGS", A_,
                          "TA", ttc_cl_storage_type(a->dtype), "TB", ttc_cl_storage_type(b->dtype),
                          "TRANS_B", tb, "BM", v[0], "BN", v[1], "BK", v[2], "TM", v[3], "TN", v[4], "KW", v[5],
                          "A_F32", f16a ? "0" : "1", "B_F32", f16b ? "0" : "1",
                          "UNROLL", gpu ? "_Pragma(\"unroll\")" : "", NULL};
    static const char *tmpl[] = {"gemm_cpu", "gemm_gpu", "gemm_mma"};
    TTC_TRY(emit_template(src, tmpl[t.family], defs));
    ttc_sbuf_printf(src, "#undef LDA\n#undef LDA8\n#undef LDB\n#undef LDB8\n");
    /* args: A, offA, B, offB, M, N, K, sAb, sBb */
    int32_t ra = a->rank, rb = b->rank;
    TTC_TRY(add_arg(ks, TTC_ARG_BUF, op->in[0], 0, 0, 0));
    TTC_TRY(add_arg(ks, TTC_ARG_OFF, op->in[0], 0, 0, 0));
    TTC_TRY(add_arg(ks, TTC_ARG_BUF, op->in[1], 0, 0, 0));
    TTC_TRY(add_arg(ks, TTC_ARG_OFF, op->in[1], 0, 0, 0));
    TTC_TRY(add_arg(ks, TTC_ARG_DIM, st, R - 2, 0, 0));
    TTC_TRY(add_arg(ks, TTC_ARG_DIM, st, R - 1, 0, 0));
    TTC_TRY(add_arg(ks, TTC_ARG_DIM, op->in[0], ra - 1, 0, 0));
    if (ra > 2) TTC_TRY(add_arg(ks, TTC_ARG_PROD, op->in[0], ra - 2, ra, 0));
    else TTC_TRY(add_arg(ks, TTC_ARG_INT, 0, 0, 0, 0));
    if (rb > 2) TTC_TRY(add_arg(ks, TTC_ARG_PROD, op->in[1], rb - 2, rb, 0));
    else TTC_TRY(add_arg(ks, TTC_ARG_INT, 0, 0, 0, 0));
    if (t.family == TTC_GEMM_SIMT) {
        /* work-group (bn/tn * kw, bm/tm): each work-item owns tm x tn outputs of a bm x bn tile
         * (a partial sum over 1/kw of k where kw > 1) */
        int32_t kw = t.kw > 1 ? t.kw : 1;
        gdim(ks, 0, st, R - 1, R, t.tn, t.bn / t.tn * kw);
        ks->g[0].mul = kw;
        gdim(ks, 1, st, R - 2, R - 1, t.tm, t.bm / t.tm);
        ks->use_local = true;
    } else if (t.family == TTC_GEMM_MMA) {
        /* one work-group of 32 * tm * tn * kw work-items per bm x bn tile, tiles along dim 0 by N */
        int32_t nt = 32 * t.tm * t.tn * (t.kw > 1 ? t.kw : 1);
        gdim(ks, 0, st, R - 1, R, t.bn, nt);
        ks->g[0].mul = nt;
        gdim(ks, 1, st, R - 2, R - 1, t.bm, 1);
        ks->use_local = true;
    } else {
        /* CPU tiles are work-group shapes (0: the driver's choice) */
        gdim(ks, 0, st, R - 1, R, op->p.gemm.trans_b ? 4 : 8, t.bm);
        gdim(ks, 1, st, R - 2, R - 1, op->p.gemm.trans_b ? 2 : 4, t.bm);
        ks->use_local = t.bm > 0;
    }
    gdim(ks, 2, st, 0, R - 2, 1, ks->use_local ? 1 : 0);
    return TTC_OK;
}

ttc_status ttc_codegen_kind(ttc_sbuf *src, const ttc_kir *k, const ttc_kop *op, ttc_kspec *ks, bool gpu,
                            const char *P, const char *A_);

static ttc_status gen_op(ttc_sbuf *src, const ttc_kir *k, int32_t oi, ttc_kspec *ks, bool gpu) {
    const ttc_kop *op = &k->ops[oi];
    const ttc_et *out = &k->ts[op->out];
    ttc_sbuf params = {0}, args = {0};
    ttc_status s = emit_store_fn(src, k, op, ks, &params, &args);
    const char *P = params.data ? params.data : "", *A_ = args.data ? args.data : "";
    if (s == TTC_OK) {
        /* The store-function arguments come first in ks->args; kernels put them last:
         * rotate after the kind-specific arguments are appended. */
        int32_t n_epi = ks->n_args;
        if (k->native && ttc_native_op_ok(k, op)) s = ttc_codegen_native(src, k, op, ks, P, A_);
        else switch (op->kind) {
        case TTC_KOP_ELEMENTWISE:
            ttc_sbuf_printf(src, "__kernel void %s(int n%s) {\n    int lin = get_global_id(0);\n"
                            "    if (lin >= n) return;\n    %s_store(0.0f, lin%s);\n}\n", ks->name, P, ks->name, A_);
            s = add_arg(ks, TTC_ARG_PROD, op->out, 0, out->rank, 0);
            gdim(ks, 0, op->out, 0, out->rank, 1, 0);
            break;
        case TTC_KOP_GEMM: s = gen_gemm(src, k, op, ks, gpu, P, A_); break;
        case TTC_KOP_GATHER: case TTC_KOP_CONCAT: case TTC_KOP_PAD: case TTC_KOP_INDEX:
        case TTC_KOP_RESIZE: case TTC_KOP_ATTENTION: case TTC_KOP_SORT: case TTC_KOP_SCATTER:
            s = ttc_codegen_data(src, k, op, ks, gpu, P, A_);
            break;
        case TTC_KOP_SCAN: s = ttc_codegen_scan(src, k, op, ks, P, A_); break;
        default: s = ttc_codegen_kind(src, k, op, ks, gpu, P, A_); break;
        }
        if (s == TTC_OK) {
            int32_t n_kind = ks->n_args - n_epi;
            ttc_argspec *tmp = ttc_malloc(sizeof(ttc_argspec) * (size_t)(ks->n_args + 1));
            if (!tmp) s = TTC_ERR_NOMEM;
            else {
                memcpy(tmp, ks->args + n_epi, sizeof(ttc_argspec) * (size_t)n_kind);
                memcpy(tmp + n_kind, ks->args, sizeof(ttc_argspec) * (size_t)n_epi);
                memcpy(ks->args, tmp, sizeof(ttc_argspec) * (size_t)ks->n_args);
                free(tmp);
            }
        }
    }
    ttc_sbuf_free(&params);
    ttc_sbuf_free(&args);
    if (s != TTC_OK) ttc_fail_context(s, "generating the kernel for %s", op->name);
    return s;
}

ttc_status ttc_codegen_run(const ttc_kir *k, bool gpu, ttc_codegen *out) {
    memset(out, 0, sizeof *out);
    ttc_sbuf src = {0};
    ttc_sbuf_printf(&src, "/* torchtrt_c engine program (generated) */\n");
    if (k->half_compute) ttc_sbuf_printf(&src, "#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n");
    {   /* erf, tanh, GELU, floor division (mathfn.cl): vectorisable versions on CPU devices */
        const char *defs[] = {"TTC_CPU_MATH", gpu ? "0" : "1", NULL};
        ttc_status ms = emit_template(&src, "mathfn", defs);
        if (ms != TTC_OK) { ttc_sbuf_free(&src); return ms; }
    }
    int32_t live = 0;
    for (int32_t i = 0; i < k->n_ops; i++) live += !k->ops[i].dead;
    out->kernels = ttc_calloc((size_t)live + 1, sizeof(ttc_kspec));
    if (!out->kernels) return TTC_ERR_NOMEM;
    ttc_codegen_dedupe dd = {0};
    bool dedupe = ttc_codegen_dedupe_enabled();
    for (int32_t i = 0; i < k->n_ops; i++) {
        if (k->ops[i].dead) continue;
        ttc_kspec *ks = &out->kernels[out->n_kernels++];
        ks->op = i;
        snprintf(ks->name, sizeof ks->name, "k%d", out->n_kernels - 1);
        size_t head = src.len;
        ttc_sbuf_printf(&src, "\n/* %s: %s */\n", ks->name, k->ops[i].name);
        size_t start = src.len, cut = 0;
        ttc_status s = gen_op(&src, k, i, ks, gpu);
        if (s == TTC_OK && dedupe) s = ttc_codegen_dedupe_add(&dd, &src, start, ks, &cut);
        if (s != TTC_OK) { ttc_codegen_dedupe_free(&dd); ttc_sbuf_free(&src); ttc_codegen_free(out); return s; }
        if (cut) src.len = head;   /* a copy of ks->name's kernel: launch that one */
        if (src.data && !src.oom) src.data[src.len] = 0;
    }
    out->n_unique = dedupe ? dd.n : out->n_kernels;
    ttc_codegen_dedupe_free(&dd);
    if (src.oom) { ttc_sbuf_free(&src); ttc_codegen_free(out); return ttc_fail(TTC_ERR_NOMEM, "generating source"); }
    out->source = ttc_sbuf_take(&src);
    return TTC_OK;
}

void ttc_codegen_free(ttc_codegen *cg) {
    for (int32_t i = 0; i < cg->n_kernels; i++) free(cg->kernels[i].args);
    free(cg->kernels);
    free(cg->source);
    memset(cg, 0, sizeof *cg);
}
