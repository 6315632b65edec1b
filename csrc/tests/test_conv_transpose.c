/* Transposed convolution end to end on the default OpenCL device against a scatter-form
 * reference written here (the kernel gathers; the two orders must agree), 1-D and 2-D with
 * stride, padding, output_padding, dilation, groups and bias; the validator/converter saying
 * why for what they refuse; index kernels raising on out-of-range indices; live buffer
 * counters back to zero after the engines are freed. Run under `make ctest SAN=1`. */
#include <math.h>

#include "engine/engine.h"
#include "convert/registry.h"
#include "tests/ctest.h"
#include "tests/engine_util.h"

static float val(int i, int salt) { return (float)(((i * 37 + salt * 11) % 23) - 11) / 9.0f + 0.05f; }

typedef struct cfg { int N, C, OCG, G, H, W, KH, KW, SH, SW, PH, PW, OPH, OPW, DH, DW; bool bias, one_d; } cfg;

static void check_case(const cfg *c) {
    int OC = c->OCG * c->G, ICG = c->C / c->G;
    int OH = (c->H - 1) * c->SH - 2 * c->PH + c->DH * (c->KH - 1) + c->OPH + 1;
    int OW = (c->W - 1) * c->SW - 2 * c->PW + c->DW * (c->KW - 1) + c->OPW + 1;
    int nx = c->N * c->C * c->H * c->W, nw = c->C * c->OCG * c->KH * c->KW, ny = c->N * OC * OH * OW;
    float *x = malloc(sizeof(float) * nx), *w = malloc(sizeof(float) * nw), *b = malloc(sizeof(float) * OC);
    float *y = calloc((size_t)ny, sizeof(float)), *ref = calloc((size_t)ny, sizeof(float));
    for (int i = 0; i < nx; i++) x[i] = val(i, 1);
    for (int i = 0; i < nw; i++) w[i] = val(i, 2) * 0.5f;
    for (int i = 0; i < OC; i++) b[i] = val(i, 3);
    /* scatter reference */
    for (int n = 0; n < c->N; n++)
        for (int ci = 0; ci < c->C; ci++)
            for (int ih = 0; ih < c->H; ih++)
                for (int iw = 0; iw < c->W; iw++)
                    for (int o = 0; o < c->OCG; o++)
                        for (int kh = 0; kh < c->KH; kh++)
                            for (int kw = 0; kw < c->KW; kw++) {
                                int oh = ih * c->SH - c->PH + kh * c->DH, ow = iw * c->SW - c->PW + kw * c->DW;
                                if (oh < 0 || oh >= OH || ow < 0 || ow >= OW) continue;
                                int oc = (ci / ICG) * c->OCG + o;
                                ref[((n * OC + oc) * OH + oh) * OW + ow] +=
                                    x[((n * c->C + ci) * c->H + ih) * c->W + iw] *
                                    w[((ci * c->OCG + o) * c->KH + kh) * c->KW + kw];
                            }
    if (c->bias)
        for (int i = 0; i < ny; i++) ref[i] += b[(i / (OH * OW)) % OC];
    char *wl = tensor_lit(w, nw), *bl = tensor_lit(b, OC), *text;
    char *bline = c->bias ? ttc_strfmt("%%b : Float(%d) = prim.Constant[value=%s]()", OC, bl)
                          : ttc_strdup("%b : NoneType = prim.Constant()");
    if (c->one_d)
        text = ttc_strfmt(
            "graph(%%x : Float(%d, %d, %d)):\n"
            "  %%w : Float(%d, %d, %d) = prim.Constant[value=%s]()\n"
            "  %s\n"
            "  %%s : int[] = prim.Constant[value=[%d]]()\n  %%p : int[] = prim.Constant[value=[%d]]()\n"
            "  %%d : int[] = prim.Constant[value=[%d]]()\n  %%op : int[] = prim.Constant[value=[%d]]()\n"
            "  %%t : bool = prim.Constant[value=true]()\n  %%g : int = prim.Constant[value=%d]()\n"
            "  %%y : Float(%d, %d, %d) = aten.convolution.default(%%x, %%w, %%b, %%s, %%p, %%d, %%t, %%op, %%g)\n"
            "  return (%%y)\n", c->N, c->C, c->W, c->C, c->OCG, c->KW, wl, bline, c->SW, c->PW, c->DW, c->OPW, c->G,
            c->N, OC, OW);
    else
        text = ttc_strfmt(
            "graph(%%x : Float(%d, %d, %d, %d)):\n"
            "  %%w : Float(%d, %d, %d, %d) = prim.Constant[value=%s]()\n"
            "  %s\n"
            "  %%s : int[] = prim.Constant[value=[%d, %d]]()\n  %%p : int[] = prim.Constant[value=[%d, %d]]()\n"
            "  %%d : int[] = prim.Constant[value=[%d, %d]]()\n  %%op : int[] = prim.Constant[value=[%d, %d]]()\n"
            "  %%t : bool = prim.Constant[value=true]()\n  %%g : int = prim.Constant[value=%d]()\n"
            "  %%y : Float(%d, %d, %d, %d) = aten.convolution.default(%%x, %%w, %%b, %%s, %%p, %%d, %%t, %%op, %%g)\n"
            "  return (%%y)\n", c->N, c->C, c->H, c->W, c->C, c->OCG, c->KH, c->KW, wl,
            bline, c->SH, c->SW, c->PH, c->PW, c->DH, c->DW,
            c->OPH, c->OPW, c->G, c->N, OC, OH, OW);
    ttc_engine *e = text ? build_engine(text, NULL) : NULL;
    if (e) {
        const void *in[1] = {x};
        size_t inb[1] = {sizeof(float) * (size_t)nx}, outb[1] = {sizeof(float) * (size_t)ny};
        int64_t shp[1][TTC_MAX_RANK] = {{c->N, c->C, c->H, c->W}};
        if (c->one_d) { shp[0][2] = c->W; shp[0][3] = 0; }
        void *out[1] = {y};
        CHECK_OK(ttc_engine_execute(e, in, inb, (const int64_t(*)[TTC_MAX_RANK])shp, out, outb));
        double maxerr = 0;
        for (int i = 0; i < ny; i++) maxerr = fmax(maxerr, fabs(y[i] - ref[i]) / (1.0 + fabs(ref[i])));
        CHECK(maxerr < 1e-5, "case C=%d OCG=%d G=%d K=%dx%d S=%dx%d: max rel error %g", c->C, c->OCG, c->G, c->KH,
              c->KW, c->SH, c->SW, maxerr);
        /* bias in the epilogue; a 1-D output (a view of the 4-D result) is copied out */
        CHECK(ttc_engine_n_kernels(e) == (c->one_d ? 2 : 1), "kernels: %d", ttc_engine_n_kernels(e));
        ttc_engine_free(e);
    }
    free(text); free(wl); free(bl); free(bline); free(x); free(w); free(b); free(y); free(ref);
}

static void test_against_scatter_reference(void) {
    if (!have_device()) return;
    ttc_memstats before = ttc_memstats_get();
    static const cfg cases[] = {
        {2, 3, 5, 1, 4, 5, 3, 3, 1, 1, 0, 0, 0, 0, 1, 1, true, false},
        {1, 4, 3, 2, 5, 3, 3, 2, 2, 3, 1, 0, 1, 2, 1, 1, true, false},
        {2, 6, 1, 6, 3, 4, 3, 3, 2, 2, 1, 1, 0, 1, 2, 1, false, false},  /* depthwise, dilated */
        {1, 2, 3, 1, 1, 7, 1, 4, 1, 3, 0, 2, 0, 1, 1, 2, true, true},   /* 1-D */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_case(&cases[i]);
    ttc_memstats after = ttc_memstats_get();
    CHECK(after.live_buffers == before.live_buffers && after.live_bytes == before.live_bytes,
          "live buffers %lld -> %lld, bytes %lld -> %lld after freeing the engines", (long long)before.live_buffers,
          (long long)after.live_buffers, (long long)before.live_bytes, (long long)after.live_bytes);
    CHECK(after.created > before.created, "the counters saw the engines' buffers");
}

static void test_refusals_say_why(void) {
    if (!have_device()) return;
    /* output_padding must be below stride or dilation */
    ttc_status s = TTC_OK;
    ttc_engine *e = build_engine("graph(%x : Float(1, 2, 3, 3)):\n"
                          "  %w : Float(2, 1, 2, 2) = prim.Constant[value=tensor([1., 2., 3., 4., 5., 6., 7., 8.])]()\n"
                          "  %b : NoneType = prim.Constant()\n"
                          "  %s : int[] = prim.Constant[value=[1, 1]]()\n  %p : int[] = prim.Constant[value=[0, 0]]()\n"
                          "  %op : int[] = prim.Constant[value=[1, 1]]()\n"
                          "  %t : bool = prim.Constant[value=true]()\n  %g : int = prim.Constant[value=1]()\n"
                          "  %y : Float(1, 1, 5, 5) = aten.convolution.default(%x, %w, %b, %s, %p, %s, %t, %op, %g)\n"
                          "  return (%y)\n", &s);
    CHECK(!e && s != TTC_OK && strstr(ttc_last_error(), "output_padding"), "got %s", ttc_last_error());
    ttc_engine_free(e);
    /* weights that are a runtime tensor: the validator says so */
    ttc_graph *g = NULL;
    CHECK_OK(ttc_graph_parse("graph(%x : Float(1, 2, 3, 3), %w : Float(2, 1, 2, 2)):\n"
                             "  %b : NoneType = prim.Constant()\n"
                             "  %s : int[] = prim.Constant[value=[1, 1]]()\n  %p : int[] = prim.Constant[value=[0, 0]]()\n"
                             "  %t : bool = prim.Constant[value=true]()\n  %g : int = prim.Constant[value=1]()\n"
                             "  %y : Float(1, 1, 4, 4) = aten.convolution.default(%x, %w, %b, %s, %p, %s, %t, %p, %g)\n"
                             "  return (%y)\n", &g));
    for (int32_t i = 0; g && i < g->n_nodes; i++) {
        if (g->nodes[i]->op != TTC_OP_CONVOLUTION) continue;
        char *why = NULL;
        CHECK(!ttc_op_supported(g, g->nodes[i], false, &why, NULL) && why && strstr(why, "constant"), "why: %s",
              why ? why : "(null)");
        free(why);
    }
    ttc_graph_free(g);
}

static void test_index_out_of_range_raises(void) {
    if (!have_device()) return;
    float w[12];
    for (int i = 0; i < 12; i++) w[i] = (float)i;
    char *wl = tensor_lit(w, 12);
    char *text = ttc_strfmt("graph(%%i : Long(3)):\n"
                            "  %%w : Float(4, 3) = prim.Constant[value=%s]()\n"
                            "  %%m : int = prim.Constant[value=-1]()\n  %%f : bool = prim.Constant[value=false]()\n"
                            "  %%y : Float(3, 3) = aten.embedding.default(%%w, %%i, %%m, %%f, %%f)  # name=emb\n"
                            "  return (%%y)\n", wl);
    ttc_engine *e = build_engine(text, NULL);
    free(wl);
    free(text);
    if (!e) return;
    int64_t ids[3] = {3, 0, 1}, bad[3] = {0, -1, 1};
    float y[9];
    const void *in[1] = {ids};
    size_t inb[1] = {sizeof ids}, outb[1] = {sizeof y};
    int64_t shp[1][TTC_MAX_RANK] = {{3}};
    void *out[1] = {y};
    CHECK_OK(ttc_engine_execute(e, in, inb, (const int64_t(*)[TTC_MAX_RANK])shp, out, outb));
    CHECK(y[0] == 9.0f && y[3] == 0.0f && y[6] == 3.0f, "rows 3, 0, 1: %g %g %g", y[0], y[3], y[6]);
    in[0] = bad;
    ttc_status s = ttc_engine_execute(e, in, inb, (const int64_t(*)[TTC_MAX_RANK])shp, out, outb);
    CHECK(s == TTC_ERR_INPUT && strstr(ttc_last_error(), "index out of range"), "got %s: %s", ttc_status_name(s),
          ttc_last_error());
    in[0] = ids;
    CHECK_OK(ttc_engine_execute(e, in, inb, (const int64_t(*)[TTC_MAX_RANK])shp, out, outb));
    CHECK(y[0] == 9.0f, "valid call after the error: %g", y[0]);
    ttc_engine_free(e);
}

TEST_MAIN(test_against_scatter_reference, test_refusals_say_why, test_index_out_of_range_raises)
