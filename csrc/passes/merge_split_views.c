/*
 * reshape -> permute -> reshape chains whose first reshape merges dims that the last one splits
 * again become one reshape that only splits, then one permute:
 *   q.view(L, B*H, D).transpose(0, 1).view(B, H, L, D)  ==  q.view(L, B, H, D).permute(1, 2, 0, 3)
 * (nn.MultiheadAttention's head split, torchvision's ViT). The merged dim B*H of a strided q
 * has no single stride, so the first form needs a copy where the second is a view of q
 * whatever q's strides (csrc/convert/conv_shape.c pushes splits down to the dense tensor).
 *
 * Both reshapes are cut into "atoms", the coarsest dims that every shape of the chain is a
 * product of consecutive runs of (size-1 dims belong to none). The rewrite applies when the
 * last shape is the permuted atoms themselves, possibly with size-1 dims in between, the
 * first reshape merges dims of its input (else there is nothing to win), each intermediate has
 * one use, and at most one atom is symbolic (it becomes the -1 of the new view's sizes).
 */
#include "pass_manager.h"
#include "pass_util.h"

#include <stdlib.h>
#include <string.h>

#define MAX_ATOMS (2 * TTC_MAX_RANK)

static bool is_one(ttc_dim d) { return d.sym < 0 && d.add == 1; }

static bool is_reshape(const ttc_node *n) {
    return n && (n->op == TTC_OP_VIEW || n->op == TTC_OP_RESHAPE || n->op == TTC_OP_UNSAFE_VIEW) && n->n_inputs >= 1 &&
           n->n_outputs == 1;
}

/* Common refinement of two row-major shapes of one tensor: atoms[0..*n) and, per dim of A and
 * B, the first atom it spans (ga[na] = gb[nb] = *n; a size-1 dim spans none). */
static bool refine(const ttc_dim *A, int32_t na, const ttc_dim *B, int32_t nb, ttc_dim *atoms, int32_t *n,
                   int32_t *ga, int32_t *gb) {
    int32_t i = 0, j = 0, m = 0;
    ttc_dim ra = {0}, rb = {0}, q;
    bool la = false, lb = false;
    for (;;) {
        if (!la) {
            while (i < na && is_one(A[i])) ga[i++] = m;
            if (i < na) { ga[i] = m; ra = A[i]; la = true; }
        }
        if (!lb) {
            while (j < nb && is_one(B[j])) gb[j++] = m;
            if (j < nb) { gb[j] = m; rb = B[j]; lb = true; }
        }
        if (!la || !lb) break;
        if (m >= MAX_ATOMS) return false;
        if (ttc_dim_eq(ra, rb)) {
            atoms[m++] = ra;
            i++, j++;
            la = lb = false;
        } else if (ttc_dim_divexact(rb, ra, &q) && !is_one(q)) {   /* A's dim is the outer part of B's */
            atoms[m++] = ra;
            rb = q;
            i++;
            la = false;
        } else if (ttc_dim_divexact(ra, rb, &q) && !is_one(q)) {
            atoms[m++] = rb;
            ra = q;
            j++;
            lb = false;
        } else {
            return false;
        }
    }
    if (la || lb) return false;
    ga[na] = gb[nb] = *n = m;
    return true;
}

/* The permutation of the permute/transpose/t node u (rank r) into p. */
static bool perm_of(const ttc_node *u, int32_t r, int32_t *p) {
    for (int32_t d = 0; d < r; d++) p[d] = d;
    if (u->op == TTC_OP_PERMUTE) {
        int64_t *dims = NULL;
        int32_t nd = 0;
        bool ok = u->n_inputs >= 2 && ttc_value_const_ints(u->inputs[1], &dims, &nd) && nd == r;
        bool seen[TTC_MAX_RANK] = {0};
        for (int32_t d = 0; ok && d < r; d++) {
            int64_t v = dims[d] < 0 ? dims[d] + r : dims[d];
            ok = v >= 0 && v < r && !seen[v];
            if (ok) { seen[v] = true; p[d] = (int32_t)v; }
        }
        free(dims);
        return ok;
    }
    if (u->op == TTC_OP_TRANSPOSE) {
        int64_t a, b;
        if (u->n_inputs < 3 || !ttc_pass_int_arg(u->inputs[1], 0, &a) || !ttc_pass_int_arg(u->inputs[2], 0, &b) ||
            !ttc_pass_norm_dim(a, r, &a) || !ttc_pass_norm_dim(b, r, &b))
            return false;
        p[a] = (int32_t)b;
        p[b] = (int32_t)a;
        return true;
    }
    if (u->op == TTC_OP_T && r == 2) {
        p[0] = 1;
        p[1] = 0;
        return true;
    }
    return u->op == TTC_OP_T && r < 2;
}

/* One chain ending at w: the new view and permute inserted before w, w's uses moved to them. */
static ttc_status rewrite(ttc_graph *g, ttc_node *w, ttc_node **dead, int32_t *nd, bool *changed) {
    if (!is_reshape(w)) return TTC_OK;
    ttc_node *u = ttc_pass_single_use_producer(g, w->inputs[0], TTC_OP_COUNT);
    if (!u || (u->op != TTC_OP_PERMUTE && u->op != TTC_OP_TRANSPOSE && u->op != TTC_OP_T)) return TTC_OK;
    ttc_node *r1 = ttc_pass_single_use_producer(g, u->inputs[0], TTC_OP_COUNT);
    if (!is_reshape(r1)) return TTC_OK;
    ttc_value *x = r1->inputs[0];
    const ttc_type *X = &x->type, *S1 = &r1->outputs[0]->type, *S2 = &w->outputs[0]->type;
    if (X->kind != TTC_TYPE_TENSOR || X->rank < 0 || S1->rank < 1 || S2->rank < 0 || S1->rank > TTC_MAX_RANK)
        return TTC_OK;
    ttc_dim atoms[MAX_ATOMS];
    int32_t na, gx[TTC_MAX_RANK + 1], g1[TTC_MAX_RANK + 1], p[TTC_MAX_RANK];
    if (!refine(X->dims, X->rank, S1->dims, S1->rank, atoms, &na, gx, g1) || !perm_of(u, S1->rank, p)) return TTC_OK;
    /* nothing to win unless the first reshape merges (an S1 dim spanning atoms of two X dims) */
    bool merges = false;
    for (int32_t j = 0; j < S1->rank && !merges; j++)
        for (int32_t d = 0; d < X->rank; d++)
            if (gx[d] < gx[d + 1] && gx[d] > g1[j] && gx[d] < g1[j + 1]) merges = true;
    if (!merges) return TTC_OK;
    /* atoms in the permuted order must be S2's dims, with size-1 dims anywhere */
    int32_t order[MAX_ATOMS], no = 0;
    for (int32_t j = 0; j < S1->rank; j++)
        for (int32_t a = g1[p[j]]; a < g1[p[j] + 1]; a++) order[no++] = a;
    int32_t k = 0;
    for (int32_t j = 0; j < S2->rank; j++) {
        if (k < no && ttc_dim_eq(S2->dims[j], atoms[order[k]])) k++;
        else if (!is_one(S2->dims[j])) return TTC_OK;
    }
    if (k != no || na > TTC_MAX_RANK) return TTC_OK;
    /* the new view's sizes: static atoms as they are, one symbolic atom as -1 */
    int64_t sizes[TTC_MAX_RANK];
    int32_t nsym = 0;
    for (int32_t a = 0; a < na; a++) {
        if (atoms[a].sym >= 0) nsym++;
        sizes[a] = atoms[a].sym >= 0 ? -1 : atoms[a].add;
    }
    if (nsym > 1) return TTC_OK;
    int64_t pv[TTC_MAX_RANK];
    for (int32_t i = 0; i < no; i++) pv[i] = order[i];
    ttc_type vt = *X, pt = *X;
    vt.rank = pt.rank = na;
    for (int32_t a = 0; a < na; a++) {
        vt.dims[a] = atoms[a];
        pt.dims[a] = atoms[order[a]];
    }
    ttc_value *sv = ttc_graph_const_ints(g, w, sizes, na), *permv = ttc_graph_const_ints(g, w, pv, na);
    if (!sv || !permv) return TTC_ERR_NOMEM;
    ttc_value *vin[2] = {x, sv};
    ttc_node *v = ttc_graph_insert_node_before(g, w, "aten.view.default", vin, 2, &vt, 1, r1->name);
    if (!v) return TTC_ERR_NOMEM;
    ttc_value *pin[2] = {v->outputs[0], permv};
    ttc_node *pn = ttc_graph_insert_node_before(g, w, "aten.permute.default", pin, 2, &pt, 1, u->name);
    if (!pn) return TTC_ERR_NOMEM;
    ttc_value *res = pn->outputs[0];
    if (S2->rank != na) {   /* size-1 dims of S2: a view that inserts them */
        ttc_value *rin[2] = {res, w->inputs[1]};
        ttc_node *rn = ttc_graph_insert_node_before(g, w, "aten.view.default", rin, w->n_inputs >= 2 ? 2 : 1, S2, 1,
                                                    w->name);
        if (!rn) return TTC_ERR_NOMEM;
        res = rn->outputs[0];
    }
    if (r1->module_stack) {
        v->module_stack = ttc_strdup(r1->module_stack);
        pn->module_stack = ttc_strdup(r1->module_stack);
    }
    TTC_TRY(ttc_pass_replace_value(g, w->outputs[0], res));
    dead[(*nd)++] = w;
    dead[(*nd)++] = u;
    dead[(*nd)++] = r1;
    *changed = true;
    return TTC_OK;
}

ttc_status ttc_pass_merge_split_views(ttc_graph *g, void *ctx, bool *changed) {
    (void)ctx;
    *changed = false;
    int32_t n0 = g->n_nodes;
    ttc_node **todo = ttc_malloc(sizeof(ttc_node *) * (size_t)(n0 ? n0 : 1));
    ttc_node **dead = ttc_malloc(sizeof(ttc_node *) * (size_t)(3 * n0 + 3));
    if (!todo || !dead) {
        free(todo);
        free(dead);
        return TTC_ERR_NOMEM;
    }
    int32_t nd = 0;
    for (int32_t i = 0; i < n0; i++) todo[i] = g->nodes[i];
    ttc_status s = TTC_OK;
    for (int32_t i = 0; i < n0 && s == TTC_OK; i++) {
        bool taken = false;
        for (int32_t j = 0; j < nd && !taken; j++) taken = dead[j] == todo[i];
        if (!taken && !todo[i]->dead) s = rewrite(g, todo[i], dead, &nd, changed);
    }
    if (s == TTC_OK) s = ttc_pass_erase_nodes(g, dead, nd);
    free(todo);
    free(dead);
    return s;
}
