/* Vectorised float32 math for native host code (backend/cpu/native_math.h): native_math.inc
 * compiled for the baseline and, on x86-64 with GCC, for AVX2+FMA and AVX-512, chosen at the
 * first call. The build's -O2 leaves these loops scalar (GCC 12's cost model) and its trapping
 * math keeps the selects from if-converting: both are relaxed for this file only (no value
 * changes: the loops never rely on FP exceptions or errno). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3", "no-trapping-math", "no-math-errno")
#endif
#include "native_math.h"

#include <pthread.h>
#include <string.h>

/* a MATH row of kir/eops.def whose MATHFN native_math.inc lacks fails here, not at load time */
#pragma GCC diagnostic error "-Wimplicit-function-declaration"

#define NM(f) ttc_nm_##f##_base
#include "native_math.inc"
#undef NM

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define TTC_NM_X86 1
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#define NM(f) ttc_nm_##f##_avx2
#include "native_math.inc"
#undef NM
#pragma GCC pop_options
#pragma GCC push_options
#pragma GCC target("avx512f,avx512vl,avx512dq,avx512bw,avx2,fma")
#define NM(f) ttc_nm_##f##_avx512
#include "native_math.inc"
#undef NM
#pragma GCC pop_options
#endif

typedef void (*unary_fn)(ttc_eop, const float *, float *, int64_t);

static pthread_once_t pick_once = PTHREAD_ONCE_INIT;
static unary_fn pick_unary = ttc_nm_unary_base;
static const char *pick_name = "baseline";

/* The loops for isa where compiled in and the CPU runs them, else NULL. */
static unary_fn unary_for(const char *isa) {
    if (!strcmp(isa, "baseline")) return ttc_nm_unary_base;
#ifdef TTC_NM_X86
    __builtin_cpu_init();
    if (!strcmp(isa, "avx512") && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw"))
        return ttc_nm_unary_avx512;
    if (!strcmp(isa, "avx2") && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return ttc_nm_unary_avx2;
#endif
    return NULL;
}

static void pick(void) {
    static const char *const order[] = {"avx512", "avx2"};
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        unary_fn f = unary_for(order[i]);
        if (f) {
            pick_unary = f;
            pick_name = order[i];
            return;
        }
    }
}

/* kir/eops.def's NATIVE MATH rows (native_math.inc's unary runs their MATHFN) */
bool ttc_nm_unary_ok(ttc_eop op) { return (unsigned)op < TTC_EOP_COUNT && ttc_eops[op].native == TTC_EOP_NATIVE_MATH; }

void ttc_nm_unary(ttc_eop op, const float *x, float *y, int64_t n) {
    pthread_once(&pick_once, pick);
    pick_unary(op, x, y, n);
}

const char *ttc_nm_isa(void) {
    pthread_once(&pick_once, pick);
    return pick_name;
}

bool ttc_nm_unary_isa(const char *isa, ttc_eop op, const float *x, float *y, int64_t n) {
    unary_fn f = unary_for(isa);
    if (f) f(op, x, y, n);
    return f != NULL;
}
