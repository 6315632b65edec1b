/* Types (dtype[dims] with affine symbolic dims) and attribute literals (ints, floats,
 * bools, strings, lists, inline tensors) of the IR text parser. See parse_internal.h. */
#include "parse_internal.h"
#include "text_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- types ---- */
ttc_status ttc_lit_parse_dim(parser *p, ttc_dim *d) {
    ttc_lex_skip_ws(p);
    pos_t start = p->at;
    int64_t mul = 1;
    int c = ttc_lex_peek(p);
    if ((c >= '0' && c <= '9') || c == '-' || c == '+') {
        int64_t k;
        TTC_TRY(ttc_lex_read_int(p, &k));
        if (!ttc_lex_accept(p, '*')) {
            if (k < 0) return ttc_lex_perr_at(p, start, "dimension must be >= 0, got %lld", (long long)k);
            *d = ttc_dim_const(k);
            return TTC_OK;
        }
        mul = k;
        ttc_lex_skip_ws(p);
    }
    pos_t sym_at = p->at;
    char *name = ttc_lex_read_word(p);
    char b[16];
    if (!name) return PERR(p, "expected a dimension (int or symbol), found %s", ttc_lex_found(p, b, sizeof b));
    int32_t sym = ttc_graph_find_symbol(p->g, name);
    if (sym < 0) {
        ttc_status st = ttc_lex_perr_at(p, sym_at, "unknown symbol %s (declare it in the 'where' clause)", name);
        free(name);
        return st;
    }
    free(name);
    if (mul == 0) return ttc_lex_perr_at(p, start, "symbol coefficient must not be 0");
    int64_t add = 0;
    ttc_lex_skip_ws(p);
    if (ttc_lex_peek(p) == '+' || ttc_lex_peek(p) == '-') {
        bool neg = ttc_lex_peek(p) == '-';
        ttc_lex_advance(p);
        ttc_lex_skip_ws(p);
        if (ttc_lex_peek(p) == '-' || ttc_lex_peek(p) == '+') return PERR(p, "expected digits");
        TTC_TRY(ttc_lex_read_int(p, &add));
        if (neg) add = -add;
    }
    d->sym = sym;
    d->mul = mul;
    d->add = add;
    return TTC_OK;
}

static bool scalar_kind(const char *w, ttc_type_kind *k) {
    static const struct { const char *n; ttc_type_kind k; } tab[] = {
        {"int", TTC_TYPE_INT}, {"float", TTC_TYPE_FLOAT}, {"bool", TTC_TYPE_BOOL}, {"str", TTC_TYPE_STR},
        {"NoneType", TTC_TYPE_NONE}, {"Any", TTC_TYPE_ANY}, {"Tensor", TTC_TYPE_TENSOR},
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        if (!strcmp(w, tab[i].n)) { *k = tab[i].k; return true; }
    return false;
}

ttc_status ttc_lit_parse_type(parser *p, ttc_type *t) {
    memset(t, 0, sizeof *t);
    ttc_lex_skip_ws(p);
    pos_t start = p->at;
    char b[16];
    char *w = ttc_lex_read_word(p);
    if (!w) return PERR(p, "expected a type, found %s", ttc_lex_found(p, b, sizeof b));
    ttc_dtype dt;
    ttc_type_kind k;
    ttc_lex_skip_ws(p);
    if (ttc_lex_peek(p) == '(' && ttc_dtype_from_name(w, &dt)) {
        free(w);
        ttc_lex_advance(p);
        t->kind = TTC_TYPE_TENSOR;
        t->dtype = dt;
        if (ttc_lex_accept(p, ')')) return TTC_OK;
        if (ttc_lex_accept(p, '*')) { t->rank = -1; return ttc_lex_expect(p, ')', "')' after '*'"); }
        for (;;) {
            if (t->rank >= TTC_MAX_RANK) return PERR(p, "tensor rank exceeds %d", TTC_MAX_RANK);
            TTC_TRY(ttc_lit_parse_dim(p, &t->dims[t->rank]));
            t->rank++;
            if (ttc_lex_accept(p, ')')) return TTC_OK;
            TTC_TRY(ttc_lex_expect(p, ',', "',' or ')' in a tensor shape"));
        }
    }
    if (!scalar_kind(w, &k)) {
        ttc_status st = ttc_lex_perr_at(p, start, "unknown type '%s'", w);
        free(w);
        return st;
    }
    free(w);
    if (ttc_lex_accept(p, '[')) {
        TTC_TRY(ttc_lex_expect(p, ']', "']' in a list type"));
        *t = ttc_type_list(k);
        return TTC_OK;
    }
    if (k == TTC_TYPE_TENSOR) return ttc_lex_perr_at(p, start, "a tensor type needs a dtype and shape, e.g. Float(2, 3)");
    *t = ttc_type_scalar(k);
    return TTC_OK;
}

/* ---- attribute literals ---- */
static ttc_status store_elem(parser *p, pos_t at, ttc_dtype dt, unsigned char *dst, bool isf, int64_t iv, double fv,
                             int bv) {
    switch (dt) {
    case TTC_DTYPE_FLOAT32: { float f = isf ? (float)fv : (float)iv; memcpy(dst, &f, 4); return TTC_OK; }
    case TTC_DTYPE_FLOAT64: { double f = isf ? fv : (double)iv; memcpy(dst, &f, 8); return TTC_OK; }
    case TTC_DTYPE_FLOAT16: { uint16_t h = ttc_float_to_half(isf ? (float)fv : (float)iv); memcpy(dst, &h, 2); return TTC_OK; }
    case TTC_DTYPE_BFLOAT16: { uint16_t h = ttc_float_to_bf16(isf ? (float)fv : (float)iv); memcpy(dst, &h, 2); return TTC_OK; }
    default: break;
    }
    if (dt == TTC_DTYPE_BOOL) {
        if (bv < 0 && (isf || (iv != 0 && iv != 1))) return ttc_lex_perr_at(p, at, "expected true or false in a Bool tensor");
        *dst = (unsigned char)(bv >= 0 ? bv : iv);
        return TTC_OK;
    }
    if (isf || bv >= 0) return ttc_lex_perr_at(p, at, "expected an integer in a %s tensor", ttc_dtype_ir_name(dt));
    int64_t lo = INT64_MIN, hi = INT64_MAX;
    if (dt == TTC_DTYPE_INT32) { lo = INT32_MIN; hi = INT32_MAX; }
    if (dt == TTC_DTYPE_INT8) { lo = -128; hi = 127; }
    if (dt == TTC_DTYPE_UINT8) { lo = 0; hi = 255; }
    if (iv < lo || iv > hi) return ttc_lex_perr_at(p, at, "%lld out of range for %s", (long long)iv, ttc_dtype_ir_name(dt));
    if (dt == TTC_DTYPE_INT64) memcpy(dst, &iv, 8);
    else if (dt == TTC_DTYPE_INT32) { int32_t v = (int32_t)iv; memcpy(dst, &v, 4); }
    else *dst = (unsigned char)(int8_t)iv;
    return TTC_OK;
}

/* tensor([...], name="w") or tensor(name="w"); the cursor is after "tensor". */
static ttc_status parse_tensor_literal(parser *p, pos_t start, const ttc_type *type, ttc_attr *a) {
    if (!type || type->kind != TTC_TYPE_TENSOR)
        return ttc_lex_perr_at(p, start, "a tensor literal needs a single tensor output type");
    int64_t numel = ttc_type_numel_static(type);
    size_t es = ttc_dtype_size(type->dtype);
    if (numel < 0 || (uint64_t)numel > SIZE_MAX / 16)
        return ttc_lex_perr_at(p, start, "a tensor literal needs a static shape of reasonable size");
    TTC_TRY(ttc_lex_expect(p, '(', "'(' after tensor"));
    ttc_sbuf data = {0};
    bool have_data = false;
    int64_t count = 0;
    ttc_status st = TTC_OK;
    ttc_lex_skip_ws(p);
    if (ttc_lex_accept(p, '[')) {
        have_data = true;
        if (!ttc_lex_accept(p, ']')) {
            for (;;) {
                ttc_lex_skip_ws(p);
                pos_t at = p->at;
                bool isf = false;
                int64_t iv = 0;
                double fv = 0;
                int bv = -1;
                if (ttc_lex_accept_word(p, "true") || ttc_lex_accept_word(p, "True")) bv = 1;
                else if (ttc_lex_accept_word(p, "false") || ttc_lex_accept_word(p, "False")) bv = 0;
                else if ((st = ttc_lex_read_number(p, &isf, &iv, &fv))) goto done;
                if (bv >= 0) iv = bv;
                if (count >= numel) { st = ttc_lex_perr_at(p, at, "too many elements: the type holds %lld", (long long)numel); goto done; }
                unsigned char e[8];
                if ((st = store_elem(p, at, type->dtype, e, isf, iv, fv, bv))) goto done;
                ttc_sbuf_append(&data, (const char *)e, es);
                count++;
                if (ttc_lex_accept(p, ']')) break;
                if ((st = ttc_lex_expect(p, ',', "',' or ']' in a tensor literal"))) goto done;
            }
        }
        if (count != numel) {
            st = PERR(p, "tensor literal has %lld elements, its type needs %lld", (long long)count, (long long)numel);
            goto done;
        }
        if (!ttc_lex_accept(p, ')')) {
            if ((st = ttc_lex_expect(p, ',', "',' or ')' after tensor data"))) goto done;
        } else {
            goto build;
        }
    }
    if (!ttc_lex_accept_word(p, "name")) { char b[16]; st = PERR(p, "expected [elements] or name=\"...\", found %s", ttc_lex_found(p, b, sizeof b)); goto done; }
    if ((st = ttc_lex_expect(p, '=', "'=' after name"))) goto done;
    if ((st = ttc_lex_read_quoted(p, &a->s))) goto done;
    if ((st = ttc_lex_expect(p, ')', "')' closing the tensor literal"))) goto done;
build:
    if (have_data) {
        if (data.oom) { st = ttc_fail(TTC_ERR_NOMEM, "out of memory reading a tensor literal"); goto done; }
        a->tensor = ttc_tensor_data_copy(data.data, (size_t)numel * es);
        if (!a->tensor) { st = TTC_ERR_NOMEM; goto done; }
    } else {
        if (!p->lookup) {
            st = ttc_lex_perr_at(p, start, "tensor \"%s\" is not inline and no tensors were given to look it up", a->s);
            goto done;
        }
        a->tensor = p->lookup(p->ctx, a->s, type);
        if (!a->tensor) { st = ttc_lex_perr_at(p, start, "unknown tensor \"%s\"", a->s); goto done; }
        if (a->tensor->nbytes != (size_t)numel * es) {
            st = ttc_lex_perr_at(p, start, "tensor \"%s\" has %zu bytes, its type needs %zu", a->s, a->tensor->nbytes,
                         (size_t)numel * es);
            goto done;
        }
    }
    a->kind = TTC_ATTR_TENSOR;
done:
    ttc_sbuf_free(&data);
    return st;
}

static ttc_status parse_list_literal(parser *p, ttc_attr *a) {
    /* cursor after '[' */
    int32_t n = 0, cap = 0;
    int64_t *ints = NULL;
    double *flts = NULL;
    bool any_bool = false, any_num = false, any_float = false;
    ttc_status st = TTC_OK;
    if (!ttc_lex_accept(p, ']')) {
        for (;;) {
            ttc_lex_skip_ws(p);
            pos_t at = p->at;
            bool isf = false;
            int64_t iv = 0;
            double fv = 0;
            if (ttc_lex_accept_word(p, "true")) { iv = 1; any_bool = true; }
            else if (ttc_lex_accept_word(p, "false")) { iv = 0; any_bool = true; }
            else if ((st = ttc_lex_read_number(p, &isf, &iv, &fv))) goto fail;
            else any_num = true;
            if (any_bool && any_num) { st = ttc_lex_perr_at(p, at, "a list mixes booleans and numbers"); goto fail; }
            if (n >= cap) {
                if (cap >= (INT32_MAX / 2)) { st = ttc_lex_perr_at(p, at, "list too long"); goto fail; }
                int32_t nc = cap ? cap * 2 : 8;
                int64_t *ni = ttc_realloc(ints, sizeof(int64_t) * (size_t)nc);
                if (!ni) { st = TTC_ERR_NOMEM; goto fail; }
                ints = ni;
                double *nf = ttc_realloc(flts, sizeof(double) * (size_t)nc);
                if (!nf) { st = TTC_ERR_NOMEM; goto fail; }
                flts = nf;
                cap = nc;
            }
            any_float |= isf;
            ints[n] = iv;
            flts[n] = isf ? fv : (double)iv;
            n++;
            if (ttc_lex_accept(p, ']')) break;
            if ((st = ttc_lex_expect(p, ',', "',' or ']' in a list"))) goto fail;
        }
    }
    a->n = n;
    if (any_float) {
        a->kind = TTC_ATTR_FLOATS;
        a->floats = flts ? flts : ttc_calloc(1, sizeof(double));
        flts = NULL;
        if (!a->floats) { st = TTC_ERR_NOMEM; goto fail; }
    } else {
        a->kind = any_bool ? TTC_ATTR_BOOLS : TTC_ATTR_INTS;
        a->ints = ints ? ints : ttc_calloc(1, sizeof(int64_t));
        ints = NULL;
        if (!a->ints) { st = TTC_ERR_NOMEM; goto fail; }
    }
fail:
    free(ints);
    free(flts);
    return st;
}

static ttc_status empty_list(parser *p, ttc_attr *a, ttc_attr_kind kind) {
    TTC_TRY(ttc_lex_expect(p, '[', "'[' (empty list literal)"));
    TTC_TRY(ttc_lex_expect(p, ']', "']' (empty list literal)"));
    a->kind = kind;
    a->n = 0;
    if (kind == TTC_ATTR_FLOATS) a->floats = ttc_calloc(1, sizeof(double));
    else a->ints = ttc_calloc(1, sizeof(int64_t));
    return (a->floats || a->ints) ? TTC_OK : TTC_ERR_NOMEM;
}

ttc_status ttc_lit_parse_attr_value(parser *p, ttc_attr *a, const ttc_type *out_type) {
    ttc_lex_skip_ws(p);
    pos_t start = p->at;
    int c = ttc_lex_peek(p);
    if (c == '"') {
        a->kind = TTC_ATTR_STR;
        return ttc_lex_read_quoted(p, &a->s);
    }
    if (c == '[') { ttc_lex_advance(p); return parse_list_literal(p, a); }
    if ((c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.') {
        bool isf;
        TTC_TRY(ttc_lex_read_number(p, &isf, &a->i, &a->f));
        a->kind = isf ? TTC_ATTR_FLOAT : TTC_ATTR_INT;
        return TTC_OK;
    }
    if (ttc_lex_accept_word(p, "true")) { a->kind = TTC_ATTR_BOOL; a->i = 1; return TTC_OK; }
    if (ttc_lex_accept_word(p, "false")) { a->kind = TTC_ATTR_BOOL; a->i = 0; return TTC_OK; }
    if (ttc_lex_accept_word(p, "None")) { a->kind = TTC_ATTR_NONE; return TTC_OK; }
    if (ttc_lex_accept_word(p, "inf")) { a->kind = TTC_ATTR_FLOAT; a->f = INFINITY; return TTC_OK; }
    if (ttc_lex_accept_word(p, "nan")) { a->kind = TTC_ATTR_FLOAT; a->f = NAN; return TTC_OK; }
    if (ttc_lex_accept_word(p, "int")) return empty_list(p, a, TTC_ATTR_INTS);
    if (ttc_lex_accept_word(p, "float")) return empty_list(p, a, TTC_ATTR_FLOATS);
    if (ttc_lex_accept_word(p, "bool")) return empty_list(p, a, TTC_ATTR_BOOLS);
    if (ttc_lex_accept_word(p, "tensor")) return parse_tensor_literal(p, start, out_type, a);
    char b[16];
    return PERR(p, "expected an attribute value, found %s", ttc_lex_found(p, b, sizeof b));
}
