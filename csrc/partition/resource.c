/*
 * Resource partitioning: a backend segment whose tensor constants (weights) exceed the
 * memory budget is cut into consecutive pieces (prefixes of its node order, so the
 * pieces stay in a valid topological order) that each fit, as far as atomic subgraphs
 * allow. Atomic subgraphs are fused by the engine and are never cut: a cut may not fall
 * between the first and last node of one. Built-in patterns, as in seeds/002:
 *   conv -> bn -> {silu, gelu, relu, sigmoid};  conv -> {silu, gelu, relu, sigmoid};
 *   mul -> add;  mul -> mul
 * plus settings.atomic_patterns ("op|op -> op -> ..."). A chain step may pass through
 * prim.getitem (multi-output producers such as batch norm).
 */
#include "partition.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CONV "aten.convolution.default|aten.conv2d.default|aten.conv1d.default"
#define BN "aten._native_batch_norm_legit_no_training.default|aten.batch_norm.default"
#define ACT "aten.silu.default|aten.gelu.default|aten.relu.default|aten.sigmoid.default"
static const char *const builtin_patterns[] = {
    CONV " -> " BN " -> " ACT,
    CONV " -> " ACT,
    "aten.mul.Tensor|aten.mul.Scalar -> aten.add.Tensor|aten.add.Scalar",
    "aten.mul.Tensor|aten.mul.Scalar -> aten.mul.Tensor|aten.mul.Scalar",
};

int64_t ttc_part_memory_budget(const ttc_partition_settings *s) {
    if (s->cpu_memory_budget > 0) return s->cpu_memory_budget;
    long pages = sysconf(_SC_AVPHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || psz <= 0) return (int64_t)1 << 32;
    return (int64_t)pages * (int64_t)psz / 4;
}

/* Whether op matches one step: alternatives separated by '|', spaces ignored. */
static bool step_matches(const char *op, const char *step, size_t len) {
    char buf[256];
    size_t i = 0;
    while (i < len) {
        while (i < len && (step[i] == ' ' || step[i] == '|')) i++;
        size_t j = 0;
        while (i < len && step[i] != '|' && step[i] != ' ' && j + 1 < sizeof buf) buf[j++] = step[i++];
        buf[j] = 0;
        if (j && ttc_op_name_matches(op, buf)) return true;
    }
    return false;
}

/* Splits a pattern into steps: starts[k], lens[k]. Returns the step count (<= 16). */
static int split_steps(const char *p, const char **starts, size_t *lens) {
    int k = 0;
    while (*p && k < 16) {
        const char *e = strstr(p, "->");
        size_t l = e ? (size_t)(e - p) : strlen(p);
        starts[k] = p;
        lens[k++] = l;
        if (!e) break;
        p = e + 2;
    }
    return k;
}

static int32_t uf_find(int32_t *par, int32_t x) {
    while (par[x] != x) { par[x] = par[par[x]]; x = par[x]; }
    return x;
}

static void uf_union(int32_t *par, int32_t a, int32_t b) {
    a = uf_find(par, a);
    b = uf_find(par, b);
    if (a != b) par[a < b ? b : a] = a < b ? a : b;
}

/* Tries to match pattern steps from node i; unites the chain's nodes on success. */
static void match_from(const ttc_part_state *st, int32_t i, const char **starts, const size_t *lens, int k,
                       int32_t *par) {
    int32_t chain[64];
    int n_chain = 0;
    const ttc_node *cur = st->g->nodes[i];
    chain[n_chain++] = i;
    for (int step = 1; step < k; step++) {
        const ttc_node *next = NULL;
        for (int o = 0; o < cur->n_outputs && !next; o++) {
            const ttc_value *v = cur->outputs[o];
            for (int u = 0; u < v->n_users && !next; u++) {
                const ttc_node *us = v->users[u];
                if (st->seg[us->order] != st->seg[i]) continue;
                if (us->op == TTC_OP_GETITEM && n_chain < 62) {
                    for (int u2 = 0; u2 < us->outputs[0]->n_users && !next; u2++) {
                        const ttc_node *w = us->outputs[0]->users[u2];
                        if (st->seg[w->order] == st->seg[i] && step_matches(w->op_name, starts[step], lens[step])) {
                            chain[n_chain++] = us->order;
                            next = w;
                        }
                    }
                } else if (step_matches(us->op_name, starts[step], lens[step])) {
                    next = us;
                }
            }
        }
        if (!next || n_chain >= 63) return;
        chain[n_chain++] = next->order;
        cur = next;
    }
    for (int c = 1; c < n_chain; c++) uf_union(par, chain[0], chain[c]);
}

static int64_t node_weight(const ttc_node *nd, int32_t *cstamp, int32_t piece) {
    int64_t w = 0;
    for (int j = 0; j < nd->n_inputs; j++) {
        const ttc_node *p = nd->inputs[j]->producer;
        if (!p || p->op != TTC_OP_CONSTANT || cstamp[p->order] == piece) continue;
        const ttc_attr *a = ttc_node_attr(p, "value");
        if (a && a->kind == TTC_ATTR_TENSOR && a->tensor) w += (int64_t)a->tensor->nbytes;
    }
    return w;
}

static void stamp_node(const ttc_node *nd, int32_t *cstamp, int32_t piece) {
    for (int j = 0; j < nd->n_inputs; j++) {
        const ttc_node *p = nd->inputs[j]->producer;
        if (p && p->op == TTC_OP_CONSTANT) cstamp[p->order] = piece;
    }
}

ttc_status ttc_part_split_resources(ttc_part_state *st) {
    const ttc_partition_settings *s = st->s;
    int64_t budget = ttc_part_memory_budget(s);
    int32_t n = st->n, ns = st->n_segs;
    size_t nb = (size_t)(n ? n : 1);
    int32_t *par = ttc_malloc(sizeof(int32_t) * nb), *cstamp = ttc_malloc(sizeof(int32_t) * nb);
    int32_t *lo = ttc_malloc(sizeof(int32_t) * nb), *hi = ttc_malloc(sizeof(int32_t) * nb);
    int32_t *pos = ttc_malloc(sizeof(int32_t) * nb), *piece = ttc_calloc(nb, sizeof(int32_t));
    int32_t *seen = ttc_calloc((size_t)(ns + 1), sizeof(int32_t)), *base = ttc_calloc((size_t)(ns + 2), sizeof(int32_t));
    int32_t *n_pieces = ttc_calloc((size_t)(ns + 1), sizeof(int32_t));
    int32_t *blocked = ttc_calloc(nb + 1, sizeof(int32_t));
    int32_t **order = ttc_calloc((size_t)(ns + 1), sizeof(int32_t *));
    int64_t *seg_w = ttc_calloc((size_t)(ns + 1), sizeof(int64_t));
    bool *nm = NULL;
    ttc_status rc = TTC_ERR_NOMEM;
    if (!par || !cstamp || !lo || !hi || !pos || !piece || !seen || !base || !n_pieces || !blocked || !order || !seg_w)
        goto done;
    for (int32_t i = 0; i < n; i++) { par[i] = i; cstamp[i] = -1; }
    /* 1. atomic groups (union of overlapping matches) within backend segments */
    int n_pat = (int)(sizeof builtin_patterns / sizeof builtin_patterns[0]) + s->n_atomic_patterns;
    for (int p = 0; p < n_pat; p++) {
        const char *pat = p < 4 ? builtin_patterns[p] : s->atomic_patterns[p - 4];
        const char *starts[16];
        size_t lens[16];
        int k = pat ? split_steps(pat, starts, lens) : 0;
        if (k < 2) continue;
        for (int32_t i = 0; i < n; i++)
            if (st->seg[i] >= 0 && st->target[i] != TTC_TARGET_TORCH &&
                step_matches(st->g->nodes[i]->op_name, starts[0], lens[0]))
                match_from(st, i, starts, lens, k, par);
    }
    /* 2. per segment: weight and node positions */
    for (int32_t i = 0; i < n; i++) {
        int32_t sg = st->seg[i];
        if (sg < 0) continue;
        pos[i] = seen[sg]++;
        seg_w[sg] += node_weight(st->g->nodes[i], cstamp, sg);
        stamp_node(st->g->nodes[i], cstamp, sg);
    }
    for (int32_t sg = 0; sg < ns; sg++)
        if (!(order[sg] = ttc_malloc(sizeof(int32_t) * (size_t)(seen[sg] ? seen[sg] : 1)))) goto done;
    for (int32_t i = 0; i < n; i++)
        if (st->seg[i] >= 0) order[st->seg[i]][pos[i]] = i;
    /* group spans in segment positions */
    for (int32_t i = 0; i < n; i++) { lo[i] = INT32_MAX; hi[i] = -1; }
    for (int32_t i = 0; i < n; i++) {
        if (st->seg[i] < 0) continue;
        int32_t r = uf_find(par, i);
        if (pos[i] < lo[r]) lo[r] = pos[i];
        if (pos[i] > hi[r]) hi[r] = pos[i];
    }
    for (int32_t i = 0; i < n; i++) cstamp[i] = -1;
    /* 3. greedy packing of the cuttable units of each oversized backend segment */
    int32_t piece_id = 0;
    for (int32_t sg = 0; sg < ns; sg++) {
        int32_t m = seen[sg];
        n_pieces[sg] = 1;
        if (!m || st->target[order[sg][0]] == TTC_TARGET_TORCH || seg_w[sg] <= budget) continue;
        /* blocked[p] > 0: a cut before position p would split a group */
        memset(blocked, 0, sizeof(int32_t) * (size_t)(m + 1));
        for (int32_t p = 0; p < m; p++) {
            int32_t i = order[sg][p], r = uf_find(par, i);
            if (r == i && hi[r] > lo[r]) { blocked[lo[r] + 1]++; blocked[hi[r] + 1]--; }
        }
        for (int32_t p = 1; p <= m; p++) blocked[p] += blocked[p - 1];
        int64_t pw = 0;
        int32_t cur = 0, p = 0;
        piece_id++;
        while (p < m) {
            int32_t q = p + 1;
            while (q < m && blocked[q] > 0) q++;
            int64_t uw = 0;
            for (int32_t x = p; x < q; x++) uw += node_weight(st->g->nodes[order[sg][x]], cstamp, piece_id);
            if (p > 0 && pw > 0 && uw > 0 && pw + uw > budget) {
                cur++;
                piece_id++;
                pw = 0;
                uw = 0;
                for (int32_t x = p; x < q; x++) uw += node_weight(st->g->nodes[order[sg][x]], cstamp, piece_id);
            }
            for (int32_t x = p; x < q; x++) {
                stamp_node(st->g->nodes[order[sg][x]], cstamp, piece_id);
                piece[order[sg][x]] = cur;
            }
            pw += uw;
            p = q;
        }
        n_pieces[sg] = cur + 1;
    }
    /* 4. renumber: pieces of a split segment are never merged back */
    for (int32_t sg = 0; sg < ns; sg++) base[sg + 1] = base[sg] + n_pieces[sg];
    if (!(nm = ttc_calloc((size_t)(base[ns] + 1), sizeof(bool)))) goto done;
    for (int32_t sg = 0; sg < ns; sg++)
        for (int32_t k = 0; k < n_pieces[sg]; k++) nm[base[sg] + k] = n_pieces[sg] > 1 || st->seg_nomerge[sg];
    for (int32_t i = 0; i < n; i++)
        if (st->seg[i] >= 0) st->seg[i] = base[st->seg[i]] + piece[i];
    free(st->seg_nomerge);
    st->seg_nomerge = nm;
    st->n_segs = base[ns];
    rc = TTC_OK;
done:
    if (order)
        for (int32_t sg = 0; sg < ns; sg++) free(order[sg]);
    free(order);
    free(par); free(cstamp); free(lo); free(hi); free(pos); free(piece);
    free(seen); free(base); free(n_pieces); free(blocked); free(seg_w);
    return rc;
}
