/* Kernel IR construction: tensors, views, kernel ops and expressions. */
#include "kir.h"

#include <stdlib.h>
#include <string.h>

void ttc_expr_init(ttc_expr *e) { memset(e, 0, sizeof *e); e->root = -1; }
void ttc_expr_free(ttc_expr *e) { free(e->nodes); ttc_expr_init(e); }

static int32_t push(ttc_expr *e, ttc_enode nd) {
    if (ttc_grow((void **)&e->nodes, &e->cap, e->n + 1, sizeof(ttc_enode)) != TTC_OK) return -1;
    e->nodes[e->n] = nd;
    e->root = e->n;
    return e->n++;
}

int32_t ttc_expr_leaf(ttc_expr *e, int32_t tensor, ttc_dtype dtype) {
    int32_t li = -1;
    for (int32_t i = 0; i < e->n_leaves; i++)
        if (e->leaves[i] == tensor) li = i;
    if (li < 0) {
        if (e->n_leaves >= TTC_EXPR_MAX_LEAVES) {
            ttc_fail(TTC_ERR_UNSUPPORTED, "elementwise expression has more than %d inputs",
                     TTC_EXPR_MAX_LEAVES);
            return -1;
        }
        li = e->n_leaves;
        e->leaves[e->n_leaves++] = tensor;
    }
    ttc_enode nd = {TTC_EOP_LEAF, dtype, li, -1, -1, 0};
    return push(e, nd);
}

int32_t ttc_expr_acc(ttc_expr *e, ttc_dtype dtype) {
    ttc_enode nd = {TTC_EOP_LEAF, dtype, -1, -1, -1, 0};
    return push(e, nd);
}

int32_t ttc_expr_const(ttc_expr *e, double v, ttc_dtype dtype) {
    ttc_enode nd = {TTC_EOP_CONST, dtype, -1, -1, -1, v};
    return push(e, nd);
}

int32_t ttc_expr_cast(ttc_expr *e, int32_t a, ttc_dtype to) {
    if (a < 0) return -1;
    if (e->nodes[a].dtype == to) return a;
    ttc_enode nd = {TTC_EOP_CAST, to, a, -1, -1, 0};
    return push(e, nd);
}

int32_t ttc_expr_op(ttc_expr *e, ttc_eop op, int32_t a, int32_t b, int32_t c, ttc_dtype dtype) {
    if (a < 0 || b < -1 || c < -1) return -1;
    ttc_enode nd = {op, dtype, a, b, c, 0};
    return push(e, nd);
}

int32_t ttc_expr_index(ttc_expr *e, int32_t dim, ttc_dtype dtype) {
    if (dim < 0 || dim >= TTC_MAX_RANK) return -1;
    ttc_enode nd = {TTC_EOP_INDEX, dtype, -1, -1, -1, (double)dim};
    return push(e, nd);
}

const ttc_eop_info ttc_eops[TTC_EOP_COUNT] = {
#define EOP(name, arity, cmp, half, native, mathfn, dnnl, cublas) \
    [TTC_EOP_##name] = {#name, arity, cmp, half, TTC_EOP_NATIVE_##native},
#include "eops.def"
#undef EOP
};

/* A new row in eops.def compiles only once every file that expands it has what the row names
 * (SPELL_<NAME> in codegen/codegen_spell.c, NM(<MATHFN>) in backend/cpu/native_math.inc,
 * TTC_DNNL_<DNNL>, TTC_CUBLAS_ACT_<CUBLAS>); then this count. Before changing it, also write:
 * the converter that makes the op (convert/conv_elementwise.c or conv_math.c), a CHEAP row's C
 * step (backend/cpu/native_epi.c, eval_tile's switch), a HALF row's half form in the
 * fp16 probe (backend/opencl/half_probe.c), and its op harness cases (tests/). */
_Static_assert(TTC_EOP_COUNT == 71, "eops.def changed: see the list above this assertion (kir/kir.c)");

bool ttc_eop_is_compare(ttc_eop op) { return (unsigned)op < TTC_EOP_COUNT && ttc_eops[op].compare; }

bool ttc_eop_is_binary(ttc_eop op) { return (unsigned)op < TTC_EOP_COUNT && ttc_eops[op].arity == 2; }

bool ttc_dims_eq(int32_t ra, const ttc_dim *a, int32_t rb, const ttc_dim *b) {
    if (ra != rb) return false;
    for (int32_t i = 0; i < ra; i++)
        if (!ttc_dim_eq(a[i], b[i])) return false;
    return true;
}

ttc_kir *ttc_kir_new(void) { return ttc_calloc(1, sizeof(ttc_kir)); }

void ttc_kir_free(ttc_kir *k) {
    if (!k) return;
    for (int32_t i = 0; i < k->n_ts; i++) {
        free(k->ts[i].name);
        if (k->ts[i].data) ttc_tensor_data_unref(k->ts[i].data);
    }
    for (int32_t i = 0; i < k->n_ops; i++) {
        ttc_expr_free(&k->ops[i].epi);
        free(k->ops[i].name);
    }
    for (int32_t i = 0; i < k->n_inputs; i++) free(k->in_names ? k->in_names[i] : NULL);
    for (int32_t i = 0; i < k->n_outputs; i++) free(k->out_names ? k->out_names[i] : NULL);
    for (int32_t i = 0; i < k->n_syms; i++) free(k->syms[i].name);
    free(k->syms);
    free(k->in_names);
    free(k->out_names);
    free(k->inputs);
    free(k->outputs);
    free(k->ts);
    free(k->ops);
    free(k);
}

int32_t ttc_kir_tensor(ttc_kir *k, ttc_et_kind kind, ttc_dtype dt, int32_t rank,
                       const ttc_dim *dims, const char *name) {
    if (rank < 0 || rank > TTC_MAX_RANK) {
        ttc_fail(TTC_ERR_UNSUPPORTED, "tensor %s has rank %d (at most %d)", name ? name : "?", rank,
                 TTC_MAX_RANK);
        return -1;
    }
    if (ttc_grow((void **)&k->ts, &k->cap_ts, k->n_ts + 1, sizeof(ttc_et)) != TTC_OK) return -1;
    ttc_et *t = &k->ts[k->n_ts];
    memset(t, 0, sizeof *t);
    t->kind = kind;
    t->dtype = dt;
    t->rank = rank;
    if (rank) memcpy(t->dims, dims, sizeof(ttc_dim) * (size_t)rank);
    t->name = ttc_strdup(name ? name : "t");
    t->binding = -1;
    t->producer = -1;
    t->base = -1;
    t->contig = kind != TTC_ET_VIEW;
    return k->n_ts++;
}

int32_t ttc_kir_const(ttc_kir *k, ttc_dtype dt, int32_t rank, const int64_t *shape,
                      ttc_tensor_data *data, const char *name) {
    ttc_dim dims[TTC_MAX_RANK];
    int64_t numel = 1;
    for (int32_t i = 0; i < rank && i < TTC_MAX_RANK; i++) { dims[i] = ttc_dim_const(shape[i]); numel *= shape[i]; }
    if (!data || data->nbytes < (size_t)numel * ttc_dtype_size(dt)) {
        ttc_fail(TTC_ERR_INVALID_ARG, "constant %s: %zu bytes of data for %lld elements of %s",
                 name ? name : "?", data ? data->nbytes : 0, (long long)numel, ttc_dtype_name(dt));
        return -1;
    }
    int32_t id = ttc_kir_tensor(k, TTC_ET_CONST, dt, rank, dims, name);
    if (id >= 0) k->ts[id].data = ttc_tensor_data_ref(data);
    return id;
}

static uint16_t f32_to_f16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000, mant = x & 0x7fffff;
    int32_t exp = (int32_t)((x >> 23) & 0xff) - 127 + 15;
    if (((x >> 23) & 0xff) == 0xff) return (uint16_t)(sign | 0x7c00 | (mant ? 0x200 : 0));
    if (exp >= 31) return (uint16_t)(sign | 0x7c00);
    if (exp <= 0) {
        if (exp < -10) return (uint16_t)sign;
        mant |= 0x800000;
        uint32_t shift = (uint32_t)(14 - exp);
        uint32_t h = mant >> shift, rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1))) h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = sign | ((uint32_t)exp << 10) | (mant >> 13);
    uint32_t rem = mant & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) h++;
    return (uint16_t)h;
}

uint16_t ttc_half_from_float(float f) { return f32_to_f16(f); }

double ttc_round_to_dtype(double v, ttc_dtype d) {
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, 4);
    if (d == TTC_DTYPE_BFLOAT16) {
        if ((u & 0x7fffffffu) > 0x7f800000u) return v;                 /* NaN */
        u = ((u + 0x7fffu + ((u >> 16) & 1u)) >> 16) << 16;             /* nearest, ties to even */
    } else if (d == TTC_DTYPE_FLOAT16) {
        uint16_t h = f32_to_f16(f);
        uint32_t e = (h >> 10) & 0x1f, m = h & 0x3ffu, s = (uint32_t)(h & 0x8000) << 16;
        if (e == 0) return (s ? -1.0 : 1.0) * m * 0x1p-24;             /* zero, subnormals */
        u = s | (e == 0x1f ? 0x7f800000u | (m << 13) : ((e + 112) << 23) | (m << 13));
    } else {
        return d == TTC_DTYPE_FLOAT32 ? (double)f : v;
    }
    memcpy(&f, &u, 4);
    return f;
}

int32_t ttc_kir_const_f32(ttc_kir *k, ttc_dtype dt, int32_t rank, const int64_t *shape,
                          const float *vals, const char *name) {
    int64_t numel = 1;
    for (int32_t i = 0; i < rank; i++) numel *= shape[i];
    size_t es = ttc_dtype_size(dt);
    void *buf = ttc_malloc((size_t)numel * es + 1);
    if (!buf) return -1;
    for (int64_t i = 0; i < numel; i++) {
        if (dt == TTC_DTYPE_FLOAT16) ((uint16_t *)buf)[i] = f32_to_f16(vals[i]);
        else ((float *)buf)[i] = vals[i];
    }
    ttc_tensor_data *d = ttc_tensor_data_wrap(buf, (size_t)numel * es, free, buf);
    if (!d) { free(buf); return -1; }
    int32_t id = ttc_kir_const(k, dt, rank, shape, d, name);
    ttc_tensor_data_unref(d);
    return id;
}

int32_t ttc_kir_view(ttc_kir *k, int32_t base, ttc_view_kind vk, int32_t rank,
                     const ttc_dim *dims, const char *name) {
    int32_t id = ttc_kir_tensor(k, TTC_ET_VIEW, k->ts[base].dtype, rank, dims, name);
    if (id < 0) return -1;
    ttc_et *t = &k->ts[id];
    t->base = base;
    t->vkind = vk;
    t->contig = vk == TTC_VIEW_RESHAPE && k->ts[base].contig;
    t->step = 1;
    return id;
}

int32_t ttc_kir_op(ttc_kir *k, ttc_kop_kind kind, ttc_dtype out_dt, int32_t rank,
                   const ttc_dim *dims, const char *name) {
    int32_t t = ttc_kir_tensor(k, TTC_ET_INTER, out_dt, rank, dims, name);
    if (t < 0) return -1;
    if (ttc_grow((void **)&k->ops, &k->cap_ops, k->n_ops + 1, sizeof(ttc_kop)) != TTC_OK) return -1;
    ttc_kop *op = &k->ops[k->n_ops];
    memset(op, 0, sizeof *op);
    op->kind = kind;
    op->out = t;
    for (int i = 0; i < TTC_KOP_MAX_IN; i++) op->in[i] = -1;
    ttc_expr_init(&op->epi);
    op->name = ttc_strdup(name ? name : "op");
    k->ts[t].producer = k->n_ops;
    return k->n_ops++;
}

int32_t ttc_kir_elementwise(ttc_kir *k, ttc_expr *e, ttc_dtype dt, int32_t rank,
                            const ttc_dim *dims, const char *name) {
    int32_t oi = ttc_kir_op(k, TTC_KOP_ELEMENTWISE, dt, rank, dims, name);
    if (oi < 0) { ttc_expr_free(e); return -1; }
    k->ops[oi].epi = *e;
    ttc_expr_init(e);
    return k->ops[oi].out;
}
