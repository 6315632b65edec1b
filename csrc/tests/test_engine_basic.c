/* Engine end to end on the default OpenCL device: linear + relu, broadcasting adds,
 * dynamic batch, input checking, the memory counters back where they were after a free. Skips (passes with a note) when no OpenCL device exists. */
#include <math.h>

#include "engine/engine.h"
#include "tests/ctest.h"
#include "tests/engine_util.h"

static void test_linear_relu(void) {
    if (!have_device()) return;
    enum { B = 3, K = 5, N = 4 };
    float w[N * K], bias[N], x[B * K], y[B * N];
    for (int i = 0; i < N * K; i++) w[i] = (float)((i * 7) % 11) / 5.0f - 1.0f;
    for (int i = 0; i < N; i++) bias[i] = 0.25f * (float)i - 0.3f;
    for (int i = 0; i < B * K; i++) x[i] = (float)((i * 5) % 13) / 6.0f - 1.0f;
    char *wl = tensor_lit(w, N * K), *bl = tensor_lit(bias, N);
    char *text = ttc_strfmt(
        "graph(%%x : Float(%d, %d)):\n"
        "  %%w : Float(%d, %d) = prim.Constant[value=%s]()\n"
        "  %%b : Float(%d) = prim.Constant[value=%s]()\n"
        "  %%l : Float(%d, %d) = aten.linear.default(%%x, %%w, %%b)\n"
        "  %%y : Float(%d, %d) = aten.relu.default(%%l)\n"
        "  return (%%y)\n", B, K, N, K, wl, N, bl, B, N, B, N);
    ttc_engine *e = build_engine(text, NULL);
    free(wl); free(bl); free(text);
    if (!e) return;
    CHECK(ttc_engine_n_fused(e) == 1, "relu fused into the GEMM epilogue (fused %d)", ttc_engine_n_fused(e));
    CHECK(ttc_engine_n_kernels(e) == 1, "one kernel, got %d", ttc_engine_n_kernels(e));
    const void *in[1] = {x};
    size_t inb[1] = {sizeof x}, outb[1] = {sizeof y};
    int64_t shp[1][TTC_MAX_RANK] = {{B, K}};
    void *out[1] = {y};
    CHECK_OK(ttc_engine_execute(e, in, inb, (const int64_t(*)[TTC_MAX_RANK])shp, out, outb));
    double maxerr = 0;
    for (int b = 0; b < B; b++)
        for (int n = 0; n < N; n++) {
            float r = bias[n];
            for (int k = 0; k < K; k++) r += x[b * K + k] * w[n * K + k];
            r = r > 0 ? r : 0;
            double err = fabs(r - y[b * N + n]);
            if (err > maxerr) maxerr = err;
        }
    CHECK(maxerr < 1e-5, "max abs error %g", maxerr);
    /* wrong shape -> input error naming the input */
    int64_t bad[1][TTC_MAX_RANK] = {{B, K + 1}};
    ttc_status s = ttc_engine_execute(e, in, inb, (const int64_t(*)[TTC_MAX_RANK])bad, out, outb);
    CHECK(s == TTC_ERR_INPUT && strstr(ttc_last_error(), "x"), "got %s: %s", ttc_status_name(s), ttc_last_error());
    ttc_engine_free(e);
}

static void test_dynamic_broadcast(void) {
    if (!have_device()) return;
    ttc_engine *e = build_engine(
        "graph(%x : Float(s0, 3), %y : Float(3)) where s0 in [1, 4, 16]:\n"
        "  %c : float = prim.Constant[value=2.5]()\n"
        "  %one : int = prim.Constant[value=1]()\n"
        "  %a : Float(s0, 3) = aten.add.Tensor(%x, %y, %one)\n"
        "  %m : Float(s0, 3) = aten.mul.Scalar(%a, %c)\n"
        "  %t : Float(3, s0) = aten.t.default(%m)\n"
        "  %r : Float(3, s0) = aten.sigmoid.default(%t)\n"
        "  return (%r, %a)\n", NULL);
    if (!e) return;
    for (int64_t bsz = 1; bsz <= 16; bsz += 7) {
        float x[48], yv[3] = {0.5f, -1.0f, 2.0f}, r[48], a[48];
        for (int i = 0; i < bsz * 3; i++) x[i] = 0.1f * (float)i - 1.0f;
        const void *in[2] = {x, yv};
        size_t inb[2] = {(size_t)bsz * 12, 12}, outb[2] = {(size_t)bsz * 12, (size_t)bsz * 12};
        int64_t shp[2][TTC_MAX_RANK] = {{bsz, 3}, {3}};
        void *out[2] = {r, a};
        CHECK_OK(ttc_engine_execute(e, in, inb, (const int64_t(*)[TTC_MAX_RANK])shp, out, outb));
        double maxerr = 0;
        for (int64_t i = 0; i < bsz; i++)
            for (int j = 0; j < 3; j++) {
                float av = x[i * 3 + j] + yv[j];
                float rv = 1.0f / (1.0f + expf(-2.5f * av));
                maxerr = fmax(maxerr, fabs(av - a[i * 3 + j]));
                maxerr = fmax(maxerr, fabs(rv - r[j * bsz + i]));
            }
        CHECK(maxerr < 1e-5, "batch %lld: max abs error %g", (long long)bsz, maxerr);
    }
    int64_t shp[2][TTC_MAX_RANK] = {{17, 3}, {3}};
    float big[51], yv[3], r[51], a[51];
    const void *in[2] = {big, yv};
    size_t inb[2] = {sizeof big, 12}, outb[2] = {sizeof r, sizeof a};
    void *out[2] = {r, a};
    ttc_status s = ttc_engine_execute(e, in, inb, (const int64_t(*)[TTC_MAX_RANK])shp, out, outb);
    CHECK(s == TTC_ERR_INPUT && strstr(ttc_last_error(), "s0"), "out of range: %s", ttc_last_error());
    ttc_engine_free(e);
}

/* What an engine holds comes back when it is freed: the live engine count, its weights in host
 * memory (tensor data) and its device buffers (the counters memory_stats() reports). */
static void test_free_returns_counted_memory(void) {
    if (!have_device()) return;
    int64_t eng0 = ttc_engine_live_count(), data0, bytes0;
    ttc_tensor_data_stats(&data0, &bytes0);
    ttc_memstats m0 = ttc_memstats_get();
    float w[6 * 4];
    for (int i = 0; i < 24; i++) w[i] = 0.1f * (float)i;
    float bias[6] = {1, -1, 2, -2, 3, -3};
    char *wl = tensor_lit(w, 24), *bl = tensor_lit(bias, 6);
    char *text = ttc_strfmt("graph(%%x : Float(2, 4)):\n"
                            "  %%w : Float(6, 4) = prim.Constant[value=%s]()\n"
                            "  %%b : Float(6) = prim.Constant[value=%s]()\n"
                            "  %%y : Float(2, 6) = aten.linear.default(%%x, %%w, %%b)\n"
                            "  return (%%y)\n", wl, bl);
    ttc_engine *e = build_engine(text, NULL);
    free(wl); free(bl); free(text);
    if (!e) return;
    float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, y[12];
    const void *in[1] = {x};
    size_t inb[1] = {sizeof x}, outb[1] = {sizeof y};
    int64_t shp[1][TTC_MAX_RANK] = {{2, 4}};
    void *out[1] = {y};
    CHECK_OK(ttc_engine_execute(e, in, inb, (const int64_t(*)[TTC_MAX_RANK])shp, out, outb));
    int64_t data1, bytes1;
    ttc_tensor_data_stats(&data1, &bytes1);
    ttc_memstats m1 = ttc_memstats_get();
    CHECK(ttc_engine_live_count() == eng0 + 1, "live engines %lld, %lld before the build", (long long)ttc_engine_live_count(), (long long)eng0);
    CHECK(bytes1 >= bytes0 + (int64_t)sizeof w, "the engine's weights: %lld bytes, %lld before", (long long)bytes1, (long long)bytes0);
    CHECK(m1.live_buffers > m0.live_buffers, "device buffers %lld, %lld before", (long long)m1.live_buffers, (long long)m0.live_buffers);
    ttc_engine_free(e);
    int64_t data2, bytes2;
    ttc_tensor_data_stats(&data2, &bytes2);
    ttc_memstats m2 = ttc_memstats_get();
    CHECK(ttc_engine_live_count() == eng0, "live engines %lld after the free, %lld before", (long long)ttc_engine_live_count(), (long long)eng0);
    CHECK(data2 == data0 && bytes2 == bytes0, "tensor data %lld (%lld bytes) after the free, %lld (%lld) before",
          (long long)data2, (long long)bytes2, (long long)data0, (long long)bytes0);
    CHECK(m2.live_buffers == m0.live_buffers && m2.live_bytes == m0.live_bytes,
          "device buffers %lld (%lld bytes) after the free, %lld (%lld) before", (long long)m2.live_buffers,
          (long long)m2.live_bytes, (long long)m0.live_buffers, (long long)m0.live_bytes);
}

TEST_MAIN(test_linear_relu, test_dynamic_broadcast, test_free_returns_counted_memory)
