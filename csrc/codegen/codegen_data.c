/* Kernels for the data-movement kinds of the kernel IR: concatenation/stacking, constant
 * padding, indexing (embedding, index_select, index.Tensor), torch.gather, nearest/bilinear
 * resizing, fused scaled-dot-product attention, sort/topk and scatter/index_put.
 *
 * Every kernel is one work-item per output element (attention: per query row; sort: per
 * input element) and the output is dense: work-item `lin` is decomposed into the output's
 * multi-index i0..iR-1. Inputs are read through (buffer, offset, per-dim strides) parameters
 * (ttc_kp_tensor), so views (permutes, slices, expands) are read in place without a copy, and
 * sizes are parameters, so one program serves every shape in the engine's symbol ranges. An
 * epilogue fused into the op is applied through the op's store function; without one the
 * value is written in the output's own type (int64 data is copied exactly). */
#include "codegen_impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static void launch(ttc_kspec *ks, int32_t t, int32_t from, int32_t to) {
    ttc_gdim g = {t, from, to, 1, 0};
    ks->g[0] = g;
    ks->work_dims = 1;
}

static bool is_fl(ttc_dtype d) { return ttc_dtype_engine_float(d); }

/* The type values of dtype d are held in inside a kernel: half where the engine computes in
 * half (these kernels only copy and select values; resize and attention arithmetic reads
 * float explicitly). */
static const char *vtype(const ttc_kir *k, ttc_dtype d) {
    if (d == TTC_DTYPE_FLOAT16 && k->half_compute) return "half";
    if (is_fl(d)) return "float";
    if (d == TTC_DTYPE_INT64) return "long";
    if (d == TTC_DTYPE_INT32) return "int";
    if (d == TTC_DTYPE_INT8) return "char";
    return "uchar";
}

/* The dtype of the op's own value: the output's, or with an epilogue fused in, its
 * accumulator's (a concatenation of float32 values quantized to uint8 after it holds float32
 * values until the epilogue: typed as the stored uint8, the values were truncated first). */
static ttc_dtype val_dtype(const ttc_kir *k, const ttc_kop *op) {
    for (int32_t i = 0; i < op->epi.n; i++)
        if (op->epi.nodes[i].op == TTC_EOP_LEAF && op->epi.nodes[i].a < 0) return op->epi.nodes[i].dtype;
    return k->ts[op->out].dtype;
}

/* Writes value expression `val` at output element `lin`: through the store function when an
 * epilogue was fused in, else directly in the output's type (int64 data is copied exactly). */
void ttc_codegen_write_out(const ttc_kgen *g, const char *val, const char *lin) {
    const ttc_kop *op = g->op;
    if (op->epi.n > 0) {
        ttc_sbuf_printf(g->src, "    %s_store((float)(%s), %s%s);\n", g->ks->name, val, lin, g->A_);
        return;
    }
    ttc_sbuf v = {0}, fv = {0};
    ttc_sbuf_printf(&v, "(%s)", val);
    ttc_sbuf_printf(&fv, "(float)(%s)", val);
    if (v.data && fv.data) ttc_codegen_store(g->src, g->k, g->sp, g->k->ts[op->out].dtype, v.data, fv.data, lin, "    ");
    else g->src->oom = true;
    ttc_sbuf_free(&v);
    ttc_sbuf_free(&fv);
}

/* "int n, int sz0.." over the output (its elements are the launch: TTC_LAUNCH_OUT). */
static void out_params(ttc_kparams *p, const ttc_kop *op) {
    int32_t R = p->k->ts[op->out].rank;
    ttc_kp_int(p, TTC_ARG_PROD, op->out, 0, R, 0, "n");
    for (int32_t d = 0; d < R; d++) ttc_kp_int(p, TTC_ARG_DIM, op->out, d, 0, 0, "sz%d", d);
}

/* The kernel's head with the decomposition of lin into i0..iR-1. */
static ttc_status open_kernel(ttc_sbuf *src, ttc_kparams *p, const ttc_kspec *ks, const char *P, int32_t R) {
    TTC_TRY(ttc_kp_done(p));
    ttc_sbuf_printf(src, "__kernel void %s(%s%s) {\n    int lin = get_global_id(0);\n    if (lin >= n) return;\n",
                    ks->name, ttc_kp_sig(p), P);
    if (R > 0) ttc_sbuf_printf(src, "    int rem = lin;\n");
    for (int32_t d = R - 1; d >= 0; d--) ttc_sbuf_printf(src, "    int i%d = rem %% sz%d; rem /= sz%d;\n", d, d, d);
    return TTC_OK;
}

/* A concatenation's inputs as parameters "<pre>x<i>" (and "<pre>x<i>_len", its length along
 * the dim, unless stacked). */
static void concat_params(ttc_kparams *p, const ttc_kop *op, const char *pre) {
    int32_t D = op->p.concat.dim, n = op->p.concat.n;
    for (int32_t i = 0; i < n; i++) {
        int32_t t = op->in[i];
        bool st = (op->p.concat.stacked >> i) & 1u;
        char nm[32];
        snprintf(nm, sizeof nm, "%sx%d", pre, i);
        ttc_kp_tensor(p, t, nm, 0);
        if (!st) {
            ttc_kp_int(p, TTC_ARG_DIM, t, D, 0, 0, "%sx%d_len", pre, i);
        }
    }
}

/* "v" (in the output's value type), the concatenation's element at index i0..iR-1, read
 * through concat_params' parameters. */
static void concat_value(ttc_sbuf *src, const ttc_kir *k, const ttc_spelling *sp, const ttc_kop *op, const char *pre) {
    const ttc_et *out = &k->ts[op->out];
    int32_t R = out->rank, D = op->p.concat.dim, n = op->p.concat.n;
    const char *vt = vtype(k, val_dtype(k, op));
    ttc_sbuf_printf(src, "    int c = i%d;\n    %s v;\n", D, vt);
    for (int32_t i = 0; i < n; i++) {
        bool st = (op->p.concat.stacked >> i) & 1u;
        const ttc_et *x = &k->ts[op->in[i]];
        if (i < n - 1) {
            if (st) ttc_sbuf_printf(src, "    if (c < 1) {\n");
            else ttc_sbuf_printf(src, "    if (c < %sx%d_len) {\n", pre, i);
        } else {
            ttc_sbuf_printf(src, "    {\n");
        }
        ttc_sbuf_printf(src, "        int p = %sx%d_off", pre, i);
        for (int32_t d = 0; d < R; d++) {
            if (st && d == D) continue;
            int32_t xd = st && d > D ? d - 1 : d;
            if (d == D) ttc_sbuf_printf(src, " + c * %sx%d_s%d", pre, i, xd);
            else ttc_sbuf_printf(src, " + i%d * %sx%d_s%d", d, pre, i, xd);
        }
        char ptr[32];
        snprintf(ptr, sizeof ptr, "%sx%d", pre, i);
        ttc_sbuf_printf(src, ";\n        v = %s(%s)(", (op->p.concat.neg >> i) & 1u ? "-" : "", vt);
        ttc_codegen_load(src, k, sp, x->dtype, ptr, "p");
        ttc_sbuf_printf(src, ");\n    }");
        if (i < n - 1) {
            if (st) ttc_sbuf_printf(src, " else {\n    c -= 1;\n");
            else ttc_sbuf_printf(src, " else {\n    c -= %sx%d_len;\n", pre, i);
        } else {
            ttc_sbuf_printf(src, "\n");
        }
    }
    for (int32_t i = 0; i < n - 1; i++) ttc_sbuf_printf(src, "    }\n");
}

static ttc_status gen_concat(const ttc_kgen *g, ttc_kparams *p) {
    TTC_KGEN_LOCALS(g);
    out_params(p, op);
    concat_params(p, op, "");
    TTC_TRY(open_kernel(src, p, ks, P, k->ts[op->out].rank));
    concat_value(src, k, g->sp, op, "");
    ttc_codegen_write_out(g, "v", "lin");
    ttc_sbuf_printf(src, "}\n");
    return TTC_OK;
}

bool ttc_codegen_inlined(const ttc_kir *k, int32_t t) {
    return t >= 0 && k->ts[t].kind == TTC_ET_INTER && k->ts[t].producer >= 0 && k->ops[k->ts[t].producer].inlined &&
           !k->ops[k->ts[t].producer].dead;
}

/* The inlined op's element lin: its index (divisions by concrete dims as literals, symbolic ones
 * the parameters "csz<d>"), the concatenation's value (parameters "cx<i>"), its epilogue (leaves
 * "cl<j>"), then the result rounded to t's dtype as the op's kernel would have stored it. Only
 * float concatenations are inlined (kir/fuse.c). */
ttc_status ttc_codegen_inline_fn(const ttc_kgen *g, int32_t t, ttc_kparams *fp, const char *fn) {
    const ttc_kir *k = g->k;
    ttc_sbuf *src = g->src;
    if (!ttc_codegen_inlined(k, t) || k->ops[k->ts[t].producer].kind != TTC_KOP_CONCAT ||
        (k->ts[t].dtype != TTC_DTYPE_FLOAT16 && k->ts[t].dtype != TTC_DTYPE_FLOAT32))
        return ttc_fail(TTC_ERR_INTERNAL, "%s: tensor %s is no inlined float concatenation", g->op->name, k->ts[t].name);
    const ttc_kop *op = &k->ops[k->ts[t].producer];
    const ttc_et *out = &k->ts[t];
    int32_t R = out->rank;
    for (int32_t d = 1; d < R; d++)
        if (out->dims[d].sym >= 0) ttc_kp_int(fp, TTC_ARG_DIM, t, d, 0, 0, "csz%d", d);
    concat_params(fp, op, "c");
    ttc_codegen_leaf_params(fp, op, "c");
    TTC_TRY(ttc_kp_done(fp));
    ttc_sbuf_printf(src, "static inline float %s(int lin%s) {\n", fn, ttc_kp_sig(fp));
    if (R > 0) ttc_sbuf_printf(src, "    int rem = lin;\n");
    for (int32_t d = R - 1; d >= 1; d--) {
        if (out->dims[d].sym >= 0) ttc_sbuf_printf(src, "    int i%d = rem %% csz%d; rem /= csz%d;\n", d, d, d);
        else ttc_sbuf_printf(src, "    int i%d = rem %% %lld; rem /= %lld;\n", d, (long long)out->dims[d].add,
                             (long long)out->dims[d].add);
    }
    if (R > 0) ttc_sbuf_printf(src, "    int i0 = rem;\n");
    concat_value(src, k, g->sp, op, "c");
    ttc_sbuf_printf(src, "    float acc = (float)(v);\n");
    char res[16], fres[24];
    TTC_TRY(ttc_codegen_epi_value(src, k, op, g->sp, "c", -1, res, sizeof res));
    snprintf(fres, sizeof fres, "(float)%s", res);
    /* rounded to t's dtype as ttc_codegen_store stores it: a cast to half where the engine computes
     * in half (the constructs the half probe checks), else vstore_half into a private element */
    if (out->dtype == TTC_DTYPE_FLOAT32) {
        ttc_sbuf_printf(src, "    return (float)%s;\n", res);
    } else if (k->half_compute) {
        ttc_sbuf_printf(src, "    return (float)(%s%s);\n", g->sp->half_cast, res);
    } else {
        ttc_sbuf_printf(src, "    ushort r_;\n    ");
        ttc_sbuf_printf(src, g->sp->store_half, fres, "0", "(__private half *)&r_");
        ttc_sbuf_printf(src, ";\n    return ");
        ttc_codegen_load(src, k, g->sp, out->dtype, "(const __private half *)&r_", "0");
        ttc_sbuf_printf(src, ";\n");
    }
    ttc_sbuf_printf(src, "}\n");
    return src->oom ? ttc_fail(TTC_ERR_NOMEM, "generating %s", fn) : TTC_OK;
}

static ttc_status gen_pad(const ttc_kgen *g, ttc_kparams *p) {
    TTC_KGEN_LOCALS(g);
    const ttc_et *out = &k->ts[op->out], *x = &k->ts[op->in[0]];
    int32_t R = out->rank;
    out_params(p, op);
    ttc_kp_tensor(p, op->in[0], "x", 0);
    for (int32_t d = 0; d < R; d++) {
        ttc_kp_int(p, TTC_ARG_DIM, op->in[0], d, 0, 0, "xd%d", d);
    }
    TTC_TRY(open_kernel(src, p, ks, P, R));
    const char *vt = vtype(k, val_dtype(k, op));
    ttc_sbuf_printf(src, "    int p = x_off;\n    bool ok = true;\n");
    for (int32_t d = 0; d < R; d++)
        ttc_sbuf_printf(src, "    int s%d = i%d - (%lld); ok = ok && s%d >= 0 && s%d < xd%d; p += s%d * x_s%d;\n", d, d,
                        (long long)op->p.pad.lo[d], d, d, d, d, d);
    ttc_sbuf_printf(src, "    %s v = ok ? (%s)(", vt, vt);
    ttc_codegen_load(src, k, g->sp, x->dtype, "x", "p");
    ttc_sbuf_printf(src, ") : ");
    ttc_codegen_literal(src, g->sp, op->p.pad.value, val_dtype(k, op), vtype(k, val_dtype(k, op)));
    ttc_sbuf_printf(src, ";\n");
    ttc_codegen_write_out(g, "v", "lin");
    ttc_sbuf_printf(src, "}\n");
    return TTC_OK;
}

/* Index kernels take the execution's error flag (ttc_kp_errflag): an index outside its range
 * records the kernel op (index + 1, the first one wins) for execute to raise after the call,
 * as torch raises there.
 * Emits "long v<j> = <index j>", wrapped when `wrap` (negative counts from the end, as for
 * x[idx]; embedding, index_select and gather take [0, size) only, as torch does); an index
 * out of range sets the error flag and `bad` (the element is then not read: 0 is written). */
static void emit_index_value(ttc_sbuf *src, int32_t j, const char *pos, const char *size, int32_t code, bool wrap) {
    ttc_sbuf_printf(src, "    long v%d = (long)ix%d[%s];\n", j, j, pos);
    ttc_sbuf_printf(src, "    if (v%d < %s%s || v%d >= (long)%s) { atomic_cmpxchg(errf, 0, %d); bad = 1; v%d = 0; }\n",
                    j, wrap ? "-(long)" : "0", wrap ? size : "", j, size, code, j);
    if (wrap) ttc_sbuf_printf(src, "    else if (v%d < 0) v%d += %s;\n", j, j, size);
}

static ttc_status gen_index(const ttc_kgen *g, ttc_kparams *p) {
    TTC_KGEN_LOCALS(g);
    const ttc_et *out = &k->ts[op->out], *x = &k->ts[op->in[0]];
    int32_t R = out->rank, XR = x->rank, B = op->p.index.brank, at = op->p.index.at, ni = op->p.index.n;
    out_params(p, op);
    ttc_kp_tensor(p, op->in[0], "x", 0);
    for (int32_t j = 0; j < ni; j++) {
        ttc_kp_int(p, TTC_ARG_DIM, op->in[0], op->p.index.dims[j], 0, 0, "xd%d", j);
        char nm[8];
        snprintf(nm, sizeof nm, "ix%d", j);
        if (B > 0) ttc_kp_tensor(p, op->in[1 + j], nm, B);
        else {
            ttc_kp_buffer(p, op->in[1 + j], nm, NULL);
        }
    }
    ttc_kp_errflag(p, op->out);
    TTC_TRY(open_kernel(src, p, ks, P, R));
    ttc_sbuf_printf(src, "    long p = x_off;\n    int bad = 0;\n");
    /* non-indexed input dims take the output dims outside [at, at + B), in order */
    int32_t o = 0;
    for (int32_t d = 0; d < XR; d++) {
        bool indexed = false;
        for (int32_t j = 0; j < ni; j++) indexed = indexed || op->p.index.dims[j] == d;
        if (indexed) continue;
        if (o == at) o += B;
        ttc_sbuf_printf(src, "    p += (long)i%d * x_s%d;\n", o, d);
        o++;
    }
    for (int32_t j = 0; j < ni; j++) {
        ttc_sbuf pos = {0};
        ttc_sbuf_printf(&pos, "ix%d_off", j);
        for (int32_t b = 0; b < B; b++) ttc_sbuf_printf(&pos, " + i%d * ix%d_s%d", at + b, j, b);
        char size[8];
        snprintf(size, sizeof size, "xd%d", j);
        emit_index_value(src, j, pos.data ? pos.data : "0", size, (int32_t)(op - k->ops) + 1, op->p.index.wrap);
        bool oom = pos.oom;
        ttc_sbuf_free(&pos);
        if (oom) return TTC_ERR_NOMEM;
        ttc_sbuf_printf(src, "    p += v%d * x_s%d;\n", j, op->p.index.dims[j]);
    }
    ttc_sbuf_printf(src, "    %s v = bad ? (%s)0 : (%s)(", vtype(k, val_dtype(k, op)), vtype(k, val_dtype(k, op)), vtype(k, val_dtype(k, op)));
    ttc_codegen_load(src, k, g->sp, x->dtype, "x", "p");
    ttc_sbuf_printf(src, ");\n");
    ttc_codegen_write_out(g, "v", "lin");
    ttc_sbuf_printf(src, "}\n");
    return TTC_OK;
}

/* torch.gather(x, dim, index): out[i] = x[i with i_dim = index[i]] */
static ttc_status gen_gather(const ttc_kgen *g, ttc_kparams *p) {
    TTC_KGEN_LOCALS(g);
    const ttc_et *out = &k->ts[op->out], *x = &k->ts[op->in[0]];
    int32_t R = out->rank, D = op->p.gather.dim;
    if (op->p.gather.mode != 1) return ttc_fail(TTC_ERR_INTERNAL, "gather %s: mode %d", op->name, op->p.gather.mode);
    out_params(p, op);
    ttc_kp_tensor(p, op->in[0], "x", 0);
    ttc_kp_int(p, TTC_ARG_DIM, op->in[0], D, 0, 0, "xd0");
    ttc_kp_tensor(p, op->in[1], "ix0", R);
    ttc_kp_errflag(p, op->out);
    TTC_TRY(open_kernel(src, p, ks, P, R));
    ttc_sbuf_printf(src, "    int bad = 0;\n");
    ttc_sbuf pos = {0};
    ttc_sbuf_printf(&pos, "ix0_off");
    for (int32_t d = 0; d < R; d++) ttc_sbuf_printf(&pos, " + i%d * ix0_s%d", d, d);
    emit_index_value(src, 0, pos.data ? pos.data : "0", "xd0", (int32_t)(op - k->ops) + 1, false);
    bool oom = pos.oom;
    ttc_sbuf_free(&pos);
    if (oom) return TTC_ERR_NOMEM;
    ttc_sbuf_printf(src, "    long p = x_off + v0 * x_s%d", D);
    for (int32_t d = 0; d < R; d++)
        if (d != D) ttc_sbuf_printf(src, " + (long)i%d * x_s%d", d, d);
    ttc_sbuf_printf(src, ";\n    %s v = bad ? (%s)0 : (%s)(", vtype(k, val_dtype(k, op)), vtype(k, val_dtype(k, op)),
                    vtype(k, val_dtype(k, op)));
    ttc_codegen_load(src, k, g->sp, x->dtype, "x", "p");
    ttc_sbuf_printf(src, ");\n");
    ttc_codegen_write_out(g, "v", "lin");
    ttc_sbuf_printf(src, "}\n");
    return TTC_OK;
}

/* The source-to-destination scale of axis a: 1/scale_factor when one was given (as torch
 * does), else in/out computed at run time. */
static void resize_scale(ttc_sbuf *src, const ttc_kop *op, int32_t a, const char *in, const char *out) {
    double sf = op->p.resize.scale[a];
    if (sf > 0) ttc_sbuf_printf(src, "%.9ef", 1.0 / sf);
    else ttc_sbuf_printf(src, "((float)%s / (float)%s)", in, out);
}

static ttc_status gen_resize(const ttc_kgen *g, ttc_kparams *p) {
    TTC_KGEN_LOCALS(g);
    const ttc_et *out = &k->ts[op->out], *x = &k->ts[op->in[0]];
    if (out->rank != 4 || x->rank != 4) return ttc_fail(TTC_ERR_UNSUPPORTED, "resize %s: rank %d", op->name, out->rank);
    out_params(p, op);
    ttc_kp_tensor(p, op->in[0], "x", 0);
    ttc_kp_int(p, TTC_ARG_DIM, op->in[0], 2, 0, 0, "ih");
    ttc_kp_int(p, TTC_ARG_DIM, op->in[0], 3, 0, 0, "iw");
    TTC_TRY(open_kernel(src, p, ks, P, 4));
    ttc_sbuf_printf(src, "    int base = x_off + i0 * x_s0 + i1 * x_s1;\n");
    const char *ax[2][4] = {{"y", "i2", "ih", "sz2"}, {"x", "i3", "iw", "sz3"}};
    for (int32_t a = 0; a < 2; a++) {
        const char *c = ax[a][0], *i = ax[a][1], *in = ax[a][2], *o = ax[a][3];
        if (!op->p.resize.bilinear) {
            ttc_sbuf_printf(src, "    float sc%s = ", c);
            resize_scale(src, op, a, in, o);
            ttc_sbuf_printf(src, ";\n    int %s0 = %s == %s ? %s : %s == 2 * %s ? (%s >> 1) : min((int)floor((float)%s * sc%s), %s - 1);\n",
                            c, o, in, i, o, in, i, i, c, in);
            continue;
        }
        if (op->p.resize.align_corners)
            ttc_sbuf_printf(src, "    float sc%s = %s > 1 ? (float)(%s - 1) / (float)(%s - 1) : 0.0f;\n"
                                 "    float r%s = sc%s * (float)%s;\n", c, o, in, o, c, c, i);
        else {
            ttc_sbuf_printf(src, "    float sc%s = ", c);
            resize_scale(src, op, a, in, o);
            ttc_sbuf_printf(src, ";\n    float r%s = fmax(sc%s * ((float)%s + 0.5f) - 0.5f, 0.0f);\n", c, c, i);
        }
        ttc_sbuf_printf(src, "    int %s0 = (int)r%s; int %s1 = %s0 + (%s0 < %s - 1 ? 1 : 0);\n"
                             "    float w%s1 = clamp(r%s - (float)%s0, 0.0f, 1.0f), w%s0 = 1.0f - w%s1;\n",
                        c, c, c, c, c, in, c, c, c, c, c);
    }
    const char *vt = vtype(k, val_dtype(k, op));
    if (!op->p.resize.bilinear) {
        ttc_sbuf_printf(src, "    int p = base + y0 * x_s2 + x0 * x_s3;\n    %s v = (%s)(", vt, vt);
        ttc_codegen_load(src, k, g->sp, x->dtype, "x", "p");
        ttc_sbuf_printf(src, ");\n");
    } else {
        const char *pts[4] = {"y0 * x_s2 + x0 * x_s3", "y0 * x_s2 + x1 * x_s3", "y1 * x_s2 + x0 * x_s3", "y1 * x_s2 + x1 * x_s3"};
        for (int32_t q = 0; q < 4; q++) {
            char idx[48];
            snprintf(idx, sizeof idx, "base + %s", pts[q]);
            ttc_sbuf_printf(src, "    float p%d = (float)(", q);
            ttc_codegen_load(src, k, g->sp, x->dtype, "x", idx);
            ttc_sbuf_printf(src, ");\n");
        }
        ttc_sbuf_printf(src, "    float v = wy0 * (wx0 * p0 + wx1 * p1) + wy1 * (wx0 * p2 + wx1 * p3);\n");
    }
    ttc_codegen_write_out(g, "v", "lin");
    ttc_sbuf_printf(src, "}\n");
    return TTC_OK;
}

/* Loads W consecutive values (W = 1: one, strided by the last dim's stride) as float(W). */
static void load_w(ttc_sbuf *b, const ttc_kir *k, const ttc_spelling *sp, ttc_dtype d, const char *ptr, const char *base,
                   const char *i, int32_t W, const char *stride) {
    if (W == 1) {
        char idx[64];
        snprintf(idx, sizeof idx, "%s + %s * %s", base, i, stride);
        ttc_sbuf_printf(b, "(float)(");
        ttc_codegen_load(b, k, sp, d, ptr, idx);
        ttc_sbuf_printf(b, ")");
    } else {
        char addr[64];
        snprintf(addr, sizeof addr, "%s + %s + %s * %d", ptr, base, i, W);
        ttc_sbuf_printf(b, d == TTC_DTYPE_FLOAT16 ? sp->load_half_vec : sp->load_vec, W, addr);
    }
}

/* The body for one query row with vectors of W lanes (1: scalar, any strides): scores
 * against every key, an online softmax (rescaling the accumulator when the running max
 * grows) and the weighted sum of the values. Branch-free, so that CPU compilers can also
 * vectorise across work-items; a masked key (-inf) adds nothing, also while every key so
 * far was masked. */
static void attention_row(const ttc_kgen *g, int32_t W) {
    TTC_KGEN_LOCALS(g);
    int32_t R = k->ts[op->out].rank, E = op->p.attn.e / W, EV = op->p.attn.ev / W, mt = op->in[3];
    ttc_dtype qd = k->ts[op->in[0]].dtype, kd = k->ts[op->in[1]].dtype, vd = k->ts[op->in[2]].dtype;
    char vt[16], sl[16];
    if (W > 1) snprintf(vt, sizeof vt, "float%d", W);
    else snprintf(vt, sizeof vt, "float");
    snprintf(sl, sizeof sl, "q_s%d", R - 1);
    ttc_sbuf_printf(src, "    {\n    %s qv[%d];\n    for (int e = 0; e < %d; e++) qv[e] = ", vt, E, E);
    load_w(src, k, g->sp, qd, "q", "qb", "e", W, sl);
    ttc_sbuf_printf(src, " * %.9ef;\n", op->p.attn.scale);
    ttc_sbuf_printf(src, "    %s acc[%d];\n    for (int e = 0; e < %d; e++) acc[e] = (%s)(0.0f);\n", vt, EV, EV, vt);
    ttc_sbuf_printf(src, "    float mx = -INFINITY, sm = 0.0f;\n    int jn = %s;\n", op->p.attn.causal ? "min(S, l + 1)" : "S");
    ttc_sbuf_printf(src, "    for (int j = 0; j < jn; j++) {\n        int kp = kb + j * k_s%d;\n        %s d = (%s)(0.0f);\n"
                         "        for (int e = 0; e < %d; e++) d += qv[e] * ", R - 2, vt, vt, E);
    snprintf(sl, sizeof sl, "k_s%d", R - 1);
    load_w(src, k, g->sp, kd, "k", "kp", "e", W, sl);
    if (W == 1) ttc_sbuf_printf(src, ";\n        float x = d;\n");
    else if (W == 4) ttc_sbuf_printf(src, ";\n        float x = (d.s0 + d.s1) + (d.s2 + d.s3);\n");
    else ttc_sbuf_printf(src, ";\n        float x = ((d.s0 + d.s1) + (d.s2 + d.s3)) + ((d.s4 + d.s5) + (d.s6 + d.s7));\n");
    if (mt >= 0) {
        char idx[64];
        snprintf(idx, sizeof idx, "mb + j * m_s%d", R - 1);
        if (k->ts[mt].dtype == TTC_DTYPE_BOOL) {
            ttc_sbuf_printf(src, "        x = m[%s] ? x : -INFINITY;\n", idx);
        } else {
            ttc_sbuf_printf(src, "        x += (float)(");
            ttc_codegen_load(src, k, g->sp, k->ts[mt].dtype, "m", idx);
            ttc_sbuf_printf(src, ");\n");
        }
    }
    /* a NaN score wins the running max (fmax would drop it), so that the row turns NaN as in
     * torch's softmax(q k^T) v rather than 0 through the all-masked path */
    ttc_sbuf_printf(src, "        float mn = (x > mx || x != x) ? x : mx;\n        bool none = mn == -INFINITY;\n"
                         "        float c = none ? 1.0f : exp(mx - mn), pj = none ? 0.0f : exp(x - mn);\n"
                         "        sm = sm * c + pj;\n        mx = mn;\n        int vp = vb + j * v_s%d;\n"
                         "        for (int e = 0; e < %d; e++) acc[e] = acc[e] * c + pj * ", R - 2, EV);
    snprintf(sl, sizeof sl, "v_s%d", R - 1);
    load_w(src, k, g->sp, vd, "v", "vp", "e", W, sl);
    /* every key masked: sm is 0 and the row is 0, as torch's CPU kernels give */
    ttc_sbuf_printf(src, ";\n    }\n    float inv = sm > 0.0f ? 1.0f / sm : 0.0f;\n    for (int e = 0; e < %d; e++) {\n        %s a = acc[e] * inv;\n",
                    EV, vt);
    for (int32_t c = 0; c < W; c++) {
        char val[8], lin[48];
        if (W == 1) snprintf(val, sizeof val, "a");
        else snprintf(val, sizeof val, "a.s%d", c);
        snprintf(lin, sizeof lin, "(g * %d + e * %d + %d)", op->p.attn.ev, W, c);
        ttc_codegen_write_out(g, val, lin);
    }
    ttc_sbuf_printf(src, "    }\n    }\n");
}

/* One work-item per query row: scores, an online softmax and the weighted sum of values in
 * one pass over the keys (no [L, S] score matrix in memory). */
static ttc_status gen_attention(const ttc_kgen *g, ttc_kparams *p) {
    TTC_KGEN_LOCALS(g);
    const ttc_et *out = &k->ts[op->out];
    int32_t R = out->rank, E = op->p.attn.e, EV = op->p.attn.ev;
    if (R < 2 || E < 1 || EV < 1) return ttc_fail(TTC_ERR_INTERNAL, "attention %s: rank %d, E %d, EV %d", op->name, R, E, EV);
    if (ttc_attn_mma_ok(k, op)) return ttc_gen_attention_mma(g, p);   /* fp16 on tensor cores */
    ttc_kp_int(p, TTC_ARG_PROD, op->out, 0, R - 1, 0, "n");
    for (int32_t d = 0; d < R - 1; d++) ttc_kp_int(p, TTC_ARG_DIM, op->out, d, 0, 0, "sz%d", d);
    ttc_kp_int(p, TTC_ARG_DIM, op->in[1], k->ts[op->in[1]].rank - 2, 0, 0, "S");
    const char *nm[4] = {"q", "k", "v", "m"};
    for (int32_t i = 0; i < 4; i++)
        if (op->in[i] >= 0) ttc_kp_tensor(p, op->in[i], nm[i], R);
    launch(ks, op->out, 0, R - 1);
    TTC_TRY(ttc_kp_done(p));
    ttc_sbuf_printf(src, "__kernel void %s(%s%s) {\n    int g = get_global_id(0);\n    if (g >= n) return;\n",
                    ks->name, ttc_kp_sig(p), P);
    ttc_sbuf_printf(src, "    int rem = g;\n    int l = rem %% sz%d; rem /= sz%d;\n", R - 2, R - 2);
    for (int32_t d = R - 3; d >= 0; d--) ttc_sbuf_printf(src, "    int b%d = rem %% sz%d; rem /= sz%d;\n", d, d, d);
    for (int32_t i = 0; i < 4; i++) {
        if (op->in[i] < 0) continue;
        ttc_sbuf_printf(src, "    int %sb = %s_off", nm[i], nm[i]);
        for (int32_t d = 0; d < R - 2; d++) {
            /* GQA: query head h reads k/v head h / group */
            if ((i == 1 || i == 2) && d == R - 3 && op->p.attn.group > 1)
                ttc_sbuf_printf(src, " + (b%d / %d) * %s_s%d", d, op->p.attn.group, nm[i], d);
            else
                ttc_sbuf_printf(src, " + b%d * %s_s%d", d, nm[i], d);
        }
        if (i == 0 || i == 3) ttc_sbuf_printf(src, " + l * %s_s%d", nm[i], R - 2);
        ttc_sbuf_printf(src, ";\n");
    }
    int32_t W = E % 8 == 0 && EV % 8 == 0 ? 8 : E % 4 == 0 && EV % 4 == 0 ? 4 : 1;
    if (W > 1) {
        /* head dims dense (the usual case): explicit vectors, W lanes of E and EV at a time */
        ttc_sbuf_printf(src, "    if (q_s%d == 1 && k_s%d == 1 && v_s%d == 1) {\n", R - 1, R - 1, R - 1);
        attention_row(g, W);
        ttc_sbuf_printf(src, "        return;\n    }\n");
    }
    attention_row(g, 1);
    ttc_sbuf_printf(src, "}\n");
    return TTC_OK;
}

/* ---- issue 11: sort/topk and scatter/index_put ---- */

/* One work-item per input element: its rank along dim p.sort.dim is the number of elements
 * of its row that come before it (NaN counts as the largest value, as in torch; ties keep
 * index order, so the sort is stable). Ranks below k (out's size on that dim) store the
 * element's position at that rank. O(row) per element: the validator bounds the row. */
static ttc_status gen_sort(const ttc_kgen *g, ttc_kparams *p) {
    TTC_KGEN_LOCALS(g);
    const ttc_et *x = &k->ts[op->in[0]];
    int32_t R = x->rank, D = op->p.sort.dim;
    if (R < 1 || D < 0 || D >= R) return ttc_fail(TTC_ERR_INTERNAL, "sort %s: rank %d, dim %d", op->name, R, D);
    ttc_kp_int(p, TTC_ARG_PROD, op->in[0], 0, R, 0, "n");
    for (int32_t d = 0; d < R; d++) {
        ttc_kp_int(p, TTC_ARG_DIM, op->in[0], d, 0, 0, "sz%d", d);
    }
    ttc_kp_int(p, TTC_ARG_DIM, op->out, D, 0, 0, "kk");
    ttc_kp_tensor(p, op->in[0], "x", 0);
    launch(ks, op->in[0], 0, R);
    TTC_TRY(open_kernel(src, p, ks, P, R));
    const char *vt = vtype(k, x->dtype);
    char idx[48];
    ttc_sbuf_printf(src, "    int b = x_off");
    for (int32_t d = 0; d < R; d++)
        if (d != D) ttc_sbuf_printf(src, " + i%d * x_s%d", d, d);
    ttc_sbuf_printf(src, ";\n    %s v = (%s)(", vt, vt);
    snprintf(idx, sizeof idx, "b + i%d * x_s%d", D, D);
    ttc_codegen_load(src, k, g->sp, x->dtype, "x", idx);
    ttc_sbuf_printf(src, ");\n    int r = 0;\n    for (int j = 0; j < sz%d; j++) {\n        %s u = (%s)(", D, vt, vt);
    snprintf(idx, sizeof idx, "b + j * x_s%d", D);
    ttc_codegen_load(src, k, g->sp, x->dtype, "x", idx);
    ttc_sbuf_printf(src, ");\n");
    bool fl = is_fl(x->dtype), desc = op->p.sort.descending;
    /* u comes first when it orders strictly before v, or ties with v at a lower position */
    const char *lt = desc ? (fl ? "(isnan(u) && !isnan(v)) || u > v" : "u > v")
                          : (fl ? "(!isnan(u) && isnan(v)) || u < v" : "u < v");
    const char *gt = desc ? (fl ? "(isnan(v) && !isnan(u)) || v > u" : "v > u")
                          : (fl ? "(!isnan(v) && isnan(u)) || v < u" : "v < u");
    ttc_sbuf_printf(src, "        bool before = (%s) || (!(%s) && j < i%d);\n        r += before ? 1 : 0;\n    }\n",
                    lt, gt, D);
    ttc_sbuf_printf(src, "    if (r >= kk) return;\n    int o = 0;\n");
    for (int32_t d = 0; d < R; d++) {
        if (d == D) ttc_sbuf_printf(src, "    o = o * kk + r;\n");
        else ttc_sbuf_printf(src, "    o = o * sz%d + i%d;\n", d, d);
    }
    char val[24];
    snprintf(val, sizeof val, "(long)i%d", D);
    ttc_codegen_write_out(g, val, "o");
    ttc_sbuf_printf(src, "}\n");
    return TTC_OK;
}

/* scatter_reduce along D: the updates landing on an element combine in `a` (float for float
 * tensors, so half sums do not round at every step), starting from x's value with
 * include_self, else from the first update (no update: x's value stays). amax/amin keep a NaN
 * once seen, as torch does; an integer mean rounds down, as torch's does. */
static ttc_status scatter_reduce_body(ttc_sbuf *src, const ttc_kir *k, const ttc_kop *op, const char *upd) {
    const ttc_et *out = &k->ts[op->out];
    int32_t R = out->rank, D = op->p.scatter.dim, red = op->p.scatter.reduce;
    bool fl = is_fl(val_dtype(k, op)), incl = op->p.scatter.include_self;
    if (op->in[1] < 0) return ttc_fail(TTC_ERR_INTERNAL, "scatter %s: a reduction without src", op->name);
    const char *at = fl ? "float" : vtype(k, val_dtype(k, op));
    ttc_sbuf_printf(src, "    %s a = (%s)v;\n    int cnt = 0;\n    if (1", at, at);
    for (int32_t d = 0; d < R; d++)
        if (d != D) ttc_sbuf_printf(src, " && i%d < ixd%d", d, d);
    ttc_sbuf_printf(src, ") {\n    long ib = ix0_off");
    for (int32_t d = 0; d < R; d++)
        if (d != D) ttc_sbuf_printf(src, " + (long)i%d * ix0_s%d", d, d);
    ttc_sbuf_printf(src, ";\n    long qb = u_off");
    for (int32_t d = 0; d < R; d++)
        if (d != D) ttc_sbuf_printf(src, " + (long)i%d * u_s%d", d, d);
    int32_t code = (int32_t)(op - k->ops) + 1;
    ttc_sbuf_printf(src, ";\n    for (int j = 0; j < ixd%d; j++) {\n        long t = (long)ix0[ib + (long)j * ix0_s%d];\n"
                         "        if (t < 0 || t >= (long)sz%d) { atomic_cmpxchg(errf, 0, %d); continue; }\n"
                         "        if (t != (long)i%d) continue;\n        long q = qb + (long)j * u_s%d;\n"
                         "        %s w = (%s)%s;\n",
                    D, D, D, code, D, D, at, at, upd);
    const char *comb;
    switch (red) {
    case TTC_SCATTER_SUM: case TTC_SCATTER_MEAN: comb = "a + w"; break;
    case TTC_SCATTER_PROD: comb = "a * w"; break;
    case TTC_SCATTER_AMAX: comb = fl ? "(isnan(w) || w > a) ? w : a" : "w > a ? w : a"; break;
    case TTC_SCATTER_AMIN: comb = fl ? "(isnan(w) || w < a) ? w : a" : "w < a ? w : a"; break;
    default: return ttc_fail(TTC_ERR_INTERNAL, "scatter %s: reduction %d", op->name, red);
    }
    if (incl) ttc_sbuf_printf(src, "        a = %s;\n", comb);
    else ttc_sbuf_printf(src, "        a = cnt == 0 ? w : (%s);\n", comb);
    ttc_sbuf_printf(src, "        cnt++;\n    }\n    }\n");
    if (red == TTC_SCATTER_MEAN) {
        ttc_sbuf_printf(src, "    int c = cnt%s;\n    if (c > 0) {\n", incl ? " + 1" : "");
        if (fl) ttc_sbuf_printf(src, "        a = a / (float)c;\n");
        else ttc_sbuf_printf(src, "        %s r = a / c;\n        if (a %% c != 0 && a < 0) r -= 1;\n        a = r;\n", at);
        ttc_sbuf_printf(src, "    }\n");
    }
    ttc_sbuf_printf(src, "    v = (%s)a;\n", vtype(k, val_dtype(k, op)));
    return TTC_OK;
}

/* One work-item per output element, which starts as x's and takes the value of every update
 * that lands on it (the last one, or their sum after x's with accumulate). mode 0 (scatter
 * along D): the updates of an element are index[.., j, ..] over j at its other coordinates.
 * mode 1 (index_put on dims [at, at + n)): every broadcast index position b is tried. The
 * search is O(updates) per element: the validator bounds it. */
static ttc_status gen_scatter(const ttc_kgen *g, ttc_kparams *p) {
    TTC_KGEN_LOCALS(g);
    const ttc_et *out = &k->ts[op->out], *x = &k->ts[op->in[0]];
    int32_t R = out->rank, D = op->p.scatter.dim, ni = op->p.scatter.n, at = op->p.scatter.at, B = op->p.scatter.brank;
    bool mode0 = op->p.scatter.mode == 0, has_src = op->in[1] >= 0;
    int32_t code = (int32_t)(op - k->ops) + 1;
    out_params(p, op);
    ttc_kp_tensor(p, op->in[0], "x", 0);
    /* mode 1 reads updates in the rank R - n + B space [x dims < at, B, x dims >= at + n] */
    if (has_src) ttc_kp_tensor(p, op->in[1], "u", mode0 ? 0 : R - ni + B);
    for (int32_t j = 0; j < ni; j++) {
        char nm[8];
        snprintf(nm, sizeof nm, "ix%d", j);
        ttc_kp_tensor(p, op->in[2 + j], nm, mode0 ? 0 : B);
        if (mode0) {
            for (int32_t d = 0; d < R; d++) {
                ttc_kp_int(p, TTC_ARG_DIM, op->in[2], d, 0, 0, "ixd%d", d);
            }
        } else {
            for (int32_t d = 0; d < B; d++) {  /* index dims, right-aligned into B (1 where missing) */
                int32_t td = d - (B - k->ts[op->in[2 + j]].rank);
                if (td < 0) ttc_kp_int(p, TTC_ARG_INT, op->in[2 + j], 0, 0, 1, "ix%dd%d", j, d);
                else ttc_kp_int(p, TTC_ARG_DIM, op->in[2 + j], td, 0, 0, "ix%dd%d", j, d);
            }
        }
    }
    ttc_kp_errflag(p, op->out);
    TTC_TRY(open_kernel(src, p, ks, P, R));
    const char *vt = vtype(k, val_dtype(k, op));
    ttc_sbuf_printf(src, "    long p = x_off");
    for (int32_t d = 0; d < R; d++) ttc_sbuf_printf(src, " + (long)i%d * x_s%d", d, d);
    ttc_sbuf_printf(src, ";\n    %s v = (%s)(", vt, vt);
    ttc_codegen_load(src, k, g->sp, x->dtype, "x", "p");
    ttc_sbuf_printf(src, ");\n");
    ttc_sbuf upd = {0};
    if (!has_src) ttc_codegen_literal(&upd, g->sp, op->p.scatter.value, val_dtype(k, op), vtype(k, val_dtype(k, op)));
    else {
        ttc_sbuf_printf(&upd, "(%s)(", vt);
        ttc_codegen_load(&upd, k, g->sp, k->ts[op->in[1]].dtype, "u", "q");
        ttc_sbuf_printf(&upd, ")");
    }
    if (upd.oom) { ttc_sbuf_free(&upd); return TTC_ERR_NOMEM; }
    const char *assign = op->p.scatter.accumulate ? "+=" : "=";
    if (mode0 && op->p.scatter.reduce != TTC_SCATTER_ASSIGN) {
        ttc_status rs = scatter_reduce_body(src, k, op, upd.data);
        if (rs != TTC_OK) { ttc_sbuf_free(&upd); return rs; }
    } else if (mode0) {
        ttc_sbuf_printf(src, "    if (1");
        for (int32_t d = 0; d < R; d++)
            if (d != D) ttc_sbuf_printf(src, " && i%d < ixd%d", d, d);
        ttc_sbuf_printf(src, ") {\n    long ib = ix0_off");
        for (int32_t d = 0; d < R; d++)
            if (d != D) ttc_sbuf_printf(src, " + (long)i%d * ix0_s%d", d, d);
        if (has_src) {
            ttc_sbuf_printf(src, ";\n    long qb = u_off");
            for (int32_t d = 0; d < R; d++)
                if (d != D) ttc_sbuf_printf(src, " + (long)i%d * u_s%d", d, d);
        }
        ttc_sbuf_printf(src, ";\n    for (int j = 0; j < ixd%d; j++) {\n        long t = (long)ix0[ib + (long)j * ix0_s%d];\n"
                             "        if (t < 0 || t >= (long)sz%d) { atomic_cmpxchg(errf, 0, %d); continue; }\n"
                             "        if (t != (long)i%d) continue;\n", D, D, D, code, D);
        if (has_src) ttc_sbuf_printf(src, "        long q = qb + (long)j * u_s%d;\n", D);
        ttc_sbuf_printf(src, "        v %s %s;\n    }\n    }\n", assign, upd.data);
    } else {
        ttc_sbuf_printf(src, "    int nb = 1");
        for (int32_t d = 0; d < B; d++) {
            ttc_sbuf_printf(src, ";\n    int bs%d = 1", d);
            for (int32_t j = 0; j < ni; j++) ttc_sbuf_printf(src, "; bs%d = max(bs%d, ix%dd%d)", d, d, j, d);
            ttc_sbuf_printf(src, "; nb *= bs%d", d);
        }
        ttc_sbuf_printf(src, ";\n    for (int jb = 0; jb < nb; jb++) {\n        int rem = jb;\n");
        for (int32_t d = B - 1; d >= 0; d--) ttc_sbuf_printf(src, "        int b%d = rem %% bs%d; rem /= bs%d;\n", d, d, d);
        ttc_sbuf_printf(src, "        bool hit = true;\n");
        for (int32_t j = 0; j < ni; j++) {
            ttc_sbuf_printf(src, "        long t%d = (long)ix%d[ix%d_off", j, j, j);
            for (int32_t d = 0; d < B; d++) ttc_sbuf_printf(src, " + b%d * ix%d_s%d", d, j, d);
            ttc_sbuf_printf(src, "];\n        if (t%d < -(long)sz%d || t%d >= (long)sz%d) { atomic_cmpxchg(errf, 0, %d); hit = false; }\n"
                                 "        if (t%d < 0) t%d += sz%d;\n        hit = hit && t%d == (long)i%d;\n",
                            j, at + j, j, at + j, code, j, j, at + j, j, at + j);
        }
        ttc_sbuf_printf(src, "        if (!hit) continue;\n");
        if (has_src) {
            ttc_sbuf_printf(src, "        long q = u_off");
            int32_t e = 0;
            for (int32_t d = 0; d < at; d++, e++) ttc_sbuf_printf(src, " + (long)i%d * u_s%d", d, e);
            for (int32_t d = 0; d < B; d++, e++) ttc_sbuf_printf(src, " + (long)b%d * u_s%d", d, e);
            for (int32_t d = at + ni; d < R; d++, e++) ttc_sbuf_printf(src, " + (long)i%d * u_s%d", d, e);
            ttc_sbuf_printf(src, ";\n");
        }
        ttc_sbuf_printf(src, "        v %s %s;\n    }\n", assign, upd.data);
    }
    ttc_sbuf_free(&upd);
    ttc_codegen_write_out(g, "v", "lin");
    ttc_sbuf_printf(src, "}\n");
    return TTC_OK;
}

/* Each generator above fills its own parameter list. */
#define DATA_GEN(kind)                                  \
    ttc_status ttc_gen_##kind(const ttc_kgen *g) {      \
        ttc_kparams p;                                  \
        ttc_kp_init(&p, g->k, g->ks, false);            \
        ttc_status s = gen_##kind(g, &p);               \
        ttc_kp_free(&p);                                \
        return s;                                       \
    }
DATA_GEN(concat)
DATA_GEN(pad)
DATA_GEN(index)
DATA_GEN(gather)
DATA_GEN(resize)
DATA_GEN(attention)
DATA_GEN(sort)
DATA_GEN(scatter)
