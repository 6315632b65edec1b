/* Which convolutions the CUDA launch path may give cuDNN (backend/cuda/exec_cuda_lib.c,
 * ttc_cuda_lib_conv), checked without a GPU from an engine built on any device: a dense 3x3 and
 * a grouped one (2 input channels per group) may go; a depthwise one (one input channel per
 * group, MobileNet's) stays the engine's own kernel, by name. */
#include <stdlib.h>
#include <string.h>

#include "engine/engine_impl.h"
#include "backend/cuda/exec_cuda_lib.h"
#include "tests/ctest.h"
#include "tests/engine_util.h"

static uint64_t fake_addr(void *ctx, int32_t t) { return 4096u * (uint64_t)(t + 1); }   /* aligned */

static char *weights(const char *name, int o, int i) {
    int n = o * i * 9;
    float *w = malloc(sizeof(float) * (size_t)n);
    for (int j = 0; j < n; j++) w[j] = (float)(j % 7) * 0.1f - 0.3f;
    char *lit = tensor_lit(w, n);
    char *s = ttc_strfmt("  %%%s : Float(%d, %d, 3, 3) = prim.Constant[value=%s]()\n", name, o, i, lit);
    free(lit);
    free(w);
    return s;
}

static void test_which_convolutions(void) {
    if (!have_device()) return;
    setenv("TORCHTRT_C_CUDA_LIBS", "1", 1);
    setenv("TORCHTRT_C_KERNELS", "gpu", 1);
    setenv("TORCHTRT_C_NATIVE", "0", 1);
    setenv("TORCHTRT_C_CONV_KSPLIT", "1", 1);
    /* x [1, 8, 9, 7] -> dense 3x3 (8 -> 8) -> relu -> depthwise 3x3 (groups 8) -> relu -> grouped
     * 3x3 (groups 4: 2 input channels each) */
    char *wd = weights("wd", 8, 8), *ww = weights("ww", 8, 1), *wg = weights("wg", 8, 2);
    char *text = ttc_strfmt(
        "graph(%%x : Float(1, 8, 9, 7)):\n%s%s%s"
        "  %%s1 : int[] = prim.Constant[value=[1, 1]]()\n  %%p1 : int[] = prim.Constant[value=[1, 1]]()\n"
        "  %%p0 : int[] = prim.Constant[value=[0, 0]]()\n  %%f : bool = prim.Constant[value=false]()\n"
        "  %%g1 : int = prim.Constant[value=1]()\n  %%g8 : int = prim.Constant[value=8]()\n"
        "  %%g4 : int = prim.Constant[value=4]()\n  %%none : NoneType = prim.Constant()\n"
        "  %%c1 : Float(1, 8, 9, 7) = aten.convolution.default(%%x, %%wd, %%none, %%s1, %%p1, %%s1, %%f, %%p0, %%g1)\n"
        "  %%a1 : Float(1, 8, 9, 7) = aten.relu.default(%%c1)\n"
        "  %%c2 : Float(1, 8, 9, 7) = aten.convolution.default(%%a1, %%ww, %%none, %%s1, %%p1, %%s1, %%f, %%p0, %%g8)\n"
        "  %%a2 : Float(1, 8, 9, 7) = aten.relu.default(%%c2)\n"
        "  %%y : Float(1, 8, 9, 7) = aten.convolution.default(%%a2, %%wg, %%none, %%s1, %%p1, %%s1, %%f, %%p0, %%g4)\n"
        "  return (%%y)\n",
        wd, ww, wg);
    free(wd); free(ww); free(wg);
    ttc_engine *e = build_engine(text, NULL);
    free(text);
    if (!e) return;
    int64_t shp[1][TTC_MAX_RANK] = {{1, 8, 9, 7}}, sv[64] = {0};
    ttc_plan *p = NULL;
    CHECK_OK(ttc_engine_symbols_from_shapes(e, (const int64_t(*)[TTC_MAX_RANK])shp, sv));
    CHECK_OK(ttc_engine_get_plan(e, sv, &p));
    int dense = 0, grouped = 0, depthwise = 0;
    for (int32_t ki = 0; p && ki < e->cg.n_kernels; ki++) {
        const ttc_kop *op = &e->k->ops[e->cg.kernels[ki].op];
        if (op->kind != TTC_KOP_CONV2D || op->p.conv.ksplit > 1) continue;
        ttc_cudnn_conv d;
        uint64_t x, y;
        char why[128];
        bool ok = ttc_cuda_lib_conv(&e->view, p, ki, fake_addr, NULL, &d, &x, &y, why, sizeof why);
        int g = op->p.conv.groups;
        if (g == 1) { dense++; CHECK(ok, "dense convolution refused: %s", why); }
        else if (g == 8) { depthwise++; CHECK(!ok && strstr(why, "depthwise"), "depthwise: %d (%s)", ok, why); }
        else { grouped++; CHECK(ok && d.groups == 4, "grouped convolution: %d (%s), groups %d", ok, why, d.groups); }
    }
    CHECK(dense == 1 && depthwise == 1 && grouped == 1, "convolution kernels: %d dense, %d depthwise, %d grouped", dense,
          depthwise, grouped);
    if (p) ttc_plan_release(e, p);
    ttc_engine_free(e);
    unsetenv("TORCHTRT_C_CUDA_LIBS");
    unsetenv("TORCHTRT_C_KERNELS");
    unsetenv("TORCHTRT_C_NATIVE");
    unsetenv("TORCHTRT_C_CONV_KSPLIT");
}

TEST_MAIN(test_which_convolutions)
