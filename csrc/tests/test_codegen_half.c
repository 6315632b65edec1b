/* Code generation for fp16 engines (no device needed): with half arithmetic (k->half_compute)
 * float16 tensors are loaded/stored directly and cheap nodes compute in half while libm nodes
 * compute in float from explicit casts; without it the source is the float path (vload_half /
 * vstore_half, float arithmetic). PoCL cannot compile half code, so numerics of the half path
 * are checked on NVIDIA (tests/test_fp16_compute.py); this test keeps the emitted text in CI. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convert/convert.h"
#include "engine/engine_impl.h"
#include "tests/ctest.h"

static const char *chain =
    "graph(%x : Half(3, 5), %y : Half(5)) :\n"
    "  %one : int = prim.Constant[value=1]()\n"
    "  %a : Half(3, 5) = aten.add.Tensor(%x, %y, %one)\n"
    "  %r : Half(3, 5) = aten.relu.default(%a)\n"
    "  %s : Half(3, 5) = aten.sigmoid.default(%r)\n"
    "  %m : Half(3, 5) = aten.mul.Tensor(%s, %x)\n"
    "  %h : Half(3, 5) = aten.hardswish.default(%m)\n"
    "  return (%h)\n";

/* Parses, converts (fp16), fuses and generates with half arithmetic on or off. */
static char *generate(const char *text, bool half, int32_t *n_kernels) {
    ttc_graph *g = NULL;
    ttc_status s = ttc_graph_parse(text, &g);
    CHECK(s == TTC_OK, "parse: %s", ttc_last_error());
    if (s != TTC_OK) return NULL;
    ttc_kir *k = NULL;
    s = ttc_convert_graph(g, true, &k);
    CHECK(s == TTC_OK, "convert: %s", ttc_last_error());
    char *src = NULL;
    if (s == TTC_OK) {
        int32_t fused = 0;
        CHECK_OK(ttc_fuse(k, &fused));
        k->half_compute = half;
        ttc_codegen cg;
        s = ttc_codegen_run(k, true, &cg);
        CHECK(s == TTC_OK, "codegen: %s", ttc_last_error());
        if (s == TTC_OK) {
            src = ttc_strdup(cg.source);
            *n_kernels = cg.n_kernels;
            ttc_codegen_free(&cg);
        }
    }
    ttc_kir_free(k);
    ttc_graph_free(g);
    return src;
}

static void test_half_arithmetic(void) {
    int32_t nk = 0;
    char *src = generate(chain, true, &nk);
    if (!src) return;
    CHECK(nk == 1, "one fused kernel, got %d", nk);
    if (getenv("TTC_SHOW")) puts(src);
    CHECK(strstr(src, "#pragma OPENCL EXTENSION cl_khr_fp16 : enable") != NULL, "pragma:\n%s", src);
    CHECK(strstr(src, "vload_half") == NULL && strstr(src, "vstore_half") == NULL, "direct loads/stores:\n%s", src);
    CHECK(strstr(src, "half l0_v = l0[") != NULL, "half leaf load:\n%s", src);
    CHECK(strstr(src, "o_[o_off + lin] = (half)") != NULL, "half store:\n%s", src);
    /* relu and hardswish in half with half literals and no built-ins (NVIDIA has none for
     * half); sigmoid in float from a cast */
    CHECK(strstr(src, "< (half)0.0f ? (half)0.0f : v") != NULL, "half relu:\n%s", src);
    CHECK(strstr(src, "(half)3.0f") != NULL, "half hardswish:\n%s", src);
    CHECK(strstr(src, "fmax(") == NULL && strstr(src, "clamp(") == NULL, "no built-ins on half:\n%s", src);
    CHECK(strstr(src, "float v") != NULL && strstr(src, "exp(-((float)v") != NULL, "float sigmoid:\n%s", src);
    /* the multiply reads the float sigmoid back as half */
    CHECK(strstr(src, "((half)v") != NULL, "half operand of a float node:\n%s", src);
    free(src);
}

static void test_float_fallback(void) {
    int32_t nk = 0;
    char *src = generate(chain, false, &nk);
    if (!src) return;
    CHECK(strstr(src, "cl_khr_fp16") == NULL, "no pragma:\n%s", src);
    CHECK(strstr(src, "vload_half(") != NULL && strstr(src, "vstore_half(") != NULL, "half storage:\n%s", src);
    CHECK(strstr(src, "half v") == NULL && strstr(src, "(half)") == NULL, "no half arithmetic:\n%s", src);
    free(src);
}

/* A float32 operand (an input, or a constant const_half.c kept float because it is beyond
 * half's range) makes every node depending on it compute in float: in half it would be inf. */
static const char *mixed =
    "graph(%x : Half(3, 5), %b : Float(5)) :\n"
    "  %one : int = prim.Constant[value=1]()\n"
    "  %a : Half(3, 5) = aten.add.Tensor(%x, %b, %one)\n"
    "  %r : Half(3, 5) = aten.relu.default(%a)\n"
    "  %k : float = prim.Constant[value=100000.0]()\n"
    "  %m : Half(3, 5) = aten.mul.Scalar(%r, %k)\n"
    "  return (%m)\n";

static void test_float_operand_keeps_float(void) {
    int32_t nk = 0;
    char *src = generate(mixed, true, &nk);
    if (!src) return;
    if (getenv("TTC_SHOW")) puts(src);
    CHECK(strstr(src, "half l1_v") == NULL, "the float32 leaf is read as float:\n%s", src);
    /* x alone stays half (v0); the add, relu and multiply (v2, v3, v5) and the literal 1e5 are float */
    CHECK(strstr(src, "half v0 = ") != NULL, "x is half:\n%s", src);
    CHECK(strstr(src, "float v2 = ") && strstr(src, "float v3 = ") && strstr(src, "float v4 = ") &&
              strstr(src, "float v5 = "), "no half node depends on it:\n%s", src);
    CHECK(strstr(src, "o_[o_off + lin] = (half)") != NULL, "still stored as half:\n%s", src);
    free(src);
}

/* isinf/isnan of a half operand in an fp16 engine (T5's clamp: torch.isinf(hidden).any()):
 * the operand is read as float. It was cast to the bool node's type, isinf((int)v0), which
 * NVIDIA's compiler rejects ("call to 'isinf' is ambiguous"); half overloads of the built-ins
 * are missing there, so float it is. Integer and bool operands are never inf or nan: the
 * test folds to 0, whatever the engine's precision. */
static void test_isinf_isnan_operands(void) {
    static const char *floats[] = {"Half", "Float"};
    for (int f = 0; f < 2; f++)
        for (int half = 0; half < 2; half++)
            for (int op = 0; op < 2; op++) {
                char text[512];
                snprintf(text, sizeof text,
                         "graph(%%x : %s(3, 5)) :\n"
                         "  %%y : Bool(3, 5) = aten.%s.default(%%x)\n"
                         "  return (%%y)\n", floats[f], op ? "isnan" : "isinf");
                int32_t nk = 0;
                char *src = generate(text, half, &nk);
                if (!src) continue;
                if (getenv("TTC_SHOW")) puts(src);
                const char *fn = op ? "isnan(" : "isinf(";
                char want[64];
                snprintf(want, sizeof want, "%s%s", fn, f == 0 && half ? "((float)v0)" : "v0");
                CHECK(strstr(src, want) != NULL, "%s %s (half arithmetic %d): want %s in\n%s", floats[f], fn, half,
                      want, src);
                char bad[64];
                snprintf(bad, sizeof bad, "%s((int)", fn);
                CHECK(strstr(src, bad) == NULL, "an int operand of %s:\n%s", fn, src);
                free(src);
            }
    static const char *ints[] = {"Int", "Long", "Char", "Byte", "Bool"};
    for (int t = 0; t < 5; t++)
        for (int half = 0; half < 2; half++)
            for (int op = 0; op < 2; op++) {
                char text[512];
                snprintf(text, sizeof text,
                         "graph(%%x : %s(3, 5)) :\n"
                         "  %%y : Bool(3, 5) = aten.%s.default(%%x)\n"
                         "  return (%%y)\n", ints[t], op ? "isnan" : "isinf");
                int32_t nk = 0;
                char *src = generate(text, half, &nk);
                if (!src) continue;
                CHECK(strstr(src, "isinf(") == NULL && strstr(src, "isnan(") == NULL,
                      "%s operand: no isinf/isnan call (always false):\n%s", ints[t], src);
                free(src);
            }
}

TEST_MAIN(test_half_arithmetic, test_float_fallback, test_float_operand_keeps_float, test_isinf_isnan_operands)
