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

static inline void expect_pass_at(const char *file, int line, ttc_pass_fn fn, const char *in, const char *want,
                                  bool want_changed) {
    bool changed = !want_changed;
    ttc_graph *g = run_pass_on(fn, in, &changed), *w = NULL;
    CHECK_OK(ttc_graph_parse(want, &w));
    char *got = g ? ttc_graph_print(g) : NULL, *exp = w ? ttc_graph_print(w) : NULL;
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
