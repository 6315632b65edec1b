/* OpenCL runtime: device listing and selection, a buffer round trip through a kernel,
 * build errors carrying the log, and the program binary cache. Passes with a note when
 * the machine has no OpenCL device. */
#include <stdlib.h>
#include <unistd.h>

#include "runtime/runtime.h"
#include "tests/ctest.h"

static ttc_cl_device *dev(void) {
    ttc_cl_device *d = NULL;
    if (ttc_cl_device_select(NULL, &d) != TTC_OK) { printf("  (no OpenCL device: %s)\n", ttc_last_error()); return NULL; }
    return d;
}

static void test_devices_listed(void) {
    ttc_cl_device *ds;
    int32_t n;
    if (ttc_cl_devices(&ds, &n) != TTC_OK) {
        CHECK(ttc_last_cl_error() != 0 && strstr(ttc_last_error(), "OpenCL"), "error names OpenCL: %s", ttc_last_error());
        return;
    }
    CHECK(n > 0, "devices");
    for (int32_t i = 0; i < n; i++) CHECK(ds[i].index == i && ds[i].name[0], "device %d has a name", i);
    ttc_cl_device *d;
    CHECK_OK(ttc_cl_device_select("0", &d));
    CHECK(d == &ds[0]);
    CHECK(ttc_cl_device_select("no-such-device-xyz", &d) == TTC_ERR_INVALID_ARG && strstr(ttc_last_error(), "devices:"),
          "unknown name lists the devices: %s", ttc_last_error());
    CHECK(ttc_cl_device_select("99", &d) == TTC_ERR_INVALID_ARG);
    if (ds[0].is_cpu) { CHECK_OK(ttc_cl_device_select("cpu", &d)); CHECK(d->is_cpu); }
    setenv("TORCHTRT_C_DEVICE", "no-such-device-xyz", 1);
    CHECK(ttc_cl_device_select(NULL, &d) != TTC_OK && strstr(ttc_last_error(), "TORCHTRT_C_DEVICE"), "env named: %s",
          ttc_last_error());
    unsetenv("TORCHTRT_C_DEVICE");
    CHECK(strcmp(ttc_cl_error_name(CL_OUT_OF_RESOURCES), "CL_OUT_OF_RESOURCES") == 0);
}

static void test_buffer_roundtrip(void) {
    ttc_cl_device *d = dev();
    if (!d) return;
    ttc_cl_program p;
    const char *src = "__kernel void twice(__global float *x) { int i = get_global_id(0); x[i] = 2.0f * x[i] + 1.0f; }\n";
    CHECK_OK(ttc_cl_program_build(d, src, "", "", &p));
    if (!p.program) return;
    cl_context ctx;
    cl_command_queue q;
    CHECK_OK(ttc_cl_device_context(d, &ctx));
    CHECK_OK(ttc_cl_queue_new(d, false, &q));
    float h[37], r[37];
    for (int i = 0; i < 37; i++) h[i] = (float)i - 10.5f;
    cl_int err;
    cl_mem m = TTC_CL(CreateBuffer)(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof h, h, &err);
    CHECK(err == CL_SUCCESS);
    cl_kernel k = TTC_CL(CreateKernel)(p.program, "twice", &err);
    CHECK(err == CL_SUCCESS);
    TTC_CL(SetKernelArg)(k, 0, sizeof m, &m);
    size_t gws = 37;
    CHECK(TTC_CL(EnqueueNDRangeKernel)(q, k, 1, NULL, &gws, NULL, 0, NULL, NULL) == CL_SUCCESS);
    CHECK(TTC_CL(EnqueueReadBuffer)(q, m, CL_TRUE, 0, sizeof r, r, 0, NULL, NULL) == CL_SUCCESS);
    for (int i = 0; i < 37; i++) CHECK(r[i] == 2.0f * h[i] + 1.0f, "element %d: %g", i, r[i]);
    TTC_CL(ReleaseKernel)(k);
    TTC_CL(ReleaseMemObject)(m);
    TTC_CL(ReleaseCommandQueue)(q);
    ttc_cl_program_release(&p);
}

static void test_build_error_log(void) {
    ttc_cl_device *d = dev();
    if (!d) return;
    ttc_cl_program p;
    ttc_status s = ttc_cl_program_build(d, "__kernel void bad(__global float *x) { x[0] = undefined_thing; }\n", "", "", &p);
    CHECK(s == TTC_ERR_BUILD, "got %s", ttc_status_name(s));
    CHECK(strstr(ttc_last_error(), "build log") && strstr(ttc_last_error(), "undefined_thing"),
          "log names the bad identifier: %.300s", ttc_last_error());
}

static void test_program_cache(void) {
    ttc_cl_device *d = dev();
    if (!d) return;
    char dir[] = "/tmp/ttc_cache_testXXXXXX";
    if (!mkdtemp(dir)) return;
    setenv("TORCHTRT_C_PROGRAM_BINARIES", "1", 1);   /* the binary cache path (off by default on PoCL) */
    const char *src = "__kernel void k(__global int *x) { x[get_global_id(0)] += 3; }\n";
    ttc_cl_program a, b;
    CHECK_OK(ttc_cl_program_build(d, src, "", dir, &a));
    CHECK(!a.from_cache, "first build compiles");
    CHECK_OK(ttc_cl_program_build(d, src, "", dir, &b));
    CHECK(b.from_cache, "second build comes from the cache");
    ttc_cl_program_release(&a);
    ttc_cl_program_release(&b);
    /* truncate every entry: ignored and rebuilt */
    char *cmd = ttc_strfmt("for f in %s/*.bin; do head -c 50 \"$f\" > \"$f.t\" && mv \"$f.t\" \"$f\"; done", dir);
    CHECK(system(cmd) == 0);
    free(cmd);
    CHECK_OK(ttc_cl_program_build(d, src, "", dir, &a));
    CHECK(!a.from_cache, "a truncated entry is rebuilt");
    ttc_cl_program_release(&a);
    cmd = ttc_strfmt("rm -rf %s", dir);
    CHECK(system(cmd) == 0);
    free(cmd);
    unsetenv("TORCHTRT_C_PROGRAM_BINARIES");
}

TEST_MAIN(test_devices_listed, test_buffer_roundtrip, test_build_error_log, test_program_cache)
