/* Conversion and code generation (no device needed) for the data-movement converters:
 * cat/stack chains, split views, pad, indexing, creation, resize, attention; validators
 * saying no (with a reason) for what the converters do not handle. Run under
 * `make ctest SAN=1` for memory safety; numerics are checked against torch in
 * tests/test_converters_*.py. */
#include "convert/convert.h"
#include "engine/engine_impl.h"
#include "tests/ctest.h"

/* Parses, converts, fuses and generates code; returns the source (malloc'd) or NULL. */
static char *generate(const char *text, int32_t *n_kernels) {
    ttc_graph *g = NULL;
    ttc_status s = ttc_graph_parse(text, &g);
    CHECK(s == TTC_OK, "parse: %s", ttc_last_error());
    if (s != TTC_OK) return NULL;
    ttc_kir *k = NULL;
    s = ttc_convert_graph(g, false, &k);
    CHECK(s == TTC_OK, "convert: %s", ttc_last_error());
    char *src = NULL;
    if (s == TTC_OK) {
        int32_t fused = 0;
        CHECK_OK(ttc_fuse(k, &fused));
        ttc_codegen cg;
        s = ttc_codegen_run(k, false, &cg);
        CHECK(s == TTC_OK, "codegen: %s", ttc_last_error());
        if (s == TTC_OK) {
            src = ttc_strdup(cg.source);
            if (n_kernels) *n_kernels = cg.n_kernels;
            ttc_codegen_free(&cg);
        }
    }
    ttc_kir_free(k);
    ttc_graph_free(g);
    return src;
}

/* The validator's answer for the single non-prim node of the graph. */
static bool supported(const char *text, char **why) {
    ttc_graph *g = NULL;
    *why = NULL;
    if (ttc_graph_parse(text, &g) != TTC_OK) {
        CHECK(false, "parse: %s", ttc_last_error());
        return false;
    }
    bool ok = true;
    for (int32_t i = 0; i < g->n_nodes; i++) {
        const ttc_node *n = g->nodes[i];
        if (n->op == TTC_OP_CONSTANT || n->op == TTC_OP_LIST_CONSTRUCT) continue;
        ok = ttc_op_supported(g, n, false, why, NULL);
    }
    ttc_graph_free(g);
    return ok;
}

static void test_cat_chain_and_split(void) {
    int32_t nk = 0;
    char *src = generate(
        "graph(%a : Float(s0, 1), %b : Float(s0, 3), %c : Float(s0, 7)) where s0 in [1, 4, 16]:\n"
        "  %l : Tensor[] = prim.ListConstruct(%a, %b, %c, %a, %b, %c)\n"
        "  %d : int = prim.Constant[value=-1]()\n"
        "  %y : Float(s0, 22) = aten.cat.default(%l, %d)\n"
        "  %s : int = prim.Constant[value=5]()\n"
        "  %one : int = prim.Constant[value=1]()\n"
        "  %p0 : Float(s0, 5), %p1 : Float(s0, 5), %p2 : Float(s0, 5), %p3 : Float(s0, 5), %p4 : Float(s0, 2) = "
        "aten.split.Tensor(%y, %s, %one)\n"
        "  %r : Float(s0, 2) = aten.relu.default(%p4)\n"
        "  return (%r, %p1)\n", &nk);
    CHECK(src != NULL, "no source");
    if (!src) return;
    /* two chained CONCAT kernels (4 + 3 inputs), then the outputs' copies */
    CHECK(strstr(src, "x3_len") != NULL, "first link reads four inputs:\n%s", src);
    CHECK(nk >= 2, "kernels: %d", nk);
    free(src);
}

static void test_stack_pad_index_create(void) {
    char *src = generate(
        "graph(%a : Float(3, 5), %b : Float(3, 5), %ix : Long(2, 4), %w : Float(7, 5)) :\n"
        "  %l : Tensor[] = prim.ListConstruct(%a, %b, %a, %b, %a)\n"
        "  %one : int = prim.Constant[value=1]()\n"
        "  %st : Float(3, 5, 5) = aten.stack.default(%l, %one)\n"
        "  %pad : int[] = prim.Constant[value=[1, -1, 2, 0]]()\n"
        "  %v : float = prim.Constant[value=0.5]()\n"
        "  %pd : Float(3, 7, 5) = aten.constant_pad_nd.default(%st, %pad, %v)\n"
        "  %n : NoneType = prim.Constant()\n"
        "  %il : Tensor[] = prim.ListConstruct(%n, %ix)\n"
        "  %g : Float(3, 2, 4, 5) = aten.index.Tensor(%pd, %il)\n"
        "  %f : bool = prim.Constant[value=false]()\n"
        "  %m1 : int = prim.Constant[value=-1]()\n"
        "  %e : Float(2, 4, 5) = aten.embedding.default(%w, %ix, %m1, %f, %f)\n"
        "  %z : Float(2, 4, 5) = aten.ones_like.default(%e, %n, %n, %n, %n, %n)\n"
        "  %s : Float(2, 4, 5) = aten.add.Tensor(%e, %z, %one)\n"
        "  %ten : int = prim.Constant[value=10]()\n"
        "  %ar : Long(10) = aten.arange.default(%ten, %n, %n, %n, %f)\n"
        "  return (%g, %s, %ar)\n", NULL);
    CHECK(src != NULL, "no source");
    free(src);
}

static void test_resize_attention(void) {
    char *src = generate(
        "graph(%x : Float(s0, 3, 5, 7), %q : Float(s0, 2, 9, 8), %m : Bool(s0, 1, 1, 9)) where s0 in [1, 2, 4]:\n"
        "  %n : NoneType = prim.Constant()\n"
        "  %sc : float[] = prim.Constant[value=[2., 2.]]()\n"
        "  %t : bool = prim.Constant[value=true]()\n"
        "  %f : bool = prim.Constant[value=false]()\n"
        "  %y : Float(s0, 3, 10, 14) = aten.upsample_bilinear2d.vec(%x, %n, %t, %sc)\n"
        "  %z : Float(s0, 3, 10, 14) = aten.upsample_nearest2d.vec(%x, %n, %sc)\n"
        "  %dp : float = prim.Constant[value=0.]()\n"
        "  %a : Float(s0, 2, 9, 8) = aten.scaled_dot_product_attention.default(%q, %q, %q, %m, %dp, %f, %n, %f)\n"
        "  return (%y, %z, %a)\n", NULL);
    CHECK(src != NULL, "no source");
    if (src) CHECK(strstr(src, "float acc[8]") != NULL, "attention accumulates 8 values per row");
    free(src);
}

static void test_validators_say_why(void) {
    char *why = NULL;
    /* a boolean mask index: data-dependent shape */
    CHECK(!supported("graph(%x : Float(4, 3), %m : Bool(4)):\n"
                     "  %il : Tensor[] = prim.ListConstruct(%m)\n"
                     "  %y : Float(2, 3) = aten.index.Tensor(%x, %il)\n"
                     "  return (%y)\n", &why) && why && strstr(why, "mask"), "bool index: %s", why ? why : "(null)");
    free(why);
    /* an odd pad list */
    CHECK(!supported("graph(%x : Float(4, 3)):\n"
                     "  %p : int[] = prim.Constant[value=[1, 2, 3]]()\n"
                     "  %v : float = prim.Constant[value=0.]()\n"
                     "  %y : Float(4, 6) = aten.constant_pad_nd.default(%x, %p, %v)\n"
                     "  return (%y)\n", &why) && why && strstr(why, "pad"), "odd pad: %s", why ? why : "(null)");
    free(why);
    /* symbolic head dim in attention */
    CHECK(!supported("graph(%q : Float(2, 3, s0)) where s0 in [1, 4, 8]:\n"
                     "  %n : NoneType = prim.Constant()\n"
                     "  %f : bool = prim.Constant[value=false]()\n"
                     "  %dp : float = prim.Constant[value=0.]()\n"
                     "  %a : Float(2, 3, s0) = aten.scaled_dot_product_attention.default(%q, %q, %q, %n, %dp, %f, %n, %f)\n"
                     "  return (%a)\n", &why) && why && strstr(why, "head dim"), "symbolic head dim: %s", why ? why : "(null)");
    free(why);
    /* a float64 tensor inside cat's list (the list hides it from the generic type check) */
    CHECK(!supported("graph(%x : Double(2, 3)):\n"
                     "  %l : Tensor[] = prim.ListConstruct(%x, %x)\n"
                     "  %d : int = prim.Constant[value=0]()\n"
                     "  %y : Double(4, 3) = aten.cat.default(%l, %d)\n"
                     "  return (%y)\n", &why) && why, "float64 cat: %s", why ? why : "(null)");
    free(why);
    /* chunk of a symbolic dim */
    CHECK(!supported("graph(%x : Float(s0, 3)) where s0 in [2, 4, 8]:\n"
                     "  %c : int = prim.Constant[value=2]()\n"
                     "  %d : int = prim.Constant[value=0]()\n"
                     "  %a : Float(s0, 3), %b : Float(s0, 3) = aten.chunk.default(%x, %c, %d)\n"
                     "  return (%a, %b)\n", &why) && why && strstr(why, "symbolic"), "chunk: %s", why ? why : "(null)");
    free(why);
}

TEST_MAIN(test_cat_chain_and_split, test_stack_pad_index_create, test_resize_attention, test_validators_say_why)
