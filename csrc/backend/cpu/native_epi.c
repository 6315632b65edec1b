/* Epilogues inside native calls (backend/cpu/native_epi.h). */
/* the tile loops below are meant to vectorise; -O2's cost model (GCC 12) leaves most scalar */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3", "no-trapping-math")
#endif
#include "native_epi.h"
#include "native_math.h"
#include "step_threads.h"

#include <stdlib.h>
#include <string.h>

/* Elements per tile: every expression node keeps one tile of values on the stack. */
enum { EPI_TILE = 128, EPI_MAX_NODES = 32 };

/* TORCHTRT_C_NATIVE_EPI=0 at build: the target's native_epi (target/target.c) */
static bool env_off(const ttc_kir *k) { return !ttc_kir_target(k)->native_epi; }

/* kir/eops.def's NATIVE CHEAP rows: each has its C step in eval_tile's switch */
static bool cheap_step(ttc_eop op) { return (unsigned)op < TTC_EOP_COUNT && ttc_eops[op].native == TTC_EOP_NATIVE_CHEAP; }

/* Walks the store arguments (ttc_codegen_store_fns' order): output buffer and offset, the
 * output's symbolic dims (some of dims 1..R-1, ascending; concrete ones are literals in the
 * OpenCL code) when some leaf is not dense, then per leaf its buffer, offset and (not dense)
 * one stride per output dim. first[l]: index of leaf l's buffer argument. (The native epilogue
 * takes the output's dims from the plan, not from these.) */
static bool parse_store_args(const ttc_kir *k, const ttc_kop *op, const ttc_argspec *a, int32_t n, int32_t *first,
                             bool *dense) {
    const ttc_expr *e = &op->epi;
    int32_t R = k->ts[op->out].rank, i = 0;
    if (n < 2 || a[0].kind != TTC_ARG_BUF || a[0].t != op->out || a[1].kind != TTC_ARG_OFF) return false;
    i = 2;
    for (int32_t last = -1; i < n && a[i].kind == TTC_ARG_DIM; i++) {
        if (a[i].t != op->out || a[i].d <= last || a[i].d >= R) return false;
        last = a[i].d;
    }
    for (int32_t l = 0; l < e->n_leaves; l++) {
        if (i + 1 >= n || a[i].kind != TTC_ARG_BUF || a[i].t != e->leaves[l] || a[i + 1].kind != TTC_ARG_OFF)
            return false;
        first[l] = i;
        i += 2;
        dense[l] = !(i < n && a[i].kind == TTC_ARG_STRIDE && a[i].t == e->leaves[l]);
        if (!dense[l])
            for (int32_t d = 0; d < R; d++, i++)
                if (i >= n || a[i].kind != TTC_ARG_STRIDE || a[i].d != d || a[i].r != R) return false;
    }
    return i == n;
}

/* Node i's step runs here: a cheap step, x^2 / x^3 as products (RMS norm's square, GPT-2's
 * gelu_new cube), or exp/erf/tanh and what is built on them (GELU, sigmoid, SiLU) through
 * native_math.h's vectorised loops (transformers' FFN GELU handed over to an OpenCL kernel after
 * every GEMM before; TORCHTRT_C_NATIVE_EPI_MATH=0 keeps those in OpenCL). */
static bool step_ok(const ttc_kir *k, const ttc_expr *e, int32_t i) {
    const ttc_enode *nd = &e->nodes[i];
    bool square_or_cube = nd->op == TTC_EOP_POW && nd->b >= 0 && nd->b < i && e->nodes[nd->b].op == TTC_EOP_CONST &&
                          (e->nodes[nd->b].f == 2.0 || e->nodes[nd->b].f == 3.0);
    return cheap_step(nd->op) || square_or_cube || (ttc_kir_target(k)->native_epi_math && ttc_nm_unary_ok(nd->op));
}

static bool is_q8(ttc_dtype d) { return d == TTC_DTYPE_INT8 || d == TTC_DTYPE_UINT8; }

/* Node i's dtype and operands: float32 throughout, except the 8-bit casts of quantization
 * (PT2E's quantize -> dequantize fused into one expression: clamp(rint(x / s) + zp) -> uint8
 * -> float), computed here on float tiles holding the integer values. */
static bool dtypes_ok(const ttc_expr *e, int32_t i, bool q8_leaves) {
    const ttc_enode *nd = &e->nodes[i];
    /* an 8-bit leaf (gathered as floats; only a cast to float32 reads it, every other step
     * being float32) */
    if (nd->op == TTC_EOP_LEAF && nd->a >= 0 && q8_leaves && is_q8(nd->dtype)) return true;
    if (nd->op == TTC_EOP_CAST) {
        if (nd->a < 0 || nd->a >= i) return false;
        ttc_dtype from = e->nodes[nd->a].dtype;
        if (nd->dtype == TTC_DTYPE_FLOAT32) return from == TTC_DTYPE_FLOAT32 || is_q8(from);
        return is_q8(nd->dtype) && from == TTC_DTYPE_FLOAT32;
    }
    return nd->dtype == TTC_DTYPE_FLOAT32;
}

static bool leaf_ok(const ttc_kir *k, int32_t t, bool q8) {
    return k->ts[t].dtype == TTC_DTYPE_FLOAT32 || (q8 && is_q8(k->ts[t].dtype));
}

/* The stored dtype: float32, or for an elementwise op 8-bit where its root is the cast to it (a
 * quantize: torchao's dynamic per-row one of the activations before _int_mm, rounded and
 * clamped before the cast), stored from the float tile of integral values. */
static bool out_ok(const ttc_kir *k, const ttc_kop *op) {
    const ttc_expr *e = &op->epi;
    ttc_dtype d = k->ts[op->out].dtype;
    if (d == TTC_DTYPE_FLOAT32) return true;
    return is_q8(d) && op->kind == TTC_KOP_ELEMENTWISE && e->root >= 0 && e->root < e->n &&
           e->nodes[e->root].op == TTC_EOP_CAST && e->nodes[e->root].dtype == d;
}

/* 8-bit leaves are read where the output is 8-bit too (torchao's per-row quantize adds its int8
 * zero points); float32 outputs keep float32 leaves only. */
static bool q8_leaves(const ttc_kir *k, const ttc_kop *op) { return is_q8(k->ts[op->out].dtype); }

bool ttc_native_epi_ok(const ttc_kir *k, const ttc_kop *op, const ttc_argspec *store_args, int32_t n_store) {
    const ttc_expr *e = &op->epi;
    if (e->n <= 0 || e->n > EPI_MAX_NODES || env_off(k) || !out_ok(k, op)) return false;
    bool q8 = q8_leaves(k, op);
    for (int32_t l = 0; l < e->n_leaves; l++)
        if (!leaf_ok(k, e->leaves[l], q8)) return false;
    for (int32_t i = 0; i < e->n; i++)
        if (!dtypes_ok(e, i, q8) || !step_ok(k, e, i)) return false;
    if (e->root < 0 || e->root >= e->n) return false;
    int32_t first[TTC_EXPR_MAX_LEAVES];
    bool dense[TTC_EXPR_MAX_LEAVES];
    return parse_store_args(k, op, store_args, n_store, first, dense);
}

/* The nodes the root needs when the library supplies node `start` (start < 0: every node, the
 * raw result being the acc leaf); false where a needed node before start is neither a leaf
 * nor a constant, or one after it reads the raw result (both gone). */
static bool live_nodes(const ttc_expr *e, int32_t start, uint32_t *live, uint32_t *leaves) {
    *live = *leaves = 0;
    if (e->root < 0 || e->root >= e->n || e->n > EPI_MAX_NODES) return false;
    if (start < 0) {
        *live = e->n >= 32 ? ~0u : (1u << e->n) - 1;
        *leaves = e->n_leaves >= 32 ? ~0u : (1u << e->n_leaves) - 1;
        return true;
    }
    if (start > e->root) return false;
    uint32_t need = 1u << e->root;
    for (int32_t i = e->root; i >= 0; i--) {
        if (!(need >> i & 1)) continue;
        const ttc_enode *nd = &e->nodes[i];
        if (nd->op == TTC_EOP_LEAF) {
            if (nd->a < 0 && i != start) return false;
            if (nd->a >= 0) *leaves |= 1u << nd->a;
            continue;
        }
        if (i == start || nd->op == TTC_EOP_CONST) continue;
        if (i < start) return false;
        if (nd->a >= 0 && nd->a < i) need |= 1u << nd->a;
        if (ttc_eop_is_binary(nd->op) && nd->b >= 0 && nd->b < i) need |= 1u << nd->b;
    }
    *live = need;
    return true;
}

/* The expression checks of ttc_native_epi_ok for the nodes the root needs past `start` (all of
 * them for start < 0); an ELEMENTWISE op has no library result to read. (Steps admitted here
 * and in ttc_native_epi_ok are the same.) */
static bool nodes_ok(const ttc_kir *k, const ttc_kop *op, int32_t start) {
    const ttc_expr *e = &op->epi;
    uint32_t live, leaves;
    if (e->n <= 0 || e->n > EPI_MAX_NODES || env_off(k) || !out_ok(k, op)) return false;
    if (!live_nodes(e, start, &live, &leaves)) return false;
    bool q8 = q8_leaves(k, op);
    for (int32_t l = 0; l < e->n_leaves; l++)
        if ((leaves >> l & 1) && !leaf_ok(k, e->leaves[l], q8)) return false;
    for (int32_t i = 0; i < e->n; i++) {
        const ttc_enode *nd = &e->nodes[i];
        if (!(live >> i & 1) || i == start) continue;
        if (!dtypes_ok(e, i, q8) || !step_ok(k, e, i)) return false;
        if (nd->op == TTC_EOP_LEAF && nd->a < 0 && op->kind == TTC_KOP_ELEMENTWISE) return false;
    }
    return true;
}

bool ttc_native_epi_expr_ok(const ttc_kir *k, const ttc_kop *op) { return nodes_ok(k, op, -1); }

bool ttc_native_epi_ok_from(const ttc_kir *k, const ttc_kop *op, const ttc_argspec *store_args, int32_t n_store,
                            int32_t start) {
    int32_t first[TTC_EXPR_MAX_LEAVES];
    bool dense[TTC_EXPR_MAX_LEAVES];
    return nodes_ok(k, op, start) && parse_store_args(k, op, store_args, n_store, first, dense);
}

ttc_status ttc_native_epi_bind(const ttc_engine_view *e, const ttc_plan *p, int32_t ki, ttc_native_epi *epi, ttc_buf **slots,
                               int32_t *n_slots, const ttc_exec_bufs *b) {
    return ttc_native_epi_bind_from(e, p, ki, epi, slots, n_slots, b, -1);
}

ttc_status ttc_native_epi_bind_from(const ttc_engine_view *e, const ttc_plan *p, int32_t ki, ttc_native_epi *epi,
                                    ttc_buf **slots, int32_t *n_slots, const ttc_exec_bufs *b, int32_t start) {
    const ttc_kspec *ks = &e->cg->kernels[ki];
    const ttc_kop *op = &e->k->ops[ks->op];
    /* the native arguments, the epilogue kernel's element count, then the store arguments */
    int32_t base = ks->n_native_args + 1, n = ks->n_args - base;
    int32_t first[TTC_EXPR_MAX_LEAVES];
    memset(epi, 0, sizeof *epi);
    if (n < 0 || !parse_store_args(e->k, op, ks->args + base, n, first, epi->dense))
        return ttc_fail(TTC_ERR_INTERNAL, "native epilogue of %s: unexpected store arguments", op->name);
    if (!live_nodes(&op->epi, start, &epi->live, &epi->live_leaves))
        return ttc_fail(TTC_ERR_INTERNAL, "native epilogue of %s: node %d cannot start it", op->name, (int)start);
    epi->start = start;
    epi->threads = ttc_kir_target(e->k)->step_threads;
    ttc_dtype od = e->k->ts[op->out].dtype;
    epi->out_q8 = (int8_t)(od == TTC_DTYPE_UINT8 ? 1 : od == TTC_DTYPE_INT8 ? 2 : 0);
    const ttc_res *out = &p->res[op->out];
    epi->on = start != op->epi.root;   /* else the library computed all of it */
    epi->expr = &op->epi;
    epi->rank = e->k->ts[op->out].rank;
    epi->n = out->numel;
    for (int32_t d = 0; d < epi->rank; d++) epi->dims[d] = out->shape[d];
    epi->n_leaves = op->epi.n_leaves;
    const int64_t *av = p->argv[ki] + base;
    for (int32_t l = 0; l < epi->n_leaves; l++) {
        int32_t a = first[l];
        ttc_dtype ld = e->k->ts[op->epi.leaves[l]].dtype;
        epi->leaf_q8[l] = (int8_t)(ld == TTC_DTYPE_UINT8 ? 1 : ld == TTC_DTYPE_INT8 ? 2 : 0);
        if (*n_slots >= TTC_NATIVE_MAX_MEMS)
            return ttc_fail(TTC_ERR_INTERNAL, "native epilogue of %s: too many buffers", op->name);
        epi->slot[l] = (int8_t)*n_slots;
        slots[(*n_slots)++] = ttc_exec_buf(p, (int32_t)av[a], b);
        epi->off[l] = av[a + 1];
        if (!epi->dense[l])
            for (int32_t d = 0; d < epi->rank; d++) epi->strides[l][d] = av[a + 2 + d];
    }
    return TTC_OK;
}

/* dst[0..cnt) = leaf values at output elements lin0.. (idx: lin0's multi-index), a row of the
 * output at a time: a broadcast leaf (bias: stride 0 along the row) is a fill, a dense row a copy. */
static inline float load_q8(const void *base, int64_t i, int8_t q8) {
    return q8 == 1 ? (float)((const uint8_t *)base)[i] : (float)((const int8_t *)base)[i];
}

/* The same for an 8-bit leaf (q8 1: uint8, 2: int8), converted to float. */
static void gather_q8(const ttc_native_epi *ep, int32_t l, const void *base, const int64_t *idx0, int64_t lin0,
                      int32_t cnt, float *dst) {
    int8_t q8 = ep->leaf_q8[l];
    if (ep->dense[l] || ep->rank == 0) {
        int64_t o = ep->off[l] + (ep->rank ? lin0 : 0);
        for (int32_t j = 0; j < cnt; j++) dst[j] = load_q8(base, o + j, q8);
        return;
    }
    int32_t R = ep->rank, last = R - 1;
    const int64_t *s = ep->strides[l];
    int64_t idx[TTC_MAX_RANK], pos = ep->off[l], sl = s[last];
    for (int32_t d = 0; d < R; d++) {
        idx[d] = idx0[d];
        pos += idx[d] * s[d];
    }
    for (int32_t j = 0; j < cnt;) {   /* a row at a time, as gather's */
        int64_t run = ep->dims[last] - idx[last];
        if (run > cnt - j) run = cnt - j;
        if (sl == 0) {
            float x = load_q8(base, pos, q8);
            for (int64_t k = 0; k < run; k++) dst[j + k] = x;
        } else {
            for (int64_t k = 0; k < run; k++) dst[j + k] = load_q8(base, pos + k * sl, q8);
        }
        j += (int32_t)run;
        idx[last] += run;
        pos += run * sl;
        for (int32_t d = last; d > 0 && idx[d] >= ep->dims[d]; d--) {
            pos += s[d - 1] - idx[d] * s[d];
            idx[d] = 0;
            idx[d - 1]++;
        }
    }
}

static void gather(const ttc_native_epi *ep, int32_t l, const float *base, const int64_t *idx0, int64_t lin0,
                   int32_t cnt, float *dst) {
    if (ep->leaf_q8[l]) {
        gather_q8(ep, l, base, idx0, lin0, cnt, dst);
        return;
    }
    if (ep->dense[l] || ep->rank == 0) {
        memcpy(dst, base + ep->off[l] + (ep->rank ? lin0 : 0), sizeof(float) * (size_t)cnt);
        return;
    }
    int32_t R = ep->rank, last = R - 1;
    const int64_t *s = ep->strides[l];
    int64_t idx[TTC_MAX_RANK], pos = ep->off[l], sl = s[last];
    for (int32_t d = 0; d < R; d++) {
        idx[d] = idx0[d];
        pos += idx[d] * s[d];
    }
    for (int32_t j = 0; j < cnt;) {
        int64_t run = ep->dims[last] - idx[last];
        if (run > cnt - j) run = cnt - j;
        if (sl == 0) {
            float x = base[pos];
            for (int64_t k = 0; k < run; k++) dst[j + k] = x;
        } else if (sl == 1) {
            memcpy(dst + j, base + pos, sizeof(float) * (size_t)run);
        } else {
            for (int64_t k = 0; k < run; k++) dst[j + k] = base[pos + k * sl];
        }
        j += (int32_t)run;
        idx[last] += run;
        pos += run * sl;
        for (int32_t d = last; d > 0 && idx[d] >= ep->dims[d]; d--) {  /* carry into the next row */
            pos += s[d - 1] - idx[d] * s[d];
            idx[d] = 0;
            idx[d - 1]++;
        }
    }
}

/* Every step over whole tiles (a constant trip count, distinct rows: the compiler vectorises
 * them); lanes past cnt hold leftovers that nobody stores. */
static void eval_tile(const ttc_native_epi *ep, float (*v)[EPI_TILE], float (*lv)[EPI_TILE], const float *acc,
                      int32_t cnt) {
    const ttc_expr *e = ep->expr;
    for (int32_t i = 0; i < e->n; i++) {
        const ttc_enode *nd = &e->nodes[i];
        float *restrict o = v[i];
        if (!(ep->live >> i & 1)) continue;
        if (i == ep->start) {
            memcpy(o, acc, sizeof(float) * (size_t)cnt);
            continue;
        }
        const float *restrict a = nd->a >= 0 && nd->a < i ? v[nd->a] : v[i];
        const float *restrict b = nd->b >= 0 && nd->b < i ? v[nd->b] : v[i];
        const int32_t T = EPI_TILE;
        int32_t j;
        switch (nd->op) {
        case TTC_EOP_LEAF: memcpy(o, nd->a < 0 ? acc : lv[nd->a], sizeof(float) * (size_t)(nd->a < 0 ? cnt : T)); break;
        case TTC_EOP_CONST: for (j = 0; j < T; j++) o[j] = (float)nd->f; break;
        case TTC_EOP_CAST:   /* float32, or an 8-bit cast of a clamped integral value (dtypes_ok) */
            /* the low byte of the truncated int, sign- or zero-extended: shifts and a mask, which
             * vectorise (the char conversions did not) */
            if (nd->dtype == TTC_DTYPE_INT8)
                for (j = 0; j < T; j++) o[j] = (float)((int32_t)((uint32_t)(int32_t)a[j] << 24) >> 24);
            else if (nd->dtype == TTC_DTYPE_UINT8)
                for (j = 0; j < T; j++) o[j] = (float)((int32_t)a[j] & 255);
            else memcpy(o, a, sizeof(float) * (size_t)T);
            break;
        case TTC_EOP_ROUND:
            /* rint (half to even) without a libm call per element (x86-64's baseline has no
             * roundps): below 2^23, |x| + 2^23 lies where floats are the integers, so the add
             * rounds |x| to the nearest, ties to even (2^23 is even); above, x is integral; NaN
             * fails the compare and passes through; the sign copied back (-0 stays -0) */
            for (j = 0; j < T; j++) {
                float m = __builtin_fabsf(a[j]);
                float r = __builtin_copysignf((m + 8388608.0f) - 8388608.0f, a[j]);
                o[j] = m < 8388608.0f ? r : a[j];
            }
            break;
        case TTC_EOP_ADD: for (j = 0; j < T; j++) o[j] = a[j] + b[j]; break;
        case TTC_EOP_SUB: for (j = 0; j < T; j++) o[j] = a[j] - b[j]; break;
        case TTC_EOP_MUL: for (j = 0; j < T; j++) o[j] = a[j] * b[j]; break;
        case TTC_EOP_DIV: for (j = 0; j < T; j++) o[j] = a[j] / b[j]; break;
        /* the OpenCL kernels' (and torch's) NaN rules: see emit_expr in codegen.c */
        case TTC_EOP_MAX: for (j = 0; j < T; j++) o[j] = (a[j] < b[j] || b[j] != b[j]) ? b[j] : a[j]; break;
        case TTC_EOP_MIN: for (j = 0; j < T; j++) o[j] = (a[j] > b[j] || b[j] != b[j]) ? b[j] : a[j]; break;
        case TTC_EOP_NEG: for (j = 0; j < T; j++) o[j] = -a[j]; break;
        case TTC_EOP_ABS: for (j = 0; j < T; j++) o[j] = a[j] < 0.0f ? -a[j] : a[j]; break;
        case TTC_EOP_RELU: for (j = 0; j < T; j++) o[j] = a[j] < 0.0f ? 0.0f : a[j]; break;
        case TTC_EOP_RECIP: for (j = 0; j < T; j++) o[j] = 1.0f / a[j]; break;
        case TTC_EOP_SQRT: for (j = 0; j < T; j++) o[j] = __builtin_sqrtf(a[j]); break;
        case TTC_EOP_HARDSWISH:
            for (j = 0; j < T; j++) o[j] = a[j] * (a[j] < -3.0f ? 0.0f : a[j] > 3.0f ? 6.0f : a[j] + 3.0f) / 6.0f;
            break;
        case TTC_EOP_HARDSIGMOID:
            for (j = 0; j < T; j++) o[j] = (a[j] < -3.0f ? 0.0f : a[j] > 3.0f ? 6.0f : a[j] + 3.0f) / 6.0f;
            break;
        default:   /* kir/eops.def's MATH rows (step_ok admitted no other) */
            if (ttc_eops[nd->op].native == TTC_EOP_NATIVE_MATH) ttc_nm_unary(nd->op, a, o, T);
            break;
        case TTC_EOP_POW:   /* exponent 2 or 3 (ttc_native_epi_expr_ok) */
            if (e->nodes[nd->b].f == 2.0) for (j = 0; j < T; j++) o[j] = a[j] * a[j];
            else for (j = 0; j < T; j++) o[j] = a[j] * a[j] * a[j];
            break;
        }
    }
}

typedef struct epi_job {
    const ttc_native_epi *ep;
    void *const *mems;
    float *y;                 /* out_q8: the 8-bit output, no accumulator */
} epi_job;

/* Tiles [t0, t1) of the output (ttc_steps_for's part). */
static void apply_tiles(void *arg, int64_t t0, int64_t t1) {
    const epi_job *j = arg;
    const ttc_native_epi *ep = j->ep;
    const ttc_expr *e = ep->expr;
    float *y = j->y;
    float v[EPI_MAX_NODES][EPI_TILE], lv[TTC_EXPR_MAX_LEAVES][EPI_TILE];
    memset(v, 0, sizeof(float) * EPI_TILE * (size_t)e->n);   /* the lanes past a last short tile */
    memset(lv, 0, sizeof lv);
    int64_t idx[TTC_MAX_RANK] = {0};
    bool need_idx = false;
    for (int32_t l = 0; l < ep->n_leaves; l++) need_idx = need_idx || ((ep->live_leaves >> l & 1) && !ep->dense[l]);
    for (int64_t lin0 = t0 * EPI_TILE; lin0 < ep->n && lin0 < t1 * EPI_TILE; lin0 += EPI_TILE) {
        int32_t cnt = (int32_t)(ep->n - lin0 < EPI_TILE ? ep->n - lin0 : EPI_TILE);
        if (need_idx) {
            int64_t rem = lin0;
            for (int32_t d = ep->rank - 1; d >= 0; d--) {
                idx[d] = ep->dims[d] > 0 ? rem % ep->dims[d] : 0;
                rem = ep->dims[d] > 0 ? rem / ep->dims[d] : 0;
            }
        }
        for (int32_t l = 0; l < ep->n_leaves; l++)
            if (ep->live_leaves >> l & 1) gather(ep, l, (const float *)j->mems[ep->slot[l]], idx, lin0, cnt, lv[l]);
        if (ep->out_q8) {   /* integral values in range (the quantize's clamp), cast as the OpenCL kernel does */
            eval_tile(ep, v, lv, NULL, cnt);
            const float *r = v[e->root];
            if (ep->out_q8 == 1)
                for (int32_t i = 0; i < cnt; i++) ((uint8_t *)y)[lin0 + i] = (uint8_t)(int32_t)r[i];
            else
                for (int32_t i = 0; i < cnt; i++) ((int8_t *)y)[lin0 + i] = (int8_t)(int32_t)r[i];
            continue;
        }
        eval_tile(ep, v, lv, y + lin0, cnt);
        memcpy(y + lin0, v[e->root], sizeof(float) * (size_t)cnt);
    }
}

void ttc_native_epi_apply(const ttc_native_epi *ep, void *const *mems, float *y) {
    epi_job j = {ep, mems, y};
    int64_t tiles = (ep->n + EPI_TILE - 1) / EPI_TILE;
    /* a tile costs about one pass per node over it */
    ttc_steps_for(ep->threads, tiles, ttc_steps_grain(EPI_TILE * (1 + ep->expr->n / 4)), apply_tiles, &j);
}
