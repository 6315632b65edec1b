/* How expression ops and value conversions are written in OpenCL C (ttc_spelling, see
 * codegen.h for the placeholders). Generators never spell an op themselves: another
 * renderer copies this table and replaces what its language writes differently. */
#include "codegen.h"

/* Each row of kir/eops.def must have its SPELL_<NAME> here: a new op does not compile without
 * one. LEAF, CONST and INDEX's dims are written by codegen_expr.c from the pieces below. */
#define SPELL_LEAF .fl = NULL
#define SPELL_CONST .fl = NULL
#define SPELL_CAST .fl = "(%t)%A", .boolean = "(%A != 0)"
#define SPELL_ADD .fl = "%a + %b"
#define SPELL_SUB .fl = "%a - %b"
#define SPELL_MUL .fl = "%a * %b"
#define SPELL_DIV .fl = "%a / %b"
/* torch's maximum/minimum (and clamp, hardtanh, leaky_relu built from them): a NaN
 * operand wins, where OpenCL's fmax/fmin return the other one; on equal values (+-0)
 * the first. Selects only, so PoCL keeps them vectorised and half needs no built-in. */
#define SPELL_MAX .fl = "(%a < %b || %b != %b) ? %b : %a", .in = "max(%a, %b)"
#define SPELL_MIN .fl = "(%a > %b || %b != %b) ? %b : %a", .in = "min(%a, %b)"
#define SPELL_POW .fl = "pow(%a, %b)", .in = "(%t)ttc_ipow((long)%A, (long)%B)"
#define SPELL_EQ .fl = "%A == %B"
#define SPELL_NE .fl = "%A != %B"
#define SPELL_LT .fl = "%A < %B"
#define SPELL_LE .fl = "%A <= %B"
#define SPELL_GT .fl = "%A > %B"
#define SPELL_GE .fl = "%A >= %B"
#define SPELL_AND .fl = "(%A != 0) && (%B != 0)"
#define SPELL_OR .fl = "(%A != 0) || (%B != 0)"
#define SPELL_XOR .fl = "(%A != 0) != (%B != 0)"
#define SPELL_FLOORDIV .fl = "ttc_floordiv(%a, %b)", .in = "%A / %B - ((%A %% %B != 0) && ((%A < 0) != (%B < 0)))"
#define SPELL_TRUNCDIV .fl = "trunc(%a / %b)", .in = "%A / %B"
#define SPELL_NEG .fl = "-%a"
#define SPELL_ABS .fl = "fabs(%a)", .in = "(%A < 0 ? -%A : %A)", .half = "(%a < (half)0.0f ? -%a : %a)", .by_operand = true
#define SPELL_EXP .fl = "exp(%a)"
#define SPELL_LOG .fl = "log(%a)"
#define SPELL_SQRT .fl = "sqrt(%a)"
#define SPELL_RSQRT .fl = "rsqrt(%a)"
#define SPELL_RECIP .fl = "%h1.0f / %a"
#define SPELL_SIN .fl = "sin(%a)"
#define SPELL_COS .fl = "cos(%a)"
#define SPELL_ERF .fl = "ttc_erf(%a)"
#define SPELL_FLOOR .fl = "floor(%a)", .in = "%a", .by_operand = true
#define SPELL_CEIL .fl = "ceil(%a)", .in = "%a", .by_operand = true
#define SPELL_ROUND .fl = "rint(%a)", .in = "%a", .by_operand = true
#define SPELL_SIGN .fl = "(%t)((%A > 0) - (%A < 0))"
#define SPELL_NOT .fl = "!%A"
#define SPELL_BITNOT .fl = "~%A", .boolean = "!%A"
#define SPELL_LGAMMA .fl = "lgamma(%a)"
/* NaN and -0 pass through, as in torch */
#define SPELL_RELU .fl = "(%a < %h0.0f ? %h0.0f : %a)", .in = "max(%a, (%t)0)"
#define SPELL_SIGMOID .fl = "1.0f / (1.0f + exp(-%a))"
#define SPELL_TANH .fl = "ttc_tanh(%a)"
/* GELU: ours (mathfn.cl, erfc-based: 4 ulp of float64 everywhere, also in the negative
 * tail) in float; a value that ends as half takes the cheaper forms of mathfn.cl's
 * *_h, their error below half's resolution */
#define SPELL_GELU_ERF .fl = "ttc_gelu_erf(%a)", .fl16 = "ttc_gelu_erf_h(%a)"
#define SPELL_GELU_TANH .fl = "ttc_gelu_tanh(%a)", .fl16 = "ttc_gelu_tanh_h(%a)"
#define SPELL_SILU .fl = "%a / (1.0f + exp(-%a))"
#define SPELL_HARDSWISH .fl = "%a * (%a < -3.0f ? 0.0f : %a > 3.0f ? 6.0f : %a + 3.0f) / 6.0f", \
    .half = "%a * (%a < (half)-3.0f ? (half)0.0f : %a > (half)3.0f ? (half)6.0f : %a + (half)3.0f) / (half)6.0f"
#define SPELL_HARDSIGMOID .fl = "(%a < -3.0f ? 0.0f : %a > 3.0f ? 6.0f : %a + 3.0f) / 6.0f", \
    .half = "(%a < (half)-3.0f ? (half)0.0f : %a > (half)3.0f ? (half)6.0f : %a + (half)3.0f) / (half)6.0f"
#define SPELL_LOG_SIGMOID .fl = "fmin(%a, 0.0f) - log1p(exp(-fabs(%a)))"
#define SPELL_WHERE .fl = "%A ? %b : %c"
#define SPELL_BITAND .fl = "%a & %b"
#define SPELL_BITOR .fl = "%a | %b"
#define SPELL_BITXOR .fl = "%a ^ %b"
#define SPELL_ATAN2 .fl = "atan2(%a, %b)"
/* integer %: a zero divisor gives 0 and -1 gives 0 (INT_MIN % -1 traps on x86 CPUs):
 * torch raises on the first, and the second is 0 mathematically; a kernel must never trap */
#define SPELL_FMOD .fl = "fmod(%a, %b)", .in = "(%b == 0 || %b == -1) ? (%t)0 : %a %% %b"
/* torch: r = fmod(a, b); r += b where r and b differ in sign */
#define SPELL_REMAINDER .fl = "(fmod(%a, %b) != 0.0f && ((fmod(%a, %b) < 0.0f) != (%b < 0.0f))) ? fmod(%a, %b) + %b : fmod(%a, %b)", \
    .in = "(%b == 0 || %b == -1) ? (%t)0 : ((%a %% %b != 0 && ((%a %% %b < 0) != (%b < 0))) ? " \
    "%a %% %b + %b : %a %% %b)"
#define SPELL_ACOS .fl = "acos(%a)"
#define SPELL_ACOSH .fl = "acosh(%a)"
#define SPELL_ASIN .fl = "asin(%a)"
#define SPELL_ASINH .fl = "asinh(%a)"
#define SPELL_ATAN .fl = "atan(%a)"
#define SPELL_ATANH .fl = "atanh(%a)"
#define SPELL_COSH .fl = "cosh(%a)"
#define SPELL_SINH .fl = "sinh(%a)"
#define SPELL_TAN .fl = "tan(%a)"
#define SPELL_EXPM1 .fl = "expm1(%a)"
#define SPELL_LOG10 .fl = "log10(%a)"
#define SPELL_LOG1P .fl = "log1p(%a)"
#define SPELL_LOG2 .fl = "log2(%a)"
#define SPELL_TRUNC .fl = "trunc(%a)", .in = "%a", .by_operand = true
/* the scalar built-ins return int 0/1; integer operands are never inf or nan */
#define SPELL_ISINF .fl = "(isinf(%a) != 0)", .in = "0", .by_operand = true
#define SPELL_ISNAN .fl = "(isnan(%a) != 0)", .in = "0", .by_operand = true
#define SPELL_INDEX .fl = "(%t)i%i"

static const ttc_spelling opencl = {
    .op = {
#define EOP(name, arity, cmp, half, native, mathfn, dnnl, cublas) [TTC_EOP_##name] = {SPELL_##name},
#include "../kir/eops.def"
#undef EOP
    },
    .pow_square = "%a * %a",
    .pow_sqrt = "sqrt(%a)",
    .nan = "NAN",
    .inf = "INFINITY",
    .ninf = "(-INFINITY)",
    .float_lit = "%.9ef",
    .half_cast = "(half)",
    .load_half = "vload_half(%1$s, %2$s)",
    .load_float = "((float)%2$s[%1$s])",
    .load_half_vec = "vload_half%1$d(0, %2$s)",
    .load_vec = "convert_float%1$d(vload%1$d(0, %2$s))",
    .store_half = "vstore_half(%s, %s, %s)",
    /* bfloat16 is the high half of a float's bits; no OpenCL device we target has a type for
     * it, so it is stored as ushort and converted by bit manipulation: rounded to nearest even
     * as torch rounds (c10::BFloat16), NaN as torch's quiet NaN 0x7fc0 */
    .load_bf16 = "as_float((uint)%2$s[%1$s] << 16)",
    .store_bf16 = "%3$s[%2$s] = ttc_bf16_of(%1$s)",
    .bf16_fns = "static inline ushort ttc_bf16_of(float f) {\n"
                "    uint u = as_uint(f);\n"
                "    if ((u & 0x7fffffffu) > 0x7f800000u) return (ushort)0x7fc0;\n"
                "    return (ushort)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);\n"
                "}\n",
};

const ttc_spelling *ttc_spelling_opencl(void) { return &opencl; }
