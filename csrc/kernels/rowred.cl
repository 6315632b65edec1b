/* Work-group reductions for the one-work-group-per-row kernels (norm_wg, softmax_wg and the
 * generated row reductions): every work-item of the group passes its partial value and gets
 * the group's result back. A tree in local memory (sh: one float per work-item, the group
 * size a power of two) keeps this portable OpenCL 1.2, no subgroups. Guarded so that an
 * engine's program defines them once however many kernels include this. */
#ifndef TTC_ROWRED
#define TTC_ROWRED
#define TTC_WG_RED(NAME, COMBINE)                                          \
    float NAME(float v, __local float *sh) {                                 \
        int t = get_local_id(0), n = get_local_size(0);                      \
        sh[t] = v;                                                           \
        barrier(CLK_LOCAL_MEM_FENCE);                                        \
        for (int s = n / 2; s > 0; s >>= 1) {                                \
            if (t < s) { float a = sh[t], b = sh[t + s]; sh[t] = COMBINE; }  \
            barrier(CLK_LOCAL_MEM_FENCE);                                    \
        }                                                                    \
        float r = sh[0];                                                     \
        barrier(CLK_LOCAL_MEM_FENCE);                                        \
        return r;                                                            \
    }
TTC_WG_RED(ttc_wg_sum, a + b)
TTC_WG_RED(ttc_wg_prod, a * b)
/* NaN wins, as in torch's max/min */
TTC_WG_RED(ttc_wg_max, (b > a || isnan(b)) ? b : a)
TTC_WG_RED(ttc_wg_min, (b < a || isnan(b)) ? b : a)
#undef TTC_WG_RED
#endif
