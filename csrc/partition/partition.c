/* The partitioner's driver: capability, segmentation, fix-ups, result. See partition.h. */
#include "partition.h"

#include <stdlib.h>
#include <string.h>

void ttc_partition_settings_init(ttc_partition_settings *s) {
    memset(s, 0, sizeof *s);
    s->min_block_size = 5;
    s->strategy = TTC_PARTITION_FAST;
}

/* Control flow gets a segment of its own that is never merged (do_not_merge). */
static bool is_control_flow(const char *op) {
    static const char *const names[] = {"prim.If", "prim.Loop", "higher_order.cond", "higher_order.while_loop",
                                        "torch.ops.higher_order.cond", "torch.ops.higher_order.while_loop"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(op, names[i])) return true;
    return false;
}

/* Engines bind tensors only: scalars (aten.sym_size.int results and the like) stay inside
 * the segment that computes them too. */
static bool bad_boundary_kind(const ttc_type *t) {
    return t->kind == TTC_TYPE_LIST || t->kind == TTC_TYPE_ANY || t->kind == TTC_TYPE_STR ||
           t->kind == TTC_TYPE_NONE || t->kind == TTC_TYPE_INT || t->kind == TTC_TYPE_FLOAT ||
           t->kind == TTC_TYPE_BOOL;
}

static void state_free(ttc_part_state *st) {
    if (st->reason)
        for (int32_t i = 0; i < st->n; i++) free(st->reason[i]);
    free(st->reason);
    free(st->constlike);
    free(st->target);
    free(st->want);
    free(st->isolate);
    free(st->seg);
    free(st->seg_nomerge);
}

static ttc_status state_init(ttc_part_state *st, const ttc_graph *g, const ttc_partition_settings *s) {
    memset(st, 0, sizeof *st);
    st->g = g;
    st->s = s;
    st->n = g->n_nodes;
    size_t n = (size_t)(g->n_nodes ? g->n_nodes : 1);
    st->constlike = ttc_calloc(n, sizeof(bool));
    st->isolate = ttc_calloc(n, sizeof(bool));
    st->target = ttc_calloc(n, sizeof(int32_t));
    st->want = ttc_calloc(n, sizeof(int32_t));
    st->seg = ttc_calloc(n, sizeof(int32_t));
    st->reason = ttc_calloc(n, sizeof(char *));
    if (!st->constlike || !st->isolate || !st->target || !st->want || !st->seg || !st->reason)
        return TTC_ERR_NOMEM;
    for (int32_t i = 0; i < st->n; i++) {
        const ttc_node *nd = g->nodes[i];
        if (nd->order != i) return TTC_FAIL(TTC_ERR_INVALID_ARG, "node %s: stale order field", nd->op_name);
        bool all_const = true;
        for (int j = 0; j < nd->n_inputs; j++) {
            const ttc_value *v = nd->inputs[j];
            if (!v->producer) { all_const = false; continue; }
            if (v->producer->dead || v->producer->order < 0 || v->producer->order >= i ||
                g->nodes[v->producer->order] != v->producer)
                return TTC_FAIL(TTC_ERR_INVALID_ARG,
                                "node %s (%s): input %%%s is not defined before it; the graph must be in "
                                "topological order", nd->name ? nd->name : "", nd->op_name, v->name);
            if (!st->constlike[v->producer->order]) all_const = false;
        }
        st->constlike[i] = nd->op == TTC_OP_CONSTANT ||
                           ((nd->op == TTC_OP_LIST_CONSTRUCT || nd->op == TTC_OP_TUPLE_CONSTRUCT) && all_const);
        st->isolate[i] = is_control_flow(nd->op_name);
    }
    return TTC_OK;
}

static const char *node_label(const ttc_node *n) {
    if (n->name) return n->name;
    return n->n_outputs ? n->outputs[0]->name : n->op_name;
}

static ttc_status capability(ttc_part_state *st) {
    const ttc_partition_settings *s = st->s;
    bool hier = s->strategy == TTC_PARTITION_HIERARCHICAL;
    for (int32_t i = 0; i < st->n; i++) {
        if (st->constlike[i]) { st->target[i] = -1; continue; }
        const ttc_node *nd = st->g->nodes[i];
        char *why = NULL;
        int32_t t = TTC_TARGET_TORCH;
        if (!hier) {
            if (ttc_node_capable(st->g, nd, s, &why)) t = 1;
            else if (!why) return TTC_ERR_NOMEM;
        } else {
            for (int32_t b = 0; b < s->n_backends; b++) {
                char *w = NULL;
                if (ttc_node_capable_on(st->g, nd, s, &s->backends[b], &w)) { t = b + 1; free(w); break; }
                if (!w) { free(why); return TTC_ERR_NOMEM; }
                if (b == 0) why = w;
                else free(w);
            }
            if (t == 1) { free(why); why = NULL; }
            if (!why && t != 1) why = ttc_strdup(s->n_backends ? "no backend supports it" : "no backends given");
        }
        st->target[i] = st->want[i] = t;
        st->reason[i] = why;
    }
    return TTC_OK;
}

static ttc_status full_compilation_error(ttc_part_state *st) {
    ttc_sbuf b = {0};
    int32_t bad = 0;
    for (int32_t i = 0; i < st->n; i++)
        if (!st->constlike[i] && st->target[i] == TTC_TARGET_TORCH) bad++;
    if (!bad) return TTC_OK;
    ttc_sbuf_printf(&b, "require_full_compilation: %d node(s) cannot run on the backend:", bad);
    for (int32_t i = 0; i < st->n; i++)
        if (!st->constlike[i] && st->target[i] == TTC_TARGET_TORCH) {
            const ttc_node *nd = st->g->nodes[i];
            ttc_sbuf_printf(&b, "\n  %s (%s): %s", node_label(nd), nd->op_name,
                            st->reason[i] ? st->reason[i] : "unsupported");
        }
    char *msg = ttc_sbuf_take(&b);
    ttc_status rc = ttc_fail(TTC_ERR_PARTITION, "%s", msg ? msg : "require_full_compilation violated");
    free(msg);
    return rc;
}

static ttc_status demote(ttc_part_state *st, int32_t i, char *why) {
    if (!why) return TTC_ERR_NOMEM;
    free(st->reason[i]);
    st->reason[i] = why;
    st->target[i] = TTC_TARGET_TORCH;
    return TTC_OK;
}

/* One round of fix-ups; *changed when a node went (or, without apply, would go) back to
 * torch. */
static ttc_status fixups(ttc_part_state *st, bool apply, bool *changed) {
    const ttc_graph *g = st->g;
    *changed = false;
    int32_t *compute = ttc_calloc((size_t)(st->n_segs + 1), sizeof(int32_t));
    bool *isout = ttc_calloc((size_t)(g->n_all_values + 1), sizeof(bool));
    ttc_status rc = TTC_ERR_NOMEM;
    if (!compute || !isout) goto done;
    for (int32_t i = 0; i < g->n_outputs; i++) isout[g->outputs[i]->id] = true;
    /* Non-tensor values cannot cross into or out of a backend segment. */
    for (int32_t i = 0; i < st->n; i++) {
        if (st->constlike[i] || st->target[i] == TTC_TARGET_TORCH) continue;
        const ttc_node *nd = g->nodes[i];
        int32_t s = st->seg[i];
        char *why = NULL;
        for (int j = 0; j < nd->n_inputs && !why; j++) {
            const ttc_value *v = nd->inputs[j];
            if (!bad_boundary_kind(&v->type)) continue;
            if (v->producer && (st->constlike[v->producer->order] || st->seg[v->producer->order] == s)) continue;
            if (!apply) { *changed = true; rc = TTC_OK; goto done; }
            why = ttc_strfmt("takes non-tensor value %%%s from outside its segment", v->name);
            if (!why) goto done;
        }
        for (int j = 0; j < nd->n_outputs && !why; j++) {
            const ttc_value *v = nd->outputs[j];
            if (!bad_boundary_kind(&v->type)) continue;
            bool crosses = isout[v->id];
            for (int u = 0; u < v->n_users && !crosses; u++) crosses = st->seg[v->users[u]->order] != s;
            if (crosses && !apply) { *changed = true; rc = TTC_OK; goto done; }
            if (crosses && !(why = ttc_strfmt("passes non-tensor value %%%s out of its segment", v->name)))
                goto done;
        }
        if (why) {
            if (demote(st, i, why)) goto done;
            *changed = true;
        }
    }
    if (st->s->min_block_size > 0) {
        for (int32_t i = 0; i < st->n; i++)
            if (st->seg[i] >= 0 && ttc_part_is_compute(g->nodes[i])) compute[st->seg[i]]++;
        for (int32_t i = 0; i < st->n; i++) {
            int32_t s = st->seg[i];
            if (s < 0 || st->target[i] == TTC_TARGET_TORCH || compute[s] >= st->s->min_block_size) continue;
            if (!apply) { *changed = true; break; }
            if (demote(st, i, compute[s] ? ttc_strfmt("block of %d compute ops < min_block_size %d", compute[s],
                                                      st->s->min_block_size)
                                         : ttc_strdup("block of 0 compute ops: views only, which torch runs as aliases "
                                                      "of their inputs without the copy an engine would make")))
                goto done;
            *changed = true;
        }
    }
    rc = TTC_OK;
done:
    free(compute);
    free(isout);
    return rc;
}

void ttc_partition_result_free(ttc_partition_result *r) {
    if (!r) return;
    for (int32_t i = 0; i < r->n_targets; i++) free(r->targets[i]);
    free(r->targets);
    for (int32_t i = 0; i < r->n_segments; i++) {
        free(r->segments[i].nodes);
        free(r->segments[i].inputs);
        free(r->segments[i].outputs);
        free(r->segments[i].constants);
    }
    free(r->segments);
    free(r);
}

static ttc_status make_targets(const ttc_partition_settings *s, ttc_partition_result *r) {
    bool hier = s->strategy == TTC_PARTITION_HIERARCHICAL;
    int32_t k = hier ? 1 + s->n_backends : 2;
    r->targets = ttc_calloc((size_t)k, sizeof(char *));
    if (!r->targets) return TTC_ERR_NOMEM;
    r->n_targets = k;
    if (!(r->targets[0] = ttc_strdup("torch"))) return TTC_ERR_NOMEM;
    for (int32_t t = 1; t < k; t++) {
        const char *nm = hier ? s->backends[t - 1].name : "opencl";
        if (!nm || !*nm) return TTC_FAIL(TTC_ERR_INVALID_ARG, "backend %d has no name", t - 1);
        if (!strcmp(nm, "torch")) return TTC_FAIL(TTC_ERR_INVALID_ARG, "a backend cannot be named torch");
        if (!(r->targets[t] = ttc_strdup(nm))) return TTC_ERR_NOMEM;
    }
    return TTC_OK;
}

/* Capability, then segmentation and fix-ups until stable. */
static ttc_status run(ttc_part_state *st, const ttc_graph *g, const ttc_partition_settings *s,
                      int32_t n_targets, ttc_status (*seg_fn)(ttc_part_state *)) {
    TTC_TRY(state_init(st, g, s));
    st->n_targets = n_targets;
    TTC_TRY(capability(st));
    if (s->require_full_compilation) TTC_TRY(full_compilation_error(st));
    /* Each round that changes something sends at least one node back to torch. */
    for (int32_t round = 0; round <= st->n; round++) {
        bool changed = false;
        TTC_TRY(seg_fn(st));
        TTC_TRY(ttc_part_merge_adjacent(st));
        if (s->require_full_compilation) break;
        TTC_TRY(fixups(st, true, &changed));
        if (!changed) break;
    }
    return TTC_OK;
}

/*
 * Global: the fewest segments. The ASAP staging is optimal for a fixed target assignment,
 * but fix-ups (min_block_size) change the assignment, differently for different
 * segmentations. So two candidates: ASAP from the capability answer, and ASAP over the
 * assignment the fast strategy settles on (kept only when it needs no further fix-up,
 * else the fast segmentation itself). The second never has more segments than fast.
 */
static ttc_status run_global(ttc_part_state *st, const ttc_graph *g, const ttc_partition_settings *s) {
    ttc_part_state alt;
    ttc_status rc = run(st, g, s, 2, ttc_part_segment_global);
    if (rc) return rc;
    memset(&alt, 0, sizeof alt);
    rc = run(&alt, g, s, 2, ttc_part_segment_fast);
    int32_t *saved = NULL;
    bool *saved_nm = NULL;
    int32_t saved_n = alt.n_segs;
    if (rc == TTC_OK && !s->require_full_compilation) {
        saved = ttc_malloc(sizeof(int32_t) * (size_t)(alt.n ? alt.n : 1));
        saved_nm = ttc_malloc(sizeof(bool) * (size_t)(alt.n_segs ? alt.n_segs : 1));
        if (!saved || !saved_nm) rc = TTC_ERR_NOMEM;
        if (rc == TTC_OK) {
            memcpy(saved, alt.seg, sizeof(int32_t) * (size_t)alt.n);
            memcpy(saved_nm, alt.seg_nomerge, sizeof(bool) * (size_t)alt.n_segs);
            bool needs_fix = false;
            rc = ttc_part_segment_global(&alt);
            if (rc == TTC_OK) rc = ttc_part_merge_adjacent(&alt);
            if (rc == TTC_OK) rc = fixups(&alt, false, &needs_fix);
            if (rc == TTC_OK && (needs_fix || alt.n_segs > saved_n)) {
                memcpy(alt.seg, saved, sizeof(int32_t) * (size_t)alt.n);
                free(alt.seg_nomerge);
                alt.seg_nomerge = saved_nm;
                saved_nm = NULL;
                alt.n_segs = saved_n;
            }
        }
    }
    if (rc == TTC_OK && alt.n_segs < st->n_segs) {
        ttc_part_state tmp = *st;
        *st = alt;
        alt = tmp;
    }
    free(saved);
    free(saved_nm);
    state_free(&alt);
    return rc;
}

ttc_status ttc_partition(ttc_graph *g, const ttc_partition_settings *s, ttc_partition_result **out) {
    *out = NULL;
    if (!g || !s) return TTC_FAIL(TTC_ERR_INVALID_ARG, "ttc_partition: graph and settings are required");
    if (s->min_block_size < 0) return TTC_FAIL(TTC_ERR_INVALID_ARG, "min_block_size must be >= 0, got %d", s->min_block_size);
    if (s->strategy == TTC_PARTITION_HIERARCHICAL && s->n_backends <= 0)
        return TTC_FAIL(TTC_ERR_INVALID_ARG, "hierarchical partitioning needs at least one backend");
    ttc_partition_result *r = ttc_calloc(1, sizeof *r);
    if (!r) return TTC_ERR_NOMEM;
    ttc_part_state st;
    memset(&st, 0, sizeof st);
    ttc_status rc = make_targets(s, r);
    if (rc == TTC_OK) {
        switch (s->strategy) {
        case TTC_PARTITION_NAIVE: rc = run(&st, g, s, r->n_targets, ttc_part_segment_naive); break;
        case TTC_PARTITION_GLOBAL: rc = run_global(&st, g, s); break;
        case TTC_PARTITION_FAST:
        case TTC_PARTITION_HIERARCHICAL: rc = run(&st, g, s, r->n_targets, ttc_part_segment_fast); break;
        default: rc = TTC_FAIL(TTC_ERR_INVALID_ARG, "unknown partition strategy %d", s->strategy);
        }
    }
    if (rc == TTC_OK && s->enable_resource_partitioning) rc = ttc_part_split_resources(&st);
    if (rc == TTC_OK) rc = ttc_part_build_segments(&st, r);
    if (rc == TTC_OK) {
        for (int32_t i = 0; i < st.n; i++) {
            ttc_node *nd = g->nodes[i];
            free(nd->reason);
            nd->reason = st.reason[i];
            st.reason[i] = NULL;
            nd->target = st.constlike[i] ? -1 : st.target[i];
            nd->segment = st.seg[i];
        }
        *out = r;
        r = NULL;
    }
    state_free(&st);
    ttc_partition_result_free(r);
    return rc;
}
