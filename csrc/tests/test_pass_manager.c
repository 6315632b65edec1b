/* The pass manager: default pipeline, enable/disable, registration, instruments, dumps,
 * debug verification naming the pass that broke the graph, and a full lowering. */
#include "tests/test_pass_util.h"

static ttc_status breaker(ttc_graph *g, void *ctx, bool *changed) {
    /* duplicates a value name: the verifier must catch it */
    free(g->nodes[0]->outputs[0]->name);
    g->nodes[0]->outputs[0]->name = ttc_strdup("x");
    *changed = true;
    return TTC_OK;
}

static ttc_status counter(ttc_graph *g, void *ctx, bool *changed) {
    (*(int *)ctx)++;
    *changed = false;
    return TTC_OK;
}

static void sink(void *ctx, const char *pass, const char *text) {
    snprintf(ctx, 4096, "%s|%s", pass, text);
}

static int n_after;
static void after(void *ctx, const char *pass, const ttc_graph *g, bool changed, double s) { n_after++; }

static const char *model =
    "graph(%x : Float(4, 3), %W : Float(5, 3), %b : Float(5)):\n"
    "  %one : int = prim.Constant[value=1]()\n"
    "  %one2 : int = prim.Constant[value=1]()\n"
    "  %n : NoneType = prim.Constant()\n"
    "  %m : str = prim.Constant[value=\"guard\"]()\n"
    "  %c : Float(4, 3) = aten.clone.default(%x, %n)\n"
    "  = aten._assert_async.msg(%c, %m)\n"
    "  %wt : Float(3, 5) = aten.t.default(%W)\n"
    "  %mm : Float(4, 5) = aten.mm.default(%c, %wt)\n"
    "  %y : Float(4, 5) = aten.add.Tensor(%mm, %b, %one)\n"
    "  %dead : Float(4, 5) = aten.exp.default(%y)\n"
    "  %z : Float(4, 5) = aten.relu.default(%y)\n"
    "  %z2 : Float(4, 5) = aten.relu.default(%y)\n"
    "  %o : Float(4, 5) = aten.add.Tensor(%z, %z2, %one2)\n"
    "  return (%o)\n";

static void test_pipeline(void) {
    ttc_pass_manager *pm = ttc_pass_manager_new();
    CHECK(pm && ttc_pass_manager_count(pm) == 14 && !strcmp(ttc_pass_manager_name(pm, 0), "remove_asserts") &&
          !strcmp(ttc_pass_manager_name(pm, 13), "dce"));
    CHECK(!ttc_pass_manager_is_enabled(pm, 3), "unpack_addmm is off by default");
    CHECK(!strcmp(ttc_pass_manager_name(pm, 10), "fuse_parallel_linear") && !ttc_pass_manager_is_enabled(pm, 10),
          "fuse_parallel_linear is off by default");
    CHECK(ttc_pass_manager_set_enabled(pm, "nope", false) == TTC_ERR_INVALID_ARG && strstr(ttc_last_error(), "cse"));
    ttc_graph *g = NULL;
    CHECK_OK(ttc_graph_parse(model, &g));
    char dump[4096] = "";
    CHECK_OK(ttc_pass_manager_dump_after(pm, "fuse_linear", sink, dump));
    ttc_pass_instrument ins = {NULL, after, NULL};
    CHECK_OK(ttc_pass_manager_add_instrument(pm, &ins));
    ttc_pass_manager_set_debug(pm, true);
    ttc_pass_report *rep = NULL;
    int32_t nrep = 0;
    n_after = 0;
    CHECK_OK(ttc_pass_manager_run(pm, g, &rep, &nrep));
    CHECK(nrep == 10 && n_after == 10, "%d passes ran", nrep);   /* the 10 on by default */
    CHECK(!strncmp(dump, "fuse_linear|graph(", 18) && strstr(dump, "aten.linear.default"), "%s", dump);
    char *txt = ttc_graph_print(g);
    expect_pass(ttc_pass_dce, txt,
                "graph(%x : Float(4, 3), %W : Float(5, 3), %b : Float(5)):\n"
                "  %one : int = prim.Constant[value=1]()\n"
                "  %0 : Float(4, 5) = aten.linear.default(%x, %W, %b)\n"
                "  %z : Float(4, 5) = aten.relu.default(%0)\n"
                "  %o : Float(4, 5) = aten.add.Tensor(%z, %z, %one)\n"
                "  return (%o)\n",
                false);
    free(txt);
    for (int i = 0; i < nrep; i++) CHECK(rep[i].seconds >= 0);
    ttc_pass_report_free(rep, nrep);
    ttc_graph_free(g);
    ttc_pass_manager_free(pm);
}

static void test_register_and_debug(void) {
    ttc_pass_manager *pm = ttc_pass_manager_new();
    int calls = 0;
    CHECK_OK(ttc_pass_manager_register(pm, "count", counter, &calls, "cse"));
    CHECK(!strcmp(ttc_pass_manager_name(pm, 13), "count"));
    CHECK(ttc_pass_manager_register(pm, "count", counter, &calls, NULL) == TTC_ERR_INVALID_ARG);
    CHECK_OK(ttc_pass_manager_register(pm, "break", breaker, NULL, ""));
    ttc_graph *g = NULL;
    CHECK_OK(ttc_graph_parse(model, &g));
    ttc_pass_manager_set_debug(pm, true);
    ttc_status s = ttc_pass_manager_run(pm, g, NULL, NULL);
    CHECK(s == TTC_ERR_VERIFY && strstr(ttc_last_error(), "after pass break"), "%s", ttc_last_error());
    CHECK(calls == 0);
    ttc_graph_free(g);
    CHECK_OK(ttc_pass_manager_set_enabled(pm, "break", false));
    CHECK_OK(ttc_graph_parse(model, &g));
    CHECK_OK(ttc_pass_manager_run(pm, g, NULL, NULL));
    CHECK(calls == 1);
    ttc_graph_free(g);
    ttc_pass_manager_free(pm);
}

TEST_MAIN(test_pipeline, test_register_and_debug)
