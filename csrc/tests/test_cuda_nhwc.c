/* Channels-last tensors of the CUDA launch path (kir/nhwc.c) and the epilogue kernels over
 * them ("<kernel>_eh", codegen_expr.c ttc_codegen_store_nhwc), checked without a GPU: with
 * TORCHTRT_C_CUDA_LIBS=1 the program carries them on any device (PoCL in CI).
 *   - which tensors the plan keeps NHWC: a chain of convolutions with a residual; none where
 *     the reader is a max pool, a depthwise convolution, an engine output, a residual whose
 *     layout disagrees with its reader's output, or with TORCHTRT_C_CUDA_NHWC=0;
 *   - the "_eh" kernel of a convolution with bias + residual + ReLU, run on the OpenCL device
 *     over a raw convolution result and a residual stored NHWC, or NCHW where a max pool reads
 *     it too (read at its own index) (computed here in double from
 *     the engine's constants), against act(conv + bias + residual + a [1, 1, H, W] term) here,
 *     in NHWC: 1e-5 of
 *     max(|ref|, 1). Channel counts 8, 6 and 5 (runs of 4, 2 and 1 floats), 7x5 planes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "engine/engine_impl.h"
#include "tests/ctest.h"
#include "tests/engine_util.h"

static void knobs(const char *nhwc) {
    setenv("TORCHTRT_C_CUDA_LIBS", "1", 1);
    setenv("TORCHTRT_C_KERNELS", "gpu", 1);
    setenv("TORCHTRT_C_NATIVE", "0", 1);
    setenv("TORCHTRT_C_CONV_KSPLIT", "1", 1);
    setenv("TORCHTRT_C_CUDA_NHWC", nhwc, 1);
}

static float val(int64_t i, int salt) { return (float)((i * (7 + 2 * salt) + 3 * salt + 1) % 29) / 14.0f - 1.0f; }

/* "%name : Float(o, i, k, k) = prim.Constant[value=...]()" with val(., salt) (caller frees) */
static char *weight(const char *name, int o, int i, int k, int salt) {
    int n = o * i * k * k;
    float *w = malloc(sizeof(float) * (size_t)n);
    for (int j = 0; j < n; j++) w[j] = val(j, salt) * 0.5f;
    char *lit = tensor_lit(w, n);
    char *s = ttc_strfmt("  %%%s : Float(%d, %d, %d, %d) = prim.Constant[value=%s]()\n", name, o, i, k, k, lit);
    free(lit);
    free(w);
    return s;
}

static char *bias(const char *name, int o, int salt) {
    float b[64];
    for (int j = 0; j < o; j++) b[j] = val(j, salt);
    char *lit = tensor_lit(b, o);
    char *s = ttc_strfmt("  %%%s : Float(%d) = prim.Constant[value=%s]()\n", name, o, lit);
    free(lit);
    return s;
}

/* (a format string's part: % doubled) */
#define CONSTS                                                                                              \
    "  %%s1 : int[] = prim.Constant[value=[1, 1]]()\n  %%s2 : int[] = prim.Constant[value=[2, 2]]()\n"      \
    "  %%p0 : int[] = prim.Constant[value=[0, 0]]()\n  %%p1 : int[] = prim.Constant[value=[1, 1]]()\n"      \
    "  %%f : bool = prim.Constant[value=false]()\n  %%g1 : int = prim.Constant[value=1]()\n"                \
    "  %%one : int = prim.Constant[value=1]()\n  %%none : NoneType = prim.Constant()\n"

/* x [2, 3, 7, 5] -> a1 = relu(conv3x3(x) + b1) [2, C, 7, 5] -> a2 = relu(conv1x1(a1) + b2 + a1)
 * -> a3 = relu(conv3x3(a2)) -> conv3x3 stride 2 (no bias) [2, 4, 4, 3], the engine's output:
 * two convolutions NHWC on both sides, two changing a layout. tail: extra lines after a2
 * ("" for none), out: what is returned. */
static char *chain_n(int C, int extra, const char *tail, const char *out);
static char *chain(int C, const char *tail, const char *out) { return chain_n(C, 0, tail, out); }

/* chain with `extra` more 3x3 convolutions + ReLU (x1, x2, ...) between a2 and c4 */
static char *chain_n(int C, int extra, const char *tail, const char *out) {
    char *w1 = weight("w1", C, 3, 3, 1), *b1 = bias("b1", C, 2), *w2 = weight("w2", C, C, 1, 3), *b2 = bias("b2", C, 4),
         *w3 = weight("w3", 4, C, 3, 5), *w4 = weight("w4", C, C, 3, 7);
    /* x<i> = relu(conv3x3(x<i-1>)), x0 standing for a2 */
    ttc_sbuf ext = {0};
    char last[8] = "a2";
    for (int i = 1; i <= extra; i++) {
        char nm[8];
        snprintf(nm, sizeof nm, "we%d", i);
        char *we = weight(nm, C, C, 3, 10 + i);
        ttc_sbuf_printf(&ext, "%s  %%e%d : Float(2, %d, 7, 5) = aten.convolution.default(%%%s, %%%s, %%none, %%s1, %%p1, %%s1, %%f, %%p0, %%g1)\n"
                        "  %%x%d : Float(2, %d, 7, 5) = aten.relu.default(%%e%d)\n", we, i, C, last, nm, i, C, i);
        snprintf(last, sizeof last, "x%d", i);
        free(we);
    }
    float pv[35];
    for (int j = 0; j < 35; j++) pv[j] = val(j, 8);
    char *pl = tensor_lit(pv, 35);
    char *pos = ttc_strfmt("  %%pos : Float(1, 1, 7, 5) = prim.Constant[value=%s]()\n", pl);
    free(pl);
    char *s = ttc_strfmt("graph(%%x : Float(2, 3, 7, 5)):\n%s%s%s%s%s%s%s" CONSTS
                         "  %%c1 : Float(2, %d, 7, 5) = aten.convolution.default(%%x, %%w1, %%b1, %%s1, %%p1, %%s1, %%f, %%p0, %%g1)\n"
                         "  %%a1 : Float(2, %d, 7, 5) = aten.relu.default(%%c1)\n"
                         "  %%c2 : Float(2, %d, 7, 5) = aten.convolution.default(%%a1, %%w2, %%b2, %%s1, %%p0, %%s1, %%f, %%p0, %%g1)\n"
                         "  %%q2 : Float(2, %d, 7, 5) = aten.add.Tensor(%%c2, %%a1, %%one)\n"
                         "  %%r2 : Float(2, %d, 7, 5) = aten.add.Tensor(%%q2, %%pos, %%one)\n"
                         "  %%a2 : Float(2, %d, 7, 5) = aten.relu.default(%%r2)\n"
                         "%s%s"
                         "  %%c4 : Float(2, %d, 7, 5) = aten.convolution.default(%%%s, %%w4, %%none, %%s1, %%p1, %%s1, %%f, %%p0, %%g1)\n"
                         "  %%a3 : Float(2, %d, 7, 5) = aten.relu.default(%%c4)\n"
                         "  %%y : Float(2, 4, 4, 3) = aten.convolution.default(%%a3, %%w3, %%none, %%s2, %%p1, %%s1, %%f, %%p0, %%g1)\n"
                         "  return (%s)\n",
                         w1, b1, w2, b2, w3, w4, pos, C, C, C, C, C, C, tail, ext.data ? ext.data : "", C, last, C, out);
    free(w1); free(b1); free(w2); free(b2); free(w3); free(w4); free(pos); ttc_sbuf_free(&ext);
    return s;
}

/* The kernel-IR tensors kept NHWC, as "name name ..." of their IR values (sorted by id). */
static void nhwc_names(const ttc_engine *e, char *buf, size_t len) {
    bool *f = calloc((size_t)e->k->n_ts + 1, sizeof(bool));
    ttc_kir_nhwc_plan(e->k, f);
    buf[0] = 0;
    for (int32_t t = 0; t < e->k->n_ts; t++)
        if (f[t]) {
            size_t u = strlen(buf);
            snprintf(buf + u, len - u, "%s%s", u ? " " : "", e->k->ts[t].name ? e->k->ts[t].name : "?");
        }
    free(f);
}

static void expect_plan(const char *what, const char *nhwc_knob, const char *text, const char *want) {
    knobs(nhwc_knob);
    ttc_engine *e = text ? build_engine(text, NULL) : NULL;
    if (!e) return;
    char got[256];
    nhwc_names(e, got, sizeof got);
    CHECK(!strcmp(got, want), "%s: kept NHWC \"%s\", expected \"%s\"", what, got, want);
    ttc_engine_free(e);
}

static void test_plan(void) {
    if (!have_device()) return;
    char *t = chain(8, "", "%y");
    expect_plan("chain", "1", t, "a1 a2 a3");
    expect_plan("chain, TORCHTRT_C_CUDA_NHWC=0", "0", t, "");
    free(t);
    /* a2 also an engine output: NCHW; then a1, a residual of a2's convolution, too; a3 alone
     * would take two layout changes for one convolution: NCHW */
    t = chain(8, "", "%y, %a2");
    expect_plan("an output", "1", t, "");
    free(t);
    /* a1 read by a max pool too: NCHW; then a2, whose epilogue reads a1 at its own index */
    t = chain(8, "  %k2 : int[] = prim.Constant[value=[2, 2]]()\n"
                 "  %mp : Float(2, 8, 3, 2) = aten.max_pool2d.default(%a1, %k2, %k2, %p0, %s1, %f)\n", "%y, %mp");
    expect_plan("a max pool", "1", t, "");
    free(t);
    /* the same with two more convolutions after a2: a2 stays NHWC (its epilogue reads a1 at
     * a1's NCHW index), the layout changes (conv2's input, the last output) now fewer */
    t = chain_n(8, 2, "  %k2 : int[] = prim.Constant[value=[2, 2]]()\n"
                      "  %mp : Float(2, 8, 3, 2) = aten.max_pool2d.default(%a1, %k2, %k2, %p0, %s1, %f)\n", "%y, %mp");
    expect_plan("a max pool, longer", "1", t, "a2 x1 x2 a3");
    free(t);
    /* two convolutions alone: both would change a layout, none runs NHWC on both sides */
    char *wa = weight("wa", 6, 3, 3, 1), *wb = weight("wb", 4, 6, 3, 2);
    t = ttc_strfmt("graph(%%x : Float(2, 3, 7, 5)):\n%s%s" CONSTS
                   "  %%c1 : Float(2, 6, 7, 5) = aten.convolution.default(%%x, %%wa, %%none, %%s1, %%p1, %%s1, %%f, %%p0, %%g1)\n"
                   "  %%y : Float(2, 4, 7, 5) = aten.convolution.default(%%c1, %%wb, %%none, %%s1, %%p1, %%s1, %%f, %%p0, %%g1)\n"
                   "  return (%%y)\n", wa, wb);
    expect_plan("more layout changes than convolutions without", "1", t, "");
    free(t); free(wa); free(wb);
    /* the residual is the engine's input (NCHW): the sum stays NCHW, a1 (read by it) too */
    char *w1 = weight("w1", 3, 3, 3, 1), *wd = weight("wd", 3, 1, 3, 2), *w3 = weight("w3", 3, 3, 3, 3);
    t = ttc_strfmt("graph(%%x : Float(2, 3, 7, 5)):\n%s%s%s" CONSTS
                   "  %%g3 : int = prim.Constant[value=3]()\n"
                   "  %%c1 : Float(2, 3, 7, 5) = aten.convolution.default(%%x, %%w1, %%none, %%s1, %%p1, %%s1, %%f, %%p0, %%g1)\n"
                   "  %%r1 : Float(2, 3, 7, 5) = aten.add.Tensor(%%c1, %%x, %%one)\n"
                   "  %%c2 : Float(2, 3, 7, 5) = aten.convolution.default(%%r1, %%w3, %%none, %%s1, %%p1, %%s1, %%f, %%p0, %%g1)\n"
                   "  %%a2 : Float(2, 3, 7, 5) = aten.relu.default(%%c2)\n"
                   "  %%dw : Float(2, 3, 7, 5) = aten.convolution.default(%%a2, %%wd, %%none, %%s1, %%p1, %%s1, %%f, %%p0, %%g3)\n"
                   "  return (%%dw)\n", w1, wd, w3);
    expect_plan("an NCHW residual, a depthwise reader", "1", t, "");
    free(t); free(w1); free(wd); free(w3);
}

static void conv_ref(const double *x, int N, int C, int H, int W, const float *w, int K, int k, int s, int p, double *y,
                     int OH, int OW) {
    for (int n = 0; n < N; n++)
        for (int o = 0; o < K; o++)
            for (int oh = 0; oh < OH; oh++)
                for (int ow = 0; ow < OW; ow++) {
                    double a = 0;
                    for (int c = 0; c < C; c++)
                        for (int i = 0; i < k; i++)
                            for (int j = 0; j < k; j++) {
                                int h = oh * s - p + i, ww = ow * s - p + j;
                                if (h >= 0 && h < H && ww >= 0 && ww < W)
                                    a += x[((n * C + c) * H + h) * W + ww] * w[((o * C + c) * k + i) * k + j];
                            }
                    y[((n * K + o) * OH + oh) * OW + ow] = a;
                }
}

static int64_t nhwc_at(int64_t i, int C, int H, int W) {   /* NCHW index -> its NHWC position */
    int64_t w = i % W, h = i / W % H, c = i / ((int64_t)W * H) % C, n = i / ((int64_t)W * H * C);
    return ((n * H + h) * W + w) * C + c;
}

/* conv2's "_eh" over a1 (NHWC) and conv2(a1) (NHWC, raw) against relu(conv2 + b2 + a1). */
static void check_eh(int C, bool mp) {
    knobs("1");
    char tail[256];
    snprintf(tail, sizeof tail, "  %%k2 : int[] = prim.Constant[value=[2, 2]]()\n"
             "  %%mp : Float(2, %d, 3, 2) = aten.max_pool2d.default(%%a1, %%k2, %%k2, %%p0, %%s1, %%f)\n", C);
    /* mp: a1 also read by a max pool (so NCHW), two more convolutions keep a2 NHWC */
    char *text = chain_n(C, mp ? 2 : 0, mp ? tail : "", mp ? "%y, %mp" : "%y");
    ttc_engine *e = build_engine(text, NULL);
    free(text);
    if (!e) return;
    const int N = 2, H = 7, W = 5;
    const int64_t n_a = (int64_t)N * C * H * W;
    /* the engine's own weights and biases, as the graph literal made them */
    float *w1 = malloc(sizeof(float) * (size_t)(C * 27)), *w2 = malloc(sizeof(float) * (size_t)(C * C));
    float b1[64], b2[64];
    for (int j = 0; j < C * 27; j++) w1[j] = val(j, 1) * 0.5f;
    for (int j = 0; j < C * C; j++) w2[j] = val(j, 3) * 0.5f;
    for (int j = 0; j < C; j++) { b1[j] = val(j, 2); b2[j] = val(j, 4); }
    double *x = malloc(sizeof(double) * N * 3 * H * W), *a1 = malloc(sizeof(double) * (size_t)n_a),
           *c2 = malloc(sizeof(double) * (size_t)n_a);
    for (int j = 0; j < N * 3 * H * W; j++) x[j] = val(j, 6);
    conv_ref(x, N, 3, H, W, w1, C, 3, 1, 1, a1, H, W);
    for (int64_t i = 0; i < n_a; i++) {
        double v = a1[i] + b1[i / (H * W) % C];
        a1[i] = (float)(v < 0 ? 0 : v);   /* the engine keeps a1 in float */
    }
    conv_ref(a1, N, C, H, W, w2, C, 1, 1, 0, c2, H, W);
    float *acc = malloc(sizeof(float) * (size_t)n_a), *res = malloc(sizeof(float) * (size_t)n_a),
          *got = malloc(sizeof(float) * (size_t)n_a);
    double *want = malloc(sizeof(double) * (size_t)n_a);
    for (int64_t i = 0; i < n_a; i++) {
        int64_t j = nhwc_at(i, C, H, W);
        acc[j] = (float)c2[i];
        res[mp ? i : j] = (float)a1[i];
        double v = (double)(float)c2[i] + b2[i / (H * W) % C] + (double)(float)a1[i] + val(i % (H * W), 8);
        want[j] = v < 0 ? 0 : v;
    }
    /* the plan of the engine's shapes: argument values; conv2's kernel and its tensors */
    int64_t shp[1][TTC_MAX_RANK] = {{N, 3, H, W}}, sv[64] = {0};
    ttc_plan *p = NULL;
    CHECK_OK(ttc_engine_symbols_from_shapes(e, (const int64_t(*)[TTC_MAX_RANK])shp, sv));
    CHECK_OK(ttc_engine_get_plan(e, sv, &p));
    bool *f = calloc((size_t)e->k->n_ts + 1, sizeof(bool));
    ttc_kir_nhwc_plan(e->k, f);
    int found = 0;
    ttc_queue *q = NULL;
    ttc_device *qd = e->cdev ? e->cdev : e->dev;   /* the device the program was built for */
    CHECK_OK(ttc_queue_new(qd, false, &q));
    for (int32_t ki = 0; p && q && ki < e->cg.n_kernels; ki++) {
        const ttc_kspec *ks = &e->cg.kernels[ki];
        const ttc_kop *op = &e->k->ops[ks->op];
        if (!ks->lib_epih) continue;
        bool resid = false;   /* conv2: a1 -> a2, a1 also a leaf (c4's epilogue reads no tensor) */
        for (int32_t l = 0; l < op->epi.n_leaves; l++) resid = resid || op->epi.leaves[l] == op->in[0];
        if (op->kind != TTC_KOP_CONV2D || f[op->in[0]] == mp || !f[op->out] || !resid) continue;
        found++;
        ttc_buf *bo = NULL, *br = NULL;
        CHECK_OK(ttc_buf_alloc(qd, sizeof(float) * (size_t)n_a, acc, "acc", &bo));
        CHECK_OK(ttc_buf_alloc(qd, sizeof(float) * (size_t)n_a, res, "a1", &br));
        char name[24];
        snprintf(name, sizeof name, "%s_eh", ks->name);
        ttc_kernel *k = NULL;
        CHECK_OK(ttc_kernel_new(e->prog, name, &k));
        if (!k || !bo || !br) { ttc_kernel_free(k); ttc_buf_free(bo); ttc_buf_free(br); continue; }
        CHECK_OK(ttc_kernel_set_i32(k, 0, (int32_t)n_a));
        int32_t first = ks->n_args - ks->n_store_args;
        for (int32_t a = first; a < ks->n_args; a++) {
            const ttc_argspec *as = &ks->args[a];
            uint32_t at = (uint32_t)(a - first + 1);
            int64_t v = p->argv[ki][a];
            int32_t t = as->t;
            while (t >= 0 && e->k->ts[t].kind == TTC_ET_VIEW) t = e->k->ts[t].base;
            bool mine = t == op->out || t == op->in[0];
            if (as->kind == TTC_ARG_BUF) {
                if (t == op->out) CHECK_OK(ttc_kernel_set_buf(k, at, bo));
                else if (t == op->in[0]) CHECK_OK(ttc_kernel_set_buf(k, at, br));
                else if (e->k->ts[t].kind == TTC_ET_CONST && e->const_mem && e->const_mem[t])
                    CHECK_OK(ttc_kernel_set_buf(k, at, e->const_mem[t]));
                else CHECK(0, "C=%d: argument %d is tensor %d, neither ours nor a constant", C, (int)a, (int)t);
            } else if (as->kind == TTC_ARG_OFF) {
                CHECK_OK(ttc_kernel_set_i32(k, at, mine ? 0 : (int32_t)v));
            } else {
                CHECK_OK(ttc_kernel_set_i32(k, at, (int32_t)v));
            }
        }
        size_t L = 16, per = L * 8, gws[1] = {((size_t)n_a + per - 1) / per * L}, lws[1] = {L};
        CHECK_OK(ttc_queue_launch(q, k, 1, gws, lws, NULL));
        CHECK_OK(ttc_buf_read(q, bo, 0, sizeof(float) * (size_t)n_a, got, true));
        double err = 0, scale = 1;
        for (int64_t i = 0; i < n_a; i++) {
            err = fmax(err, fabs(got[i] - want[i]));
            scale = fmax(scale, fabs(want[i]));
        }
        CHECK(err <= 1e-5 * scale, "C=%d: %s differs from relu(conv + bias + residual) by %g (scale %g)", C, name, err, scale);
        ttc_kernel_free(k);
        ttc_buf_free(bo);
        ttc_buf_free(br);
    }
    CHECK(found == 1, "C=%d%s: %d convolutions with an NHWC epilogue over an NHWC output and a residual %s", C,
          mp ? " (max pool)" : "", found, mp ? "NCHW" : "NHWC");
    ttc_queue_free(q);
    free(f);
    if (p) ttc_plan_release(e, p);
    ttc_engine_free(e);
    free(w1); free(w2); free(x); free(a1); free(c2); free(acc); free(res); free(got); free(want);
}

static void test_eh_kernels(void) {
    if (!have_device()) return;
    for (int mp = 0; mp < 2; mp++) {
        check_eh(8, mp);
        check_eh(6, mp);
        check_eh(5, mp);
    }
}

TEST_MAIN(test_plan, test_eh_kernels)
