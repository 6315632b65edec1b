/* How expression ops and value conversions are written in OpenCL C (ttc_spelling, see
 * codegen.h for the placeholders). Generators never spell an op themselves: another
 * renderer copies this table and replaces what its language writes differently. */
#include "codegen.h"

#define OP(e, ...) [TTC_EOP_##e] = {__VA_ARGS__}

static const ttc_spelling opencl = {
    .op = {
        /* LEAF, CONST and INDEX's dims are written by codegen_expr.c from these pieces */
        OP(CAST, .fl = "(%t)%A", .boolean = "(%A != 0)"),
        OP(ADD, .fl = "%a + %b"), OP(SUB, .fl = "%a - %b"), OP(MUL, .fl = "%a * %b"), OP(DIV, .fl = "%a / %b"),
        /* torch's maximum/minimum (and clamp, hardtanh, leaky_relu built from them): a NaN
         * operand wins, where OpenCL's fmax/fmin return the other one; on equal values (+-0)
         * the first. Selects only, so PoCL keeps them vectorised and half needs no built-in. */
        OP(MAX, .fl = "(%a < %b || %b != %b) ? %b : %a", .in = "max(%a, %b)"),
        OP(MIN, .fl = "(%a > %b || %b != %b) ? %b : %a", .in = "min(%a, %b)"),
        OP(POW, .fl = "pow(%a, %b)", .in = "(%t)ttc_ipow((long)%A, (long)%B)"),
        OP(EQ, .fl = "%A == %B"), OP(NE, .fl = "%A != %B"), OP(LT, .fl = "%A < %B"), OP(LE, .fl = "%A <= %B"),
        OP(GT, .fl = "%A > %B"), OP(GE, .fl = "%A >= %B"),
        OP(AND, .fl = "(%A != 0) && (%B != 0)"), OP(OR, .fl = "(%A != 0) || (%B != 0)"),
        OP(XOR, .fl = "(%A != 0) != (%B != 0)"),
        OP(FLOORDIV, .fl = "ttc_floordiv(%a, %b)", .in = "%A / %B - ((%A %% %B != 0) && ((%A < 0) != (%B < 0)))"),
        OP(TRUNCDIV, .fl = "trunc(%a / %b)", .in = "%A / %B"),
        OP(NEG, .fl = "-%a"),
        OP(ABS, .fl = "fabs(%a)", .in = "(%A < 0 ? -%A : %A)", .half = "(%a < (half)0.0f ? -%a : %a)", .by_operand = true),
        OP(EXP, .fl = "exp(%a)"), OP(LOG, .fl = "log(%a)"), OP(SQRT, .fl = "sqrt(%a)"), OP(RSQRT, .fl = "rsqrt(%a)"),
        OP(RECIP, .fl = "%h1.0f / %a"), OP(SIN, .fl = "sin(%a)"), OP(COS, .fl = "cos(%a)"),
        OP(ERF, .fl = "ttc_erf(%a)"),
        OP(FLOOR, .fl = "floor(%a)", .in = "%a", .by_operand = true),
        OP(CEIL, .fl = "ceil(%a)", .in = "%a", .by_operand = true),
        OP(ROUND, .fl = "rint(%a)", .in = "%a", .by_operand = true),
        OP(SIGN, .fl = "(%t)((%A > 0) - (%A < 0))"),
        OP(NOT, .fl = "!%A"),
        OP(BITNOT, .fl = "~%A", .boolean = "!%A"),
        OP(LGAMMA, .fl = "lgamma(%a)"),
        /* NaN and -0 pass through, as in torch */
        OP(RELU, .fl = "(%a < %h0.0f ? %h0.0f : %a)", .in = "max(%a, (%t)0)"),
        OP(SIGMOID, .fl = "1.0f / (1.0f + exp(-%a))"),
        OP(TANH, .fl = "ttc_tanh(%a)"),
        /* GELU: ours (mathfn.cl, erfc-based: 4 ulp of float64 everywhere, also in the negative
         * tail) in float; a value that ends as half takes the cheaper forms of mathfn.cl's
         * *_h, their error below half's resolution */
        OP(GELU_ERF, .fl = "ttc_gelu_erf(%a)", .fl16 = "ttc_gelu_erf_h(%a)"),
        OP(GELU_TANH, .fl = "ttc_gelu_tanh(%a)", .fl16 = "ttc_gelu_tanh_h(%a)"),
        OP(SILU, .fl = "%a / (1.0f + exp(-%a))"),
        OP(HARDSWISH, .fl = "%a * (%a < -3.0f ? 0.0f : %a > 3.0f ? 6.0f : %a + 3.0f) / 6.0f",
           .half = "%a * (%a < (half)-3.0f ? (half)0.0f : %a > (half)3.0f ? (half)6.0f : %a + (half)3.0f) / (half)6.0f"),
        OP(HARDSIGMOID, .fl = "(%a < -3.0f ? 0.0f : %a > 3.0f ? 6.0f : %a + 3.0f) / 6.0f",
           .half = "(%a < (half)-3.0f ? (half)0.0f : %a > (half)3.0f ? (half)6.0f : %a + (half)3.0f) / (half)6.0f"),
        OP(LOG_SIGMOID, .fl = "fmin(%a, 0.0f) - log1p(exp(-fabs(%a)))"),
        OP(WHERE, .fl = "%A ? %b : %c"),
        OP(BITAND, .fl = "%a & %b"), OP(BITOR, .fl = "%a | %b"), OP(BITXOR, .fl = "%a ^ %b"),
        OP(ATAN2, .fl = "atan2(%a, %b)"),
        /* integer %: a zero divisor gives 0 and -1 gives 0 (INT_MIN % -1 traps on x86 CPUs):
         * torch raises on the first, and the second is 0 mathematically; a kernel must never trap */
        OP(FMOD, .fl = "fmod(%a, %b)", .in = "(%b == 0 || %b == -1) ? (%t)0 : %a %% %b"),
        /* torch: r = fmod(a, b); r += b where r and b differ in sign */
        OP(REMAINDER,
           .fl = "(fmod(%a, %b) != 0.0f && ((fmod(%a, %b) < 0.0f) != (%b < 0.0f))) ? fmod(%a, %b) + %b : fmod(%a, %b)",
           .in = "(%b == 0 || %b == -1) ? (%t)0 : ((%a %% %b != 0 && ((%a %% %b < 0) != (%b < 0))) ? "
                 "%a %% %b + %b : %a %% %b)"),
        OP(ACOS, .fl = "acos(%a)"), OP(ACOSH, .fl = "acosh(%a)"), OP(ASIN, .fl = "asin(%a)"),
        OP(ASINH, .fl = "asinh(%a)"), OP(ATAN, .fl = "atan(%a)"), OP(ATANH, .fl = "atanh(%a)"),
        OP(COSH, .fl = "cosh(%a)"), OP(SINH, .fl = "sinh(%a)"), OP(TAN, .fl = "tan(%a)"),
        OP(EXPM1, .fl = "expm1(%a)"), OP(LOG10, .fl = "log10(%a)"), OP(LOG1P, .fl = "log1p(%a)"),
        OP(LOG2, .fl = "log2(%a)"),
        OP(TRUNC, .fl = "trunc(%a)", .in = "%a", .by_operand = true),
        /* the scalar built-ins return int 0/1; integer operands are never inf or nan */
        OP(ISINF, .fl = "(isinf(%a) != 0)", .in = "0", .by_operand = true),
        OP(ISNAN, .fl = "(isnan(%a) != 0)", .in = "0", .by_operand = true),
        OP(INDEX, .fl = "(%t)i%i"),
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
