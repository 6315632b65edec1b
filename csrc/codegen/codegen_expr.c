/* Expressions and store functions: every kernel op's epilogue (for ELEMENTWISE ops, the
 * whole op) becomes "<kname>_store(acc, lin, ...)", which computes the expression at output
 * element lin and stores it. Ops are written through the spelling table (codegen_spell.c). */
#include "codegen_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool ttc_codegen_floatish(ttc_dtype d) {
    return d == TTC_DTYPE_FLOAT32 || d == TTC_DTYPE_FLOAT16 || d == TTC_DTYPE_FLOAT64 || d == TTC_DTYPE_BFLOAT16;
}

static const char *ctype(ttc_dtype d) {
    if (ttc_codegen_floatish(d)) return "float";
    if (d == TTC_DTYPE_INT64) return "long";
    return "int";
}

void ttc_codegen_load(ttc_sbuf *b, const ttc_kir *k, const ttc_spelling *sp, ttc_dtype d, const char *ptr,
                      const char *idx) {
    if (d == TTC_DTYPE_FLOAT16 && !k->half_compute) ttc_sbuf_printf(b, sp->load_half, idx, ptr);
    else if (d == TTC_DTYPE_BFLOAT16) ttc_sbuf_printf(b, sp->load_bf16, idx, ptr);
    else ttc_sbuf_printf(b, "%s[%s]", ptr, idx);
}

void ttc_codegen_literal(ttc_sbuf *b, const ttc_spelling *sp, double v, ttc_dtype d, const char *int_type) {
    if (!(d == TTC_DTYPE_FLOAT32 || d == TTC_DTYPE_FLOAT16 || d == TTC_DTYPE_FLOAT64 || d == TTC_DTYPE_BFLOAT16))
        ttc_sbuf_printf(b, "((%s)%lld)", int_type, (long long)v);
    else if (isnan(v)) ttc_sbuf_printf(b, "%s", sp->nan);
    else if (isinf(v)) ttc_sbuf_printf(b, "%s", v > 0 ? sp->inf : sp->ninf);
    else ttc_sbuf_printf(b, sp->float_lit, v);
}

void ttc_codegen_store(ttc_sbuf *b, const ttc_kir *k, const ttc_spelling *sp, ttc_dtype od, const char *val,
                       const char *fval, const char *at, const char *ind) {
    if (od == TTC_DTYPE_FLOAT16 && k->half_compute) ttc_sbuf_printf(b, "%so_[o_off + %s] = %s%s;\n", ind, at, sp->half_cast, val);
    else if (od == TTC_DTYPE_FLOAT16 || od == TTC_DTYPE_BFLOAT16) {
        char idx[64];
        snprintf(idx, sizeof idx, "o_off + %s", at);
        ttc_sbuf_printf(b, "%s", ind);
        ttc_sbuf_printf(b, od == TTC_DTYPE_FLOAT16 ? sp->store_half : sp->store_bf16, fval, idx, "o_");
        ttc_sbuf_printf(b, ";\n");
    } else if (od == TTC_DTYPE_BOOL) ttc_sbuf_printf(b, "%so_[o_off + %s] = (uchar)(%s != 0);\n", ind, at, val);
    else ttc_sbuf_printf(b, "%so_[o_off + %s] = (%s)%s;\n", ind, at, ttc_cl_storage_type(od), val);
}

/* Half arithmetic (k->half_compute: an fp16 engine on a device that computes in half).
 * float16 tensors are loaded and stored directly, and a float expression node computes in
 * half when its op is a correctly rounded arithmetic step or a selection: add, sub, mul, div,
 * reciprocal, min/max, neg/abs, sign, where, casts, constants, relu, hardswish, hardsigmoid.
 * These are emitted with operators, comparisons and ?: only (no built-in functions): NVIDIA's
 * OpenCL has half arithmetic but none of the half overloads of the built-ins, and the device
 * probe (csrc/backend/opencl/half_probe.c) checks exactly these constructs. Ops that call a math
 * library function (exp, log, sqrt, rsqrt, erf, tanh, sin, cos, pow, lgamma, floor, ceil,
 * rint and the activations built from them: sigmoid, silu, gelu, log_sigmoid) and floor/trunc
 * division compute in float from their half operands and are rounded to half once, where the
 * next half node reads them: half versions would lose several ulps (or overflow inside, as exp
 * does past 11). Reductions, softmax, norms, attention, GEMM and convolution accumulate in
 * float; their store functions take a float accumulator. */
static bool half_op(ttc_eop op) { return (unsigned)op < TTC_EOP_COUNT && ttc_eops[op].half; }  /* kir/eops.def's HALF */

/* Whether node i of e computes in half. Expression nodes carry FLOAT32 for every float value;
 * an fp16 engine stores them in half (ttc_cx_float_dtype). A value is half-safe unless it
 * depends on a leaf read from a tensor that stayed float32 (a constant beyond half's range,
 * see const_half.c) or on a literal beyond +-65504: rounding those to half would give inf.
 * A node computes in half when its op is one of half_op's and its value is half-safe; other
 * half-safe nodes (libm calls) compute in float and are rounded to half where a half node
 * reads them; the rest compute in float throughout. Nodes are in topological order, so one
 * forward pass decides; expressions are small. */
static bool half_node(const ttc_kir *k, const ttc_expr *e, int32_t i) {
    if (!k->half_compute || i < 0 || i >= e->n || !ttc_codegen_floatish(e->nodes[i].dtype)) return false;
    bool *safe = ttc_malloc(sizeof(bool) * (size_t)(i + 1));
    if (!safe) return false;  /* float is always a correct answer */
    for (int32_t j = 0; j <= i; j++) {
        const ttc_enode *nd = &e->nodes[j];
        bool h = true;
#define TTC_HALF_OPERAND(x) \
    (h = h && ((x) < 0 || (x) >= j || !ttc_codegen_floatish(e->nodes[(x)].dtype) || safe[(x)]))
        switch (nd->op) {
        case TTC_EOP_LEAF:
            if (nd->a >= 0 && nd->a < e->n_leaves && ttc_codegen_floatish(k->ts[e->leaves[nd->a]].dtype))
                h = k->ts[e->leaves[nd->a]].dtype == TTC_DTYPE_FLOAT16;
            break;
        case TTC_EOP_CONST: h = !(fabs(nd->f) > 65504.0); break;
        case TTC_EOP_WHERE: TTC_HALF_OPERAND(nd->b); TTC_HALF_OPERAND(nd->c); break;
        default:
            if (ttc_eop_is_binary(nd->op)) TTC_HALF_OPERAND(nd->b);
            TTC_HALF_OPERAND(nd->a);
            break;
        }
#undef TTC_HALF_OPERAND
        safe[j] = h;
    }
    bool r = safe[i] && half_op(e->nodes[i].op);
    free(safe);
    return r;
}

/* The OpenCL type node i of e is computed and held in. */
static const char *node_type(const ttc_kir *k, const ttc_expr *e, int32_t i) {
    return half_node(k, e, i) ? "half" : ctype(e->nodes[i].dtype);
}

/* Operand x of a node held in type t: cast when exactly one side is half, so that half
 * overloads (fmax, exp, ...) are neither ambiguous nor picked for float nodes. Without half
 * arithmetic no cast is ever emitted (the float path's source is unchanged). */
static void operand(ttc_sbuf *b, const ttc_kir *k, const ttc_expr *e, int32_t x, const char *t) {
    const char *xt = node_type(k, e, x);
    if (strcmp(xt, t) != 0 && (!strcmp(xt, "half") || !strcmp(t, "half"))) ttc_sbuf_printf(b, "((%s)v%d)", t, x);
    else ttc_sbuf_printf(b, "v%d", x);
}

/* What a spelling's placeholders stand for at one node. */
typedef struct spell_args {
    const char *op[3];   /* %a %b %c */
    int32_t raw[3];      /* %A %B %C: v<raw> */
    const char *t, *h;
    int32_t index;
} spell_args;

static ttc_status spell(ttc_sbuf *b, const char *fmt, const spell_args *sa) {
    for (const char *s = fmt; *s; s++) {
        if (*s != '%') {
            const char *e = strchr(s, '%');
            size_t n = e ? (size_t)(e - s) : strlen(s);
            ttc_sbuf_append(b, s, n);
            s += n - 1;
            continue;
        }
        char c = *++s;
        switch (c) {
        case 'a': case 'b': case 'c': ttc_sbuf_printf(b, "%s", sa->op[c - 'a']); break;
        case 'A': case 'B': case 'C': ttc_sbuf_printf(b, "v%d", sa->raw[c - 'A']); break;
        case 't': ttc_sbuf_printf(b, "%s", sa->t); break;
        case 'h': ttc_sbuf_printf(b, "%s", sa->h); break;
        case 'i': ttc_sbuf_printf(b, "%d", sa->index); break;
        case '%': ttc_sbuf_append(b, "%", 1); break;
        default: return ttc_fail(TTC_ERR_INTERNAL, "codegen: spelling \"%s\" has an unknown placeholder", fmt);
        }
    }
    return TTC_OK;
}

/* The spelling of node nd (held in type ct, half when half; ends_half: the expression's value
 * is stored as half), NULL when the table has none. */
static const char *spelling_of(const ttc_spelling *sp, const ttc_expr *e, const ttc_enode *nd, bool half,
                               bool ends_half) {
    if ((unsigned)nd->op >= TTC_EOP_COUNT) return NULL;
    const ttc_eop_spelling *r = &sp->op[nd->op];
    if (half && r->half) return r->half;
    if (!half && ends_half && r->fl16 && ttc_codegen_floatish(nd->dtype)) return r->fl16;
    if (nd->dtype == TTC_DTYPE_BOOL && r->boolean) return r->boolean;
    bool fl = r->by_operand ? nd->a >= 0 && nd->a < e->n && ttc_codegen_floatish(e->nodes[nd->a].dtype)
                            : ttc_codegen_floatish(nd->dtype);
    return fl || !r->in ? r->fl : r->in;
}

/* Emits "v<i> = ..." for every node of e. acc_name names the produced value; ends_half: e's
 * value is stored as half (every node only feeds it). */
static ttc_status emit_expr(ttc_sbuf *b, const ttc_kir *k, const ttc_spelling *sp, const ttc_expr *e,
                            const char *acc_name, bool ends_half) {
    for (int32_t i = 0; i < e->n; i++) {
        const ttc_enode *nd = &e->nodes[i];
        const char *ct = node_type(k, e, i);
        bool half = strcmp(ct, "half") == 0;
        ttc_sbuf_printf(b, "    %s v%d = ", ct, i);
        /* operands in the node's type (comparisons, casts and the condition read theirs raw),
         * except where the spelling follows operand a's dtype and the node is not floating
         * (isinf/isnan: a bool of a float): there a half operand is read as float, because the
         * node's own type (int) made isinf((int)v), which NVIDIA rejects as ambiguous, and
         * NVIDIA has no half overloads of the built-ins */
        bool by_operand = (unsigned)nd->op < TTC_EOP_COUNT && sp->op[nd->op].by_operand;
        const char *ot = by_operand && !ttc_codegen_floatish(nd->dtype) ? "float" : ct;
        ttc_sbuf ops[3] = {{0}, {0}, {0}};
        spell_args sa = {{"", "", ""}, {nd->a, nd->b, nd->c}, ct, half ? sp->half_cast : "", (int32_t)nd->f};
        for (int32_t j = 0; j < 3; j++)
            if (sa.raw[j] >= 0 && sa.raw[j] < i && nd->op != TTC_EOP_LEAF && nd->op != TTC_EOP_CONST) {
                operand(&ops[j], k, e, sa.raw[j], ot);
                if (ops[j].data) sa.op[j] = ops[j].data;
            }
        ttc_status st = TTC_OK;
        if (nd->op == TTC_EOP_LEAF) {
            if (nd->a < 0) ttc_sbuf_printf(b, "(%s)%s", ct, acc_name);
            else ttc_sbuf_printf(b, "(%s)l%d_v", ct, nd->a);
        } else if (nd->op == TTC_EOP_CONST) {
            ttc_codegen_literal(b, sp, nd->f, nd->dtype, ctype(nd->dtype));
        } else if (nd->op == TTC_EOP_POW && nd->b >= 0 && e->nodes[nd->b].op == TTC_EOP_CONST &&
                   (e->nodes[nd->b].f == 2.0 || (e->nodes[nd->b].f == 0.5 && ttc_codegen_floatish(nd->dtype)))) {
            st = spell(b, e->nodes[nd->b].f == 2.0 ? sp->pow_square : sp->pow_sqrt, &sa);
        } else {
            const char *f = spelling_of(sp, e, nd, half, ends_half);
            st = f ? spell(b, f, &sa) : ttc_fail(TTC_ERR_INTERNAL, "codegen: unknown expression op %d", nd->op);
        }
        bool oom = ops[0].oom || ops[1].oom || ops[2].oom;
        for (int32_t j = 0; j < 3; j++) ttc_sbuf_free(&ops[j]);
        if (st != TTC_OK) return st;
        if (oom) return ttc_fail(TTC_ERR_NOMEM, "generating an expression");
        ttc_sbuf_printf(b, ";\n");
    }
    return TTC_OK;
}

int32_t ttc_codegen_tiled_leaf(const ttc_kir *k, const ttc_kop *op, int32_t *p0, int32_t *p1) {
    if (op->kind != TTC_KOP_ELEMENTWISE) return -1;
    const ttc_et *out = &k->ts[op->out];
    int32_t R = out->rank;
    if (R < 2 || R > TTC_MAX_RANK) return -1;
    for (int32_t l = 0; l < op->epi.n_leaves; l++) {
        const ttc_et *t = &k->ts[op->epi.leaves[l]];
        if (t->kind != TTC_ET_VIEW || t->vkind != TTC_VIEW_PERMUTE || t->rank != R ||
            !ttc_dims_eq(R, out->dims, t->rank, t->dims))
            continue;
        const ttc_et *b = &k->ts[t->base];
        if (!b->contig || b->rank != R) continue;
        int32_t q = -1;
        for (int32_t d = 0; d < R; d++)
            if (t->perm[d] == R - 1) q = d;
        if (q < 0 || q == R - 1) continue;   /* the innermost dim stays innermost: reads coalesce as they are */
        /* output dims before q that stay in order before it in the base are one dense run of
         * the leaf (NCHW -> NHWC: H and W): the tile's P side spans them all */
        int32_t q0 = q;
        while (q0 > 0 && t->perm[q0 - 1] == t->perm[q0] - 1) q0--;
        /* a tile of 32 x 32 pays only when both sides can fill it (symbolic dims: assume so) */
        int64_t P = 1, J = 1;
        for (int32_t d = q0; d <= q; d++) P *= out->dims[d].sym < 0 ? out->dims[d].add : 32;
        for (int32_t d = q + 1; d < R; d++) J *= out->dims[d].sym < 0 ? out->dims[d].add : 32;
        if (P < 16 || J < 16) continue;
        if (p0) *p0 = q0;
        if (p1) *p1 = q;
        return l;
    }
    return -1;
}

ttc_status ttc_codegen_store_fn(ttc_sbuf *src, const ttc_kir *k, const ttc_kop *op, const ttc_spelling *sp,
                                ttc_kparams *p) {
    return ttc_codegen_store_fn_given(src, k, op, sp, p, -1);
}

/* The type a leaf's value is held in inside a store function. */
const char *ttc_codegen_leaf_type(const ttc_kir *k, int32_t t) {
    return k->half_compute && k->ts[t].dtype == TTC_DTYPE_FLOAT16 ? "half" : ctype(k->ts[t].dtype);
}

ttc_status ttc_codegen_store_fn_given(ttc_sbuf *src, const ttc_kir *k, const ttc_kop *op, const ttc_spelling *sp,
                                      ttc_kparams *p, int32_t given) {
    return ttc_codegen_store_fns(src, k, op, sp, p, given, 1, false, false);
}

int32_t ttc_codegen_vec_width(const ttc_kir *k, const ttc_kop *op) {
    const ttc_et *out = &k->ts[op->out];
    int32_t R = out->rank;
    if (R < 1 || R > TTC_MAX_RANK || (out->dtype != TTC_DTYPE_FLOAT16 && out->dtype != TTC_DTYPE_FLOAT32) ||
        out->dims[R - 1].sym >= 0)
        return 1;
    int64_t D = out->dims[R - 1].add;
    int32_t V = out->dtype == TTC_DTYPE_FLOAT16 ? 8 : 4;   /* 16 bytes */
    while (V > 1 && (D <= 0 || D % V)) V /= 2;
    return V;
}

/* "<decl>d = ..." for each dim d of out: the output index of element lin, innermost first
 * (the sizes of symbolic dims are the store function's od<d> arguments). */
static void emit_index(ttc_sbuf *src, const ttc_et *out, const char *decl) {
    int32_t R = out->rank;
    ttc_sbuf_printf(src, "    int rem = lin;\n");
    for (int32_t d = R - 1; d >= 1; d--) {
        if (out->dims[d].sym >= 0) ttc_sbuf_printf(src, "    %s%d = rem %% od%d; rem /= od%d;\n", decl, d, d, d);
        else ttc_sbuf_printf(src, "    %s%d = rem %% %lld; rem /= %lld;\n", decl, d, (long long)out->dims[d].add,
                             (long long)out->dims[d].add);
    }
    if (R > 0) ttc_sbuf_printf(src, "    %s0 = rem;\n", decl);
}

/* emit_index for an output stored channels-last (rank 4, kir/nhwc.c): lin walks [N, H, W, C],
 * innermost C, and "<decl>d" is still the index along the output's dim d (NCHW). */
static void emit_index_nhwc(ttc_sbuf *src, const ttc_et *out, const char *decl) {
    static const int32_t order[3] = {1, 3, 2};
    ttc_sbuf_printf(src, "    int rem = lin;\n");
    for (int32_t i = 0; i < 3; i++) {
        int32_t d = order[i];
        if (out->dims[d].sym >= 0) ttc_sbuf_printf(src, "    %s%d = rem %% od%d; rem /= od%d;\n", decl, d, d, d);
        else ttc_sbuf_printf(src, "    %s%d = rem %% %lld; rem /= %lld;\n", decl, d, (long long)out->dims[d].add,
                             (long long)out->dims[d].add);
    }
    ttc_sbuf_printf(src, "    %s0 = rem;\n", decl);
}

/* The pointer expression's alignment test for a V-element run of dtype d (16, 8 or 4 bytes). */
static void aligned(ttc_sbuf *b, const char *ptr, const char *idx, int32_t V, ttc_dtype d) {
    ttc_sbuf_printf(b, "(((size_t)(%s + %s) & %d) == 0)", ptr, idx, V * (int)ttc_dtype_size(d) - 1);
}

/* dst[0..V) = the V floats at ptr[idx..] (float16 or float32, aligned(...) holds): one access
 * of V * size bytes; float16 goes through a private copy that vload_half<V> converts. */
static void load_run(ttc_sbuf *b, const char *ptr, const char *idx, int32_t V, ttc_dtype d, const char *dst,
                     const char *dst_type, const char *ind) {
    static const char *h[] = {"", "", "uint", "", "uint2", "", "", "", "uint4"};
    if (d == TTC_DTYPE_FLOAT16) {
        ttc_sbuf_printf(b, "%s{ const %s raw = *(__global const %s *)(%s + %s);\n"
                           "%s  const float%d f = vload_half%d(0, (const __private half *)&raw);\n",
                        ind, h[V], h[V], ptr, idx, ind, V, V);
    } else {
        ttc_sbuf_printf(b, "%s{ const float%d f = *(__global const float%d *)(%s + %s);\n", ind, V, V, ptr, idx);
    }
    ttc_sbuf_printf(b, "%s ", ind);
    for (int32_t j = 0; j < V; j++) ttc_sbuf_printf(b, " %s[%d] = (%s)f.s%x;", dst, j, dst_type, j);
    ttc_sbuf_printf(b, " }\n");
}

/* "<name>_storev(int lin, ...)": the store function for the V elements lin .. lin + V - 1 of the
 * output (lin a multiple of V, V dividing the output's innermost dim: ttc_codegen_vec_width), so
 * that they share every index but the innermost. The output's index is decomposed once; each
 * leaf is read as one V-wide access where its V elements are adjacent and aligned (dense
 * leaves, strided leaves whose innermost stride is 1 at run time), once where they are one
 * element (innermost stride 0: a bias or a per-channel scale), else element by element; the
 * result is stored as one access where aligned. raw_acc: acc is the output's value (a library
 * call's raw result, "<name>_e"), else 0. Same parameters as <name>_store. */
/* Output dim d's size in a store function: its literal, or its od<d> argument. */
static void dim_str(const ttc_et *out, int32_t d, char *buf, size_t len) {
    if (out->dims[d].sym >= 0) snprintf(buf, len, "od%d", d);
    else snprintf(buf, len, "%lld", (long long)out->dims[d].add);
}

/* leaf_nhwc non-NULL: the output is stored channels-last, and so is dense leaf l where
 * leaf_nhwc[l] (a dense leaf that is not is read at its NCHW index, from the decomposed output
 * index). */
static ttc_status emit_storev(ttc_sbuf *src, const ttc_kir *k, const ttc_kop *op, const ttc_spelling *sp,
                              const ttc_kparams *p, int32_t V, bool raw_acc, bool need_idx, const bool *leaf_nhwc) {
    const bool nhwc = leaf_nhwc != NULL;
    const ttc_et *out = &k->ts[op->out];
    const ttc_expr *e = &op->epi;
    int32_t R = out->rank;
    /* the dim a run of V elements goes along: the innermost stored one */
    const int32_t inner = nhwc ? 1 : R - 1;
    bool has_index = false;
    for (int32_t i = 0; i < e->n; i++) has_index = has_index || e->nodes[i].op == TTC_EOP_INDEX;
    ttc_sbuf_printf(src, "static inline void %s_store%s(int lin%s) {\n", p->ks->name, nhwc ? "h" : "v", ttc_kp_sig(p));
    if (need_idx && nhwc) emit_index_nhwc(src, out, "const int b");
    else if (need_idx) emit_index(src, out, "const int b");
    ttc_sbuf_printf(src, "    float acc[%d];\n", V);
    /* V == 1 (a channels-last run where no width divides C): the element-by-element forms only */
    if (raw_acc) {
        if (V > 1) {
            ttc_sbuf_printf(src, "    if ");
            aligned(src, "o_", "o_off + lin", V, out->dtype);
            ttc_sbuf_printf(src, "\n");
            load_run(src, "o_", "o_off + lin", V, out->dtype, "acc", "float", "        ");
            ttc_sbuf_printf(src, "    else ");
        } else {
            ttc_sbuf_printf(src, "    ");
        }
        ttc_sbuf_printf(src, "for (int j = 0; j < %d; j++) acc[j] = ", V);
        ttc_codegen_load(src, k, sp, out->dtype, "o_", "o_off + lin + j");
        ttc_sbuf_printf(src, ";\n");
    } else {
        ttc_sbuf_printf(src, "    for (int j = 0; j < %d; j++) acc[j] = 0.0f;\n", V);
    }
    for (int32_t l = 0; l < e->n_leaves; l++) {
        int32_t t = e->leaves[l];
        ttc_dtype d = k->ts[t].dtype;
        const char *lt = ttc_codegen_leaf_type(k, t);
        bool dense = ttc_kir_dense_like(k, out, t), vec = V > 1 && (d == TTC_DTYPE_FLOAT16 || d == TTC_DTYPE_FLOAT32);
        char ptr[16], idx[32], dst[16], at[96];
        snprintf(ptr, sizeof ptr, "l%d", l);
        snprintf(idx, sizeof idx, "l%d_p", l);
        snprintf(dst, sizeof dst, "l%d_a", l);
        ttc_sbuf_printf(src, "    %s l%d_a[%d];\n    const int l%d_p = l%d_off", lt, l, V, l, l);
        if (dense && nhwc && !leaf_nhwc[l]) {
            /* NCHW beside an NHWC output: its own index, the run going along C (H * W apart) */
            char C[16], H[16], W[16];
            dim_str(out, 1, C, sizeof C);
            dim_str(out, 2, H, sizeof H);
            dim_str(out, 3, W, sizeof W);
            ttc_sbuf_printf(src, " + ((b0 * %s + b1) * %s + b2) * %s + b3;\n", C, H, W);
            snprintf(at, sizeof at, "l%d_p + j * (%s * %s)", l, H, W);
            ttc_sbuf_printf(src, "    for (int j = 0; j < %d; j++) l%d_a[j] = ", V, l);
            ttc_codegen_load(src, k, sp, d, ptr, at);
            ttc_sbuf_printf(src, ";\n");
            continue;
        }
        if (dense) ttc_sbuf_printf(src, " + lin");
        else for (int32_t dd = 0; dd < R; dd++) ttc_sbuf_printf(src, " + b%d * l%d_s%d", dd, l, dd);
        ttc_sbuf_printf(src, ";\n");
        if (dense) snprintf(at, sizeof at, "l%d_p + j", l);
        else snprintf(at, sizeof at, "l%d_p + j * l%d_s%d", l, l, inner);
        ttc_sbuf_printf(src, "    ");
        if (vec) {
            ttc_sbuf_printf(src, "if (");
            if (!dense) ttc_sbuf_printf(src, "l%d_s%d == 1 && ", l, inner);
            aligned(src, ptr, idx, V, d);
            ttc_sbuf_printf(src, ")\n");
            load_run(src, ptr, idx, V, d, dst, lt, "        ");
            ttc_sbuf_printf(src, "    else ");
        }
        if (!dense) {
            ttc_sbuf_printf(src, "if (l%d_s%d == 0) { const %s x = ", l, inner, lt);
            ttc_codegen_load(src, k, sp, d, ptr, idx);
            ttc_sbuf_printf(src, "; for (int j = 0; j < %d; j++) l%d_a[j] = x; }\n    else ", V, l);
        }
        ttc_sbuf_printf(src, "for (int j = 0; j < %d; j++) l%d_a[j] = ", V, l);
        ttc_codegen_load(src, k, sp, d, ptr, at);
        ttc_sbuf_printf(src, ";\n");
    }
    ttc_sbuf_printf(src, "    float r[%d];\n", V);
    for (int32_t j = 0; j < V; j++) {   /* element j, in a block of its own */
        ttc_sbuf_printf(src, "    {\n");
        if (has_index)
            for (int32_t dd = 0; dd < R; dd++)
                ttc_sbuf_printf(src, "    const int i%d = b%d + %d;\n", dd, dd, dd == inner ? j : 0);
        for (int32_t l = 0; l < e->n_leaves; l++)
            ttc_sbuf_printf(src, "    const %s l%d_v = l%d_a[%d];\n", ttc_codegen_leaf_type(k, e->leaves[l]), l, l, j);
        char an[16];
        snprintf(an, sizeof an, "acc[%d]", j);
        if (e->n > 0) {
            TTC_TRY(emit_expr(src, k, sp, e, an, out->dtype == TTC_DTYPE_FLOAT16));
            ttc_sbuf_printf(src, "    r[%d] = (float)v%d;\n", j, e->root);
        } else {
            ttc_sbuf_printf(src, "    r[%d] = %s;\n", j, an);
        }
        ttc_sbuf_printf(src, "    }\n");
    }
    if (V > 1) {
        ttc_sbuf_printf(src, "    if ");
        aligned(src, "o_", "o_off + lin", V, out->dtype);
        if (out->dtype == TTC_DTYPE_FLOAT16) {
            static const char *h[] = {"", "", "uint", "", "uint2", "", "", "", "uint4"};
            ttc_sbuf_printf(src, " {\n        %s w;\n        vstore_half%d(vload%d(0, r), 0, (__private half *)&w);\n"
                                 "        *(__global %s *)(o_ + o_off + lin) = w;\n    }\n",
                            h[V], V, V, h[V]);
        } else {
            ttc_sbuf_printf(src, " *(__global float%d *)(o_ + o_off + lin) = vload%d(0, r);\n", V, V);
        }
        ttc_sbuf_printf(src, "    else ");
    } else {
        ttc_sbuf_printf(src, "    ");
    }
    ttc_sbuf_printf(src, "for (int j = 0; j < %d; j++) {\n", V);
    ttc_codegen_store(src, k, sp, out->dtype, "r[j]", "r[j]", "lin + j", "        ");
    ttc_sbuf_printf(src, "    }\n}\n");
    return TTC_OK;
}

void ttc_codegen_leaf_params(ttc_kparams *p, const ttc_kop *op, const char *pre) {
    const ttc_kir *k = p->k;
    const ttc_et *out = &k->ts[op->out];
    int32_t R = out->rank;
    for (int32_t l = 0; l < op->epi.n_leaves; l++) {
        int32_t t = op->epi.leaves[l];
        char nm[32];
        snprintf(nm, sizeof nm, "%sl%d", pre, l);
        ttc_kp_buffer(p, t, nm, NULL);
        if (!ttc_kir_dense_like(k, out, t))
            for (int32_t d = 0; d < R; d++) ttc_kp_int(p, TTC_ARG_STRIDE, t, d, R, 0, "%sl%d_s%d", pre, l, d);
    }
}

ttc_status ttc_codegen_epi_value(ttc_sbuf *src, const ttc_kir *k, const ttc_kop *op, const ttc_spelling *sp,
                                 const char *pre, int32_t given, char *res, size_t res_len) {
    const ttc_et *out = &k->ts[op->out];
    const ttc_expr *e = &op->epi;
    int32_t R = out->rank;
    for (int32_t l = 0; l < e->n_leaves; l++) {
        int32_t t = e->leaves[l];
        if (l == given) {   /* read by the caller (a transposing tile: codegen.c) */
            ttc_sbuf_printf(src, "    %s l%d_v = given;\n", ttc_codegen_leaf_type(k, t), l);
            continue;
        }
        ttc_sbuf_printf(src, "    int l%d_p = %sl%d_off", l, pre, l);
        if (ttc_kir_dense_like(k, out, t)) ttc_sbuf_printf(src, " + lin");
        else for (int32_t d = 0; d < R; d++) ttc_sbuf_printf(src, " + i%d * %sl%d_s%d", d, pre, l, d);
        bool hl = k->half_compute && k->ts[t].dtype == TTC_DTYPE_FLOAT16;
        ttc_sbuf_printf(src, ";\n    %s l%d_v = ", hl ? "half" : ctype(k->ts[t].dtype), l);
        char ptr[32], idx[16];
        snprintf(ptr, sizeof ptr, "%sl%d", pre, l);
        snprintf(idx, sizeof idx, "l%d_p", l);
        ttc_codegen_load(src, k, sp, k->ts[t].dtype, ptr, idx);
        ttc_sbuf_printf(src, ";\n");
    }
    snprintf(res, res_len, "acc");
    if (e->n > 0) {
        TTC_TRY(emit_expr(src, k, sp, e, "acc", out->dtype == TTC_DTYPE_FLOAT16));
        snprintf(res, res_len, "v%d", e->root);
    }
    return TTC_OK;
}

ttc_status ttc_codegen_store_fns(ttc_sbuf *src, const ttc_kir *k, const ttc_kop *op, const ttc_spelling *sp,
                                 ttc_kparams *p, int32_t given, int32_t vec, bool raw_acc, bool all_dims) {
    const ttc_et *out = &k->ts[op->out];
    const ttc_expr *e = &op->epi;
    int32_t R = out->rank;
    bool need_idx = false;
    for (int32_t l = 0; l < e->n_leaves; l++)
        if (l != given && !ttc_kir_dense_like(k, out, e->leaves[l])) need_idx = true;
    for (int32_t i = 0; i < e->n; i++)
        if (e->nodes[i].op == TTC_EOP_INDEX) {
            if ((int32_t)e->nodes[i].f >= R)
                return ttc_fail(TTC_ERR_INTERNAL, "%s: index of dim %d in a rank-%d output", op->name, (int)e->nodes[i].f, R);
            need_idx = true;
        }
    ttc_kp_out(p, op->out, "o_", "o_off");
    /* the index of each output dim: divisions by concrete dims are written as literals (the
     * compiler turns them into a multiply and shift: on the H100 the runtime divisions were
     * most of a b32 ViT's layout copies), and dim 0 needs none (lin is below the count) */
    if (need_idx || all_dims)
        for (int32_t d = 1; d < R; d++)
            if (out->dims[d].sym >= 0) ttc_kp_int(p, TTC_ARG_DIM, op->out, d, 0, 0, "od%d", d);
    ttc_codegen_leaf_params(p, op, "");
    TTC_TRY(ttc_kp_done(p));
    if (given >= 0)
        ttc_sbuf_printf(src, "static inline void %s_store(float acc, int lin, %s given%s) {\n", p->ks->name,
                        ttc_codegen_leaf_type(k, e->leaves[given]), ttc_kp_sig(p));
    else ttc_sbuf_printf(src, "static inline void %s_store(float acc, int lin%s) {\n", p->ks->name, ttc_kp_sig(p));
    if (need_idx) emit_index(src, out, "int i");
    char rbuf[16];
    TTC_TRY(ttc_codegen_epi_value(src, k, op, sp, "", given, rbuf, sizeof rbuf));
    const char *res = rbuf;
    char fres[24];
    snprintf(fres, sizeof fres, "(float)%s", res);
    ttc_codegen_store(src, k, sp, out->dtype, res, fres, "lin", "    ");
    ttc_sbuf_printf(src, "}\n");
    if (vec > 1 && given < 0) TTC_TRY(emit_storev(src, k, op, sp, p, vec, raw_acc, need_idx, NULL));
    return TTC_OK;
}

int32_t ttc_codegen_vec_width_nhwc(const ttc_kir *k, const ttc_kop *op) {
    const ttc_et *out = &k->ts[op->out];
    if (out->rank != 4 || (out->dtype != TTC_DTYPE_FLOAT16 && out->dtype != TTC_DTYPE_FLOAT32) || out->dims[1].sym >= 0)
        return 1;
    int64_t C = out->dims[1].add;
    int32_t V = out->dtype == TTC_DTYPE_FLOAT16 ? 8 : 4;
    while (V > 1 && (C <= 0 || C % V)) V /= 2;
    return V;
}

ttc_status ttc_codegen_store_nhwc(ttc_sbuf *src, const ttc_kir *k, const ttc_kop *op, const ttc_spelling *sp,
                                  const ttc_kparams *p, int32_t V, const bool *nhwc) {
    const ttc_et *out = &k->ts[op->out];
    const ttc_expr *e = &op->epi;
    if (out->rank != 4) return ttc_fail(TTC_ERR_INTERNAL, "%s: a channels-last epilogue of a rank-%d output", op->name, out->rank);
    bool need_idx = false, leaf_nhwc[TTC_EXPR_MAX_LEAVES] = {0};
    for (int32_t l = 0; l < e->n_leaves; l++) {
        leaf_nhwc[l] = nhwc[e->leaves[l]];
        need_idx = need_idx || !ttc_kir_dense_like(k, out, e->leaves[l]) || !leaf_nhwc[l];
    }
    for (int32_t i = 0; i < e->n; i++)
        if (e->nodes[i].op == TTC_EOP_INDEX)
            return ttc_fail(TTC_ERR_INTERNAL, "%s: index nodes in a channels-last epilogue", op->name);
    return emit_storev(src, k, op, sp, p, V, true, need_idx, leaf_nhwc);
}
