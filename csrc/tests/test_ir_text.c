/* IR text format: round trips (constants, lists, symbolic dims, multi-output, opaque ops,
 * odd names, tensors by name), parse errors with line/column, and a mutation fuzz loop
 * (run it under `make ctest SAN=1`). */
#include "ir/ir.h"
#include "tests/ctest.h"

static const char *full_graph =
    "graph(%x : Float(s0, 3), %w : Float(4, 3), %\"odd name\" : int) where s0 in [1, 8, 32], s1 in [0, 2, 4]:\n"
    "  %c : int = prim.Constant[value=1]()\n"
    "  %l : int[] = prim.Constant[value=[1, 2]]()\n"
    "  %el : float[] = prim.Constant[value=float[]]()\n"
    "  %eb : bool[] = prim.Constant[value=bool[]]()\n"
    "  %ei : int[] = prim.Constant[value=[]]()\n"
    "  %fl : float[] = prim.Constant[value=[0.5, -1., inf]]()\n"
    "  %bl : bool[] = prim.Constant[value=[true, false]]()\n"
    "  %n : NoneType = prim.Constant()\n"
    "  %s : str = prim.Constant[value=\"ta\\\"nh\\n\\x01\"]()\n"
    "  %f : float = prim.Constant[value=0.1]()\n"
    "  %big_f : float = prim.Constant[value=-1e+300]()\n"
    "  %false : bool = prim.Constant[value=false]()\n"
    "  %t : Float(2, 2) = prim.Constant[value=tensor([1., 2.5, -3e-7, 4])]()\n"
    "  %h : Half(3) = prim.Constant[value=tensor([1., 0.1, 65504], name=\"hh\")]()\n"
    "  %bf : BFloat16(2) = prim.Constant[value=tensor([1.5, -0.3])]()\n"
    "  %d : Double(2) = prim.Constant[value=tensor([0.1, -0.])]()\n"
    "  %i8 : Char(2) = prim.Constant[value=tensor([-128, 127])]()\n"
    "  %u8 : Byte(2) = prim.Constant[value=tensor([0, 255])]()\n"
    "  %i64 : Long(1) = prim.Constant[value=tensor([-9223372036854775808])]()\n"
    "  %bt : Bool(2) = prim.Constant[value=tensor([true, false])]()\n"
    "  %e0 : Float(0, 3) = prim.Constant[value=tensor([])]()\n"
    "  %lst : Tensor[] = prim.ListConstruct(%x, %x)\n"
    "  %y : Float(s0, 3) = aten.relu.default(%x)  # name=relu_1 module=layer1.0.conv1 target=0 segment=2 reason=\"no converter\"\n"
    "  %a : Float(3*s0-1, 4), %b : Long(3*s0+2, 4, s1, -2*s1+7) = aten.max.dim(%x, %c, %false)\n"
    "  %z : Float(s0, 3) = aten.lgamma.default(%y)  # name=\"a b\"\n"
    "  %u : Float(*) = \"my::odd op\"[\"weird attr\"=2, k=None](%z)\n"
    "  %sc : Float() = aten.sum.default(%z, %n)\n"
    "  = aten._assert_async.msg(%z, %s)\n"
    "  return (%z, %a, %z)\n";

static void round_trip(const char *src) {
    ttc_graph *g = NULL, *g2 = NULL;
    CHECK_OK(ttc_graph_parse(src, &g));
    if (!g) return;
    char *t = ttc_graph_print(g);
    CHECK(t != NULL, "print failed");
    CHECK_OK(ttc_graph_parse(t, &g2));
    CHECK(ttc_graph_equal(g, g2), "round trip differs:\n%s", t);
    char *t2 = g2 ? ttc_graph_print(g2) : NULL;
    CHECK(t2 && !strcmp(t, t2), "printing is not a fixed point:\n%s\n---\n%s", t, t2 ? t2 : "");
    free(t);
    free(t2);
    ttc_graph_free(g);
    ttc_graph_free(g2);
}

static void test_round_trip_full(void) {
    round_trip(full_graph);
    ttc_graph *g = NULL;
    CHECK_OK(ttc_graph_parse(full_graph, &g));
    if (!g) return;
    CHECK(g->n_syms == 2 && g->syms[0].max == 32 && g->syms[1].opt == 2);
    ttc_value *a = ttc_graph_find_value(g, "a");
    CHECK(a && a->type.dims[0].sym == 0 && a->type.dims[0].mul == 3 && a->type.dims[0].add == -1);
    ttc_value *b = ttc_graph_find_value(g, "b");
    CHECK(b && b->type.dtype == TTC_DTYPE_INT64 && b->type.dims[3].mul == -2 && b->type.dims[3].add == 7);
    CHECK(ttc_value_is_none(ttc_graph_find_value(g, "n")));
    const ttc_attr *s = ttc_value_const(ttc_graph_find_value(g, "s"));
    CHECK(s && s->kind == TTC_ATTR_STR && !strcmp(s->s, "ta\"nh\n\x01"));
    const ttc_attr *t = ttc_value_const(ttc_graph_find_value(g, "t"));
    float w[4];
    CHECK(t && t->kind == TTC_ATTR_TENSOR && t->tensor->nbytes == 16);
    if (t && t->tensor) memcpy(w, t->tensor->data, 16);
    CHECK(t && w[1] == 2.5f && w[2] == -3e-7f && w[3] == 4.0f);
    ttc_node *relu = ttc_graph_find_node(g, "relu_1");
    CHECK(relu && !strcmp(relu->module_stack, "layer1.0.conv1") && relu->target == 0 && relu->segment == 2 &&
          !strcmp(relu->reason, "no converter"));
    ttc_node *odd = ttc_graph_find_value(g, "u") ? ttc_graph_find_value(g, "u")->producer : NULL;
    CHECK(odd && odd->op == TTC_OP_OPAQUE && !strcmp(odd->op_name, "my::odd op") && odd->n_attrs == 2);
    CHECK(ttc_graph_find_value(g, "odd name") != NULL);
    CHECK(g->n_outputs == 3 && g->outputs[0] == g->outputs[2]);
    /* new values must not collide with parsed names */
    ttc_value *fresh = ttc_graph_const_int(g, NULL, 5);
    CHECK(fresh && ttc_graph_find_value(g, fresh->name) == fresh);
    ttc_graph_free(g);
}

static void test_round_trip_small(void) {
    round_trip("graph():\n  return ()\n");
    round_trip("graph(%x : Float(2, 3)):\n  %y : Float(2, 3) = aten.relu.default(%x)\n  return (%y)\n");
    /* comments and blank lines are allowed between statements */
    round_trip("# leading comment\ngraph(%0 : Long()):\n\n  # a comment\n  %1 : Long() = aten.neg.default(%0)\n  return (%1)\n");
}

static ttc_tensor_data *lookup(void *ctx, const char *name, const ttc_type *type) {
    (void)type;
    if (strcmp(name, "conv.weight")) return NULL;
    return ttc_tensor_data_ref((ttc_tensor_data *)ctx);
}

static void test_tensor_by_name(void) {
    float w[65 * 2];
    for (int i = 0; i < 130; i++) w[i] = (float)i * 0.25f;
    ttc_tensor_data *d = ttc_tensor_data_copy(w, sizeof w);
    ttc_graph *g = ttc_graph_new();
    ttc_type t = ttc_type_tensor(TTC_DTYPE_FLOAT32, 2, (int64_t[]){65, 2});
    ttc_value *c = ttc_graph_const_tensor(g, NULL, "conv.weight", &t, d);
    CHECK_OK(ttc_graph_set_outputs(g, &c, 1));
    char *txt = ttc_graph_print(g);
    CHECK(txt && strstr(txt, "tensor(name=\"conv.weight\")"), "large tensors print by name: %s", txt);
    ttc_graph *g2 = NULL;
    CHECK(ttc_graph_parse(txt, &g2) == TTC_ERR_PARSE && strstr(ttc_last_error(), "conv.weight"),
          "no lookup: %s", ttc_last_error());
    CHECK_OK(ttc_graph_parse_ex(txt, lookup, d, &g2));
    CHECK(g2 && ttc_graph_equal(g, g2));
    ttc_graph_free(g2);
    g2 = NULL;
    /* a lookup result of the wrong size is rejected */
    ttc_tensor_data *small = ttc_tensor_data_copy(w, 8);
    CHECK(ttc_graph_parse_ex(txt, lookup, small, &g2) == TTC_ERR_PARSE && strstr(ttc_last_error(), "bytes"),
          "%s", ttc_last_error());
    ttc_tensor_data_unref(small);
    CHECK(d->refcount == 2, "refcount %d", d->refcount);
    free(txt);
    ttc_graph_free(g);
    CHECK(d->refcount == 1);
    ttc_tensor_data_unref(d);
}

static void expect_error(const char *src, const char *where, const char *what) {
    ttc_graph *g = NULL;
    ttc_status s = ttc_graph_parse(src, &g);
    CHECK(s == TTC_ERR_PARSE && !g, "expected a parse error for:\n%s", src);
    const char *m = ttc_last_error();
    CHECK(!strncmp(m, where, strlen(where)) && strstr(m, what), "got \"%s\", wanted \"%s ...%s...\"", m, where, what);
    ttc_graph_free(g);
}

static void test_parse_errors(void) {
    expect_error("graph(%x : Float(2)):\n  %y : Float(2) = aten.relu.default(%q)\n  return (%y)\n",
                 "line 2, column 37", "undefined value %q");
    expect_error("graph(%x : Float(s9)):\n  return (%x)\n", "line 1, column 18", "unknown symbol s9");
    expect_error("graph(%x : Float(2)):\n  %x : Float(2) = aten.relu.default(%x)\n  return (%x)\n",
                 "line 2, column 3", "%x is defined twice");
    expect_error("graph(%x : Float(2)):\n  %y : Float(2) = aten.relu.default(%x\n  return (%y)\n",
                 "line 3, column 3", "expected ',' or ')'");
    expect_error("graph(", "line 1, column 7", "unterminated");
    expect_error("", "line 1, column 1", "expected 'graph'");
    expect_error("graph(%x : Float(2)):\n  %y : Float(2) = aten.relu.default(%x)\n", "line 3, column 1", "return");
    expect_error("graph(%x : Float(1, 2, 3, 4, 5, 6, 7, 8, 9)):\n  return (%x)\n", "line 1, column", "rank exceeds 8");
    expect_error("graph(%x : Float(99999999999999999999)):\n  return (%x)\n", "line 1, column 18", "out of range");
    expect_error("graph(%x : Float(-2)):\n  return (%x)\n", "line 1, column 18", ">= 0");
    expect_error("graph(%x : Flot(2)):\n  return (%x)\n", "line 1, column 12", "unknown type 'Flot'");
    expect_error("graph(%x : Float(s0)) where s0 in [4, 2, 8]:\n  return (%x)\n", "line 1, column 29", "min <= opt");
    expect_error("graph():\n  %t : Float(2) = prim.Constant[value=tensor([1.])]()\n  return (%t)\n", "line 2",
                 "1 elements, its type needs 2");
    expect_error("graph():\n  %t : Char(1) = prim.Constant[value=tensor([300])]()\n  return (%t)\n", "line 2",
                 "out of range for Char");
    expect_error("graph():\n  %c : int = prim.Constant[value=1]()  # bogus comment\n  return (%c)\n", "line 2",
                 "annotation");
    expect_error("graph():\n  %c : int = prim.Constant[value=\"abc]()\n  return (%c)\n", "line 2, column 34",
                 "unterminated string");
    expect_error("graph():\n  return ()\n  %c : int = prim.Constant[value=1]()\n", "line 3", "end of input");
    expect_error("graph():\n  %c : int = prim.Constant[value=1, value=2]()\n  return (%c)\n", "line 2",
                 "given twice");
}

/* Deterministic mutation fuzzing: every input must parse or fail cleanly; whatever parses
 * must print and parse back to an equal graph. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 11);
}

static void fuzz_one(const char *text) {
    ttc_graph *g = NULL;
    ttc_status s = ttc_graph_parse(text, &g);
    if (s != TTC_OK) {
        CHECK(s == TTC_ERR_PARSE && !g, "status %d: %s", s, ttc_last_error());
        return;
    }
    ttc_status v = ttc_graph_verify(g);
    CHECK(v == TTC_OK || v == TTC_ERR_VERIFY, "verify status %d: %s", v, ttc_last_error());
    char *t = ttc_graph_print(g);
    ttc_graph *g2 = NULL;
    CHECK(t && ttc_graph_parse(t, &g2) == TTC_OK && ttc_graph_equal(g, g2), "fuzz round trip failed:\n%s\n%s",
          text, ttc_last_error());
    ttc_graph *c = NULL;
    if (v == TTC_OK && ttc_graph_clone(g, &c) == TTC_OK) CHECK(ttc_graph_equal(g, c), "clone differs");
    ttc_graph_free(c);
    free(t);
    ttc_graph_free(g);
    ttc_graph_free(g2);
}

static void test_fuzz(void) {
    const char *seeds[] = {
        full_graph,
        "graph(%x : Float(s0, 3, 8, 8), %w : Float(4, 3, 3, 3)) where s0 in [1, 2, 4]:\n"
        "  %b : NoneType = prim.Constant()\n"
        "  %st : int[] = prim.Constant[value=[1, 1]]()\n"
        "  %pd : int[] = prim.Constant[value=[1, 1]]()\n"
        "  %dl : int[] = prim.Constant[value=[1, 1]]()\n"
        "  %f : bool = prim.Constant[value=false]()\n"
        "  %op : int[] = prim.Constant[value=[0, 0]]()\n"
        "  %g : int = prim.Constant[value=1]()\n"
        "  %c : Float(s0, 4, 8, 8) = aten.convolution.default(%x, %w, %b, %st, %pd, %dl, %f, %op, %g)\n"
        "  %r : Float(s0, 4, 8, 8) = aten.relu.default(%c)\n"
        "  %one : int = prim.Constant[value=1]()\n"
        "  %m1 : int = prim.Constant[value=-1]()\n"
        "  %fl : Float(s0, 256) = aten.flatten.using_ints(%r, %one, %m1)\n"
        "  %ad : Float(s0, 256) = aten.add.Tensor(%fl, %fl, %one)\n"
        "  return (%ad)\n",
    };
    int iters = 0;
    for (int k = 0; k < 2500; k++) {
        const char *src = seeds[k % 2];
        size_t n = strlen(src);
        char *buf = malloc(n * 2 + 16);
        memcpy(buf, src, n + 1);
        int muts = 1 + (int)(rnd() % 3);
        for (int m = 0; m < muts; m++) {
            size_t len = strlen(buf);
            if (!len) break;
            size_t at = rnd() % len;
            switch (rnd() % 5) {
            case 0: buf[at] = (char)(1 + rnd() % 255); break;            /* byte flip */
            case 1: buf[at] = 0; break;                                  /* truncation */
            case 2: {                                                    /* duplicate a span */
                size_t sl = 1 + rnd() % 12;
                if (at + sl > len) sl = len - at;
                if (len + sl < n * 2 + 8) memmove(buf + at + sl, buf + at, len - at + 1);
                break;
            }
            case 3: {                                                    /* delete a span */
                size_t sl = 1 + rnd() % 8;
                if (at + sl > len) sl = len - at;
                memmove(buf + at, buf + at + sl, len - at - sl + 1);
                break;
            }
            default: {                                                   /* swap in a token char */
                const char tok[] = "%(),:=[]\"*+-#\n0123456789s";
                buf[at] = tok[rnd() % (sizeof tok - 1)];
            }
            }
        }
        fuzz_one(buf);
        free(buf);
        iters++;
    }
    CHECK(iters == 2500);
}

TEST_MAIN(test_round_trip_full, test_round_trip_small, test_tensor_by_name, test_parse_errors, test_fuzz)
