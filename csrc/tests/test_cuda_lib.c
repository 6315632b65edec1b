/* The CUDA launch path's cuBLAS descriptors (backend/cuda/exec_cuda_lib.h, backend/cuda/cublas.h),
 * checked without a GPU: which descriptors cuBLAS is given (ttc_cublas_gemm_ok), the process's
 * per-shape choices, and the descriptor ttc_cuda_lib_gemm makes of an engine's GEMM kernel at a
 * plan. For the last, the product the descriptor describes (row-major A, B, C at the addresses
 * and strides it names, over host copies of the engine's inputs) is computed here in double and
 * compared with the engine's own output on the OpenCL device (1e-4 of max(|ref|, 1)): plain,
 * batched, transposed-operand and broadcast-weight (folded into one taller product) GEMMs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cublas.h"
#include "engine/engine_impl.h"
#include "backend/cuda/exec_cuda_lib.h"
#include "tests/ctest.h"
#include "tests/engine_util.h"

static ttc_cublas_gemm base(void) {
    ttc_cublas_gemm g = {.ab_type = TTC_DTYPE_FLOAT16, .c_type = TTC_DTYPE_FLOAT16, .m = 64, .n = 48, .k = 32,
                         .batch = 1, .a_rs = 32, .a_cs = 1, .b_rs = 48, .b_cs = 1, .ldc = 48};
    return g;
}

static void test_gemm_ok_rules(void) {
    char why[96];
    ttc_cublas_gemm g = base();
    CHECK(ttc_cublas_gemm_ok(&g, why, sizeof why), "plain: %s", why);
    g.b_rs = 1; g.b_cs = 32;                        /* B stored [N, K] (a linear's weight) */
    CHECK(ttc_cublas_gemm_ok(&g, why, sizeof why), "transposed B: %s", why);
    g = base(); g.a_rs = 1; g.a_cs = 64;            /* A stored [K, M] */
    CHECK(ttc_cublas_gemm_ok(&g, why, sizeof why), "transposed A: %s", why);
    g = base(); g.a_rs = 2; g.a_cs = 3;             /* neither stride 1 */
    CHECK(!ttc_cublas_gemm_ok(&g, why, sizeof why) && strstr(why, "A"), "A's strides: %s", why);
    g = base(); g.b_rs = 40;                        /* rows overlap: row stride below N */
    CHECK(!ttc_cublas_gemm_ok(&g, why, sizeof why) && strstr(why, "B"), "B's strides: %s", why);
    g = base(); g.ab_type = TTC_DTYPE_INT32;
    CHECK(!ttc_cublas_gemm_ok(&g, why, sizeof why), "int operands refused");
    g = base(); g.ab_type = TTC_DTYPE_FLOAT32;      /* fp32 operands, fp16 result */
    CHECK(!ttc_cublas_gemm_ok(&g, why, sizeof why), "fp32 into fp16 refused");
    g = base(); g.k = 0;
    CHECK(!ttc_cublas_gemm_ok(&g, why, sizeof why), "empty product refused");
    g = base(); g.m = (int64_t)1 << 31;
    CHECK(!ttc_cublas_gemm_ok(&g, why, sizeof why), "sizes beyond int refused");
    g = base(); g.batch = 3; g.c_bs = 64 * 48 - 1;   /* batches of C overlap */
    CHECK(!ttc_cublas_gemm_ok(&g, why, sizeof why), "overlapping C batches refused");
    g.c_bs = 64 * 48; g.a_bs = 64 * 32; g.b_bs = 0;
    CHECK(ttc_cublas_gemm_ok(&g, why, sizeof why), "batched with a shared B: %s", why);
}

static void test_choices(void) {
    ttc_cublas_gemm g = base();
    ttc_cuda_lib_key k1, k2, k3;
    ttc_cuda_lib_key_make(&g, 5, true, &k1);
    ttc_cuda_lib_key_make(&g, 6, true, &k2);        /* another tile: another kernel to beat */
    g.n = 47;
    ttc_cuda_lib_key_make(&g, 5, true, &k3);
    CHECK(ttc_cuda_lib_choice(&k1) == -1 && ttc_cuda_lib_choice(&k3) == -1, "nothing decided yet");
    ttc_cuda_lib_choose(&k1, true);
    ttc_cuda_lib_choose(&k2, false);
    CHECK(ttc_cuda_lib_choice(&k1) == 1 && ttc_cuda_lib_choice(&k2) == 0, "choices kept per key");
    CHECK(ttc_cuda_lib_choice(&k3) == -1, "other sizes undecided");
    ttc_cuda_lib_choose(&k1, false);
    CHECK(ttc_cuda_lib_choice(&k1) == 0, "a choice made again replaces the first");
    g = base();
    CHECK(!ttc_cuda_lib_guess(&g), "small products keep the kernel when nothing can be timed");
    g.m = g.n = g.k = 2048;
    CHECK(ttc_cuda_lib_guess(&g), "large products go to cuBLAS when nothing can be timed");
}

typedef struct { const ttc_plan *p; float *const *in; float *out; } host_mem;

/* Host addresses standing for device ones: the engine's inputs and its (one) output. */
static uint64_t host_addr(void *ctx, int32_t t) {
    const host_mem *m = ctx;
    const ttc_res *r = &m->p->res[t];
    if (r->root == TTC_ROOT_INPUT) return (uint64_t)(uintptr_t)(m->in[r->idx] + r->off);
    if (r->root == TTC_ROOT_OUTPUT && r->idx == 0) return (uint64_t)(uintptr_t)(m->out + r->off);
    return 0;
}

/* Runs engine e once on its inputs into its one output y (ny bytes), then returns its plan for
 * those shapes (NULL on failure; CHECKed). */
static ttc_plan *run_and_plan(ttc_engine *e, const void *const *in, const size_t *inb, const int64_t (*shp)[TTC_MAX_RANK],
                              float *y, size_t ny) {
    void *out[1] = {y};
    size_t outb[1] = {ny};
    CHECK_OK(ttc_engine_execute(e, in, inb, shp, out, outb));
    int64_t sv[64] = {0};
    ttc_plan *p = NULL;
    CHECK_OK(ttc_engine_symbols_from_shapes(e, shp, sv));
    CHECK_OK(ttc_engine_get_plan(e, sv, &p));
    return p;
}

/* One GEMM engine over two inputs: its descriptor's product against the engine's output. */
static void check_graph(const char *what, const char *text, int64_t na, int64_t nb, int64_t nc, const int64_t *sa,
                        const int64_t *sb, int ra, int rb, bool folded) {
    ttc_engine *e = build_engine(text, NULL);
    if (!e) return;
    float *a = malloc(sizeof(float) * (size_t)na), *b = malloc(sizeof(float) * (size_t)nb);
    float *y = malloc(sizeof(float) * (size_t)nc), *want = calloc((size_t)nc, sizeof(float));
    for (int64_t i = 0; i < na; i++) a[i] = (float)((i * 7 + 3) % 19) / 9.0f - 1.0f;
    for (int64_t i = 0; i < nb; i++) b[i] = (float)((i * 5 + 1) % 23) / 11.0f - 1.0f;
    const void *in[2] = {a, b};
    size_t inb[2] = {sizeof(float) * (size_t)na, sizeof(float) * (size_t)nb};
    int64_t shp[2][TTC_MAX_RANK] = {{0}};
    memcpy(shp[0], sa, sizeof(int64_t) * (size_t)ra);
    memcpy(shp[1], sb, sizeof(int64_t) * (size_t)rb);
    ttc_plan *p = run_and_plan(e, in, inb, (const int64_t(*)[TTC_MAX_RANK])shp, y, sizeof(float) * (size_t)nc);
    int found = 0;
    for (int32_t ki = 0; p && ki < e->cg.n_kernels; ki++) {
        if (e->k->ops[e->cg.kernels[ki].op].kind != TTC_KOP_GEMM) continue;
        found++;
        float *ins[2] = {a, b};
        host_mem m = {p, ins, want};
        ttc_cublas_gemm g;
        char why[96];
        bool ok = ttc_cuda_lib_gemm(&e->view, p, ki, host_addr, &m, &g, why, sizeof why);
        CHECK(ok, "%s: no descriptor (%s)", what, why);
        if (!ok) continue;
        CHECK(g.a && g.b && g.c, "%s: an operand is not an input/output", what);
        if (!g.a || !g.b || !g.c) continue;
        CHECK(folded == (g.batch == 1 && g.a_bs == 0 && g.m > sa[ra - 2]), "%s: folded %d (m %lld, batch %lld)", what,
              (int)folded, (long long)g.m, (long long)g.batch);
        const float *A = (const float *)(uintptr_t)g.a, *B = (const float *)(uintptr_t)g.b;
        float *C = (float *)(uintptr_t)g.c;
        for (int64_t bt = 0; bt < g.batch; bt++)
            for (int64_t i = 0; i < g.m; i++)
                for (int64_t j = 0; j < g.n; j++) {
                    double s = 0;
                    for (int64_t kk = 0; kk < g.k; kk++)
                        s += (double)A[bt * g.a_bs + i * g.a_rs + kk * g.a_cs] * B[bt * g.b_bs + kk * g.b_rs + j * g.b_cs];
                    C[bt * g.c_bs + i * g.ldc + j] = (float)s;
                }
    }
    CHECK(found == 1, "%s: %d GEMM kernels", what, found);
    double err = 0, scale = 1;
    for (int64_t i = 0; i < nc; i++) {
        err = fmax(err, fabs((double)want[i] - y[i]));
        scale = fmax(scale, fabs((double)y[i]));
    }
    CHECK(err <= 1e-4 * scale, "%s: the descriptor's product differs from the engine's by %g", what, err);
    if (p) ttc_plan_release(e, p);
    ttc_engine_free(e);
    free(a); free(b); free(y); free(want);
}

static void test_descriptors_match_the_engine(void) {
    if (!have_device()) return;
    const int64_t s1a[] = {5, 37}, s1b[] = {37, 53};
    check_graph("mm", "graph(%a : Float(5, 37), %b : Float(37, 53)):\n"
                "  %y : Float(5, 53) = aten.mm.default(%a, %b)\n  return (%y)\n", 5 * 37, 37 * 53, 5 * 53, s1a, s1b, 2, 2,
                false);
    const int64_t s2a[] = {3, 7, 13}, s2b[] = {3, 13, 11};
    check_graph("bmm", "graph(%a : Float(3, 7, 13), %b : Float(3, 13, 11)):\n"
                "  %y : Float(3, 7, 11) = aten.bmm.default(%a, %b)\n  return (%y)\n", 3 * 7 * 13, 3 * 13 * 11, 3 * 7 * 11,
                s2a, s2b, 3, 3, false);
    const int64_t s3a[] = {2, 9, 16}, s3b[] = {2, 11, 16};
    check_graph("transposed B", "graph(%a : Float(2, 9, 16), %b : Float(2, 11, 16)):\n"
                "  %one : int = prim.Constant[value=1]()\n  %two : int = prim.Constant[value=2]()\n"
                "  %bt : Float(2, 16, 11) = aten.transpose.int(%b, %one, %two)\n"
                "  %y : Float(2, 9, 11) = aten.matmul.default(%a, %bt)\n  return (%y)\n", 2 * 9 * 16, 2 * 11 * 16,
                2 * 9 * 11, s3a, s3b, 3, 3, false);
    const int64_t s4a[] = {4, 6, 8}, s4b[] = {8, 5};
    check_graph("shared B", "graph(%a : Float(4, 6, 8), %b : Float(8, 5)):\n"
                "  %y : Float(4, 6, 5) = aten.matmul.default(%a, %b)\n  return (%y)\n", 4 * 6 * 8, 8 * 5, 4 * 6 * 5, s4a,
                s4b, 3, 2, true);
}

/* The epilogue ttc_cuda_lib_gemm_epi hands cuBLASLt: for one GEMM engine over inputs x [2, 5, 16],
 * w [24, 16] (a linear's weight) and the graph's other inputs (a bias, a residual), whether it is
 * taken and which parts, and where taken, act(A.B + bias + res) computed here from the
 * descriptor (host addresses) against the engine's own output (1e-4 of max(|ref|, 1)). */
static void check_epi(const char *what, const char *text, int n_in, const int64_t *n_el, const int64_t (*shp_in)[3],
                      const int *ranks, bool taken, int act, bool has_bias, bool has_res) {
    ttc_engine *e = build_engine(text, NULL);
    if (!e) return;
    float *in[4] = {0};
    const void *cin[4];
    size_t inb[4];
    int64_t shp[4][TTC_MAX_RANK] = {{0}};
    for (int i = 0; i < n_in; i++) {
        in[i] = malloc(sizeof(float) * (size_t)n_el[i]);
        for (int64_t j = 0; j < n_el[i]; j++) in[i][j] = (float)((j * (7 + 2 * i) + 3 * i + 1) % 29) / 14.0f - 1.0f;
        cin[i] = in[i];
        inb[i] = sizeof(float) * (size_t)n_el[i];
        memcpy(shp[i], shp_in[i], sizeof(int64_t) * (size_t)ranks[i]);
    }
    const int64_t nc = 2 * 5 * 24;
    float *y = malloc(sizeof(float) * nc), *want = calloc(nc, sizeof(float));
    ttc_plan *p = run_and_plan(e, cin, inb, (const int64_t(*)[TTC_MAX_RANK])shp, y, sizeof(float) * nc);
    int found = 0;
    for (int32_t ki = 0; p && ki < e->cg.n_kernels; ki++) {
        if (e->k->ops[e->cg.kernels[ki].op].kind != TTC_KOP_GEMM) continue;
        found++;
        host_mem m = {p, in, want};
        ttc_cublas_gemm g;
        char why[96];
        if (!ttc_cuda_lib_gemm(&e->view, p, ki, host_addr, &m, &g, why, sizeof why)) {
            CHECK(0, "%s: no descriptor (%s)", what, why);
            continue;
        }
        ttc_cublas_gemm before = g;
        bool got = ttc_cuda_lib_gemm_epi(&e->view, p, ki, host_addr, &m, &g);
        CHECK(got == taken, "%s: epilogue %s", what, got ? "taken" : "refused");
        if (!got) {
            CHECK(!memcmp(&before, &g, sizeof g), "%s: a refused epilogue changed the descriptor", what);
            continue;
        }
        CHECK(g.act == act && (g.bias != 0) == has_bias && (g.res != 0) == has_res, "%s: act %d bias %d res %d", what,
              (int)g.act, g.bias != 0, g.res != 0);
        CHECK(ttc_cublas_gemm_ok(&g, why, sizeof why), "%s: %s", what, why);
        const float *A = (const float *)(uintptr_t)g.a, *B = (const float *)(uintptr_t)g.b;
        const float *bias = (const float *)(uintptr_t)g.bias, *res = (const float *)(uintptr_t)g.res;
        float *C = (float *)(uintptr_t)g.c;
        for (int64_t i = 0; i < g.m; i++)
            for (int64_t j = 0; j < g.n; j++) {
                double s = 0;
                for (int64_t kk = 0; kk < g.k; kk++) s += (double)A[i * g.a_rs + kk * g.a_cs] * B[kk * g.b_rs + j * g.b_cs];
                if (bias) s += bias[j];
                if (res) s += res[i * g.ldc + j];
                if (g.act == TTC_CUBLAS_ACT_GELU_TANH) s = 0.5 * s * (1 + tanh(0.7978845608028654 * (s + 0.044715 * s * s * s)));
                C[i * g.ldc + j] = (float)s;
            }
        double err = 0, scale = 1;
        for (int64_t i = 0; i < nc; i++) {
            err = fmax(err, fabs((double)want[i] - y[i]));
            scale = fmax(scale, fabs((double)y[i]));
        }
        CHECK(err <= 1e-4 * scale, "%s: the fused descriptor's result differs from the engine's by %g", what, err);
    }
    CHECK(found == 1, "%s: %d GEMM kernels", what, found);
    if (p) ttc_plan_release(e, p);
    ttc_engine_free(e);
    for (int i = 0; i < n_in; i++) free(in[i]);
    free(y); free(want);
}

#define HEAD3 "graph(%x : Float(2, 5, 16), %w : Float(24, 16), %b : Float(24), %r : Float(2, 5, 24)):\n"
#define LIN "  %one : int = prim.Constant[value=1]()\n  %l : Float(2, 5, 24) = aten.linear.default(%x, %w, %b)\n"

static void test_epilogues_for_cublaslt(void) {
    if (!have_device()) return;
    const int64_t n4[] = {2 * 5 * 16, 24 * 16, 24, 2 * 5 * 24};
    const int64_t s4[][3] = {{2, 5, 16}, {24, 16}, {24}, {2, 5, 24}};
    const int r4[] = {3, 2, 1, 3};
    check_epi("bias", "graph(%x : Float(2, 5, 16), %w : Float(24, 16), %b : Float(24)):\n" LIN "  return (%l)\n", 3, n4,
              s4, r4, true, TTC_CUBLAS_ACT_NONE, true, false);
    check_epi("bias + residual", HEAD3 LIN "  %y : Float(2, 5, 24) = aten.add.Tensor(%r, %l, %one)\n  return (%y)\n", 4, n4, s4,
              r4, true, TTC_CUBLAS_ACT_NONE, true, true);
    check_epi("tanh gelu(bias)", "graph(%x : Float(2, 5, 16), %w : Float(24, 16), %b : Float(24)):\n" LIN
              "  %t : str = prim.Constant[value=\"tanh\"]()\n"
              "  %y : Float(2, 5, 24) = aten.gelu.default(%l, %t)\n  return (%y)\n", 3, n4, s4, r4, true,
              TTC_CUBLAS_ACT_GELU_TANH, true, false);
    /* not cuBLASLt's: ReLU (its NaN handling), erf GELU, the residual after the activation, a
     * sigmoid, a per-row term */
    check_epi("relu(bias + residual)", HEAD3 LIN "  %s : Float(2, 5, 24) = aten.add.Tensor(%l, %r, %one)\n"
              "  %y : Float(2, 5, 24) = aten.relu.default(%s)\n  return (%y)\n", 4, n4, s4, r4, false, 0, false, false);
    check_epi("erf gelu", "graph(%x : Float(2, 5, 16), %w : Float(24, 16), %b : Float(24)):\n" LIN
              "  %t : str = prim.Constant[value=\"none\"]()\n"
              "  %y : Float(2, 5, 24) = aten.gelu.default(%l, %t)\n  return (%y)\n", 3, n4, s4, r4, false, 0, false, false);
    check_epi("relu then residual", HEAD3 LIN "  %a : Float(2, 5, 24) = aten.relu.default(%l)\n"
              "  %y : Float(2, 5, 24) = aten.add.Tensor(%a, %r, %one)\n  return (%y)\n", 4, n4, s4, r4, false, 0, false, false);
    check_epi("sigmoid", "graph(%x : Float(2, 5, 16), %w : Float(24, 16), %b : Float(24)):\n" LIN
              "  %y : Float(2, 5, 24) = aten.sigmoid.default(%l)\n  return (%y)\n", 3, n4, s4, r4, false, 0, false, false);
    const int64_t n5[] = {2 * 5 * 16, 24 * 16, 24, 2 * 5};
    const int64_t s5[][3] = {{2, 5, 16}, {24, 16}, {24}, {2, 5, 1}};
    check_epi("per-row term", "graph(%x : Float(2, 5, 16), %w : Float(24, 16), %b : Float(24), %r : Float(2, 5, 1)):\n"
              LIN "  %y : Float(2, 5, 24) = aten.add.Tensor(%l, %r, %one)\n  return (%y)\n", 4, n5, s5, r4, false, 0, false,
              false);
}

TEST_MAIN(test_gemm_ok_rules, test_choices, test_descriptors_match_the_engine, test_epilogues_for_cublaslt)
