/* erf and tanh for the engine's expressions. CPU devices (TTC_CPU_MATH 1) get branch-free
 * versions built from exp, which PoCL vectorises across work-items; its erf and tanh run
 * scalar (a BERT-base GELU over 128x3072 took 8.7 ms on PoCL, exp over the same 0.9 ms).
 * GPUs keep the built-ins.
 * erf: |x| < 0.5, the Taylor series to x^11 (next term < 3e-8 relative); else Abramowitz &
 * Stegun 7.1.26 (absolute error < 1.5e-7 where erf > 0.52). tanh: |x| < 0.3, the Taylor
 * series to x^11 (next term < 1e-9 relative); else (1 - e) / (1 + e) with e = exp(-2|x|),
 * free of cancellation there (e < 0.55). NaN propagates, +-inf gives +-1.
 * Specialised by: TTC_CPU_MATH. */
#if TTC_CPU_MATH
float ttc_erf(float x) {
    float a = fabs(x), z = x * x;
    float small = x * (1.12837917f + z * (-0.376126389f + z * (0.112837917f + z * (-0.0268661706f +
                  z * (0.00522397762f + z * -0.000854832702f)))));
    float t = 1.0f / (1.0f + 0.3275911f * a);
    float p = t * (0.254829592f + t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f))));
    float big = copysign(1.0f - p * exp(-z), x);
    return a < 0.5f ? small : big;
}
float ttc_tanh(float x) {
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
