/* The backend interface (backend/backend.h) on the OpenCL backend: device listing and
 * selection, a buffer round trip through a kernel, host tasks seeing their buffers in their
 * own order, profiling events, build errors carrying the log, the program binary cache, and
 * device errors naming the backend's code. Passes with a note when the machine has no device. */
#include <stdlib.h>
#include <unistd.h>

#include "backend/backend.h"
#include "backend/opencl/cl.h"
#include "tests/ctest.h"

static ttc_device *dev(void) {
    ttc_device *d = NULL;
    if (ttc_device_select(NULL, &d) != TTC_OK) { printf("  (no device: %s)\n", ttc_last_error()); return NULL; }
    return d;
}

static void test_devices_listed(void) {
    ttc_device *const *ds;
    int32_t n;
    if (ttc_device_list(&ds, &n) != TTC_OK) {
        CHECK(ttc_last_device_code() != 0 && strstr(ttc_last_error(), "OpenCL") &&
              strstr(ttc_last_device_error(), "OpenCL"), "error names OpenCL: %s (%s)", ttc_last_error(),
              ttc_last_device_error());
        return;
    }
    CHECK(n > 0, "devices");
    for (int32_t i = 0; i < n; i++) {
        const ttc_target *f = ttc_device_facts(ds[i]);
        CHECK(f->index == i && f->name[0] && !strcmp(f->backend, "OpenCL"), "device %d has a name", i);
        CHECK(f->max_work_group > 0 && f->compute_units > 0, "device %d limits", i);
    }
    ttc_device *d;
    CHECK_OK(ttc_device_select("0", &d));
    CHECK(d == ds[0]);
    CHECK(ttc_device_select("no-such-device-xyz", &d) == TTC_ERR_NO_DEVICE && strstr(ttc_last_error(), "devices:"),
          "unknown name lists the devices: %s", ttc_last_error());
    CHECK(ttc_device_select("99", &d) == TTC_ERR_NO_DEVICE && strstr(ttc_last_error(), ttc_device_facts(ds[0])->name),
          "an index out of range lists the devices: %s", ttc_last_error());
    if (ttc_device_facts(ds[0])->is_cpu) { CHECK_OK(ttc_device_select("cpu", &d)); CHECK(ttc_device_facts(d)->is_cpu); }
    setenv("TORCHTRT_C_DEVICE", "no-such-device-xyz", 1);
    CHECK(ttc_device_select(NULL, &d) == TTC_ERR_NO_DEVICE && strstr(ttc_last_error(), "TORCHTRT_C_DEVICE"),
          "env named: %s", ttc_last_error());
    unsetenv("TORCHTRT_C_DEVICE");
    CHECK(strcmp(ttc_cl_error_name(CL_OUT_OF_RESOURCES), "CL_OUT_OF_RESOURCES") == 0);
}

static void test_device_error_names_code(void) {
    ttc_status s = ttc_fail_cl(CL_OUT_OF_RESOURCES, "clEnqueueNDRangeKernel(k0) failed");
    CHECK(s == TTC_ERR_DEVICE && ttc_last_device_code() == CL_OUT_OF_RESOURCES);
    CHECK(!strcmp(ttc_last_device_error(), "OpenCL CL_OUT_OF_RESOURCES (-5)"), "got %s", ttc_last_device_error());
    CHECK(!strcmp(ttc_status_name(s), "device error"));
    ttc_clear_error();
    CHECK(ttc_last_device_code() == 0 && !ttc_last_device_error()[0]);
}

static void test_buffer_roundtrip(void) {
    ttc_device *d = dev();
    if (!d) return;
    ttc_program *p = NULL;
    const char *src = "__kernel void twice(__global float *x, int add) { int i = get_global_id(0); x[i] = 2.0f * x[i] + add; }\n";
    CHECK_OK(ttc_program_build(d, src, "", "", &p));
    if (!p) return;
    ttc_queue *q = NULL;
    ttc_kernel *k = NULL;
    ttc_buf *m = NULL, *c = NULL;
    ttc_event *ev = NULL;
    CHECK_OK(ttc_queue_new(d, true, &q));
    float h[37], r[37], r2[37];
    for (int i = 0; i < 37; i++) h[i] = (float)i - 10.5f;
    CHECK_OK(ttc_buf_alloc(d, sizeof h, h, "x", &m));
    CHECK_OK(ttc_buf_alloc(d, sizeof h, NULL, "copy", &c));
    CHECK(ttc_buf_size(m) == sizeof h);
    CHECK_OK(ttc_kernel_new(p, "twice", &k));
    CHECK(!strcmp(ttc_kernel_name(k), "twice"));
    CHECK_OK(ttc_kernel_set_buf(k, 0, m));
    CHECK_OK(ttc_kernel_set_i32(k, 1, 1));
    size_t gws = 37;
    CHECK_OK(ttc_queue_launch(q, k, 1, &gws, NULL, &ev));
    CHECK_OK(ttc_buf_copy(q, m, c, sizeof h));
    CHECK_OK(ttc_buf_read(q, m, 0, sizeof r, r, true));
    CHECK_OK(ttc_buf_read(q, c, 0, sizeof r2, r2, true));
    for (int i = 0; i < 37; i++) CHECK(r[i] == 2.0f * h[i] + 1.0f && r2[i] == r[i], "element %d: %g %g", i, r[i], r2[i]);
    uint64_t t0 = 0, t1 = 0;
    CHECK_OK(ttc_event_times(ev, &t0, &t1));
    CHECK(t1 >= t0, "event times %llu..%llu", (unsigned long long)t0, (unsigned long long)t1);
    /* a bad argument index fails as a device error naming the kernel */
    CHECK(ttc_kernel_set_i32(k, 7, 0) == TTC_ERR_DEVICE && strstr(ttc_last_error(), "twice") &&
          ttc_last_device_code() != 0, "%s", ttc_last_error());
    /* record/replay: absent on this backend today, a clear "unsupported" */
    ttc_recording *rec = NULL;
    if (!ttc_device_facts(d)->can_record)
        CHECK(ttc_queue_record_end(q, &rec) == TTC_ERR_UNSUPPORTED && !rec);
    ttc_event_free(ev);
    ttc_kernel_free(k);
    ttc_buf_free(m);
    ttc_buf_free(c);
    ttc_queue_free(q);
    ttc_program_free(p);
}

/* ptrs[i] must be the host view of the task's i-th buffer, whatever order they were made in */
typedef struct sum_args { int out; } sum_args;
static void host_sum(void *args, void *const *ptrs) {
    sum_args *a = args;
    int *dst = ptrs[2];
    dst[0] = 100 * *(const int *)ptrs[0] + 10 * *(const int *)ptrs[1] + a->out;
}

static void test_host_task(void) {
    ttc_device *d = dev();
    if (!d || !ttc_device_host_tasks(d)) { printf("  (no host tasks on this device)\n"); return; }
    ttc_queue *q = NULL;
    ttc_buf *b[3] = {NULL, NULL, NULL};
    int v[3] = {7, 3, 0}, got = 0;
    CHECK_OK(ttc_queue_new(d, false, &q));
    for (int i = 2; i >= 0; i--) CHECK_OK(ttc_buf_alloc(d, sizeof(int), &v[i], "v", &b[i]));  /* made last first */
    sum_args a = {5};
    CHECK_OK(ttc_queue_host_task(q, host_sum, &a, sizeof a, b, 3, "sum", NULL));
    CHECK_OK(ttc_buf_read(q, b[2], 0, sizeof got, &got, true));
    CHECK(got == 735, "host task saw its buffers in order: %d", got);
    for (int i = 0; i < 3; i++) ttc_buf_free(b[i]);
    ttc_queue_free(q);
}

static void test_build_error_log(void) {
    ttc_device *d = dev();
    if (!d) return;
    ttc_program *p = NULL;
    ttc_status s = ttc_program_build(d, "__kernel void bad(__global float *x) { x[0] = undefined_thing; }\n", "", "", &p);
    CHECK(s == TTC_ERR_BUILD && !p, "got %s", ttc_status_name(s));
    CHECK(strstr(ttc_last_error(), "build log") && strstr(ttc_last_error(), "undefined_thing"),
          "log names the bad identifier: %.300s", ttc_last_error());
}

static void test_program_cache(void) {
    ttc_device *d = dev();
    if (!d) return;
    char dir[] = "/tmp/ttc_cache_testXXXXXX";
    if (!mkdtemp(dir)) return;
    setenv("TORCHTRT_C_PROGRAM_BINARIES", "1", 1);   /* the binary cache path (off by default on PoCL) */
    const char *src = "__kernel void k(__global int *x) { x[get_global_id(0)] += 3; }\n";
    ttc_program *a = NULL, *b = NULL;
    CHECK_OK(ttc_program_build(d, src, "", dir, &a));
    CHECK(a && !strcmp(ttc_program_origin(a), "compiled"), "first build compiles");
    CHECK_OK(ttc_program_build(d, src, "", dir, &b));
    CHECK(b && !strcmp(ttc_program_origin(b), "cache"), "second build comes from the cache");
    size_t len = 0;
    CHECK(ttc_program_binary(b, &len) && len > 0);
    ttc_program_free(a);
    ttc_program_free(b);
    /* truncate every entry: ignored and rebuilt */
    char *cmd = ttc_strfmt("for f in %s/*.bin; do head -c 50 \"$f\" > \"$f.t\" && mv \"$f.t\" \"$f\"; done", dir);
    CHECK(system(cmd) == 0);
    free(cmd);
    CHECK_OK(ttc_program_build(d, src, "", dir, &a));
    CHECK(a && !strcmp(ttc_program_origin(a), "compiled"), "a truncated entry is rebuilt");
    ttc_program_free(a);
    cmd = ttc_strfmt("rm -rf %s", dir);
    CHECK(system(cmd) == 0);
    free(cmd);
    unsetenv("TORCHTRT_C_PROGRAM_BINARIES");
}

static void test_target_knobs(void) {
    ttc_device *d = dev();
    if (!d) return;
    ttc_target t;
    setenv("TORCHTRT_C_KERNELS", "gpu", 1);
    setenv("TORCHTRT_C_CONV_KSPLIT", "3", 1);
    CHECK_OK(ttc_target_make(d, &t));
    CHECK(t.gpu_kernels && !t.native && t.conv_ksplit_cap == 3, "knobs applied");
    unsetenv("TORCHTRT_C_KERNELS");
    unsetenv("TORCHTRT_C_CONV_KSPLIT");
    CHECK_OK(ttc_target_make(d, &t));
    CHECK(t.gpu_kernels == ttc_device_facts(d)->is_gpu && t.conv_ksplit_cap == 32, "defaults back");
    setenv("TORCHTRT_C_GEMM_TILE", "x1", 1);
    CHECK(ttc_target_make(d, &t) == TTC_ERR_INVALID_ARG && strstr(ttc_last_error(), "TORCHTRT_C_GEMM_TILE"));
    unsetenv("TORCHTRT_C_GEMM_TILE");
    /* the native and interop knobs are decisions of the target, read here and nowhere else */
    CHECK_OK(ttc_target_make(d, &t));
    CHECK(t.cuda_interop && ttc_target_cuda_interop() && t.native_epi && t.native_pool, "on by default");
    CHECK(t.batch_launch == ttc_device_facts(d)->is_cpu, "launches batched on CPU devices");
    setenv("TORCHTRT_C_CUDA_INTEROP", "0", 1);
    setenv("TORCHTRT_C_NATIVE_EPI", "off", 1);
    setenv("TORCHTRT_C_NATIVE_POOL", "0", 1);
    setenv("TORCHTRT_C_BATCH_LAUNCH", ttc_device_facts(d)->is_cpu ? "0" : "1", 1);
    CHECK_OK(ttc_target_make(d, &t));
    CHECK(!t.cuda_interop && !ttc_target_cuda_interop() && !t.native_epi && !t.native_pool, "the knobs turn them off");
    CHECK(t.batch_launch != ttc_device_facts(d)->is_cpu, "TORCHTRT_C_BATCH_LAUNCH overrides");
    const char *knobs[] = {"TORCHTRT_C_CUDA_INTEROP", "TORCHTRT_C_BATCH_LAUNCH", "TORCHTRT_C_NATIVE_EPI",
                           "TORCHTRT_C_NATIVE_POOL"};
    for (size_t i = 0; i < sizeof knobs / sizeof *knobs; i++) unsetenv(knobs[i]);
    /* TORCHTRT_C_NATIVE_CONV is read per call (engines switch library between calls) */
    CHECK(!ttc_target_native_conv_blas(), "oneDNN unless asked");
    setenv("TORCHTRT_C_NATIVE_CONV", "blas", 1);
    CHECK(ttc_target_native_conv_blas(), "TORCHTRT_C_NATIVE_CONV=blas seen at once");
    setenv("TORCHTRT_C_NATIVE_CONV", "dnnl", 1);
    CHECK(!ttc_target_native_conv_blas(), "any other value: oneDNN");
    unsetenv("TORCHTRT_C_NATIVE_CONV");
    const ttc_target *dflt = ttc_target_defaults();
    CHECK(dflt->cuda_interop && dflt->native_epi && dflt->native_pool && !dflt->batch_launch, "device-less defaults");
}

/* ttc_queue_hold: launches after it wait for the next submission point; a blocking read, a
 * finish or freeing the queue submits them (none of them may wait for held work), and on a
 * device whose host-backed buffers are the host memory, nothing runs before that. */
static void test_queue_hold(void) {
    ttc_device *d = dev();
    if (!d) return;
    ttc_program *p = NULL;
    const char *src = "__kernel void inc(__global int *x) { x[get_global_id(0)] += 1; }\n";
    CHECK_OK(ttc_program_build(d, src, "", "", &p));
    if (!p) return;
    ttc_queue *q = NULL;
    ttc_kernel *k = NULL;
    ttc_buf *b = NULL;
    int h[8] = {0}, r[8] = {0};
    CHECK_OK(ttc_queue_new(d, false, &q));
    CHECK_OK(ttc_kernel_new(p, "inc", &k));
    CHECK_OK(ttc_buf_alloc(d, sizeof h, h, "counts", &b));
    CHECK_OK(ttc_kernel_set_buf(k, 0, b));
    size_t gws = 8;
    /* three launches held, then a blocking read: it submits them first and sees all three */
    CHECK_OK(ttc_queue_hold(q));
    CHECK_OK(ttc_queue_hold(q));  /* a second hold before any launch is the same hold */
    for (int i = 0; i < 3; i++) CHECK_OK(ttc_queue_launch(q, k, 1, &gws, NULL, NULL));
    CHECK_OK(ttc_buf_read(q, b, 0, sizeof r, r, true));
    for (int i = 0; i < 8; i++) CHECK(r[i] == 3, "element %d: %d after a held batch and a read", i, r[i]);
    /* held, then finish */
    CHECK_OK(ttc_queue_hold(q));
    CHECK_OK(ttc_queue_launch(q, k, 1, &gws, NULL, NULL));
    CHECK_OK(ttc_queue_finish(q));
    CHECK_OK(ttc_buf_read(q, b, 0, sizeof r, r, true));
    CHECK(r[0] == 4 && r[7] == 4, "after finish: %d %d", r[0], r[7]);
    /* a hold with nothing launched, then a finish: nothing waits */
    CHECK_OK(ttc_queue_hold(q));
    CHECK_OK(ttc_queue_finish(q));
    /* in place: the held launch has not touched the host memory before the submission point */
    if (ttc_device_host_in_place(d)) {
        int host[8] = {0};
        ttc_buf *w = NULL;
        CHECK_OK(ttc_buf_wrap_host(d, host, sizeof host, false, "host counts", &w));
        CHECK_OK(ttc_kernel_set_buf(k, 0, w));
        CHECK_OK(ttc_queue_hold(q));
        CHECK_OK(ttc_queue_launch(q, k, 1, &gws, NULL, NULL));
        usleep(20000);
        CHECK(__atomic_load_n(&host[0], __ATOMIC_SEQ_CST) == 0, "a held launch ran before its submission");
        CHECK_OK(ttc_queue_finish(q));
        CHECK(host[0] == 1 && host[7] == 1, "after finish: %d %d", host[0], host[7]);
        ttc_buf_free(w);
    }
    /* held work at the queue's free is submitted, not left waiting */
    CHECK_OK(ttc_kernel_set_buf(k, 0, b));
    CHECK_OK(ttc_queue_hold(q));
    CHECK_OK(ttc_queue_launch(q, k, 1, &gws, NULL, NULL));
    ttc_queue_free(q);
    q = NULL;
    CHECK_OK(ttc_queue_new(d, false, &q));
    CHECK_OK(ttc_buf_read(q, b, 0, sizeof r, r, true));
    CHECK(r[0] == 5, "the launch held at free ran: %d", r[0]);
    ttc_buf_free(b);
    ttc_kernel_free(k);
    ttc_queue_free(q);
    ttc_program_free(p);
}

/* ttc_buf_import: where the device cannot import, a clear "unsupported" naming what is missing
 * (the import itself runs on GPUs with cl_khr_external_memory_opaque_fd: CUDA shared memory,
 * tests/gpu/test_cuda_interop.py) */
static void test_buf_import_answers(void) {
    ttc_device *d = dev();
    if (!d) return;
    ttc_buf *b = (ttc_buf *)&b;
    ttc_external_mem bad = {99, 3, 64, 0};
    CHECK(ttc_buf_import(d, &bad, "x", &b) == TTC_ERR_UNSUPPORTED && !b && strstr(ttc_last_error(), "kind 99"),
          "%s", ttc_last_error());
    ttc_external_mem off = {TTC_EXTERNAL_OPAQUE_FD, 3, 64, 8};
    CHECK(ttc_buf_import(d, &off, "x", &b) == TTC_ERR_UNSUPPORTED && !b && strstr(ttc_last_error(), "offset"),
          "%s", ttc_last_error());
    char exts[8192] = {0};
    TTC_CL(GetDeviceInfo)(((ttc_cl_device *)d)->id, CL_DEVICE_EXTENSIONS, sizeof exts - 1, exts, NULL);
    if (!strstr(exts, "cl_khr_external_memory_opaque_fd")) {
        ttc_external_mem fd = {TTC_EXTERNAL_OPAQUE_FD, 3, 64, 0};
        CHECK(ttc_buf_import(d, &fd, "x", &b) == TTC_ERR_UNSUPPORTED && !b &&
              strstr(ttc_last_error(), "cl_khr_external_memory_opaque_fd"), "%s", ttc_last_error());
    }
    ttc_clear_error();
}

/* The caller-thread companion (PoCL's basic device, when the device has one): not listed, its
 * own companion, works on buffers made for its owner, runs a launch before the enqueue returns
 * (host memory in place: seen with no wait), and a hold on its queue is a no-op (held launches
 * would deadlock there). */
static void test_caller_thread_companion(void) {
    ttc_device *d = dev();
    if (!d) return;
    ttc_device *c = ttc_device_caller_thread(d);
    if (!c) { printf("  (no caller-thread companion on %s)\n", ttc_device_facts(d)->name); return; }
    CHECK(c != d && ttc_device_caller_thread(c) == c, "a companion is its own companion");
    ttc_device *const *ds;
    int32_t n;
    CHECK_OK(ttc_device_list(&ds, &n));
    for (int32_t i = 0; i < n; i++) CHECK(ds[i] != c, "the companion is listed as device %d", i);
    ttc_program *p = NULL;
    const char *src = "__kernel void inc(__global int *x, int v) { x[get_global_id(0)] += v; }\n";
    CHECK_OK(ttc_program_build(c, src, "", "", &p));
    if (!p) return;
    ttc_queue *q = NULL;
    ttc_kernel *k = NULL;
    ttc_buf *b = NULL;
    int h[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, r[9] = {0};
    CHECK_OK(ttc_queue_new(c, false, &q));
    CHECK_OK(ttc_kernel_new(p, "inc", &k));
    CHECK_OK(ttc_buf_alloc(d, sizeof h, h, "owner's buffer", &b));   /* made for the owner */
    CHECK_OK(ttc_kernel_set_buf(k, 0, b));
    CHECK_OK(ttc_kernel_set_i32(k, 1, 10));
    size_t gws = 9;
    CHECK_OK(ttc_queue_hold(q));   /* a no-op: the launch below must not wait for anything */
    CHECK_OK(ttc_queue_launch(q, k, 1, &gws, NULL, NULL));
    CHECK_OK(ttc_queue_finish(q));
    CHECK_OK(ttc_buf_read(q, b, 0, sizeof r, r, true));
    for (int i = 0; i < 9; i++) CHECK(r[i] == h[i] + 10, "element %d: %d", i, r[i]);
    /* the owner's queue sees what the companion wrote */
    ttc_queue *qd = NULL;
    CHECK_OK(ttc_queue_new(d, false, &qd));
    CHECK_OK(ttc_buf_read(qd, b, 0, sizeof r, r, true));
    CHECK(r[0] == 11 && r[8] == 19, "owner's view: %d %d", r[0], r[8]);
    if (ttc_device_host_in_place(d)) {
        int host[9] = {0};
        ttc_buf *w = NULL;
        CHECK_OK(ttc_buf_wrap_host(d, host, sizeof host, false, "host", &w));
        CHECK_OK(ttc_kernel_set_buf(k, 0, w));
        CHECK_OK(ttc_kernel_set_i32(k, 1, 1));
        CHECK_OK(ttc_queue_launch(q, k, 1, &gws, NULL, NULL));
        CHECK(__atomic_load_n(&host[8], __ATOMIC_SEQ_CST) == 1, "the launch had not run when the enqueue returned");
        CHECK_OK(ttc_queue_finish(q));
        ttc_buf_free(w);
    }
    ttc_queue_free(qd);
    ttc_buf_free(b);
    ttc_kernel_free(k);
    ttc_queue_free(q);
    ttc_program_free(p);
}

TEST_MAIN(test_devices_listed, test_device_error_names_code, test_buffer_roundtrip, test_host_task,
          test_build_error_log, test_program_cache, test_target_knobs, test_queue_hold,
          test_buf_import_answers, test_caller_thread_companion)
