/* Helpers shared by the C tests that build and run engines: whether an OpenCL device is
 * there (tests skip otherwise), float arrays as IR tensor literals, and building an engine
 * from IR text without the program cache.
 *
 *   if (!have_device()) return;
 *   ttc_engine *e = build_engine("graph(%x : Float(3)):\n ...", NULL);  // NULL: CHECK the build
 */
#ifndef TTC_TESTS_ENGINE_UTIL_H
#define TTC_TESTS_ENGINE_UTIL_H

#include <stdio.h>

#include "engine/engine.h"
#include "tests/ctest.h"

static inline bool have_device(void) {
    ttc_device *const *d;
    int32_t n;
    if (ttc_device_list(&d, &n) != TTC_OK) { printf("  (no device: %s)\n", ttc_last_error()); return false; }
    return true;
}

/* "tensor([v0, v1, ...])", exact for floats (caller frees) */
static inline char *tensor_lit(const float *v, int n) {
    ttc_sbuf b = {0};
    ttc_sbuf_printf(&b, "tensor([");
    for (int i = 0; i < n; i++) ttc_sbuf_printf(&b, "%s%.9g", i ? ", " : "", v[i]);
    ttc_sbuf_printf(&b, "])");
    return ttc_sbuf_take(&b);
}

/* Parses and builds; st NULL: a failed build is a CHECK failure, else its status goes to *st. */
static inline ttc_engine *build_engine(const char *text, ttc_status *st) {
    ttc_graph *g = NULL;
    ttc_status s = ttc_graph_parse(text, &g);
    CHECK(s == TTC_OK, "parse: %s", ttc_last_error());
    if (s != TTC_OK) return NULL;
    ttc_engine_options o = ttc_engine_options_default();
    o.cache_dir = "";
    ttc_engine *e = NULL;
    s = ttc_engine_build(g, &o, &e);
    if (st) *st = s;
    else CHECK(s == TTC_OK, "build: %s", ttc_last_error());
    ttc_graph_free(g);
    return s == TTC_OK ? e : NULL;
}

#endif
