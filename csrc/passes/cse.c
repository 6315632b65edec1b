/*
 * Common subexpression elimination: two pure nodes with the same op, the same inputs, the
 * same attributes and the same output types compute the same values; later ones are
 * replaced by the first. Constants are included (equal literals; tensor constants only
 * when they share their data). Impure and opaque ops are never merged. One scan with a
 * hash map keyed by a canonical text of the node: linear in the graph's size.
 */
#include "pass_manager.h"
#include "pass_util.h"
#include "../ir/strmap.h"

#include <stdlib.h>
#include <string.h>

static void key_type(ttc_sbuf *b, const ttc_type *t) {
    ttc_sbuf_printf(b, "%d/%d/%d/%d", t->kind, t->elem, t->dtype, t->rank);
    if (t->kind == TTC_TYPE_TENSOR)
        for (int i = 0; i < t->rank; i++)
            ttc_sbuf_printf(b, ",%d:%lld:%lld", t->dims[i].sym, (long long)t->dims[i].mul, (long long)t->dims[i].add);
}

static void key_attr(ttc_sbuf *b, const ttc_attr *a) {
    ttc_sbuf_printf(b, "[%s=%d:%lld:%a", a->name ? a->name : "", a->kind, (long long)a->i, a->f);
    if (a->kind == TTC_ATTR_STR && a->s) {
        ttc_sbuf_printf(b, ":%zu:", strlen(a->s));
        ttc_sbuf_append(b, a->s, strlen(a->s));
    }
    for (int i = 0; i < a->n && a->ints; i++) ttc_sbuf_printf(b, ",%lld", (long long)a->ints[i]);
    for (int i = 0; i < a->n && a->floats; i++) ttc_sbuf_printf(b, ",%a", a->floats[i]);
    if (a->kind == TTC_ATTR_TENSOR) ttc_sbuf_printf(b, ":%p", (void *)(a->tensor ? a->tensor->data : NULL));
    ttc_sbuf_printf(b, "]");
}

static char *node_key(const ttc_node *n) {
    ttc_sbuf b = {0};
    ttc_sbuf_printf(&b, "%s(", n->op_name);
    for (int i = 0; i < n->n_inputs; i++) ttc_sbuf_printf(&b, "%d,", n->inputs[i]->id);
    ttc_sbuf_printf(&b, ")");
    for (int i = 0; i < n->n_attrs; i++) key_attr(&b, &n->attrs[i]);
    for (int i = 0; i < n->n_outputs; i++) { ttc_sbuf_printf(&b, "->"); key_type(&b, &n->outputs[i]->type); }
    return ttc_sbuf_take(&b);
}

ttc_status ttc_pass_cse(ttc_graph *g, void *ctx, bool *changed) {
    (void)ctx;
    *changed = false;
    ttc_status s = TTC_OK;
    ttc_strmap map = {0};
    int32_t n = g->n_nodes;
    char **keys = ttc_calloc((size_t)(n ? n : 1), sizeof(char *));
    bool *kill = ttc_calloc((size_t)(n ? n : 1), sizeof(bool));
    if (!keys || !kill) { s = TTC_ERR_NOMEM; goto done; }
    for (int32_t i = 0; i < n; i++) {
        ttc_node *nd = g->nodes[i];
        const ttc_op_info *info = ttc_op_info_get(nd->op);
        if (!info || (info->flags & TTC_OPF_IMPURE) || nd->n_outputs == 0) continue;
        if (!(keys[i] = node_key(nd))) { s = TTC_ERR_NOMEM; goto done; }
        ttc_node *first = ttc_strmap_get(&map, keys[i]);
        if (!first) {
            if ((s = ttc_strmap_put(&map, keys[i], nd))) goto done;
            continue;
        }
        for (int o = 0; o < nd->n_outputs; o++)
            if ((s = ttc_pass_replace_value(g, nd->outputs[o], first->outputs[o]))) goto done;
        kill[i] = true;
        *changed = true;
    }
    s = ttc_pass_erase_marked(g, kill);
done:
    ttc_strmap_free(&map);
    if (keys)
        for (int32_t i = 0; i < n; i++) free(keys[i]);
    free(keys);
    free(kill);
    return s;
}
