/*
 * Helpers for the pass tests: run one pass on IR text and compare the printed result
 * with the expected IR text (parsed and printed again, so spacing does not matter), after
 * checking that the result verifies.
 *
 *   expect_pass(ttc_pass_dce, "graph(...): ...", "graph(...): ...", true);
 */
#ifndef TTC_TEST_PASS_UTIL_H
#define TTC_TEST_PASS_UTIL_H
#include "ir/ir.h"
#include "passes/pass_manager.h"
#include "tests/ctest.h"

static inline ttc_graph *run_pass_on(ttc_pass_fn fn, const char *in, bool *changed) {
    ttc_graph *g = NULL;
    CHECK_OK(ttc_graph_parse(in, &g));
    if (!g) return NULL;
    CHECK_OK(fn(g, NULL, changed));
    CHECK_OK(ttc_graph_verify(g));
    return g;
}

/* Generated value names (%<digits>) depend on counters: rename them %_0, %_1, ... in
 * order of first appearance so that texts compare by structure. */
static inline char *normalise_names(const char *t) {
    if (!t) return NULL;
    char names[256][24];
    int n = 0;
    ttc_sbuf b = {0};
    for (const char *p = t; *p;) {
        if (p[0] == '%' && p[1] >= '0' && p[1] <= '9') {
            const char *e = p + 1;
            while (*e >= '0' && *e <= '9') e++;
            char nm[24];
            snprintf(nm, sizeof nm, "%.*s", (int)(e - p - 1), p + 1);
            int k = 0;
            while (k < n && strcmp(names[k], nm)) k++;
            if (k == n && n < 256) strcpy(names[n++], nm);
            ttc_sbuf_printf(&b, "%%_%d", k);
            p = e;
        } else {
            ttc_sbuf_append(&b, p, 1);
            p++;
        }
    }
    return ttc_sbuf_take(&b);
}

static inline void expect_pass_at(const char *file, int line, ttc_pass_fn fn, const char *in, const char *want,
                                  bool want_changed) {
    bool changed = !want_changed;
    ttc_graph *g = run_pass_on(fn, in, &changed), *w = NULL;
    CHECK_OK(ttc_graph_parse(want, &w));
    char *got0 = g ? ttc_graph_print(g) : NULL, *exp0 = w ? ttc_graph_print(w) : NULL;
    char *got = normalise_names(got0), *exp = normalise_names(exp0);
    free(got0);
    free(exp0);
    if (!(got && exp && !strcmp(got, exp)))
        fprintf(stderr, "%s:%d: pass output differs\n--- got\n%s--- want\n%s", file, line, got ? got : "(none)\n",
                exp ? exp : "(none)\n");
    CHECK(got && exp && !strcmp(got, exp), "see above");
    CHECK(changed == want_changed, "%s:%d: changed=%d", file, line, changed);
    free(got);
    free(exp);
    ttc_graph_free(g);
    ttc_graph_free(w);
}
#define expect_pass(fn, in, want, ch) expect_pass_at(__FILE__, __LINE__, fn, in, want, ch)

#endif
