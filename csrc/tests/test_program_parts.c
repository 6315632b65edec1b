/* Programs built in parts by parallel threads (backend/program_parts.c): kernels are created
 * from the part that defines them and compute what they say, an unknown name is an error, a
 * build error in any part comes back with that part's log, and with binaries kept the
 * container round-trips through ttc_program_from_binary. Passes with a note without a device. */
#include <stdlib.h>

#include "backend/backend.h"
#include "tests/ctest.h"

static ttc_device *dev(void) {
    ttc_device *d = NULL;
    if (ttc_device_select(NULL, &d) != TTC_OK) { printf("  (no device: %s)\n", ttc_last_error()); return NULL; }
    return d;
}

#define HEAD "int twice(int v) { return 2 * v; }\n"
static const char *const K0[] = {"add1"}, *const K1[] = {"mul3", "sub2"}, *const K2[] = {"dbl"};
static const ttc_program_part PARTS[] = {
    {HEAD "__kernel void add1(__global int *x) { x[get_global_id(0)] += 1; }\n", K0, 1},
    {HEAD "__kernel void mul3(__global int *x) { x[get_global_id(0)] *= 3; }\n"
          "__kernel void sub2(__global int *x) { x[get_global_id(0)] -= 2; }\n", K1, 2},
    {HEAD "__kernel void dbl(__global int *x) { x[get_global_id(0)] = twice(x[get_global_id(0)]); }\n", K2, 1},
};

/* Runs kernels `names` in order over {0..7} and checks the result against f applied likewise. */
static void run_all(ttc_device *d, ttc_program *p) {
    const char *names[] = {"add1", "mul3", "sub2", "dbl"};
    int host[8], want[8];
    for (int i = 0; i < 8; i++) { host[i] = i; want[i] = ((i + 1) * 3 - 2) * 2; }
    ttc_queue *q = NULL;
    ttc_buf *b = NULL;
    CHECK_OK(ttc_queue_new(d, false, &q));
    CHECK_OK(ttc_buf_alloc(d, sizeof host, host, "x", &b));
    for (int k = 0; k < 4; k++) {
        ttc_kernel *kn = NULL;
        CHECK_OK(ttc_kernel_new(p, names[k], &kn));
        if (!kn) continue;
        size_t g = 8;
        CHECK_OK(ttc_kernel_set_buf(kn, 0, b));
        CHECK_OK(ttc_queue_launch(q, kn, 1, &g, NULL, NULL));
        CHECK_OK(ttc_queue_finish(q));
        ttc_kernel_free(kn);
    }
    CHECK_OK(ttc_buf_read(q, b, 0, sizeof host, host, true));
    for (int i = 0; i < 8; i++) CHECK(host[i] == want[i], "x[%d] = %d, want %d", i, host[i], want[i]);
    ttc_buf_free(b);
    ttc_queue_free(q);
}

static void test_parts_run(void) {
    ttc_device *d = dev();
    if (!d) return;
    for (int threads = 1; threads <= 4; threads += 3) {
        ttc_program *p = NULL;
        CHECK_OK(ttc_program_build_parts(d, PARTS, 3, "", "", threads, &p));
        if (!p) continue;
        CHECK(ttc_program_n_parts(p) == 3, "3 parts, got %d", ttc_program_n_parts(p));
        CHECK(ttc_program_part_program(p, 2) && !ttc_program_part_program(p, 3));
        CHECK(!strcmp(ttc_program_origin(p), "compiled"));
        run_all(d, p);
        ttc_kernel *kn = NULL;
        CHECK(ttc_kernel_new(p, "nope", &kn) != TTC_OK && !kn && strstr(ttc_last_error(), "nope"),
              "unknown kernel: %s", ttc_last_error());
        ttc_program_free(p);
    }
    /* one part is a plain program */
    ttc_program *one = NULL;
    CHECK_OK(ttc_program_build_parts(d, PARTS, 1, "", "", 4, &one));
    CHECK(one && ttc_program_n_parts(one) == 0);
    ttc_program_free(one);
}

static void test_part_build_error_has_its_log(void) {
    ttc_device *d = dev();
    if (!d) return;
    ttc_program_part bad[3] = {PARTS[0], PARTS[1], {HEAD "__kernel void dbl(__global int *x) { x[0] = missing_name_7; }\n", K2, 1}};
    ttc_program *p = NULL;
    ttc_status s = ttc_program_build_parts(d, bad, 3, "", "", 3, &p);
    CHECK(s == TTC_ERR_BUILD && !p, "got %s", ttc_status_name(s));
    CHECK(strstr(ttc_last_error(), "missing_name_7") != NULL, "the failing part's log: %.300s", ttc_last_error());
}

static void test_container_round_trip(void) {
    ttc_device *d = dev();
    if (!d) return;
    setenv("TORCHTRT_C_PROGRAM_BINARIES", "1", 1);
    ttc_program *p = NULL, *q = NULL;
    CHECK_OK(ttc_program_build_parts(d, PARTS, 3, "", "", 3, &p));
    size_t len = 0;
    const unsigned char *bin = p ? ttc_program_binary(p, &len) : NULL;
    CHECK(bin && len > 12 && !memcmp(bin, "TTCPMUL1", 8), "a container binary");
    if (bin) {
        CHECK_OK(ttc_program_from_binary(d, bin, len, "", &q));
        CHECK(q && ttc_program_n_parts(q) == 3 && !strcmp(ttc_program_origin(q), "blob"));
        if (q) run_all(d, q);
        ttc_program_free(q);
        /* cut short anywhere: an error, never a crash */
        for (size_t cut = 9; cut < len; cut += len / 7 + 1) {
            q = NULL;
            CHECK(ttc_program_from_binary(d, bin, cut, "", &q) != TTC_OK && !q, "cut at %zu of %zu loads", cut, len);
        }
    }
    ttc_program_free(p);
    unsetenv("TORCHTRT_C_PROGRAM_BINARIES");
}

TEST_MAIN(test_parts_run, test_part_build_error_has_its_log, test_container_round_trip)
