/* Partitioner acceptance tests from issue 3 (seeds/000's lgamma graph, the conv chain),
 * capability reasons, torch_executed_ops spellings, require_full_compilation, coverage,
 * hierarchical and resource partitioning. Graphs are written in IR text. */
#include "ir/ir.h"
#include "partition/partition.h"
#include "tests/ctest.h"

/* support_ctx: a comma-separated list of unsupported op names. */
static bool support_except(const ttc_graph *g, const ttc_node *n, const ttc_partition_settings *s,
                           char **why, bool *dyn) {
    const char *list = s->support_ctx;
    size_t l = strlen(n->op_name);
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, ',');
        size_t pl = e ? (size_t)(e - p) : strlen(p);
        if (pl == l && !strncmp(p, n->op_name, l)) {
            *why = ttc_strfmt("no converter for %s", n->op_name);
            return false;
        }
        p = e ? e + 1 : NULL;
    }
    *dyn = n->op != TTC_OP_RELU; /* relu: static shapes only, to test that reason */
    return true;
}

static const char *label(const ttc_node *n) { return n->n_outputs ? n->outputs[0]->name : n->op_name; }

/* "opencl{a,b} torch{c}" */
static char *describe(const ttc_partition_result *r) {
    ttc_sbuf b = {0};
    for (int i = 0; i < r->n_segments; i++) {
        const ttc_segment *s = &r->segments[i];
        ttc_sbuf_printf(&b, "%s%s{", i ? " " : "", r->targets[s->target]);
        for (int k = 0; k < s->n_nodes; k++) ttc_sbuf_printf(&b, "%s%s", k ? "," : "", label(s->nodes[k]));
        ttc_sbuf_printf(&b, "}");
    }
    return ttc_sbuf_take(&b);
}

static char *run(const char *text, ttc_partition_settings *s) {
    ttc_graph *g = NULL;
    CHECK_OK(ttc_graph_parse(text, &g));
    if (!g) return NULL;
    ttc_partition_result *r = NULL;
    CHECK_OK(ttc_partition(g, s, &r));
    char *d = r ? describe(r) : NULL;
    ttc_partition_result_free(r);
    ttc_graph_free(g);
    return d;
}

static const char *lgamma_graph =
    "graph(%x : Float(2, 3), %y : Float(2, 3)):\n"
    "  %c0 : int = prim.Constant[value=0]()\n"
    "  %c1 : int = prim.Constant[value=1]()\n"
    "  %add : Float(2, 3) = aten.add.Tensor(%x, %y, %c1)\n"
    "  %xl : Float(2, 3) = aten.lgamma.default(%x)\n"
    "  %mul : Float(2, 3) = aten.mul.Tensor(%x, %y)\n"
    "  %yl : Float(2, 3) = aten.lgamma.default(%y)\n"
    "  %div : Float(2, 3) = aten.div.Tensor(%x, %y)\n"
    "  %dl : Float(2, 3) = aten.lgamma.default(%div)\n"
    "  %list : Tensor[] = prim.ListConstruct(%xl, %yl, %dl, %add, %mul)\n"
    "  %cat : Float(10, 3) = aten.cat.default(%list, %c0)\n"
    "  return (%cat)\n";

static void expect(const char *text, ttc_partition_settings *s, const char *want) {
    char *got = run(text, s);
    CHECK(got && !strcmp(got, want), "\n  got  %s\n  want %s", got ? got : "(null)", want);
    free(got);
}

static void base_settings(ttc_partition_settings *s, const char *unsupported) {
    ttc_partition_settings_init(s);
    s->support = support_except;
    s->support_ctx = (void *)unsupported;
    s->min_block_size = 1;
}

static void test_lgamma_naive_fast_global(void) {
    ttc_partition_settings s;
    base_settings(&s, "aten.lgamma.default");
    s.strategy = TTC_PARTITION_NAIVE;
    expect(lgamma_graph, &s,
           "opencl{add} torch{xl} opencl{mul} torch{yl} opencl{div} torch{dl} opencl{list,cat}");
    s.strategy = TTC_PARTITION_FAST;
    expect(lgamma_graph, &s, "opencl{add,mul,div} torch{xl,yl,dl} opencl{list,cat}");
    s.strategy = TTC_PARTITION_GLOBAL;
    expect(lgamma_graph, &s, "opencl{add,mul,div} torch{xl,yl,dl} opencl{list,cat}");
}

static void test_lgamma_segment_io(void) {
    ttc_graph *g = NULL;
    CHECK_OK(ttc_graph_parse(lgamma_graph, &g));
    if (!g) return;
    ttc_partition_settings s;
    base_settings(&s, "aten.lgamma.default");
    ttc_partition_result *r = NULL;
    CHECK_OK(ttc_partition(g, &s, &r));
    if (!r) { ttc_graph_free(g); return; }
    CHECK(r->n_segments == 3);
    const ttc_segment *s0 = &r->segments[0], *s1 = &r->segments[1], *s2 = &r->segments[2];
    CHECK(s0->n_inputs == 2 && !strcmp(s0->inputs[0]->name, "x") && !strcmp(s0->inputs[1]->name, "y"));
    CHECK(s0->n_outputs == 3, "add, mul, div leave segment 0: %d", s0->n_outputs);
    CHECK(s0->n_constants == 1 && s0->constants[0]->outputs[0]->name[1] == '1', "alpha constant re-materialised");
    CHECK(s1->n_inputs == 3 && s1->n_outputs == 3 && s1->n_constants == 0);
    CHECK(s2->n_inputs == 5 && s2->n_outputs == 1 && !strcmp(s2->outputs[0]->name, "cat"));
    ttc_node *xl = ttc_graph_find_value(g, "xl")->producer;
    CHECK(xl->target == 0 && xl->segment == 1 && xl->reason && !strcmp(xl->reason, "no converter for aten.lgamma.default"),
          "reason %s", xl->reason ? xl->reason : "(null)");
    ttc_node *c0 = ttc_graph_find_value(g, "c0")->producer;
    CHECK(c0->segment == -1 && c0->target == -1, "constants are not segmented");
    ttc_partition_result_free(r);
    ttc_graph_free(g);
}

#define CONV(out, in) \
    "  %" out " : Float(1, 3, 8, 8) = aten.convolution.default(%" in ", %w, %n, %s, %p, %s, %f, %p, %g)\n"
static const char *conv_graph =
    "graph(%x : Float(1, 3, 8, 8)):\n"
    "  %w : Float(3, 3, 1, 1) = prim.Constant[value=tensor([1, 0, 0, 0, 1, 0, 0, 0, 1])]()\n"
    "  %n : NoneType = prim.Constant()\n"
    "  %s : int[] = prim.Constant[value=[1, 1]]()\n"
    "  %p : int[] = prim.Constant[value=[0, 0]]()\n"
    "  %f : bool = prim.Constant[value=false]()\n"
    "  %g : int = prim.Constant[value=1]()\n"
    CONV("c0", "x")
    "  %r1 : Float(1, 3, 8, 8) = aten.relu.default(%c0)  # name=relu\n"
    CONV("c2", "r1")
    "  %ls : Float(1, 3, 8, 8) = aten.log_sigmoid.default(%c2)\n"
    CONV("c4", "ls")
    "  return (%c4)\n";

static void test_conv_chain(void) {
    ttc_partition_settings s;
    base_settings(&s, "aten.log_sigmoid.default");
    expect(conv_graph, &s, "opencl{c0,r1,c2} torch{ls} opencl{c4}");
    s.min_block_size = 3;
    expect(conv_graph, &s, "opencl{c0,r1,c2} torch{ls,c4}");
    s.min_block_size = 1;
    const char *names[] = {"relu"}, *why[] = {"user asked"};
    s.forced_nodes = names;
    s.forced_reasons = why;
    s.n_forced = 1;
    expect(conv_graph, &s, "opencl{c0} torch{r1} opencl{c2} torch{ls} opencl{c4}");
    s.n_forced = 0;
    const char *spellings[] = {"aten.relu.default", "torch.ops.aten.relu.default", "aten::relu", "aten.relu"};
    for (int i = 0; i < 4; i++) {
        s.torch_executed_ops = &spellings[i];
        s.n_torch_executed_ops = 1;
        expect(conv_graph, &s, "opencl{c0} torch{r1} opencl{c2} torch{ls} opencl{c4}");
    }
    const char *other = "aten::relu6";
    s.torch_executed_ops = &other;
    expect(conv_graph, &s, "opencl{c0,r1,c2} torch{ls} opencl{c4}");
}

static void test_reasons(void) {
    ttc_graph *g = NULL;
    CHECK_OK(ttc_graph_parse(conv_graph, &g));
    if (!g) return;
    ttc_partition_settings s;
    base_settings(&s, "aten.log_sigmoid.default");
    s.min_block_size = 3;
    const char *names[] = {"relu"}, *why[] = {"debugging"};
    ttc_partition_result *r = NULL;
    CHECK_OK(ttc_partition(g, &s, &r));
    ttc_partition_result_free(r);
    ttc_node *c4 = ttc_graph_find_value(g, "c4")->producer;
    CHECK(c4->reason && !strcmp(c4->reason, "block of 1 compute ops < min_block_size 3"), "%s", c4->reason);
    s.forced_nodes = names;
    s.forced_reasons = why;
    s.n_forced = 1;
    CHECK_OK(ttc_partition(g, &s, &r));
    ttc_partition_result_free(r);
    ttc_node *relu = ttc_graph_find_node(g, "relu");
    CHECK(relu->reason && !strcmp(relu->reason, "forced: debugging"), "%s", relu->reason);
    ttc_graph_free(g);
    /* dynamic shapes: the test hook says relu's converter is static only */
    const char *dyn2 =
        "graph(%x : Float(s0, 3)) where s0 in [1, 4, 8]:\n"
        "  %m : str = prim.Constant[value=\"bad\"]()\n"
        "  %r : Float(s0, 3) = aten.relu.default(%x)\n"
        "  %e : Float(s0, 3) = aten.exp.default(%r)\n"
        "  = aten._assert_async.msg(%e, %m)\n"
        "  return (%e)\n";
    CHECK_OK(ttc_graph_parse(dyn2, &g));
    if (!g) return;
    s.n_forced = 0;
    s.min_block_size = 1;
    CHECK_OK(ttc_partition(g, &s, &r));
    ttc_partition_result_free(r);
    ttc_node *rn = ttc_graph_find_value(g, "r")->producer;
    CHECK(rn->target == 0 && rn->reason && !strcmp(rn->reason, "dynamic shapes not supported by converter"));
    ttc_node *as = g->nodes[g->n_nodes - 1];
    CHECK(as->target == 0 && as->reason && !strcmp(as->reason, "impure"), "%s", as->reason);
    s.assume_dynamic_shape_support = true;
    CHECK_OK(ttc_partition(g, &s, &r));
    ttc_partition_result_free(r);
    CHECK(rn->target == 1 && rn->reason == NULL);
    ttc_graph_free(g);
}

static void test_require_full_compilation(void) {
    ttc_graph *g = NULL;
    CHECK_OK(ttc_graph_parse(lgamma_graph, &g));
    if (!g) return;
    ttc_partition_settings s;
    base_settings(&s, "aten.lgamma.default");
    s.require_full_compilation = true;
    s.min_block_size = 100;
    ttc_partition_result *r = NULL;
    ttc_status st = ttc_partition(g, &s, &r);
    CHECK(st == TTC_ERR_PARTITION && r == NULL);
    const char *msg = ttc_last_error();
    CHECK(strstr(msg, "3 node(s)") && strstr(msg, "xl (aten.lgamma.default): no converter for aten.lgamma.default") &&
          strstr(msg, "dl (aten.lgamma.default)"), "%s", msg);
    /* all supported: one segment whatever min_block_size says */
    s.support_ctx = "";
    CHECK_OK(ttc_partition(g, &s, &r));
    CHECK(r && r->n_segments == 1 && r->segments[0].target == 1);
    ttc_partition_result_free(r);
    ttc_graph_free(g);
}

static void test_coverage(void) {
    ttc_graph *g = NULL;
    CHECK_OK(ttc_graph_parse(lgamma_graph, &g));
    if (!g) return;
    ttc_partition_settings s;
    base_settings(&s, "aten.lgamma.default");
    ttc_coverage *c = NULL;
    CHECK_OK(ttc_partition_coverage(g, &s, &c));
    if (!c) { ttc_graph_free(g); return; }
    CHECK(c->supported == 5 && c->total == 8, "%d/%d", c->supported, c->total);
    CHECK(c->n_ops == 6 && !strcmp(c->ops[3].op, "aten.lgamma.default") && c->ops[3].total == 3 &&
          c->ops[3].supported == 0);
    CHECK(c->n_fallback == 3 && !strcmp(c->reasons[0], "no converter for aten.lgamma.default"));
    ttc_coverage_free(c);
    ttc_graph_free(g);
}

static void test_hierarchical(void) {
    ttc_partition_settings s;
    base_settings(&s, "aten.lgamma.default");
    const char *inductor_ops[] = {"aten::lgamma"};
    ttc_backend_spec b[2] = {{"opencl", NULL, 0, true}, {"inductor", inductor_ops, 1, false}};
    s.strategy = TTC_PARTITION_HIERARCHICAL;
    s.backends = b;
    s.n_backends = 2;
    expect(lgamma_graph, &s, "opencl{add,mul,div} inductor{xl,yl,dl} opencl{list,cat}");
    b[1].n_ops = 0;
    expect(lgamma_graph, &s, "opencl{add,mul,div} torch{xl,yl,dl} opencl{list,cat}");
}

static void test_op_name_matching(void) {
    CHECK(ttc_op_name_matches("aten.add.Tensor", "aten.add.Tensor"));
    CHECK(ttc_op_name_matches("aten.add.Tensor", "torch.ops.aten.add.Tensor"));
    CHECK(ttc_op_name_matches("aten.add.Tensor", "aten::add"));
    CHECK(ttc_op_name_matches("aten.add.Scalar", "torch.ops.aten.add"));
    CHECK(!ttc_op_name_matches("aten.add.Tensor", "aten.add.Scalar"));
    CHECK(!ttc_op_name_matches("aten.add_.Tensor", "aten::add"));
    CHECK(!ttc_op_name_matches("aten.addmm.default", "aten::add"));
}

/* Resource partitioning: two 4 KiB weights against a 5 KiB budget split the OpenCL
 * segment, but never between a mul and its add (atomic). */
static void test_resource(void) {
    ttc_graph *g = ttc_graph_new();
    ttc_type t = ttc_type_tensor(TTC_DTYPE_FLOAT32, 1, (int64_t[]){1024});
    ttc_value *x = ttc_graph_add_input(g, "x", &t);
    ttc_value *cur = x;
    for (int i = 0; i < 4; i++) {
        ttc_tensor_data *d = ttc_tensor_data_copy(NULL, 4096);
        ttc_value *w = ttc_graph_const_tensor(g, NULL, NULL, &t, d);
        ttc_tensor_data_unref(d);
        ttc_value *in[3] = {cur, w, NULL};
        if (i % 2) in[2] = ttc_graph_const_int(g, NULL, 1); /* add.Tensor's alpha */
        ttc_node *m = ttc_graph_append_node(g, i % 2 ? "aten.add.Tensor" : "aten.mul.Tensor", in, i % 2 ? 3 : 2,
                                            &t, 1, NULL);
        cur = m->outputs[0];
    }
    ttc_graph_set_outputs(g, &cur, 1);
    ttc_partition_settings s;
    base_settings(&s, "");
    s.enable_resource_partitioning = true;
    s.cpu_memory_budget = 5000;
    ttc_partition_result *r = NULL;
    CHECK_OK(ttc_partition(g, &s, &r));
    CHECK(r && r->n_segments == 2, "%d segments", r ? r->n_segments : -1);
    if (r && r->n_segments == 2) {
        CHECK(r->segments[0].n_nodes == 2 && r->segments[1].n_nodes == 2 &&
              r->segments[0].nodes[0]->op == TTC_OP_MUL_TENSOR && r->segments[0].nodes[1]->op == TTC_OP_ADD_TENSOR);
        CHECK(r->segments[0].weight_bytes == 8192 && r->segments[1].inputs[0] == r->segments[0].outputs[0]);
    }
    ttc_partition_result_free(r);
    /* without the atomic rule pieces would hold one node each: a budget of 4096 keeps pairs */
    s.cpu_memory_budget = 4096;
    CHECK_OK(ttc_partition(g, &s, &r));
    CHECK(r && r->n_segments == 2);
    ttc_partition_result_free(r);
    s.cpu_memory_budget = 1 << 20;
    CHECK_OK(ttc_partition(g, &s, &r));
    CHECK(r && r->n_segments == 1);
    ttc_partition_result_free(r);
    ttc_graph_free(g);
}

static void test_not_topological(void) {
    ttc_graph *g = NULL;
    CHECK_OK(ttc_graph_parse(lgamma_graph, &g));
    if (!g) return;
    ttc_node *tmp = g->nodes[2];
    g->nodes[2] = g->nodes[g->n_nodes - 1];
    g->nodes[g->n_nodes - 1] = tmp;
    g->nodes[2]->order = 2;
    tmp->order = g->n_nodes - 1;
    ttc_partition_settings s;
    base_settings(&s, "");
    ttc_partition_result *r = NULL;
    CHECK(ttc_partition(g, &s, &r) == TTC_ERR_INVALID_ARG && strstr(ttc_last_error(), "topological"));
    ttc_graph_free(g);
}

TEST_MAIN(test_lgamma_naive_fast_global, test_lgamma_segment_io, test_conv_chain, test_reasons,
          test_require_full_compilation, test_coverage, test_hierarchical, test_op_name_matching,
          test_resource, test_not_topological)
