/* Resident benchmarks (engine/bench.h): one positive time per run, inputs checked like
 * execute, bad counts rejected, execute unaffected. Skips when no OpenCL device exists. */
#include "engine/bench.h"
#include "tests/ctest.h"
#include "tests/engine_util.h"

static ttc_engine *build_relu_add(void) {
    const char *text =
        "graph(%x : Float(5, 3), %y : Float(3)):\n"
        "  %one : int = prim.Constant[value=1]()\n"
        "  %a : Float(5, 3) = aten.add.Tensor(%x, %y, %one)\n"
        "  %r : Float(5, 3) = aten.relu.default(%a)\n"
        "  return (%r)\n";
    return build_engine(text, NULL);
}

static void test_engine_benchmark(void) {
    if (!have_device()) return;
    ttc_engine *e = build_relu_add();
    if (!e) return;
    float x[15], y[3], r[15];
    for (int i = 0; i < 15; i++) x[i] = (float)i - 7.0f;
    for (int i = 0; i < 3; i++) y[i] = 0.5f * (float)i;
    const void *in[2] = {x, y};
    size_t inb[2] = {sizeof x, sizeof y};
    int64_t shp[2][TTC_MAX_RANK] = {{5, 3}, {3}};
    double t[6] = {0};
    CHECK_OK(ttc_engine_benchmark(e, in, inb, (const int64_t(*)[TTC_MAX_RANK])shp, 6, 2, t));
    for (int i = 0; i < 6; i++) CHECK(t[i] > 0, "run %d: %g ms", i, t[i]);
    /* wrong byte count and bad counts are errors, not crashes */
    size_t bad_b[2] = {sizeof x - 4, sizeof y};
    ttc_status s = ttc_engine_benchmark(e, in, bad_b, (const int64_t(*)[TTC_MAX_RANK])shp, 2, 0, t);
    CHECK(s == TTC_ERR_INPUT && strstr(ttc_last_error(), "x"), "got %s: %s", ttc_status_name(s), ttc_last_error());
    int64_t bad_s[2][TTC_MAX_RANK] = {{5, 4}, {3}};
    s = ttc_engine_benchmark(e, in, inb, (const int64_t(*)[TTC_MAX_RANK])bad_s, 2, 0, t);
    CHECK(s == TTC_ERR_INPUT, "wrong shape: %s", ttc_last_error());
    s = ttc_engine_benchmark(e, in, inb, (const int64_t(*)[TTC_MAX_RANK])shp, 0, 0, t);
    CHECK(s == TTC_ERR_INVALID_ARG, "runs 0: %s", ttc_last_error());
    s = ttc_engine_benchmark(e, in, inb, (const int64_t(*)[TTC_MAX_RANK])shp, 2, 0, NULL);
    CHECK(s == TTC_ERR_INVALID_ARG, "no times array: %s", ttc_last_error());
    /* execute still right afterwards */
    void *out[1] = {r};
    size_t outb[1] = {sizeof r};
    CHECK_OK(ttc_engine_execute(e, in, inb, (const int64_t(*)[TTC_MAX_RANK])shp, out, outb));
    for (int i = 0; i < 15; i++) {
        float ref = x[i] + y[i % 3];
        ref = ref > 0 ? ref : 0;
        CHECK(r[i] == ref, "element %d: %g vs %g", i, r[i], ref);
    }
    ttc_engine_free(e);
}

static void test_copy_benchmark(void) {
    if (!have_device()) return;
    double t[3] = {0};
    CHECK_OK(ttc_device_copy_benchmark(NULL, 1 << 16, 3, 1, t));
    for (int i = 0; i < 3; i++) CHECK(t[i] > 0, "run %d: %g ms", i, t[i]);
    ttc_status s = ttc_device_copy_benchmark(NULL, 0, 3, 1, t);
    CHECK(s == TTC_ERR_INVALID_ARG, "0 bytes: %s", ttc_last_error());
    s = ttc_device_copy_benchmark("no-such-device-xyz", 16, 3, 1, t);
    CHECK(s != TTC_OK, "unknown device accepted");
}

TEST_MAIN(test_engine_benchmark, test_copy_benchmark)
