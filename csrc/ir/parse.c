/*
 * IR text parser: the inverse of print.c (format described there). It checks names and
 * syntax (undefined or duplicate values, unknown symbols, malformed types and literals) and
 * leaves semantic checks to ttc_graph_verify. Errors are TTC_ERR_PARSE with
 * "line L, column C: ...". It never recurses (the grammar is flat), checks every integer
 * for overflow and reads only within the NUL-terminated text.
 *
 *   ttc_graph *g;
 *   ttc_status s = ttc_graph_parse_ex(text, my_lookup, my_ctx, &g);
 */
#include "ir.h"
#include "strmap.h"
#include "text_internal.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct pos_t { size_t pos; int line; size_t line_start; } pos_t;

typedef struct parser {
    const char *s;
    size_t len;
    pos_t at;
    ttc_graph *g;
    ttc_strmap vals;
    ttc_tensor_lookup_fn lookup;
    void *ctx;
} parser;

static ttc_status perr_at(parser *p, pos_t at, const char *fmt, ...) TTC_PRINTF(3, 4);
static ttc_status perr_at(parser *p, pos_t at, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    (void)p;
    return ttc_fail(TTC_ERR_PARSE, "line %d, column %zu: %s", at.line, at.pos - at.line_start + 1, msg);
}
#define PERR(p, ...) perr_at((p), (p)->at, __VA_ARGS__)

static int peek(const parser *p) { return p->at.pos < p->len ? (unsigned char)p->s[p->at.pos] : 0; }

static void advance(parser *p) {
    if (p->at.pos >= p->len) return;
    if (p->s[p->at.pos] == '\n') { p->at.line++; p->at.line_start = p->at.pos + 1; }
    p->at.pos++;
}

static void skip_inline(parser *p) {
    while (peek(p) == ' ' || peek(p) == '\t' || peek(p) == '\r') advance(p);
}

/* Whitespace, newlines and full-line comments. */
static void skip_ws(parser *p) {
    for (;;) {
        int c = peek(p);
        if (c == ' ' || c == '\t' || c == '\r' || c == '\n') advance(p);
        else if (c == '#') while (peek(p) && peek(p) != '\n') advance(p);
        else return;
    }
}

/* Describes what is at the cursor, for "expected X, found Y". */
static const char *found(const parser *p, char *buf, size_t n) {
    int c = peek(p);
    if (!c) return "end of input";
    if (c == '\n') return "end of line";
    if (c >= 0x21 && c < 0x7f) snprintf(buf, n, "'%c'", c);
    else snprintf(buf, n, "byte 0x%02x", c);
    return buf;
}

static bool accept(parser *p, int c) {
    skip_ws(p);
    if (peek(p) != c) return false;
    advance(p);
    return true;
}

static ttc_status expect(parser *p, int c, const char *what) {
    if (accept(p, c)) return TTC_OK;
    char b[16];
    return PERR(p, "expected %s, found %s", what, found(p, b, sizeof b));
}

/* [A-Za-z_][A-Za-z0-9_.]* at the cursor (after whitespace); NULL if none. */
static char *read_word(parser *p) {
    skip_ws(p);
    if (!ttc_text_is_word_start(peek(p))) return NULL;
    size_t start = p->at.pos;
    while (ttc_text_is_name_char(peek(p))) advance(p);
    size_t n = p->at.pos - start;
    char *w = ttc_malloc(n + 1);
    if (!w) return NULL;
    memcpy(w, p->s + start, n);
    w[n] = 0;
    return w;
}

static bool accept_word(parser *p, const char *word) {
    skip_ws(p);
    size_t n = strlen(word);
    if (p->at.pos + n > p->len || memcmp(p->s + p->at.pos, word, n)) return false;
    if (p->at.pos + n < p->len && ttc_text_is_name_char((unsigned char)p->s[p->at.pos + n])) return false;
    for (size_t i = 0; i < n; i++) advance(p);
    return true;
}

static int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static ttc_status read_quoted(parser *p, char **out) {
    *out = NULL;
    skip_ws(p);
    pos_t start = p->at;
    if (peek(p) != '"') return PERR(p, "expected a quoted string");
    advance(p);
    ttc_sbuf b = {0};
    for (;;) {
        int c = peek(p);
        if (!c || c == '\n') { ttc_sbuf_free(&b); return perr_at(p, start, "unterminated string"); }
        advance(p);
        if (c == '"') break;
        if (c == '\\') {
            int e = peek(p);
            pos_t esc = p->at;
            advance(p);
            char ch;
            switch (e) {
            case 'n': ch = '\n'; break;
            case 't': ch = '\t'; break;
            case 'r': ch = '\r'; break;
            case '"': ch = '"'; break;
            case '\\': ch = '\\'; break;
            case 'x': {
                int h1 = hexval(peek(p));
                if (h1 >= 0) advance(p);
                int h2 = h1 >= 0 ? hexval(peek(p)) : -1;
                if (h2 < 0) { ttc_sbuf_free(&b); return perr_at(p, esc, "expected two hex digits after \\x"); }
                advance(p);
                ch = (char)(h1 * 16 + h2);
                if (!ch) { ttc_sbuf_free(&b); return perr_at(p, esc, "\\x00 is not allowed in strings"); }
                break;
            }
            default: ttc_sbuf_free(&b); return perr_at(p, esc, "unknown escape in string");
            }
            ttc_sbuf_append(&b, &ch, 1);
        } else {
            char ch = (char)c;
            ttc_sbuf_append(&b, &ch, 1);
        }
    }
    *out = ttc_sbuf_take(&b);
    return *out ? TTC_OK : TTC_ERR_NOMEM;
}

/* A value name after '%': bare [A-Za-z0-9_.]+ or quoted. */
static ttc_status read_value_name(parser *p, char **out, pos_t *where) {
    *out = NULL;
    skip_ws(p);
    *where = p->at;
    char b[16];
    if (peek(p) != '%') return PERR(p, "expected a value (%%name), found %s", found(p, b, sizeof b));
    advance(p);
    if (peek(p) == '"') {
        TTC_TRY(read_quoted(p, out));
        if (!**out) { free(*out); *out = NULL; return perr_at(p, *where, "empty value name"); }
        return TTC_OK;
    }
    size_t start = p->at.pos;
    while (ttc_text_is_name_char(peek(p))) advance(p);
    size_t n = p->at.pos - start;
    if (!n) return PERR(p, "expected a value name after '%%', found %s", found(p, b, sizeof b));
    *out = ttc_malloc(n + 1);
    if (!*out) return TTC_ERR_NOMEM;
    memcpy(*out, p->s + start, n);
    (*out)[n] = 0;
    return TTC_OK;
}

/* Optional sign and decimal digits, with overflow checks. */
static ttc_status read_int(parser *p, int64_t *out) {
    skip_ws(p);
    pos_t start = p->at;
    bool neg = false;
    if (peek(p) == '-' || peek(p) == '+') { neg = peek(p) == '-'; advance(p); }
    if (!(peek(p) >= '0' && peek(p) <= '9')) return PERR(p, "expected an integer");
    uint64_t v = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    while (peek(p) >= '0' && peek(p) <= '9') {
        uint64_t d = (uint64_t)(peek(p) - '0');
        if (v > (lim - d) / 10) return perr_at(p, start, "integer out of range");
        v = v * 10 + d;
        advance(p);
    }
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return TTC_OK;
}

/* An int or float literal (inf, nan, -inf included). */
static ttc_status read_number(parser *p, bool *is_float, int64_t *iv, double *fv) {
    skip_ws(p);
    pos_t start = p->at;
    size_t s0 = p->at.pos;
    bool neg = peek(p) == '-';
    if (peek(p) == '-' || peek(p) == '+') advance(p);
    if (accept_word(p, "inf")) { *is_float = true; *fv = neg ? -INFINITY : INFINITY; return TTC_OK; }
    if (accept_word(p, "nan")) { *is_float = true; *fv = NAN; return TTC_OK; }
    bool flt = false;
    int digits = 0;
    while (peek(p) >= '0' && peek(p) <= '9') { advance(p); digits++; }
    if (peek(p) == '.') {
        flt = true;
        advance(p);
        while (peek(p) >= '0' && peek(p) <= '9') { advance(p); digits++; }
    }
    if (!digits) return perr_at(p, start, "expected a number");
    if (peek(p) == 'e' || peek(p) == 'E') {
        flt = true;
        advance(p);
        if (peek(p) == '-' || peek(p) == '+') advance(p);
        if (!(peek(p) >= '0' && peek(p) <= '9')) return PERR(p, "expected exponent digits");
        while (peek(p) >= '0' && peek(p) <= '9') advance(p);
    }
    size_t n = p->at.pos - s0;
    if (n >= 400) return perr_at(p, start, "number too long");
    char buf[400];
    memcpy(buf, p->s + s0, n);
    buf[n] = 0;
    *is_float = flt;
    if (flt) {
        *fv = strtod(buf, NULL);
        return TTC_OK;
    }
    pos_t end = p->at;
    p->at = start;
    ttc_status st = read_int(p, iv);
    if (st == TTC_OK) p->at = end;
    return st;
}

/* ---- types ---- */
static ttc_status parse_dim(parser *p, ttc_dim *d) {
    skip_ws(p);
    pos_t start = p->at;
    int64_t mul = 1;
    int c = peek(p);
    if ((c >= '0' && c <= '9') || c == '-' || c == '+') {
        int64_t k;
        TTC_TRY(read_int(p, &k));
        if (!accept(p, '*')) {
            if (k < 0) return perr_at(p, start, "dimension must be >= 0, got %lld", (long long)k);
            *d = ttc_dim_const(k);
            return TTC_OK;
        }
        mul = k;
        skip_ws(p);
    }
    pos_t sym_at = p->at;
    char *name = read_word(p);
    char b[16];
    if (!name) return PERR(p, "expected a dimension (int or symbol), found %s", found(p, b, sizeof b));
    int32_t sym = ttc_graph_find_symbol(p->g, name);
    if (sym < 0) {
        ttc_status st = perr_at(p, sym_at, "unknown symbol %s (declare it in the 'where' clause)", name);
        free(name);
        return st;
    }
    free(name);
    if (mul == 0) return perr_at(p, start, "symbol coefficient must not be 0");
    int64_t add = 0;
    skip_ws(p);
    if (peek(p) == '+' || peek(p) == '-') {
        bool neg = peek(p) == '-';
        advance(p);
        skip_ws(p);
        if (peek(p) == '-' || peek(p) == '+') return PERR(p, "expected digits");
        TTC_TRY(read_int(p, &add));
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

static ttc_status parse_type(parser *p, ttc_type *t) {
    memset(t, 0, sizeof *t);
    skip_ws(p);
    pos_t start = p->at;
    char b[16];
    char *w = read_word(p);
    if (!w) return PERR(p, "expected a type, found %s", found(p, b, sizeof b));
    ttc_dtype dt;
    ttc_type_kind k;
    skip_ws(p);
    if (peek(p) == '(' && ttc_dtype_from_name(w, &dt)) {
        free(w);
        advance(p);
        t->kind = TTC_TYPE_TENSOR;
        t->dtype = dt;
        if (accept(p, ')')) return TTC_OK;
        if (accept(p, '*')) { t->rank = -1; return expect(p, ')', "')' after '*'"); }
        for (;;) {
            if (t->rank >= TTC_MAX_RANK) return PERR(p, "tensor rank exceeds %d", TTC_MAX_RANK);
            TTC_TRY(parse_dim(p, &t->dims[t->rank]));
            t->rank++;
            if (accept(p, ')')) return TTC_OK;
            TTC_TRY(expect(p, ',', "',' or ')' in a tensor shape"));
        }
    }
    if (!scalar_kind(w, &k)) {
        ttc_status st = perr_at(p, start, "unknown type '%s'", w);
        free(w);
        return st;
    }
    free(w);
    if (accept(p, '[')) {
        TTC_TRY(expect(p, ']', "']' in a list type"));
        *t = ttc_type_list(k);
        return TTC_OK;
    }
    if (k == TTC_TYPE_TENSOR) return perr_at(p, start, "a tensor type needs a dtype and shape, e.g. Float(2, 3)");
    *t = ttc_type_scalar(k);
    return TTC_OK;
}

/* ---- attribute literals ---- */
static int64_t safe_numel(const ttc_type *t) {
    if (!ttc_type_is_static(t)) return -1;
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++)
        if (__builtin_mul_overflow(n, t->dims[i].add, &n)) return -1;
    return n;
}

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
        if (bv < 0 && (isf || (iv != 0 && iv != 1))) return perr_at(p, at, "expected true or false in a Bool tensor");
        *dst = (unsigned char)(bv >= 0 ? bv : iv);
        return TTC_OK;
    }
    if (isf || bv >= 0) return perr_at(p, at, "expected an integer in a %s tensor", ttc_dtype_ir_name(dt));
    int64_t lo = INT64_MIN, hi = INT64_MAX;
    if (dt == TTC_DTYPE_INT32) { lo = INT32_MIN; hi = INT32_MAX; }
    if (dt == TTC_DTYPE_INT8) { lo = -128; hi = 127; }
    if (dt == TTC_DTYPE_UINT8) { lo = 0; hi = 255; }
    if (iv < lo || iv > hi) return perr_at(p, at, "%lld out of range for %s", (long long)iv, ttc_dtype_ir_name(dt));
    if (dt == TTC_DTYPE_INT64) memcpy(dst, &iv, 8);
    else if (dt == TTC_DTYPE_INT32) { int32_t v = (int32_t)iv; memcpy(dst, &v, 4); }
    else *dst = (unsigned char)(int8_t)iv;
    return TTC_OK;
}

/* tensor([...], name="w") or tensor(name="w"); the cursor is after "tensor". */
static ttc_status parse_tensor_literal(parser *p, pos_t start, const ttc_type *type, ttc_attr *a) {
    if (!type || type->kind != TTC_TYPE_TENSOR)
        return perr_at(p, start, "a tensor literal needs a single tensor output type");
    int64_t numel = safe_numel(type);
    size_t es = ttc_dtype_size(type->dtype);
    if (numel < 0 || (uint64_t)numel > SIZE_MAX / 16)
        return perr_at(p, start, "a tensor literal needs a static shape of reasonable size");
    TTC_TRY(expect(p, '(', "'(' after tensor"));
    ttc_sbuf data = {0};
    bool have_data = false;
    int64_t count = 0;
    ttc_status st = TTC_OK;
    skip_ws(p);
    if (accept(p, '[')) {
        have_data = true;
        if (!accept(p, ']')) {
            for (;;) {
                skip_ws(p);
                pos_t at = p->at;
                bool isf = false;
                int64_t iv = 0;
                double fv = 0;
                int bv = -1;
                if (accept_word(p, "true") || accept_word(p, "True")) bv = 1;
                else if (accept_word(p, "false") || accept_word(p, "False")) bv = 0;
                else if ((st = read_number(p, &isf, &iv, &fv))) goto done;
                if (bv >= 0) iv = bv;
                if (count >= numel) { st = perr_at(p, at, "too many elements: the type holds %lld", (long long)numel); goto done; }
                unsigned char e[8];
                if ((st = store_elem(p, at, type->dtype, e, isf, iv, fv, bv))) goto done;
                ttc_sbuf_append(&data, (const char *)e, es);
                count++;
                if (accept(p, ']')) break;
                if ((st = expect(p, ',', "',' or ']' in a tensor literal"))) goto done;
            }
        }
        if (count != numel) {
            st = PERR(p, "tensor literal has %lld elements, its type needs %lld", (long long)count, (long long)numel);
            goto done;
        }
        if (!accept(p, ')')) {
            if ((st = expect(p, ',', "',' or ')' after tensor data"))) goto done;
        } else {
            goto build;
        }
    }
    if (!accept_word(p, "name")) { char b[16]; st = PERR(p, "expected [elements] or name=\"...\", found %s", found(p, b, sizeof b)); goto done; }
    if ((st = expect(p, '=', "'=' after name"))) goto done;
    if ((st = read_quoted(p, &a->s))) goto done;
    if ((st = expect(p, ')', "')' closing the tensor literal"))) goto done;
build:
    if (have_data) {
        if (data.oom) { st = ttc_fail(TTC_ERR_NOMEM, "out of memory reading a tensor literal"); goto done; }
        a->tensor = ttc_tensor_data_copy(data.data, (size_t)numel * es);
        if (!a->tensor) { st = TTC_ERR_NOMEM; goto done; }
    } else {
        if (!p->lookup) {
            st = perr_at(p, start, "tensor \"%s\" is not inline and no tensors were given to look it up", a->s);
            goto done;
        }
        a->tensor = p->lookup(p->ctx, a->s, type);
        if (!a->tensor) { st = perr_at(p, start, "unknown tensor \"%s\"", a->s); goto done; }
        if (a->tensor->nbytes != (size_t)numel * es) {
            st = perr_at(p, start, "tensor \"%s\" has %zu bytes, its type needs %zu", a->s, a->tensor->nbytes,
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
    if (!accept(p, ']')) {
        for (;;) {
            skip_ws(p);
            pos_t at = p->at;
            bool isf = false;
            int64_t iv = 0;
            double fv = 0;
            if (accept_word(p, "true")) { iv = 1; any_bool = true; }
            else if (accept_word(p, "false")) { iv = 0; any_bool = true; }
            else if ((st = read_number(p, &isf, &iv, &fv))) goto fail;
            else any_num = true;
            if (any_bool && any_num) { st = perr_at(p, at, "a list mixes booleans and numbers"); goto fail; }
            if (n >= cap) {
                if (cap >= (INT32_MAX / 2)) { st = perr_at(p, at, "list too long"); goto fail; }
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
            if (accept(p, ']')) break;
            if ((st = expect(p, ',', "',' or ']' in a list"))) goto fail;
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
    TTC_TRY(expect(p, '[', "'[' (empty list literal)"));
    TTC_TRY(expect(p, ']', "']' (empty list literal)"));
    a->kind = kind;
    a->n = 0;
    if (kind == TTC_ATTR_FLOATS) a->floats = ttc_calloc(1, sizeof(double));
    else a->ints = ttc_calloc(1, sizeof(int64_t));
    return (a->floats || a->ints) ? TTC_OK : TTC_ERR_NOMEM;
}

static ttc_status parse_attr_value(parser *p, ttc_attr *a, const ttc_type *out_type) {
    skip_ws(p);
    pos_t start = p->at;
    int c = peek(p);
    if (c == '"') {
        a->kind = TTC_ATTR_STR;
        return read_quoted(p, &a->s);
    }
    if (c == '[') { advance(p); return parse_list_literal(p, a); }
    if ((c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.') {
        bool isf;
        TTC_TRY(read_number(p, &isf, &a->i, &a->f));
        a->kind = isf ? TTC_ATTR_FLOAT : TTC_ATTR_INT;
        return TTC_OK;
    }
    if (accept_word(p, "true")) { a->kind = TTC_ATTR_BOOL; a->i = 1; return TTC_OK; }
    if (accept_word(p, "false")) { a->kind = TTC_ATTR_BOOL; a->i = 0; return TTC_OK; }
    if (accept_word(p, "None")) { a->kind = TTC_ATTR_NONE; return TTC_OK; }
    if (accept_word(p, "inf")) { a->kind = TTC_ATTR_FLOAT; a->f = INFINITY; return TTC_OK; }
    if (accept_word(p, "nan")) { a->kind = TTC_ATTR_FLOAT; a->f = NAN; return TTC_OK; }
    if (accept_word(p, "int")) return empty_list(p, a, TTC_ATTR_INTS);
    if (accept_word(p, "float")) return empty_list(p, a, TTC_ATTR_FLOATS);
    if (accept_word(p, "bool")) return empty_list(p, a, TTC_ATTR_BOOLS);
    if (accept_word(p, "tensor")) return parse_tensor_literal(p, start, out_type, a);
    char b[16];
    return PERR(p, "expected an attribute value, found %s", found(p, b, sizeof b));
}

/* ---- statements ---- */
typedef struct stmt {
    char **out_names;
    pos_t *out_at;
    ttc_type *out_types;
    int32_t n_out, cap_out;
    ttc_value **ins;
    int32_t n_in, cap_in;
    ttc_attr *attrs;
    int32_t n_attrs, cap_attrs;
    char *op, *name, *module, *reason;
    int32_t target, segment;
} stmt;

static void stmt_free(stmt *s) {
    for (int i = 0; i < s->n_out; i++) free(s->out_names[i]);
    free(s->out_names);
    free(s->out_at);
    free(s->out_types);
    free(s->ins);
    for (int i = 0; i < s->n_attrs; i++) ttc_attr_clear(&s->attrs[i]);
    free(s->attrs);
    free(s->op);
    free(s->name);
    free(s->module);
    free(s->reason);
    memset(s, 0, sizeof *s);
}

/* Reads a %value use and resolves it. */
static ttc_status read_use(parser *p, ttc_value **out) {
    char *name;
    pos_t at;
    TTC_TRY(read_value_name(p, &name, &at));
    *out = ttc_strmap_get(&p->vals, name);
    ttc_status st = *out ? TTC_OK : perr_at(p, at, "use of undefined value %%%s", name);
    free(name);
    return st;
}

static ttc_status read_def(parser *p, char **name, pos_t *at) {
    TTC_TRY(read_value_name(p, name, at));
    if (ttc_strmap_get(&p->vals, *name)) {
        ttc_status st = perr_at(p, *at, "value %%%s is defined twice", *name);
        free(*name);
        *name = NULL;
        return st;
    }
    return TTC_OK;
}

static ttc_status parse_annotation(parser *p, stmt *s) {
    /* cursor after '#': key=value pairs up to the end of the line */
    for (;;) {
        skip_inline(p);
        if (!peek(p) || peek(p) == '\n') return TTC_OK;
        pos_t at = p->at;
        char *key = NULL;
        if (ttc_text_is_word_start(peek(p))) key = read_word(p);
        if (!key || peek(p) != '=') {
            free(key);
            return perr_at(p, at, "expected key=value annotation (name=, module=, target=, segment=, reason=)");
        }
        advance(p);
        char *val = NULL;
        if (peek(p) == '"') {
            ttc_status st = read_quoted(p, &val);
            if (st) { free(key); return st; }
        } else {
            size_t start = p->at.pos;
            while (peek(p) && peek(p) != ' ' && peek(p) != '\t' && peek(p) != '\r' && peek(p) != '\n') advance(p);
            size_t n = p->at.pos - start;
            if (!n) { free(key); return PERR(p, "expected a value after '='"); }
            if (!(val = ttc_malloc(n + 1))) { free(key); return TTC_ERR_NOMEM; }
            memcpy(val, p->s + start, n);
            val[n] = 0;
        }
        char **slot = NULL;
        int32_t *num = NULL;
        if (!strcmp(key, "name")) slot = &s->name;
        else if (!strcmp(key, "module")) slot = &s->module;
        else if (!strcmp(key, "reason")) slot = &s->reason;
        else if (!strcmp(key, "target")) num = &s->target;
        else if (!strcmp(key, "segment")) num = &s->segment;
        ttc_status st = TTC_OK;
        if (slot) {
            if (*slot) st = perr_at(p, at, "annotation %s given twice", key);
            else { *slot = val; val = NULL; }
        } else if (num) {
            char *end;
            errno = 0;
            long v = strtol(val, &end, 10);
            if (*end || errno || v < 0 || v > INT32_MAX) st = perr_at(p, at, "annotation %s needs an int >= 0", key);
            else *num = (int32_t)v;
        } else {
            st = perr_at(p, at, "unknown annotation '%s' (name, module, target, segment, reason)", key);
        }
        free(key);
        free(val);
        if (st) return st;
    }
}

static ttc_status dup_into(char **dst, const char *src) {
    if (!src) return TTC_OK;
    free(*dst);
    *dst = ttc_strdup(src);
    return *dst ? TTC_OK : TTC_ERR_NOMEM;
}

static ttc_status parse_node(parser *p, stmt *s) {
    s->target = s->segment = -1;
    skip_ws(p);
    if (peek(p) != '=') {
        for (;;) {
            if (ttc_grow((void **)&s->out_names, &s->cap_out, s->n_out + 1, sizeof(char *)) ||
                !(s->out_at = ttc_realloc(s->out_at, sizeof(pos_t) * (size_t)s->cap_out)) ||
                !(s->out_types = ttc_realloc(s->out_types, sizeof(ttc_type) * (size_t)s->cap_out)))
                return TTC_ERR_NOMEM;
            TTC_TRY(read_def(p, &s->out_names[s->n_out], &s->out_at[s->n_out]));
            s->n_out++;
            for (int i = 0; i < s->n_out - 1; i++)
                if (!strcmp(s->out_names[i], s->out_names[s->n_out - 1]))
                    return perr_at(p, s->out_at[s->n_out - 1], "value %%%s is defined twice", s->out_names[i]);
            TTC_TRY(expect(p, ':', "':' and a type after the value name"));
            TTC_TRY(parse_type(p, &s->out_types[s->n_out - 1]));
            if (accept(p, '=')) break;
            TTC_TRY(expect(p, ',', "',' or '=' after an output"));
        }
    } else {
        advance(p);
    }
    skip_ws(p);
    char b[16];
    if (peek(p) == '"') TTC_TRY(read_quoted(p, &s->op));
    else if (!(s->op = read_word(p))) return PERR(p, "expected an op name, found %s", found(p, b, sizeof b));
    if (!*s->op) return PERR(p, "empty op name");
    const ttc_type *single = s->n_out == 1 ? &s->out_types[0] : NULL;
    if (accept(p, '[') && !accept(p, ']')) {
        for (;;) {
            TTC_TRY(ttc_grow((void **)&s->attrs, &s->cap_attrs, s->n_attrs + 1, sizeof(ttc_attr)));
            ttc_attr *a = &s->attrs[s->n_attrs];
            memset(a, 0, sizeof *a);
            s->n_attrs++;
            skip_ws(p);
            pos_t at = p->at;
            if (peek(p) == '"') TTC_TRY(read_quoted(p, &a->name));
            else if (!(a->name = read_word(p))) return PERR(p, "expected an attribute name, found %s", found(p, b, sizeof b));
            for (int i = 0; i < s->n_attrs - 1; i++)
                if (!strcmp(s->attrs[i].name, a->name)) return perr_at(p, at, "attribute %s given twice", a->name);
            TTC_TRY(expect(p, '=', "'=' after the attribute name"));
            TTC_TRY(parse_attr_value(p, a, single));
            if (accept(p, ']')) break;
            TTC_TRY(expect(p, ',', "',' or ']' in the attribute list"));
        }
    }
    TTC_TRY(expect(p, '(', "'(' before the op's inputs"));
    if (!accept(p, ')')) {
        for (;;) {
            TTC_TRY(ttc_grow((void **)&s->ins, &s->cap_in, s->n_in + 1, sizeof(ttc_value *)));
            TTC_TRY(read_use(p, &s->ins[s->n_in]));
            s->n_in++;
            if (accept(p, ')')) break;
            TTC_TRY(expect(p, ',', "',' or ')' in the input list"));
        }
    }
    skip_inline(p);
    if (peek(p) == '#') {
        advance(p);
        TTC_TRY(parse_annotation(p, s));
    }
    skip_inline(p);
    if (peek(p) && peek(p) != '\n') return PERR(p, "expected end of line after the node, found %s", found(p, b, sizeof b));

    ttc_node *n = ttc_graph_append_node(p->g, s->op, s->ins, s->n_in, s->out_types, s->n_out, s->name);
    if (!n) return ttc_fail_context(TTC_ERR_PARSE, "line %d: cannot create %s", p->at.line, s->op);
    for (int i = 0; i < s->n_out; i++) {
        ttc_value *v = n->outputs[i];
        free(v->name);
        v->name = s->out_names[i];
        s->out_names[i] = NULL;
        TTC_TRY(ttc_strmap_put(&p->vals, v->name, v));
    }
    bool has_value = false;
    for (int i = 0; i < s->n_attrs; i++) {
        TTC_TRY(ttc_node_set_attr(n, &s->attrs[i]));
        has_value |= !strcmp(s->attrs[i].name, "value");
    }
    /* `prim.Constant()` of NoneType is the None literal. */
    if (n->op == TTC_OP_CONSTANT && !has_value && single && single->kind == TTC_TYPE_NONE) {
        ttc_attr none = {.name = "value", .kind = TTC_ATTR_NONE};
        TTC_TRY(ttc_node_set_attr(n, &none));
    }
    TTC_TRY(dup_into(&n->module_stack, s->module));
    TTC_TRY(dup_into(&n->reason, s->reason));
    n->target = s->target;
    n->segment = s->segment;
    return TTC_OK;
}

static ttc_status parse_return(parser *p) {
    TTC_TRY(expect(p, '(', "'(' after return"));
    ttc_value **outs = NULL;
    int32_t n = 0, cap = 0;
    ttc_status st = TTC_OK;
    if (!accept(p, ')')) {
        for (;;) {
            if ((st = ttc_grow((void **)&outs, &cap, n + 1, sizeof(ttc_value *)))) goto done;
            if ((st = read_use(p, &outs[n]))) goto done;
            n++;
            if (accept(p, ')')) break;
            if ((st = expect(p, ',', "',' or ')' in the return list"))) goto done;
        }
    }
    if ((st = ttc_graph_set_outputs(p->g, outs, n))) goto done;
    skip_ws(p);
    char b[16];
    if (peek(p)) st = PERR(p, "expected end of input after return, found %s", found(p, b, sizeof b));
done:
    free(outs);
    return st;
}

/* Skips to the ')' closing the input list so that the 'where' clause can be read first
 * (input types use its symbols). */
static ttc_status skip_inputs(parser *p) {
    pos_t open = p->at;
    int depth = 1;
    while (depth) {
        int c = peek(p);
        if (!c) return perr_at(p, open, "unterminated graph input list");
        if (c == '"') { char *tmp; TTC_TRY(read_quoted(p, &tmp)); free(tmp); continue; }
        if (c == '(') depth++;
        if (c == ')') depth--;
        advance(p);
    }
    return TTC_OK;
}

static ttc_status parse_graph(parser *p) {
    skip_ws(p);
    char b[16];
    if (!accept_word(p, "graph")) return PERR(p, "expected 'graph', found %s", found(p, b, sizeof b));
    TTC_TRY(expect(p, '(', "'(' after graph"));
    pos_t inputs_at = p->at;
    TTC_TRY(skip_inputs(p));
    if (accept_word(p, "where")) {
        for (;;) {
            skip_ws(p);
            pos_t at = p->at;
            char *name = read_word(p);
            if (!name) return PERR(p, "expected a symbol name, found %s", found(p, b, sizeof b));
            int64_t r[3] = {0, 0, 0};
            ttc_status st = TTC_OK;
            if (!accept_word(p, "in")) st = PERR(p, "expected 'in' after symbol %s", name);
            if (!st) st = expect(p, '[', "'[' before the symbol's min, opt, max");
            for (int i = 0; i < 3 && !st; i++) {
                st = read_int(p, &r[i]);
                if (!st) st = expect(p, i < 2 ? ',' : ']', i < 2 ? "','" : "']'");
            }
            if (!st && ttc_graph_add_symbol(p->g, name, r[0], r[1], r[2]) < 0) {
                char msg[512];
                snprintf(msg, sizeof msg, "%s", ttc_last_error());
                st = perr_at(p, at, "%s", msg);
            }
            free(name);
            if (st) return st;
            if (!accept(p, ',')) break;
        }
    }
    TTC_TRY(expect(p, ':', "':' after the graph header"));
    pos_t body_at = p->at;
    p->at = inputs_at;
    if (!accept(p, ')')) {
        for (;;) {
            char *name;
            pos_t at;
            ttc_type t;
            TTC_TRY(read_def(p, &name, &at));
            ttc_status st = expect(p, ':', "':' and a type after the input name");
            if (!st) st = parse_type(p, &t);
            ttc_value *v = st ? NULL : ttc_graph_add_input(p->g, name, &t);
            free(name);
            if (st) return st;
            if (!v) return TTC_ERR_NOMEM;
            TTC_TRY(ttc_strmap_put(&p->vals, v->name, v));
            if (accept(p, ')')) break;
            TTC_TRY(expect(p, ',', "',' or ')' in the graph inputs"));
        }
    }
    p->at = body_at;
    for (;;) {
        skip_ws(p);
        if (!peek(p)) return PERR(p, "expected 'return' before the end of input");
        if (accept_word(p, "return")) return parse_return(p);
        stmt s;
        memset(&s, 0, sizeof s);
        ttc_status st = parse_node(p, &s);
        stmt_free(&s);
        if (st) return st;
    }
}

/* Generated names are decimal counters: keep them clear of the parsed ones. */
static void bump_next_name(ttc_graph *g) {
    for (int i = 0; i < g->n_all_values; i++) {
        const char *s = g->all_values[i]->name;
        if (!s || !*s || strlen(s) > 9) continue;
        int32_t v = 0;
        bool digits = true;
        for (const char *c = s; *c; c++) {
            if (*c < '0' || *c > '9') { digits = false; break; }
            v = v * 10 + (*c - '0');
        }
        if (digits && v >= g->next_name) g->next_name = v + 1;
    }
}

ttc_status ttc_graph_parse_ex(const char *text, ttc_tensor_lookup_fn lookup, void *ctx, ttc_graph **out) {
    if (!out) return ttc_fail(TTC_ERR_INVALID_ARG, "parse: NULL out");
    *out = NULL;
    if (!text) return ttc_fail(TTC_ERR_INVALID_ARG, "parse: NULL text");
    parser p;
    memset(&p, 0, sizeof p);
    p.s = text;
    p.len = strlen(text);
    p.at.line = 1;
    p.lookup = lookup;
    p.ctx = ctx;
    if (!(p.g = ttc_graph_new())) return TTC_ERR_NOMEM;
    ttc_status st = parse_graph(&p);
    ttc_strmap_free(&p.vals);
    if (st) {
        ttc_graph_free(p.g);
        return st;
    }
    bump_next_name(p.g);
    *out = p.g;
    return TTC_OK;
}

ttc_status ttc_graph_parse(const char *text, ttc_graph **out) { return ttc_graph_parse_ex(text, NULL, NULL, out); }
