/* The kernel-generation layer (csrc/codegen/README.md), no device needed: the kind table has a
 * row for every kernel kind, the parameter builder writes declarations, call names and
 * argument specs in step, a template kernel whose parameters differ from what codegen binds
 * is refused, and a second spelling table changes how expressions are written. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convert/convert.h"
#include "engine/engine_impl.h"
#include "tests/ctest.h"

static void test_kind_rows(void) {
    for (int32_t a = 0; a < TTC_KOP_KIND_COUNT; a++) {
        const ttc_kind_row *r = ttc_codegen_kind_row((ttc_kop_kind)a);
        CHECK(r != NULL, "kind %d has no row", a);
        if (!r) continue;
        CHECK(r->gen != NULL || a == TTC_KOP_COPY, "kind %d (%s) has no generator", a, r->name);
        for (int32_t b = 0; b < a; b++)
            CHECK(strcmp(r->name, ttc_codegen_kind_name((ttc_kop_kind)b)) != 0, "kinds %d and %d share the name %s", a, b,
                  r->name);
    }
    CHECK(!strcmp(ttc_codegen_kind_name(TTC_KOP_GEMM), "gemm"), "gemm's name: %s", ttc_codegen_kind_name(TTC_KOP_GEMM));
    CHECK(ttc_codegen_kind_row(TTC_KOP_KIND_COUNT) == NULL, "a row past the enum");
    CHECK(!strcmp(ttc_codegen_kind_name((ttc_kop_kind)-1), "?"), "name outside the enum");
}

static ttc_kir *two_tensors(int32_t *x, int32_t *i) {
    ttc_kir *k = ttc_kir_new();
    ttc_dim d[2] = {ttc_dim_const(3), ttc_dim_const(4)};
    *x = ttc_kir_tensor(k, TTC_ET_INPUT, TTC_DTYPE_FLOAT16, 2, d, "x");
    *i = ttc_kir_tensor(k, TTC_ET_INPUT, TTC_DTYPE_INT64, 1, d, "i");
    return k;
}

static void test_builder(void) {
    int32_t x, i;
    ttc_kir *k = two_tensors(&x, &i);
    ttc_kspec ks = {0};
    ttc_kparams p;
    ttc_kp_init(&p, k, &ks, false);
    ttc_kp_int(&p, TTC_ARG_PROD, x, 0, 2, 0, "n");
    ttc_kp_tensor(&p, x, "x", 0);
    ttc_kp_buffer(&p, i, "ix0", NULL);
    ttc_kp_errflag(&p, x);
    CHECK_OK(ttc_kp_done(&p));
    const char *sig = "int n, __global const half *x, int x_off, int x_s0, int x_s1, __global const long *ix0, "
                      "int ix0_off, __global int *errf";
    CHECK(!strcmp(ttc_kp_sig(&p), sig), "signature:\n%s\nexpected\n%s", ttc_kp_sig(&p), sig);
    CHECK(!strcmp(ttc_kp_call(&p), ", n, x, x_off, x_s0, x_s1, ix0, ix0_off, errf"), "call: %s", ttc_kp_call(&p));
    ttc_arg_kind want[] = {TTC_ARG_PROD, TTC_ARG_BUF, TTC_ARG_OFF, TTC_ARG_STRIDE, TTC_ARG_STRIDE, TTC_ARG_BUF,
                           TTC_ARG_OFF, TTC_ARG_ERRFLAG};
    CHECK(ks.n_args == 8 && p.n == 8, "%d args, %d parameters, expected 8", ks.n_args, p.n);
    for (int32_t a = 0; a < ks.n_args && a < 8; a++) CHECK(ks.args[a].kind == want[a], "arg %d: kind %d", a, ks.args[a].kind);
    CHECK(ks.n_args < 4 || (ks.args[3].d == 0 && ks.args[3].r == 2 && ks.args[4].d == 1), "strides of x's dims");
    ttc_kp_free(&p);

    /* a leading-comma list (a store function's), and a bad tensor id sticks as the status */
    ttc_kp_init(&p, k, &ks, true);
    ttc_kp_out(&p, x, "o_", "o_off");
    ttc_kp_int(&p, TTC_ARG_DIM, x, 1, 0, 0, "od%d", 1);
    CHECK_OK(ttc_kp_done(&p));
    CHECK(!strcmp(ttc_kp_sig(&p), ", __global half *o_, int o_off, int od1"), "store list: %s", ttc_kp_sig(&p));
    ttc_kp_tensor(&p, 99, "bad", 0);
    ttc_kp_int(&p, TTC_ARG_INT, 0, 0, 0, 1, "after");
    CHECK(ttc_kp_done(&p) == TTC_ERR_INTERNAL, "a tensor outside the IR is an internal error");
    CHECK(strstr(ttc_kp_sig(&p), "after") == NULL, "nothing is added after a failure: %s", ttc_kp_sig(&p));
    ttc_kp_free(&p);
    free(ks.args);
    ttc_kir_free(k);
}

static ttc_status check_against(const char *tmpl_text, bool with_h) {
    int32_t x, i;
    ttc_kir *k = two_tensors(&x, &i);
    ttc_kspec ks = {0};
    ttc_kparams p;
    ttc_kp_init(&p, k, &ks, false);
    ttc_kp_buffer(&p, x, "X", "offX");
    if (with_h) ttc_kp_int(&p, TTC_ARG_DIM, x, 0, 0, 0, "H");
    ttc_kp_int(&p, TTC_ARG_DIM, x, 1, 0, 0, "W");
    ttc_sbuf src = {0};
    ttc_sbuf_printf(&src, "/* before */ void other(int a, int b) {}\n");
    size_t from = src.len;
    ttc_sbuf_printf(&src, "#define KNAME k0\n%s", tmpl_text);
    ttc_status s = ttc_kp_check_template(&p, &src, from, "test");
    ttc_sbuf_free(&src);
    ttc_kp_free(&p);
    free(ks.args);
    ttc_kir_free(k);
    return s;
}

static void test_template_check(void) {
    const char *t = "__kernel __attribute__((reqd_work_group_size(64, 1, 1)))\n"
                    "void KNAME(__global const TX *X, int offX, int H,\n            int W EPI_PARAMS) {\n}\n";
    CHECK_OK(check_against(t, true));
    CHECK(check_against(t, false) == TTC_ERR_INTERNAL, "a template parameter codegen does not bind");
    CHECK(strstr(ttc_last_error(), "test.cl") != NULL, "the message names the template: %s", ttc_last_error());
    const char *t2 = "__kernel void KNAME(__global const TX *X, int offX, int W EPI_PARAMS) {}\n";
    CHECK(check_against(t2, true) == TTC_ERR_INTERNAL, "an argument the template does not declare");
    const char *t3 = "__kernel void KNAME(__global const TX *X, int offX, int W, int H EPI_PARAMS) {}\n";
    CHECK(check_against(t3, true) == TTC_ERR_INTERNAL, "parameters in another order");
    CHECK(check_against("__kernel void f(int a) {}\n", true) == TTC_ERR_INTERNAL, "no KNAME kernel");
    ttc_clear_error();
}

static const char *maxgraph =
    "graph(%x : Float(3, 5), %y : Float(3, 5)) :\n"
    "  %m : Float(3, 5) = aten.maximum.default(%x, %y)\n"
    "  %e : Float(3, 5) = aten.exp.default(%m)\n"
    "  return (%e)\n";

static char *generate_spelled(const char *text, const ttc_spelling *sp, ttc_status *st) {
    ttc_graph *g = NULL;
    char *src = NULL;
    *st = ttc_graph_parse(text, &g);
    CHECK(*st == TTC_OK, "parse: %s", ttc_last_error());
    if (*st != TTC_OK) return NULL;
    ttc_kir *k = NULL;
    *st = ttc_convert_graph(g, false, &k);
    CHECK(*st == TTC_OK, "convert: %s", ttc_last_error());
    if (*st == TTC_OK) {
        int32_t fused = 0;
        CHECK_OK(ttc_fuse(k, &fused));
        ttc_codegen cg;
        *st = ttc_codegen_run_spelled(k, false, sp, &cg);
        if (*st == TTC_OK) {
            src = ttc_strdup(cg.source);
            ttc_codegen_free(&cg);
        }
    }
    ttc_kir_free(k);
    ttc_graph_free(g);
    return src;
}

static void test_spelling_override(void) {
    ttc_status st;
    char *base = generate_spelled(maxgraph, NULL, &st);
    ttc_spelling other = *ttc_spelling_opencl();
    other.op[TTC_EOP_MAX].fl = "my_max(%a, %b)";
    other.op[TTC_EOP_EXP].fl = "my_exp(%a) %% 2";
    char *mine = generate_spelled(maxgraph, &other, &st);
    if (base && mine) {
        if (getenv("TTC_SHOW")) puts(mine);
        CHECK(strstr(base, "(v0 < v1 || v1 != v1) ? v1 : v0") != NULL, "OpenCL's NaN-propagating max:\n%s", base);
        CHECK(strstr(mine, "= my_max(v0, v1);") != NULL && strstr(mine, "v1 != v1") == NULL, "the override's max:\n%s", mine);
        CHECK(strstr(mine, "= my_exp(v2) % 2;") != NULL, "the override's exp, %% as a percent sign:\n%s", mine);
        CHECK(strstr(mine, "exp(v2)") == strstr(mine, "my_exp(v2)") + 3, "no OpenCL exp left:\n%s", mine);
    }
    free(base);
    free(mine);
    other.op[TTC_EOP_MAX].fl = "bad(%q)";
    char *bad = generate_spelled(maxgraph, &other, &st);
    CHECK(bad == NULL && st == TTC_ERR_INTERNAL, "an unknown placeholder is refused (status %d)", st);
    free(bad);
    ttc_clear_error();
}

TEST_MAIN(test_kind_rows, test_builder, test_template_check, test_spelling_override)
