/* fold_batch_norm: W' = W * g / sqrt(var + eps), b' = (b - mean) * g / sqrt(var + eps) + beta. */
#include "tests/test_pass_util.h"

#define CONV_ARGS "%n, %s, %p, %s, %f, %p, %g)\n"
static const char *graph_text =
    "graph(%x : Float(1, 2, 3, 3)):\n"
    "  %w : Float(2, 2, 1, 1) = prim.Constant[value=tensor([1, 2, 3, 4])]()\n"
    "  %n : NoneType = prim.Constant()\n"
    "  %s : int[] = prim.Constant[value=[1, 1]]()\n"
    "  %p : int[] = prim.Constant[value=[0, 0]]()\n"
    "  %f : bool = prim.Constant[value=false]()\n"
    "  %g : int = prim.Constant[value=1]()\n"
    "  %gamma : Float(2) = prim.Constant[value=tensor([4, 1])]()\n"
    "  %beta : Float(2) = prim.Constant[value=tensor([5, 0])]()\n"
    "  %mean : Float(2) = prim.Constant[value=tensor([1, -2])]()\n"
    "  %var : Float(2) = prim.Constant[value=tensor([3, 0])]()\n"
    "  %mom : float = prim.Constant[value=0.1]()\n"
    "  %eps : float = prim.Constant[value=1.]()\n"
    "  %c : Float(1, 2, 3, 3) = aten.convolution.default(%x, %w, " CONV_ARGS
    "  %y : Float(1, 2, 3, 3), %m : Float(0), %v : Float(0) = "
    "aten._native_batch_norm_legit_no_training.default(%c, %gamma, %beta, %mean, %var, %mom, %eps)\n"
    "  %r : Float(1, 2, 3, 3) = aten.relu.default(%y)\n"
    "  return (%r)\n";

static void test_fold(void) {
    bool ch = false;
    ttc_graph *g = run_pass_on(ttc_pass_fold_batch_norm, graph_text, &ch);
    if (!g) return;
    CHECK(ch);
    ttc_node *conv = ttc_graph_find_value(g, "c")->producer;
    ttc_node *relu = ttc_graph_find_value(g, "r")->producer;
    CHECK(relu->inputs[0] == conv->outputs[0], "relu reads the conv directly");
    const ttc_attr *w = ttc_value_const(conv->inputs[1]), *b = ttc_value_const(conv->inputs[2]);
    CHECK(w && b && w->kind == TTC_ATTR_TENSOR && b->kind == TTC_ATTR_TENSOR);
    if (w && b && w->tensor && b->tensor) {
        const float *wd = w->tensor->data, *bd = b->tensor->data;
        /* channel 0: s = 4 / sqrt(3 + 1) = 2; channel 1: s = 1 / sqrt(0 + 1) = 1 */
        CHECK(wd[0] == 2 && wd[1] == 4 && wd[2] == 3 && wd[3] == 4, "%g %g %g %g", wd[0], wd[1], wd[2], wd[3]);
        CHECK(bd[0] == 3 && bd[1] == 2, "%g %g", bd[0], bd[1]);
    }
    for (int i = 0; i < g->n_nodes; i++)
        CHECK(g->nodes[i]->op != TTC_OP_BN_NO_TRAINING, "batch norm still there");
    ttc_graph_free(g);
}

static void test_no_fold(void) {
    /* the mean output is used: not an inference-only batch norm */
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", graph_text);
    char *ret = strstr(buf, "return (%r)");
    if (ret) memcpy(ret, "return (%m)", 11);
    bool ch = true;
    ttc_graph *g = run_pass_on(ttc_pass_fold_batch_norm, buf, &ch);
    CHECK(g && !ch);
    ttc_graph_free(g);
}

TEST_MAIN(test_fold, test_no_fold)
