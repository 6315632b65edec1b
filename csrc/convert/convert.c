/* The conversion context and driver: values -> engine tensors, static-value evaluation. */
#include "convert.h"

#include <stdlib.h>
#include <string.h>

static const char *nname(const ttc_node *n) { return n->name ? n->name : n->op_name; }

static void ival_clear(ttc_ival *v) {
    free(v->s); free(v->ints); free(v->floats); free(v->tensors);
    memset(v, 0, sizeof *v);
}

static ttc_status arg_check(const ttc_node *n, int32_t i) {
    if (i < 0 || i >= n->n_inputs)
        return ttc_fail(TTC_ERR_INVALID_ARG, "node %s (%s): argument %d missing (it has %d)",
                        nname(n), n->op_name, i, n->n_inputs);
    return TTC_OK;
}

ttc_dtype ttc_cx_float_dtype(ttc_conv_ctx *cx, ttc_dtype declared) {
    if (declared == TTC_DTYPE_FLOAT32 || declared == TTC_DTYPE_FLOAT16 || declared == TTC_DTYPE_BFLOAT16 ||
        declared == TTC_DTYPE_FLOAT64)
        return cx->fp16 ? TTC_DTYPE_FLOAT16 : TTC_DTYPE_FLOAT32;
    return declared;
}

ttc_status ttc_cx_dim(const ttc_node *n, int64_t d, int32_t rank, int32_t *out) {
    int64_t r = rank ? rank : 1;
    if (d < -r || d >= r)
        return ttc_fail(TTC_ERR_INVALID_ARG, "node %s (%s): dim %lld out of range for rank %d",
                        nname(n), n->op_name, (long long)d, rank);
    *out = (int32_t)(d < 0 ? d + r : d);
    return TTC_OK;
}

/* aten.sym_size.int(x, dim): an int when that dim of x is static. A symbolic dim has no
 * value at build time; converters that only shape views (expand/view sizes) never ask for
 * it (output dims come from the IR types), so only a consumer that needs the number fails. */
static ttc_status eval_sym_size(ttc_conv_ctx *cx, const ttc_value *v, const ttc_node *p, const ttc_node *user) {
    ttc_ival *iv = &cx->ival_of[v->id];
    const ttc_type *xt = p->n_inputs == 2 ? &p->inputs[0]->type : NULL;
    int64_t di = 0;
    if (!xt || xt->kind != TTC_TYPE_TENSOR || xt->rank < 0 || !ttc_value_const_int(p->inputs[1], &di))
        return ttc_fail(TTC_ERR_UNSUPPORTED, "node %s: sym_size needs a tensor of known rank and a constant dim",
                        nname(p));
    int32_t d;
    TTC_TRY(ttc_cx_dim(p, di, xt->rank, &d));
    if (xt->rank == 0) return ttc_fail(TTC_ERR_INVALID_ARG, "node %s: sym_size of a 0-d tensor", nname(p));
    if (xt->dims[d].sym >= 0)
        return ttc_fail(TTC_ERR_UNSUPPORTED, "node %s: %%%s is the symbolic size %s of %%%s, known only at run "
                        "time; its use here needs a static number", nname(user), v->name,
                        cx->g->syms && xt->dims[d].sym < cx->g->n_syms ? cx->g->syms[xt->dims[d].sym].name : "?",
                        p->inputs[0]->name);
    iv->kind = TTC_IVAL_INT;
    iv->i = xt->dims[d].add;
    iv->f = (double)iv->i;
    return TTC_OK;
}

/* aten.sym_numel(x): the element count when every dim of x is static (issue 11). */
static ttc_status eval_sym_numel(ttc_conv_ctx *cx, const ttc_value *v, const ttc_node *p, const ttc_node *user) {
    const ttc_type *xt = p->n_inputs == 1 ? &p->inputs[0]->type : NULL;
    if (!xt || xt->kind != TTC_TYPE_TENSOR || xt->rank < 0)
        return ttc_fail(TTC_ERR_UNSUPPORTED, "node %s: sym_numel needs a tensor of known rank", nname(p));
    int64_t numel = 1;
    for (int32_t d = 0; d < xt->rank; d++) {
        if (xt->dims[d].sym >= 0)
            return ttc_fail(TTC_ERR_UNSUPPORTED, "node %s: %%%s is the element count of %%%s, which has a symbolic "
                            "dim known only at run time; its use here needs a static number", nname(user), v->name,
                            p->inputs[0]->name);
        numel *= xt->dims[d].add;
    }
    ttc_ival *iv = &cx->ival_of[v->id];
    iv->kind = TTC_IVAL_INT;
    iv->i = numel;
    iv->f = (double)numel;
    return TTC_OK;
}

/* Evaluates the static value v (recursively through list constructs). */
static ttc_status eval_value(ttc_conv_ctx *cx, const ttc_value *v, const ttc_node *user) {
    ttc_ival *iv = &cx->ival_of[v->id];
    if (iv->kind != TTC_IVAL_UNSET) return TTC_OK;
    const ttc_node *p = v->producer;
    if (v->type.kind == TTC_TYPE_NONE) { iv->kind = TTC_IVAL_NONE; return TTC_OK; }
    if (p && p->op == TTC_OP_CONSTANT) {
        const ttc_attr *a = ttc_node_attr(p, "value");
        if (!a) return ttc_fail(TTC_ERR_INVALID_ARG, "constant %s has no value", v->name);
        switch (a->kind) {
        case TTC_ATTR_NONE: iv->kind = TTC_IVAL_NONE; return TTC_OK;
        case TTC_ATTR_INT: iv->kind = TTC_IVAL_INT; iv->i = a->i; iv->f = (double)a->i; return TTC_OK;
        case TTC_ATTR_BOOL: iv->kind = TTC_IVAL_BOOL; iv->i = a->i; iv->f = (double)a->i; return TTC_OK;
        case TTC_ATTR_FLOAT: iv->kind = TTC_IVAL_FLOAT; iv->f = a->f; return TTC_OK;
        case TTC_ATTR_STR: iv->kind = TTC_IVAL_STR; iv->s = ttc_strdup(a->s ? a->s : ""); return TTC_OK;
        case TTC_ATTR_INTS: case TTC_ATTR_BOOLS:
            iv->ints = ttc_malloc(sizeof(int64_t) * (size_t)(a->n + 1));
            if (!iv->ints) return TTC_ERR_NOMEM;
            if (a->n) memcpy(iv->ints, a->ints, sizeof(int64_t) * (size_t)a->n);
            iv->n = a->n; iv->kind = TTC_IVAL_INTS;
            return TTC_OK;
        case TTC_ATTR_FLOATS:
            iv->floats = ttc_malloc(sizeof(double) * (size_t)(a->n + 1));
            if (!iv->floats) return TTC_ERR_NOMEM;
            if (a->n) memcpy(iv->floats, a->floats, sizeof(double) * (size_t)a->n);
            iv->n = a->n; iv->kind = TTC_IVAL_FLOATS;
            return TTC_OK;
        case TTC_ATTR_TENSOR: break;  /* tensors go through the tensor map */
        }
        return ttc_fail(TTC_ERR_INVALID_ARG, "node %s: %%%s is a tensor, a static value was expected",
                        nname(user), v->name);
    }
    if (p && p->op == TTC_OP_LIST_CONSTRUCT) {
        bool tensors = v->type.elem == TTC_TYPE_TENSOR;
        for (int32_t i = 0; i < p->n_inputs && !tensors; i++)
            if (p->inputs[i]->type.kind == TTC_TYPE_TENSOR) tensors = true;
        if (tensors) {
            iv->tensors = ttc_malloc(sizeof(int32_t) * (size_t)(p->n_inputs + 1));
            if (!iv->tensors) return TTC_ERR_NOMEM;
            for (int32_t i = 0; i < p->n_inputs; i++) {
                ttc_status s = ttc_cx_tensor(cx, p, i, &iv->tensors[i]);
                if (s != TTC_OK) { ival_clear(iv); return s; }
            }
            iv->n = p->n_inputs; iv->kind = TTC_IVAL_TENSORS;
            return TTC_OK;
        }
        bool is_float = false;
        for (int32_t i = 0; i < p->n_inputs; i++) {
            TTC_TRY(eval_value(cx, p->inputs[i], p));
            ttc_ival *e = &cx->ival_of[p->inputs[i]->id];
            if (e->kind == TTC_IVAL_FLOAT) is_float = true;
            else if (e->kind != TTC_IVAL_INT && e->kind != TTC_IVAL_BOOL)
                return ttc_fail(TTC_ERR_UNSUPPORTED, "node %s: list element %%%s is not a static number",
                                nname(user), p->inputs[i]->name);
        }
        iv->ints = ttc_calloc((size_t)p->n_inputs + 1, sizeof(int64_t));
        iv->floats = ttc_calloc((size_t)p->n_inputs + 1, sizeof(double));
        if (!iv->ints || !iv->floats) { ival_clear(iv); return TTC_ERR_NOMEM; }
        for (int32_t i = 0; i < p->n_inputs; i++) {
            ttc_ival *e = &cx->ival_of[p->inputs[i]->id];
            iv->ints[i] = e->kind == TTC_IVAL_FLOAT ? (int64_t)e->f : e->i;
            iv->floats[i] = e->kind == TTC_IVAL_FLOAT ? e->f : (double)e->i;
        }
        iv->n = p->n_inputs;
        iv->kind = is_float ? TTC_IVAL_FLOATS : TTC_IVAL_INTS;
        return TTC_OK;
    }
    if (p && p->op == TTC_OP_SYM_SIZE) return eval_sym_size(cx, v, p, user);
    if (p && p->op == TTC_OP_SYM_NUMEL) return eval_sym_numel(cx, v, p, user);
    if (p && ttc_is_symint_arith(p))
        return ttc_fail(TTC_ERR_UNSUPPORTED, "node %s: %%%s is computed by %s from sizes known only at run time; "
                        "its use here needs a static number", nname(user), v->name, p->op_name);
    if (cx->tensor_of[v->id] >= 0)
        return ttc_fail(TTC_ERR_UNSUPPORTED, "node %s: %%%s is a runtime tensor, a static value was expected",
                        nname(user), v->name);
    return ttc_fail(TTC_ERR_UNSUPPORTED,
                    "node %s: argument %%%s (from %s) is not a static value this engine can evaluate",
                    nname(user), v->name, p ? p->op_name : "a graph input");
}

ttc_status ttc_cx_eval(ttc_conv_ctx *cx, const ttc_node *n, int32_t i, const ttc_ival **out) {
    TTC_TRY(arg_check(n, i));
    TTC_TRY(eval_value(cx, n->inputs[i], n));
    *out = &cx->ival_of[n->inputs[i]->id];
    return TTC_OK;
}

bool ttc_cx_is_none(ttc_conv_ctx *cx, const ttc_node *n, int32_t i) {
    if (i >= n->n_inputs) return true;
    return ttc_value_is_none(n->inputs[i]);
}

bool ttc_cx_is_tensor(ttc_conv_ctx *cx, const ttc_node *n, int32_t i) {
    return i < n->n_inputs && n->inputs[i]->type.kind == TTC_TYPE_TENSOR;
}

/* bfloat16 is a storage dtype only: an engine computes a bfloat16 graph in float (half in
 * fp16 engines) and keeps no bfloat16 tensor inside, so that no kernel template has to read
 * or write it. A bfloat16 engine input is read once by a cast (made when first used), a
 * bfloat16 weight becomes a float constant here, and outputs round to bfloat16 in the kernel
 * that writes them (bind_output's cast, fused into it). */
static ttc_status bf16_input_to_float(ttc_conv_ctx *cx, const ttc_value *v) {
    int32_t t = cx->tensor_of[v->id];
    const ttc_et *et = &cx->k->ts[t];
    ttc_dtype to = ttc_cx_float_dtype(cx, TTC_DTYPE_BFLOAT16);
    ttc_expr e;
    ttc_expr_init(&e);
    if (ttc_expr_leaf(&e, t, TTC_DTYPE_FLOAT32) < 0) {
        ttc_expr_free(&e);
        return TTC_ERR_NOMEM;
    }
    ttc_dim dims[TTC_MAX_RANK];
    memcpy(dims, et->dims, sizeof dims);
    int32_t r = ttc_kir_elementwise(cx->k, &e, to, et->rank, dims, v->name);
    if (r < 0) return ttc_fail_context(TTC_ERR_NOMEM, "reading bfloat16 input %%%s", v->name);
    cx->tensor_of[v->id] = r;
    return TTC_OK;
}

static int32_t bf16_const_to_float(ttc_kir *k, const ttc_value *v, const ttc_tensor_data *data, const int64_t *shape) {
    int64_t numel = ttc_type_numel_static(&v->type);
    if (numel < 0 || data->nbytes < (size_t)numel * 2) {
        ttc_fail(TTC_ERR_INVALID_ARG, "constant %%%s holds %zu bytes, fewer than its bfloat16 type needs",
                 v->name, data->nbytes);
        return -1;
    }
    float *f = ttc_malloc(sizeof(float) * (size_t)(numel + 1));
    if (!f) return -1;
    const unsigned char *src = data->data;
    for (int64_t j = 0; j < numel; j++) {
        uint16_t b;
        memcpy(&b, src + 2 * j, 2);
        uint32_t u = (uint32_t)b << 16;
        memcpy(&f[j], &u, 4);
    }
    int32_t t = ttc_kir_const_f32(k, TTC_DTYPE_FLOAT32, v->type.rank, shape, f, v->name);
    free(f);
    return t;
}

ttc_status ttc_cx_tensor(ttc_conv_ctx *cx, const ttc_node *n, int32_t i, int32_t *tid) {
    TTC_TRY(arg_check(n, i));
    const ttc_value *v = n->inputs[i];
    if (cx->tensor_of[v->id] >= 0) {
        if (cx->k->ts[cx->tensor_of[v->id]].kind == TTC_ET_INPUT && cx->k->ts[cx->tensor_of[v->id]].dtype == TTC_DTYPE_BFLOAT16)
            TTC_TRY(bf16_input_to_float(cx, v));
        *tid = cx->tensor_of[v->id];
        return TTC_OK;
    }
    const ttc_attr *a = ttc_value_const(v);
    if (a && a->kind == TTC_ATTR_TENSOR && v->type.kind == TTC_TYPE_TENSOR) {
        if (!ttc_type_is_static(&v->type))
            return ttc_fail(TTC_ERR_UNSUPPORTED, "constant %%%s has a symbolic shape", v->name);
        int64_t shape[TTC_MAX_RANK];
        for (int32_t d = 0; d < v->type.rank; d++) shape[d] = v->type.dims[d].add;
        int32_t t = v->type.dtype == TTC_DTYPE_BFLOAT16
                        ? bf16_const_to_float(cx->k, v, a->tensor, shape)
                        : ttc_kir_const(cx->k, v->type.dtype, v->type.rank, shape, a->tensor, v->name);
        if (t < 0) return ttc_fail_context(TTC_ERR_INVALID_ARG, "node %s", nname(n));
        cx->tensor_of[v->id] = t;
        *tid = t;
        return TTC_OK;
    }
    if (v->type.kind != TTC_TYPE_TENSOR)
        return ttc_fail(TTC_ERR_INVALID_ARG, "node %s (%s): argument %d (%%%s) is not a tensor",
                        nname(n), n->op_name, i, v->name);
    return ttc_fail(TTC_ERR_INTERNAL,
                    "node %s (%s): input %%%s was never converted (its producer %s has no engine tensor)",
                    nname(n), n->op_name, v->name,
                    v->producer ? (v->producer->name ? v->producer->name : v->producer->op_name) : "(graph input)");
}

ttc_status ttc_cx_int(ttc_conv_ctx *cx, const ttc_node *n, int32_t i, int64_t *v) {
    const ttc_ival *iv;
    TTC_TRY(ttc_cx_eval(cx, n, i, &iv));
    if (iv->kind == TTC_IVAL_INT || iv->kind == TTC_IVAL_BOOL) { *v = iv->i; return TTC_OK; }
    return ttc_fail(TTC_ERR_UNSUPPORTED, "node %s (%s): argument %d is not a static int", nname(n), n->op_name, i);
}

ttc_status ttc_cx_float(ttc_conv_ctx *cx, const ttc_node *n, int32_t i, double *v) {
    const ttc_ival *iv;
    TTC_TRY(ttc_cx_eval(cx, n, i, &iv));
    if (iv->kind == TTC_IVAL_INT || iv->kind == TTC_IVAL_BOOL || iv->kind == TTC_IVAL_FLOAT) {
        *v = iv->kind == TTC_IVAL_FLOAT ? iv->f : (double)iv->i;
        return TTC_OK;
    }
    return ttc_fail(TTC_ERR_UNSUPPORTED, "node %s (%s): argument %d is not a static number", nname(n), n->op_name, i);
}

ttc_status ttc_cx_bool(ttc_conv_ctx *cx, const ttc_node *n, int32_t i, bool *v) {
    int64_t x = 0;
    TTC_TRY(ttc_cx_int(cx, n, i, &x));
    *v = x != 0;
    return TTC_OK;
}

ttc_status ttc_cx_ints(ttc_conv_ctx *cx, const ttc_node *n, int32_t i, const int64_t **v, int32_t *len) {
    const ttc_ival *iv;
    TTC_TRY(ttc_cx_eval(cx, n, i, &iv));
    if (iv->kind == TTC_IVAL_INTS) { *v = iv->ints; *len = iv->n; return TTC_OK; }
    if (iv->kind == TTC_IVAL_INT) { *v = &iv->i; *len = 1; return TTC_OK; }
    return ttc_fail(TTC_ERR_UNSUPPORTED, "node %s (%s): argument %d is not a static list of ints",
                    nname(n), n->op_name, i);
}

ttc_status ttc_cx_tensors(ttc_conv_ctx *cx, const ttc_node *n, int32_t i, const int32_t **v, int32_t *len) {
    const ttc_ival *iv;
    TTC_TRY(ttc_cx_eval(cx, n, i, &iv));
    if (iv->kind != TTC_IVAL_TENSORS)
        return ttc_fail(TTC_ERR_UNSUPPORTED, "node %s (%s): argument %d is not a list of tensors",
                        nname(n), n->op_name, i);
    *v = iv->tensors; *len = iv->n;
    return TTC_OK;
}

ttc_status ttc_cx_set_output(ttc_conv_ctx *cx, const ttc_node *n, int32_t i, int32_t tid) {
    if (i < 0 || i >= n->n_outputs || tid < 0 || tid >= cx->k->n_ts)
        return ttc_fail(TTC_ERR_INTERNAL, "node %s: bad output %d / tensor %d", nname(n), i, tid);
    const ttc_value *v = n->outputs[i];
    const ttc_et *t = &cx->k->ts[tid];
    if (v->type.kind == TTC_TYPE_TENSOR && v->type.rank >= 0 &&
        !ttc_dims_eq(v->type.rank, v->type.dims, t->rank, t->dims))
        return ttc_fail(TTC_ERR_INTERNAL, "node %s (%s): converter made a tensor of rank %d for %%%s of rank %d "
                        "or with other dims", nname(n), n->op_name, t->rank, v->name, v->type.rank);
    cx->tensor_of[v->id] = tid;
    return TTC_OK;
}

ttc_status ttc_cx_contiguous(ttc_conv_ctx *cx, int32_t t, const char *name, int32_t *out) {
    const ttc_et *et = &cx->k->ts[t];
    if (et->contig) { *out = t; return TTC_OK; }
    ttc_expr e;
    ttc_expr_init(&e);
    if (ttc_expr_leaf(&e, t, et->dtype) < 0) { ttc_expr_free(&e); return TTC_ERR_NOMEM; }
    ttc_dim dims[TTC_MAX_RANK];
    memcpy(dims, et->dims, sizeof dims);
    int32_t r = ttc_kir_elementwise(cx->k, &e, et->dtype, et->rank, dims, name);
    if (r < 0) return TTC_ERR_NOMEM;
    *out = r;
    return TTC_OK;
}

/* ---- driver ---- */
static bool dtype_ok(ttc_dtype d) {
    return ttc_dtype_engine_float(d) || d == TTC_DTYPE_INT64 ||
           d == TTC_DTYPE_INT32 || d == TTC_DTYPE_BOOL || d == TTC_DTYPE_UINT8 || d == TTC_DTYPE_INT8;
}

static ttc_status bind_output(ttc_conv_ctx *cx, int32_t i, const ttc_value *v) {
    ttc_kir *k = cx->k;
    int32_t t = cx->tensor_of[v->id];
    if (t < 0) {
        int32_t tid;
        ttc_node fake = {0};
        fake.name = "(graph outputs)"; fake.op_name = "return";
        ttc_value *vv = (ttc_value *)v;
        fake.inputs = &vv; fake.n_inputs = 1;
        TTC_TRY(ttc_cx_tensor(cx, &fake, 0, &tid));
        t = tid;
    }
    /* An output needs a buffer of its own written by a kernel: copy inputs, constants,
     * views and tensors already bound to another output. */
    if (k->ts[t].kind != TTC_ET_INTER || k->ts[t].binding >= 0 || k->ts[t].dtype != v->type.dtype) {
        ttc_expr e;
        ttc_expr_init(&e);
        int32_t l = ttc_expr_leaf(&e, t, k->ts[t].dtype);
        if (l < 0 || ttc_expr_cast(&e, l, v->type.dtype) < 0) { ttc_expr_free(&e); return TTC_ERR_NOMEM; }
        ttc_dim dims[TTC_MAX_RANK];
        memcpy(dims, k->ts[t].dims, sizeof dims);
        t = ttc_kir_elementwise(k, &e, v->type.dtype, k->ts[t].rank, dims, v->name);
        if (t < 0) return TTC_ERR_NOMEM;
    }
    k->ts[t].binding = i;
    k->outputs[i] = t;
    k->out_names[i] = ttc_strdup(v->name);
    return TTC_OK;
}

ttc_status ttc_convert_graph(const ttc_graph *g, bool fp16, ttc_kir **out) {
    return ttc_convert_graph_for(g, fp16, NULL, out);
}

ttc_status ttc_convert_graph_for(const ttc_graph *g, bool fp16, const ttc_target *tg, ttc_kir **out) {
    *out = NULL;
    ttc_status s = TTC_OK;
    ttc_conv_ctx cx = {0};
    cx.g = g;
    cx.fp16 = fp16;
    cx.split_k = tg ? tg->gpu_kernels : true;
    cx.ksplit_cap = tg ? tg->conv_ksplit_cap : 32;
    cx.tg = tg;
    cx.k = ttc_kir_new();
    int32_t nv = 0;
    for (int32_t i = 0; i < g->n_all_values; i++)
        if (g->all_values[i]->id + 1 > nv) nv = g->all_values[i]->id + 1;
    cx.n_values = nv;
    cx.tensor_of = ttc_malloc(sizeof(int32_t) * (size_t)(nv + 1));
    cx.ival_of = ttc_calloc((size_t)nv + 1, sizeof(ttc_ival));
    if (!cx.k || !cx.tensor_of || !cx.ival_of) { s = TTC_ERR_NOMEM; goto done; }
    for (int32_t i = 0; i < nv; i++) cx.tensor_of[i] = -1;
    ttc_kir *k = cx.k;
    k->fp16 = fp16;
    if (g->n_syms) {
        k->syms = ttc_calloc((size_t)g->n_syms, sizeof(ttc_symbol));
        if (!k->syms) { s = TTC_ERR_NOMEM; goto done; }
        for (int32_t i = 0; i < g->n_syms; i++) {
            k->syms[i] = g->syms[i];
            k->syms[i].name = ttc_strdup(g->syms[i].name);
        }
        k->n_syms = g->n_syms;
    }
    k->inputs = ttc_calloc((size_t)g->n_inputs + 1, sizeof(int32_t));
    k->in_names = ttc_calloc((size_t)g->n_inputs + 1, sizeof(char *));
    k->outputs = ttc_calloc((size_t)g->n_outputs + 1, sizeof(int32_t));
    k->out_names = ttc_calloc((size_t)g->n_outputs + 1, sizeof(char *));
    if (!k->inputs || !k->in_names || !k->outputs || !k->out_names) { s = TTC_ERR_NOMEM; goto done; }
    for (int32_t i = 0; i < g->n_inputs; i++) {
        const ttc_value *v = g->inputs[i];
        if (v->type.kind != TTC_TYPE_TENSOR || v->type.rank < 0 || !dtype_ok(v->type.dtype)) {
            s = ttc_fail(TTC_ERR_UNSUPPORTED, "engine input %%%s must be a tensor of known rank and a "
                         "supported dtype", v->name);
            goto done;
        }
        int32_t t = ttc_kir_tensor(k, TTC_ET_INPUT, v->type.dtype, v->type.rank, v->type.dims, v->name);
        if (t < 0) { s = ttc_fail_context(TTC_ERR_UNSUPPORTED, "engine input %%%s", v->name); goto done; }
        k->ts[t].binding = i;
        k->inputs[i] = t;
        k->in_names[i] = ttc_strdup(v->name);
        k->n_inputs = i + 1;
        cx.tensor_of[v->id] = t;
    }
    for (int32_t ni = 0; ni < g->n_nodes; ni++) {
        const ttc_node *n = g->nodes[ni];
        const ttc_converter *c = ttc_converter_get(n->op);
        if (c && (c->flags & TTC_CONVF_EVAL)) continue;   /* evaluated on demand */
        if (!c && ttc_is_symint_arith(n)) continue;        /* sizes for views only (no value) */
        if (!c) {
            s = ttc_fail(TTC_ERR_UNSUPPORTED, "node %s: no converter for %s", nname(n), n->op_name);
            goto done;
        }
        char *why = NULL;
        if (c->validate && !c->validate(g, n, fp16, &why)) {
            s = ttc_fail(TTC_ERR_UNSUPPORTED, "node %s (%s): %s", nname(n), n->op_name, why ? why : "not supported");
            free(why);
            goto done;
        }
        s = c->convert(&cx, n);
        if (s != TTC_OK) {
            if (!strstr(ttc_last_error(), nname(n)))
                ttc_fail_context(s, "while converting node %s (%s)", nname(n), n->op_name);
            goto done;
        }
    }
    for (int32_t i = 0; i < g->n_outputs; i++) {
        const ttc_value *v = g->outputs[i];
        if (v->type.kind != TTC_TYPE_TENSOR || !dtype_ok(v->type.dtype)) {
            s = ttc_fail(TTC_ERR_UNSUPPORTED, "engine output %%%s must be a tensor of a supported dtype", v->name);
            goto done;
        }
        k->n_outputs = i + 1;
        s = bind_output(&cx, i, v);
        if (s != TTC_OK) goto done;
    }
done:
    if (cx.ival_of)
        for (int32_t i = 0; i < nv; i++) ival_clear(&cx.ival_of[i]);
    free(cx.ival_of);
    free(cx.tensor_of);
    if (s != TTC_OK) { ttc_kir_free(cx.k); return s; }
    *out = cx.k;
    return TTC_OK;
}
