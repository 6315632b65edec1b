/* Kernel dedupe (codegen/codegen_dedupe.c): texts equal up to the kernel's own name are one
 * kernel; a name inside a longer number ("k1" in "k12") or another kernel's name is not
 * renamed, so texts that differ there stay apart. No OpenCL device needed. */
#include <string.h>

#include "codegen/codegen.h"
#include "tests/ctest.h"

/* Appends text for kernel `name` to src and offers it to d; returns the kernel name it launches. */
static const char *add(ttc_codegen_dedupe *d, ttc_sbuf *src, ttc_kspec *ks, const char *name, const char *fmt) {
    snprintf(ks->name, sizeof ks->name, "%s", name);
    size_t start = src->len, cut = 0;
    ttc_sbuf_printf(src, fmt, name, name);
    CHECK_OK(ttc_codegen_dedupe_add(d, src, start, ks, &cut));
    if (cut) {
        CHECK(cut == start, "cut at the kernel's start");
        src->len = cut;
    }
    return ks->name;
}

static void test_same_up_to_name(void) {
    ttc_codegen_dedupe d = {0};
    ttc_sbuf src = {0};
    ttc_kspec ks[5];
    memset(ks, 0, sizeof ks);
    const char *body = "static void %s_store(float v) {}\n__kernel void %s(__global float *x) { x[0] = 1.0f; }\n";
    CHECK(!strcmp(add(&d, &src, &ks[0], "k1", body), "k1"));
    size_t len = src.len;
    CHECK(!strcmp(add(&d, &src, &ks[1], "k12", body), "k1"), "k12 launches k1, got %s", ks[1].name);
    CHECK(src.len == len, "the copy's text was dropped");
    /* a different body stays */
    CHECK(!strcmp(add(&d, &src, &ks[2], "k3", "__kernel void %s(__global float *x) { x[0] = 2.0f; } /* %s */\n"), "k3"));
    /* "k1" inside "k12" in its own text is not its name: not the same as k1's */
    CHECK(!strcmp(add(&d, &src, &ks[3], "k4", "__kernel void %s(__global float *x) { x[0] = 1.0f; } /* k12 %s */\n"),
                  "k4"));
    CHECK(d.n == 3, "three distinct kernels, got %d", d.n);
    ttc_codegen_dedupe_free(&d);
    ttc_sbuf_free(&src);
}

TEST_MAIN(test_same_up_to_name)
