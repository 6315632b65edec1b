/* erf, tanh and GELU (through erfc) for the engine's expressions: branch-free (both sides of every
 * range switch are computed and one is selected), so that PoCL vectorises them across
 * work-items; its built-in erf and tanh run scalar (a BERT-base GELU over 128x3072 took
 * 8.7 ms with them, 0.9 ms with exp).
 *
 * erfc(a), a >= 0.5, is exp(-a^2) * Q(t) / (a + 2) with t = (a - 2) / (a + 2) in [-0.6, 0.68]
 * and Q of degree 9, fitted to relative error 3.5e-9 on a in [0.45, 10.5] (past 10.06 erfc
 * is below the smallest denormal; the result is 0 past 10.5). exp(-a^2) is
 * exp(-p) * (1 - pl) with p + pl = a*a exactly (TTC_SQ_LO): rounding a*a would cost a^2
 * ulps (81 at a = 9). Below 0.5, erf(x) = x * P(x^2) (P fitted to 7e-10 relative) and
 * erfc = 1 - erf, free of cancellation there (erf < 0.53). Measured against float64 over the
 * whole range (tests/test_mathfn.py): erf 2.1 ulp, GELU 4.3 ulp on PoCL.
 *
 * GELU(x) = x/2 * erfc(-x/sqrt2): 1 + erf(x/sqrt2) cancels in the negative tail (a
 * fresh machine's PoCL lost 8e-4 relative there), erfc does not; exp((-x^2)/2) is taken from
 * x itself, so the rounding of x/sqrt2 does not enter the exponent. The tanh form is
 * x * sigmoid(2u) = x/2 * (1 + tanh(u)), the same value without the cancellation.
 * NaN propagates; erf(+-inf) = +-1, erfc(+inf) = 0, GELU(+inf) = +inf (torch's vectorised CPU
 * kernel gives NaN there, its scalar one +inf), GELU(-inf) = NaN as in torch (-inf * 0).
 *
 * tanh: |x| < 0.3, the Taylor series to x^11 (next term < 1e-9 relative); else
 * (1 - e) / (1 + e) with e = exp(-2|x|), free of cancellation there (e < 0.55).
 * GPUs keep the built-in erf and tanh (fast and accurate there); GELU is ours everywhere.
 * Specialised by: TTC_CPU_MATH, TTC_NATIVE_MATH. */
/* erf(x) = TTC_ERF_SMALL(x, x*x) for |x| < 0.5; erfc(a) = exp(-a*a) * TTC_ERFC_Q(t) / (a + 2).
 * PoCL vectorises a kernel across work-items only when every call in it is inlined; LLVM's
 * cost threshold (225) left GELU a call and the kernel ran scalar, 25x slower. */
#if TTC_CPU_MATH
#define TTC_MATH_INLINE __attribute__((always_inline))
#else
#define TTC_MATH_INLINE
#endif
#define TTC_ERF_SMALL(x, z) ((x) * (1.128379226e+00f + (z) * (-3.761262894e-01f + (z) * (1.128352731e-01f + \
    (z) * (-2.684358135e-02f + (z) * (5.135805346e-03f + (z) * -6.927786162e-04f))))))
#define TTC_ERFC_Q(t) (1.021582723e+00f + (t) * (-6.871606708e-01f + (t) * (2.794717848e-01f + \
    (t) * (-3.644360974e-02f + (t) * (-2.150444314e-02f + (t) * (6.492570508e-03f + (t) * (3.046291647e-03f + \
    (t) * (-8.872348117e-04f + (t) * (-5.322430516e-04f + (t) * 1.071047154e-04f)))))))))
/* x*x - p exactly for p = x*x rounded (x split at 12 bits, so every product is exact): fma
 * would do, but is slow where the CPU has no FMA unit */
#define TTC_SQ_LO(x, p) ((TTC_HI(x) * TTC_HI(x) - (p)) + 2.0f * TTC_HI(x) * ((x) - TTC_HI(x)) + \
    ((x) - TTC_HI(x)) * ((x) - TTC_HI(x)))
#define TTC_HI(x) as_float(as_uint(x) & 0xfffff000u)
TTC_MATH_INLINE float ttc_gelu_erf(float x) {
    float y = x * -0.70710678118654752f, a = fabs(y), z = y * y;
    float small = 1.0f - TTC_ERF_SMALL(y, z);
    float r = 1.0f / (a + 2.0f), t = (a - 2.0f) * r;
    float p = x * x, pl = TTC_SQ_LO(x, p);   /* exp(-x^2 / 2) */
    float tl = exp(-0.5f * p) * (1.0f - 0.5f * pl) * TTC_ERFC_Q(t) * r;
    tl = a > 10.5f ? 0.0f : tl;
    return 0.5f * x * (a < 0.5f ? small : y > 0.0f ? tl : 2.0f - tl);
}
TTC_MATH_INLINE float ttc_gelu_tanh(float x) {
    float u = 0.79788456080286536f * (x + 0.044715f * x * x * x);
    float e = exp(-2.0f * fabs(u));   /* exp(+2|u|) would overflow where the result is still normal */
    return x * (u >= 0.0f ? 1.0f : e) / (1.0f + e);
}
/* GELU whose value is stored as half (codegen_spell.c fl16): half's 2^-11 leaves room for
 * cheaper forms. Erf: 1 + erf(x/sqrt2) as erfc(z) = t P(t) exp(-z^2), t = 1 / (1 + 0.3275911 z),
 * z = |x|/sqrt2 (Abramowitz & Stegun 7.1.26: absolute error below 1.5e-7), taken directly for
 * x < 0 (no cancellation in the tail) and as 2 - erfc for x >= 0; tanh form: x * sigmoid(2u).
 * On NVIDIA (TTC_NATIVE_MATH) both use the native reciprocal and exp, one special-function
 * instruction each, their error (~2^-22) far below half's; elsewhere native_* accuracy is the
 * implementation's, so the standard exp and division. NaN and +-inf as ttc_gelu_erf/_tanh. */
#if TTC_NATIVE_MATH
#define TTC_RCP_H(x) native_recip(x)
#define TTC_EXP_H(x) native_exp(x)
#else
#define TTC_RCP_H(x) (1.0f / (x))
#define TTC_EXP_H(x) exp(x)
#endif
TTC_MATH_INLINE float ttc_gelu_erf_h(float x) {
    float z = fabs(x) * 0.70710678118654752f, t = TTC_RCP_H(1.0f + 0.3275911f * z);
    float q = t * (0.254829592f + t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f))))
              * TTC_EXP_H(-z * z);
    return 0.5f * x * (x < 0.0f ? q : 2.0f - q);
}
TTC_MATH_INLINE float ttc_gelu_tanh_h(float x) {
    float u = 0.79788456080286536f * (x + 0.044715f * x * x * x);
    return x * TTC_RCP_H(1.0f + TTC_EXP_H(-2.0f * u));
}
#undef TTC_RCP_H
#undef TTC_EXP_H
/* torch's floor division of floats (div_floor_floating): through fmod, so that inf // 2 is
 * NaN and -1 // inf is -1, where floor(a / b) gives inf and -0 */
float ttc_floordiv(float a, float b) {
    float m = fmod(a, b);
    float d = (a - m) / b;
    d = m != 0.0f && (b < 0.0f) != (m < 0.0f) ? d - 1.0f : d;
    float fd = floor(d);
    fd = d - fd > 0.5f ? fd + 1.0f : fd;
    fd = d == 0.0f ? copysign(0.0f, a / b) : fd;
    return b == 0.0f ? a / b : fd;
}
#if TTC_CPU_MATH
TTC_MATH_INLINE float ttc_erf(float x) {
    float a = fabs(x), z = x * x;
    float small = TTC_ERF_SMALL(x, z);
    float r = 1.0f / (a + 2.0f), t = (a - 2.0f) * r;
    float pl = TTC_SQ_LO(x, z);   /* exp(-x^2) */
    float tl = exp(-z) * (1.0f - pl) * TTC_ERFC_Q(t) * r;
    tl = a > 10.5f ? 0.0f : tl;
    return a < 0.5f ? small : copysign(1.0f - tl, x);
}
TTC_MATH_INLINE float ttc_tanh(float x) {
    float a = fabs(x), z = x * x;
    float small = x * (1.0f + z * (-0.333333333f + z * (0.133333333f + z * (-0.0539682540f + z * (0.0218694885f +
                  z * -0.00886323552f)))));
    float e = exp(-2.0f * a);
    float big = copysign((1.0f - e) / (1.0f + e), x);
    return a < 0.3f ? small : big;
}
#else
#define ttc_erf erf
#define ttc_tanh tanh
#endif
/* Integer a ** b as torch computes it: exact (squaring, wrapping like the integer type), and for
 * b < 0: 1 ** b = 1, (-1) ** b = +-1, 0 for every other base. pow() in float was off by one on
 * NVIDIA (3 ** 7 gave 2186). */
static inline long ttc_ipow(long a, long b) {
    if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
    ulong r = 1, x = (ulong)a;
    while (b) {
        if (b & 1) r *= x;
        x *= x;
        b >>= 1;
    }
    return (long)r;
}
