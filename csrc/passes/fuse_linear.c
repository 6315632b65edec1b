/*
 * Fuses matrix multiply + bias back into one aten.linear (x @ W^T + b):
 *   add(mm(x, w), b) / add(b, mm(x, w)) / add(matmul(x, w), b), and addmm(b, x, w)
 * with unit alpha/beta and a 1-D bias over the last dim. W is recovered without a copy
 * when w is t(W), transpose(W, 0, 1) or permute(W, [1, 0]); a 2-D constant w gets a
 * transposed constant; anything else gets a t node.
 */
#include "pass_manager.h"
#include "pass_util.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool is_transpose_2d(const ttc_node *p) {
    if (!p || p->n_inputs < 1 || p->inputs[0]->type.kind != TTC_TYPE_TENSOR || p->inputs[0]->type.rank != 2) return false;
    if (p->op == TTC_OP_T) return true;
    int64_t a, b;
    if (p->op == TTC_OP_TRANSPOSE && p->n_inputs == 3 && ttc_value_const_int(p->inputs[1], &a) &&
        ttc_value_const_int(p->inputs[2], &b))
        return (a == 0 || a == -2) != (b == 0 || b == -2) && (a == 1 || a == -1 || b == 1 || b == -1);
    int64_t *d; int32_t k;
    if (p->op == TTC_OP_PERMUTE && p->n_inputs == 2 && ttc_value_const_ints(p->inputs[1], &d, &k)) {
        bool ok = k == 2 && (d[0] == 1 || d[0] == -1) && (d[1] == 0 || d[1] == -2);
        free(d);
        return ok;
    }
    return false;
}

/* dst[c][r] = src[r][c] in 32x32 tiles with typed copies: the element-wise memcpy(esz) it
 * replaces took 0.95 s for GPT-2's 340 MB of Conv1D weights, this 0.55 s (load 4; most of
 * what is left is page faults on the fresh destination). Only dst rows [jlo, jhi) (source
 * columns): threads write disjoint blocks of the destination. */
#define TTC_TRANSPOSE_TILE(T)                                                              \
    static void transpose_##T(T *dst, const T *src, int64_t r, int64_t c, int64_t jlo,    \
                              int64_t jhi) {                                               \
        for (int64_t i0 = 0; i0 < r; i0 += 32)                                             \
            for (int64_t j0 = jlo; j0 < jhi; j0 += 32) {                                   \
                int64_t i1 = i0 + 32 < r ? i0 + 32 : r, j1 = j0 + 32 < jhi ? j0 + 32 : jhi; \
                for (int64_t j = j0; j < j1; j++)                                          \
                    for (int64_t i = i0; i < i1; i++) dst[j * r + i] = src[i * c + j];     \
            }                                                                              \
    }
TTC_TRANSPOSE_TILE(uint8_t)
TTC_TRANSPOSE_TILE(uint16_t)
TTC_TRANSPOSE_TILE(uint32_t)
TTC_TRANSPOSE_TILE(uint64_t)

typedef struct {
    void *dst;
    const void *src;
    int64_t r, c;
    size_t esz;
    int64_t next;   /* the first source column (destination row) not yet taken */
} transpose_job;

/* Source columns a thread takes at a time: a thread descheduled on a loaded machine holds the
 * others up by one block at most. */
enum { TRANSPOSE_BLOCK = 64 };

static void transpose_blocks(transpose_job *t) {
    for (;;) {
        int64_t jlo = __atomic_fetch_add(&t->next, TRANSPOSE_BLOCK, __ATOMIC_RELAXED);
        if (jlo >= t->c) return;
        int64_t jhi = jlo + TRANSPOSE_BLOCK < t->c ? jlo + TRANSPOSE_BLOCK : t->c;
        switch (t->esz) {
        case 1: transpose_uint8_t(t->dst, t->src, t->r, t->c, jlo, jhi); break;
        case 2: transpose_uint16_t(t->dst, t->src, t->r, t->c, jlo, jhi); break;
        case 4: transpose_uint32_t(t->dst, t->src, t->r, t->c, jlo, jhi); break;
        case 8: transpose_uint64_t(t->dst, t->src, t->r, t->c, jlo, jhi); break;
        default:
            for (int64_t i = 0; i < t->r; i++)
                for (int64_t j = jlo; j < jhi; j++)
                    memcpy((char *)t->dst + (size_t)(j * t->r + i) * t->esz,
                           (const char *)t->src + (size_t)(i * t->c + j) * t->esz, t->esz);
        }
    }
}

static void *transpose_thread(void *p) {
    transpose_blocks(p);
    return NULL;
}

/* A big weight is transposed by this thread and a second one where the machine has a second
 * core, taking blocks of the destination in turn: most of the time is page faults on the
 * fresh copy, and those run in parallel. */
enum { TRANSPOSE_SPLIT_BYTES = 4 << 20 };

static void transpose_2d(void *dst, const void *src, int64_t r, int64_t c, size_t esz) {
    transpose_job job = {dst, src, r, c, esz, 0};
    pthread_t th;
    bool two = (size_t)(r * c) * esz >= TRANSPOSE_SPLIT_BYTES && c >= 2 * TRANSPOSE_BLOCK &&
               sysconf(_SC_NPROCESSORS_ONLN) >= 2 && pthread_create(&th, NULL, transpose_thread, &job) == 0;
    transpose_blocks(&job);
    if (two) pthread_join(th, NULL);
}

/* W with linear(x, W) == x @ w, placed before `before`. */
static ttc_value *weight_for(ttc_graph *g, ttc_node *before, ttc_value *w) {
    if (is_transpose_2d(w->producer)) return w->producer->inputs[0];
    const ttc_type *t = &w->type;
    ttc_type tt = *t;
    tt.dims[0] = t->dims[1];
    tt.dims[1] = t->dims[0];
    const ttc_attr *a = ttc_pass_tensor_const(w);
    if (a && ttc_type_is_static(t)) {
        size_t esz = ttc_dtype_size(t->dtype);
        int64_t r = t->dims[0].add, c = t->dims[1].add;
        /* not ttc_tensor_data_copy(NULL, ..): its memset would take every page fault on this
         * thread before the transposition could share them */
        size_t nb = (size_t)(r * c) * esz;
        void *buf = ttc_malloc(nb);
        if (!buf) return NULL;
        ttc_tensor_data *d = ttc_tensor_data_wrap(buf, nb, free, buf);
        if (!d) { free(buf); return NULL; }
        transpose_2d(d->data, a->tensor->data, r, c, esz);
        ttc_value *v = ttc_graph_const_tensor(g, before, NULL, &tt, d);
        ttc_tensor_data_unref(d);
        return v;
    }
    ttc_node *tn = ttc_graph_insert_node_before(g, before, "aten.t.default", &w, 1, &tt, 1, NULL);
    return tn ? tn->outputs[0] : NULL;
}

static bool bias_fits(const ttc_value *b, const ttc_type *out) {
    const ttc_type *t = &b->type;
    return t->kind == TTC_TYPE_TENSOR && t->rank == 1 && out->rank >= 1 && t->dtype == out->dtype &&
           ttc_dim_eq(t->dims[0], out->dims[out->rank - 1]);
}

static bool is_mm(const ttc_value *v) {
    const ttc_node *p = v->producer;
    if (!p || v->n_users != 1 || p->n_inputs != 2) return false;
    if (p->inputs[1]->type.kind != TTC_TYPE_TENSOR || p->inputs[1]->type.rank != 2) return false;
    if (p->op == TTC_OP_MM) return true;
    return p->op == TTC_OP_MATMUL && p->inputs[0]->type.kind == TTC_TYPE_TENSOR && p->inputs[0]->type.rank >= 1;
}

ttc_status ttc_pass_fuse_linear(ttc_graph *g, void *ctx, bool *changed) {
    (void)ctx;
    *changed = false;
    int32_t n0 = g->n_nodes;
    ttc_node **todo = ttc_malloc(sizeof(ttc_node *) * (size_t)(n0 ? n0 : 1));
    if (!todo) return TTC_ERR_NOMEM;
    int32_t nt = 0;
    for (int32_t i = 0; i < n0; i++) todo[nt++] = g->nodes[i];
    ttc_status s = TTC_OK;
    ttc_node **dead = ttc_malloc(sizeof(ttc_node *) * (size_t)(2 * n0 + 1));
    int32_t nd = 0;
    if (!dead) { free(todo); return TTC_ERR_NOMEM; }
    for (int32_t k = 0; k < nt && s == TTC_OK; k++) {
        ttc_node *n = todo[k];
        ttc_value *x = NULL, *w = NULL, *b = NULL;
        ttc_node *mm = NULL;
        const ttc_type *out = &n->outputs[0]->type;
        if (n->op == TTC_OP_ADD_TENSOR && n->n_inputs == 3) {
            double alpha;
            if (!ttc_pass_float_arg(n->inputs[2], 1, &alpha) || alpha != 1) continue;
            for (int side = 0; side < 2 && !mm; side++)
                if (is_mm(n->inputs[side]) && bias_fits(n->inputs[1 - side], out) &&
                    ttc_type_eq(&n->inputs[side]->type, out)) {
                    mm = n->inputs[side]->producer;
                    b = n->inputs[1 - side];
                }
            if (!mm) continue;
            x = mm->inputs[0];
            w = mm->inputs[1];
        } else if (n->op == TTC_OP_ADDMM && n->n_inputs == 5) {
            double beta, alpha;
            if (!ttc_pass_float_arg(n->inputs[3], 1, &beta) || !ttc_pass_float_arg(n->inputs[4], 1, &alpha) ||
                beta != 1 || alpha != 1 || !bias_fits(n->inputs[0], out) || n->inputs[2]->type.rank != 2)
                continue;
            b = n->inputs[0];
            x = n->inputs[1];
            w = n->inputs[2];
        } else {
            continue;
        }
        ttc_value *W = weight_for(g, n, w);
        if (!W) { s = TTC_ERR_NOMEM; break; }
        ttc_value *in[3] = {x, W, b};
        ttc_node *lin = ttc_graph_insert_node_before(g, n, "aten.linear.default", in, 3, out, 1, NULL);
        if (!lin) { s = TTC_ERR_NOMEM; break; }
        if (n->module_stack) lin->module_stack = ttc_strdup(n->module_stack);
        s = ttc_pass_replace_value(g, n->outputs[0], lin->outputs[0]);
        dead[nd++] = n;
        if (mm) dead[nd++] = mm;
        *changed = true;
    }
    if (s == TTC_OK) s = ttc_pass_erase_nodes(g, dead, nd);
    free(todo);
    free(dead);
    return s;
}
