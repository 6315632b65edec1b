/* Float32 GEMV-shaped products (backend/cpu/native_gemv.h). */
/* the register blocks below are loops over constants: unrolled, the accumulators stay in
 * registers (-O2 keeps them in memory); multiply-adds contracted into FMAs where the clone has
 * them (-std=c11 turns contraction off) */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3", "fp-contract=fast")
#endif
#include "native_gemv.h"

#include <string.h>

#include "simd16.h"
#include "step_threads.h"


typedef struct gemv_job {
    const float *x, *w;
    float *y;
    int64_t M, N, K;
} gemv_job;

/* Weight rows n0 .. n0 + NR of every row of x (MB = M): the NR x MB dot products in 16 lanes
 * each, the weight vector loaded once for the MB rows; K % 16 tail in scalars. */
#define GEMV_BLOCK(NAME, ATTR)                                                                                        \
    ATTR static inline __attribute__((always_inline)) void NAME(const gemv_job *j, int64_t n0, const int NR,         \
                                                                 const int MB) {                                      \
        const int64_t K = j->K, K16 = K & ~(int64_t)15;                                                               \
        const float *w = j->w + n0 * K;                                                                               \
        v16 acc[4][TTC_GEMV_MAX_M];                                                                                   \
        _Pragma("GCC unroll 4") for (int r = 0; r < NR; r++)                                                          \
            _Pragma("GCC unroll 8") for (int m = 0; m < MB; m++) acc[r][m] = (v16){0};                                \
        for (int64_t k = 0; k < K16; k += 16) {                                                                       \
            v16 xv[TTC_GEMV_MAX_M];                                                                                   \
            _Pragma("GCC unroll 8") for (int m = 0; m < MB; m++) xv[m] = ld16(j->x + m * K + k);                      \
            _Pragma("GCC unroll 4") for (int r = 0; r < NR; r++) {                                                    \
                v16 wv = ld16(w + r * K + k);                                                                         \
                _Pragma("GCC unroll 8") for (int m = 0; m < MB; m++) acc[r][m] += wv * xv[m];                         \
            }                                                                                                         \
        }                                                                                                             \
        for (int r = 0; r < NR; r++)                                                                                  \
            for (int m = 0; m < MB; m++) {                                                                            \
                float s = hsum16(acc[r][m]);                                                                          \
                for (int64_t k = K16; k < K; k++) s += w[r * K + k] * j->x[m * K + k];                                \
                j->y[m * j->N + n0 + r] = s;                                                                          \
            }                                                                                                         \
    }

/* Rows [lo, hi) of w: blocks of NR rows (more rows a block where MB is small, and with the 32
 * registers of AVX-512 (WIDE): more loads in flight, the accumulators within the registers),
 * the last few one at a time. */
#define GEMV_ROWS(NAME, BLOCK, ATTR, WIDE)                                                                            \
    ATTR static inline __attribute__((always_inline)) void NAME##_mb(const gemv_job *j, int64_t lo, int64_t hi, const int MB) {                           \
        const int NR = WIDE ? (MB <= 4 ? 4 : 2) : (MB <= 2 ? 2 : 1);                                                  \
        int64_t n = lo;                                                                                               \
        for (; n + NR <= hi; n += NR) BLOCK(j, n, NR, MB);                                                            \
        for (; n < hi; n++) BLOCK(j, n, 1, MB);                                                                       \
    }                                                                                                                 \
    ATTR static void NAME(const gemv_job *j, int64_t lo, int64_t hi) {                                                \
        switch (j->M) {                                                                                               \
        case 1: NAME##_mb(j, lo, hi, 1); break;                                                                       \
        case 2: NAME##_mb(j, lo, hi, 2); break;                                                                       \
        case 3: NAME##_mb(j, lo, hi, 3); break;                                                                       \
        case 4: NAME##_mb(j, lo, hi, 4); break;                                                                       \
        case 5: NAME##_mb(j, lo, hi, 5); break;                                                                       \
        case 6: NAME##_mb(j, lo, hi, 6); break;                                                                       \
        case 7: NAME##_mb(j, lo, hi, 7); break;                                                                       \
        default: NAME##_mb(j, lo, hi, 8); break;                                                                      \
        }                                                                                                             \
    }

GEMV_BLOCK(block_generic, )
GEMV_ROWS(rows_generic, block_generic, , 0)

#if defined(__x86_64__) && defined(__GNUC__)
#define GEMV_X86 1
#define A512 __attribute__((target("avx512f,fma")))
#define A2 __attribute__((target("avx2,fma")))
GEMV_BLOCK(block_avx512, A512)
GEMV_ROWS(rows_avx512, block_avx512, A512, 1)
GEMV_BLOCK(block_avx2, A2)
GEMV_ROWS(rows_avx2, block_avx2, A2, 0)
#endif

typedef void (*rows_fn)(const gemv_job *j, int64_t lo, int64_t hi);

typedef struct gemv_ctx {
    gemv_job j;
    rows_fn rows;
} gemv_ctx;

/* Work items are blocks of 4 weight rows (a thread's rows start on a block). */
static void gemv_items(void *arg, int64_t lo, int64_t hi) {
    const gemv_ctx *c = arg;
    int64_t n1 = hi * 4 < c->j.N ? hi * 4 : c->j.N;
    c->rows(&c->j, lo * 4, n1);
}

static rows_fn pick(void) {
#ifdef GEMV_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return rows_avx512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return rows_avx2;
#endif
    return rows_generic;
}

static int64_t n_calls;

int64_t ttc_native_gemv_calls(void) { return __atomic_load_n(&n_calls, __ATOMIC_RELAXED); }

void ttc_native_gemv(const float *x, const float *w, float *y, int64_t M, int64_t N, int64_t K, int32_t threads) {
    if (M < 1 || N < 1) return;
    __atomic_add_fetch(&n_calls, 1, __ATOMIC_RELAXED);
    if (M > TTC_GEMV_MAX_M) {   /* in passes of TTC_GEMV_MAX_M rows (callers keep M small) */
        __atomic_sub_fetch(&n_calls, 1, __ATOMIC_RELAXED);   /* counted per pass */
        for (int64_t m0 = 0; m0 < M; m0 += TTC_GEMV_MAX_M)
            ttc_native_gemv(x + m0 * K, w, y + m0 * N, M - m0 < TTC_GEMV_MAX_M ? M - m0 : TTC_GEMV_MAX_M, N, K,
                            threads);
        return;
    }
    static rows_fn rows;
    rows_fn r = __atomic_load_n(&rows, __ATOMIC_RELAXED);
    if (!r) {
        r = pick();
        __atomic_store_n(&rows, r, __ATOMIC_RELAXED);
    }
    gemv_ctx c = {{x, w, y, M, N, K}, r};
    int64_t items = (N + 3) / 4;
    ttc_steps_for(threads, items, ttc_steps_grain(4 * K), gemv_items, &c);
}
