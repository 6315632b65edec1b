/* Verifier: each kind of fault is caught and named; shape functions agree with torch on
 * the common ops (checked through the verifier on parsed graphs). */
#include "ir/ir.h"
#include "tests/ctest.h"

static ttc_type f32(int32_t rank, const int64_t *shape) { return ttc_type_tensor(TTC_DTYPE_FLOAT32, rank, shape); }

/* x -> relu -> neg, outputs neg */
static ttc_graph *chain(ttc_node **relu, ttc_node **neg) {
    ttc_graph *g = ttc_graph_new();
    ttc_type t = f32(2, (int64_t[]){2, 3});
    ttc_value *x = ttc_graph_add_input(g, "x", &t);
    *relu = ttc_graph_append_node(g, "aten.relu.default", &x, 1, &t, 1, "relu");
    *neg = ttc_graph_append_node(g, "aten.neg.default", &(*relu)->outputs[0], 1, &t, 1, "neg");
    ttc_graph_set_outputs(g, &(*neg)->outputs[0], 1);
    return g;
}

static void expect_fault(ttc_graph *g, const char *what) {
    ttc_status s = ttc_graph_verify(g);
    CHECK(s == TTC_ERR_VERIFY && strstr(ttc_last_error(), what), "wanted VERIFY naming \"%s\", got %s: %s", what,
          ttc_status_name(s), ttc_last_error());
}

static void test_valid_graph(void) {
    ttc_node *r, *n;
    ttc_graph *g = chain(&r, &n);
    CHECK_OK(ttc_graph_verify(g));
    ttc_graph_free(g);
}

static void test_use_before_def(void) {
    ttc_node *r, *n;
    ttc_graph *g = chain(&r, &n);
    /* swap the nodes: neg now uses relu's output before relu runs */
    g->nodes[0] = n; g->nodes[1] = r; n->order = 0; r->order = 1;
    expect_fault(g, "node neg (aten.neg.default): input 0");
    CHECK(strstr(ttc_last_error(), "before it is defined"), "%s", ttc_last_error());
    CHECK_OK(ttc_graph_toposort(g));
    CHECK(g->nodes[0] == r && g->nodes[1] == n);
    CHECK_OK(ttc_graph_verify(g));
    ttc_graph_free(g);
}

static void test_cycle(void) {
    ttc_node *r, *n;
    ttc_graph *g = chain(&r, &n);
    CHECK_OK(ttc_node_set_input(r, 0, n->outputs[0])); /* relu(neg(relu(...))) */
    expect_fault(g, "node relu");
    ttc_node **order = NULL;
    CHECK(ttc_graph_topo_order(g, &order) == TTC_ERR_VERIFY && strstr(ttc_last_error(), "cycle"), "%s", ttc_last_error());
    CHECK(order == NULL);
    ttc_graph_free(g);
}

static void test_users_mismatch(void) {
    ttc_node *r, *n;
    ttc_graph *g = chain(&r, &n);
    ttc_value *x = g->inputs[0];
    x->n_users = 0; /* stale users list */
    expect_fault(g, "%x lists 0 users but is used 1 times");
    x->n_users = 1;
    ttc_node *saved = x->users[0];
    x->users[0] = n; /* wrong user */
    expect_fault(g, "node neg");
    x->users[0] = saved;
    CHECK_OK(ttc_graph_verify(g));
    ttc_graph_free(g);
}

static void test_dead_reference(void) {
    ttc_node *r, *n;
    ttc_graph *g = chain(&r, &n);
    ttc_type t = f32(2, (int64_t[]){2, 3});
    ttc_node *extra = ttc_graph_append_node(g, "aten.abs.default", &g->inputs[0], 1, &t, 1, "abs");
    CHECK_OK(ttc_graph_erase_node(g, extra));
    /* make neg read the erased node's output behind the graph's back */
    n->inputs[0] = extra->outputs[0];
    expect_fault(g, "comes from an erased node");
    ttc_graph_free(g);
}

static void test_outputs_and_names(void) {
    ttc_node *r, *n;
    ttc_graph *g = chain(&r, &n);
    ttc_type t = f32(2, (int64_t[]){2, 3});
    ttc_graph *other = ttc_graph_new();
    ttc_value *foreign = ttc_graph_add_input(other, "y", &t);
    CHECK_OK(ttc_graph_set_outputs(g, &foreign, 1));
    expect_fault(g, "graph output 0");
    CHECK_OK(ttc_graph_set_outputs(g, &n->outputs[0], 1));
    free(r->outputs[0]->name);
    r->outputs[0]->name = ttc_strdup("x"); /* clashes with the input */
    expect_fault(g, "value name %x is used twice");
    ttc_graph_free(g);
    ttc_graph_free(other);
}

static void test_bad_types(void) {
    ttc_node *r, *n;
    ttc_graph *g = chain(&r, &n);
    ttc_value *x = g->inputs[0];
    x->type.rank = 9;
    expect_fault(g, "rank 9 out of range");
    x->type.rank = 2;
    x->type.dims[0] = ttc_dim_sym(3);
    expect_fault(g, "unknown symbol");
    int32_t s = ttc_graph_add_symbol(g, "s0", 1, 2, 4);
    x->type.dims[0] = (ttc_dim){s, 1, -2}; /* s0-2 is negative at s0 = 1 */
    expect_fault(g, "negative");
    x->type.dims[0] = ttc_dim_const(2);
    x->type.dtype = (ttc_dtype)99;
    expect_fault(g, "invalid dtype");
    ttc_graph_free(g);
}

static void test_arity(void) {
    ttc_graph *g = ttc_graph_new();
    ttc_type t = f32(1, (int64_t[]){4});
    ttc_value *x = ttc_graph_add_input(g, "x", &t);
    ttc_value *ins[2] = {x, x};
    /* a known name with another arity (a newer torch schema) imports as opaque, with a reason */
    ttc_node *bad = ttc_graph_append_node(g, "aten.relu.default", ins, 2, &t, 1, "relu2");
    CHECK(bad && bad->op == TTC_OP_OPAQUE, "relu with 2 inputs is opaque");
    ttc_graph_set_outputs(g, &bad->outputs[0], 1);
    CHECK_OK(ttc_graph_verify(g));
    char *why = ttc_node_schema_mismatch(bad);
    CHECK(why && !strcmp(why, "aten.relu.default: the schema has 2 inputs, the table knows 1"), "%s", why ? why : "(null)");
    free(why);
    /* a pass that gives a node the id of an op of another arity is caught */
    bad->op = TTC_OP_RELU;
    expect_fault(g, "node relu2 (aten.relu.default): has 2 inputs, the op takes 1");
    ttc_graph_free(g);
    /* variadic and opaque ops take any arity */
    g = ttc_graph_new();
    x = ttc_graph_add_input(g, "x", &t);
    ttc_type lt = ttc_type_list(TTC_TYPE_TENSOR);
    ttc_value *three[3] = {x, x, x};
    ttc_node *lc = ttc_graph_append_node(g, "prim.ListConstruct", three, 3, &lt, 1, NULL);
    ttc_node *op = ttc_graph_append_node(g, "aten.lgamma2.default", three, 3, &t, 1, NULL);
    ttc_value *outs[2] = {lc->outputs[0], op->outputs[0]};
    ttc_graph_set_outputs(g, outs, 2);
    CHECK_OK(ttc_graph_verify(g));
    ttc_graph_free(g);
}

static void test_constants(void) {
    ttc_graph *g = ttc_graph_new();
    ttc_value *c = ttc_graph_const_int(g, NULL, 3);
    ttc_graph_set_outputs(g, &c, 1);
    CHECK_OK(ttc_graph_verify(g));
    c->type = ttc_type_scalar(TTC_TYPE_FLOAT); /* int literal typed as float */
    expect_fault(g, "does not match the output type");
    c->type = ttc_type_scalar(TTC_TYPE_INT);
    ttc_attr_clear(&c->producer->attrs[0]);
    c->producer->n_attrs = 0;
    expect_fault(g, "without a value attribute");
    ttc_graph_free(g);

    g = ttc_graph_new();
    float w[6] = {0};
    ttc_type t = f32(2, (int64_t[]){2, 3});
    ttc_tensor_data *d = ttc_tensor_data_copy(w, sizeof w);
    ttc_value *tc = ttc_graph_const_tensor(g, NULL, "w", &t, d);
    ttc_tensor_data_unref(d);
    ttc_graph_set_outputs(g, &tc, 1);
    CHECK_OK(ttc_graph_verify(g));
    tc->type.dims[1] = ttc_dim_const(4); /* 24 bytes no longer match 2x4 floats */
    expect_fault(g, "holds 24 bytes");
    ttc_graph_free(g);
}

static void expect_shape_ok(const char *src) {
    ttc_graph *g = NULL;
    CHECK_OK(ttc_graph_parse(src, &g));
    if (!g) return;
    ttc_status s = ttc_graph_verify(g);
    CHECK(s == TTC_OK, "%s\n%s", ttc_last_error(), src);
    ttc_graph_free(g);
}

static void expect_shape_bad(const char *src, const char *what) {
    ttc_graph *g = NULL;
    CHECK_OK(ttc_graph_parse(src, &g));
    if (!g) return;
    ttc_status s = ttc_graph_verify(g);
    CHECK(s == TTC_ERR_VERIFY && strstr(ttc_last_error(), what), "wanted \"%s\", got %s\n%s", what, ttc_last_error(), src);
    ttc_graph_free(g);
}

#define HDR "graph(%x : Float(s0, 3, 8, 8), %w : Float(4, 3, 3, 3), %m : Float(3, 5), %i : Long(s0, 3)) where s0 in [1, 4, 16]:\n" \
            "  %none : NoneType = prim.Constant()\n  %f : bool = prim.Constant[value=false]()\n" \
            "  %t : bool = prim.Constant[value=true]()\n  %one : int = prim.Constant[value=1]()\n" \
            "  %two : int = prim.Constant[value=2]()\n  %m1 : int = prim.Constant[value=-1]()\n" \
            "  %half : float = prim.Constant[value=0.5]()\n  %p1 : int[] = prim.Constant[value=[1, 1]]()\n" \
            "  %p0 : int[] = prim.Constant[value=[0, 0]]()\n  %k2 : int[] = prim.Constant[value=[2, 2]]()\n"

static void test_shape_functions(void) {
    expect_shape_ok(HDR
        "  %c : Float(s0, 4, 8, 8) = aten.convolution.default(%x, %w, %none, %p1, %p1, %p1, %f, %p0, %one)\n"
        "  %c2 : Float(s0, 4, 6, 6) = aten.conv2d.default(%x, %w, %none, %p1, %p0, %p1, %one)\n"
        "  %mp : Float(s0, 4, 4, 4) = aten.max_pool2d.default(%c, %k2, %k2, %p0, %p1, %f)\n"
        "  %ap : Float(s0, 4, 3, 3) = aten.avg_pool2d.default(%c2, %k2, %k2, %p0, %f, %t, %none)\n"
        "  %aa : Float(s0, 4, 1, 1) = aten.adaptive_avg_pool2d.default(%c, %p1)\n"
        "  %fl : Float(s0, 4) = aten.flatten.using_ints(%aa, %one, %m1)\n"
        "  %sh : int[] = prim.Constant[value=[-1, 12]]()\n"
        "  %v : Float(16*s0, 12) = aten.view.default(%x, %sh)\n"
        "  %pm : int[] = prim.Constant[value=[1, 0]]()\n"
        "  %pt : Float(12, 16*s0) = aten.permute.default(%v, %pm)\n"
        "  %tr : Float(s0, 8, 8, 3) = aten.transpose.int(%x, %one, %m1)\n"
        "  %us : Float(s0, 1, 3, 8, 8) = aten.unsqueeze.default(%x, %one)\n"
        "  %sq : Float(s0, 3, 8, 8) = aten.squeeze.dim(%us, %one)\n"
        "  %sl : Float(s0, 3, 6, 8) = aten.slice.Tensor(%x, %two, %one, %m1, %one)\n"
        "  %se : Float(s0, 8, 8) = aten.select.int(%x, %one, %two)\n"
        "  %lc : Tensor[] = prim.ListConstruct(%x, %x)\n"
        "  %ct : Float(2*s0, 3, 8, 8) = aten.cat.default(%lc, %none)\n"
        "  %sm : Float(s0, 3, 8, 8) = aten.softmax.int(%x, %m1, %none)\n"
        "  %dl : int[] = prim.Constant[value=[2, 3]]()\n"
        "  %su : Float(s0, 3, 1, 1) = aten.sum.dim_IntList(%x, %dl, %t, %none)\n"
        "  %me : Float(s0, 3) = aten.mean.dim(%x, %dl, %f, %none)\n"
        "  %mm : Float(s0, 5) = aten.mm.default(%me, %m)\n"
        "  %lin : Float(s0, 3) = aten.linear.default(%mm, %m, %none)\n"
        "  %mx : Float(s0), %ix : Long(s0) = aten.max.dim(%me, %one, %f)\n"
        "  %ad : Float(s0, 3, 8, 8) = aten.add.Tensor(%x, %half, %one)\n"
        "  %ai : Float(s0, 3) = aten.add.Tensor(%i, %half, %one)\n"
        "  %ii : Long(s0, 3) = aten.mul.Tensor(%i, %two)\n"
        "  %dv : Float(s0, 3) = aten.div.Tensor(%i, %i)\n"
        "  %bc : Float(s0, 4, 8, 8) = aten.mul.Tensor(%c, %aa)\n"
        "  %gt : Bool(s0, 3) = aten.gt.Scalar(%i, %one)\n"
        "  %ex : Float(s0, 3) = aten.exp.default(%i)\n"
        "  %bm : Float(s0, 8, 8, 5) = aten.matmul.default(%tr, %m)\n"
        "  return (%c, %mp, %ap, %fl, %pt, %tr, %sq, %sl, %se, %ct, %sm, %su, %lin, %mx, %ix, %ad, %ai, %ii, %dv, %bc, %gt, %ex, %bm)\n");
    /* wrong declared types are caught, with the expected type in the message */
    expect_shape_bad(HDR "  %r : Float(s0, 3, 8, 7) = aten.relu.default(%x)\n  return (%r)\n", "Float(1*s0+0, 3, 8, 8)");
    expect_shape_bad(HDR "  %r : Half(s0, 3, 8, 8) = aten.relu.default(%x)\n  return (%r)\n", "shape function gives");
    expect_shape_bad(HDR "  %r : Float(s0, 5) = aten.mm.default(%m, %m)\n  return (%r)\n", "inner dims differ: 5 vs 3");
    expect_shape_bad(HDR "  %r : Float(s0, 3, 8, 8) = aten.add.Tensor(%x, %m, %one)\n  return (%r)\n", "cannot broadcast");
    /* an index list typed Any[] from its schema (Optional[Tensor][]) holds tensors: wider, not wrong */
    expect_shape_ok(HDR "  %al : Any[] = prim.ListConstruct(%x, %x)\n  return (%x)\n");
    expect_shape_bad(HDR "  %il : int[] = prim.ListConstruct(%x, %x)\n  return (%x)\n", "shape function gives");
    /* non-affine results are not checked (UNSUPPORTED), never rejected */
    expect_shape_ok("graph(%a : Float(s0, 3), %b : Float(3, s1)) where s0 in [1, 2, 4], s1 in [1, 2, 4]:\n"
                    "  %c : Float(s0, s1) = aten.mm.default(%a, %b)\n"
                    "  %o : int = prim.Constant[value=0]()\n  %m1 : int = prim.Constant[value=-1]()\n"
                    "  %f : Float(s0) = aten.flatten.using_ints(%c, %o, %m1)\n  return (%f)\n");
}

static void test_infer_direct(void) {
    ttc_graph *g = NULL;
    CHECK_OK(ttc_graph_parse("graph(%x : Half(s0, 4), %y : BFloat16(4)) where s0 in [2, 2, 8]:\n"
                             "  %z : Float(s0, 4) = aten.add.Tensor(%x, %y, %y)\n  return (%z)\n", &g));
    if (!g) return;
    ttc_type out;
    CHECK_OK(ttc_infer_types(g, g->nodes[0], &out, 1));
    CHECK(out.dtype == TTC_DTYPE_FLOAT32 && out.rank == 2 && out.dims[0].sym == 0, "half + bf16 -> float32");
    ttc_graph_free(g);
}

TEST_MAIN(test_valid_graph, test_use_before_def, test_cycle, test_users_mismatch, test_dead_reference,
          test_outputs_and_names, test_bad_types, test_arity, test_constants, test_shape_functions, test_infer_direct)
