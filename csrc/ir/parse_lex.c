/* Lexer of the IR text parser: positions, tokens, integers and floats (checked for
 * overflow), quoted strings with escapes and %value names. See parse_internal.h. */
#include "parse_internal.h"
#include "text_internal.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

ttc_status ttc_lex_perr_at(parser *p, pos_t at, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    (void)p;
    return ttc_fail(TTC_ERR_PARSE, "line %d, column %zu: %s", at.line, at.pos - at.line_start + 1, msg);
}

int ttc_lex_peek(const parser *p) { return p->at.pos < p->len ? (unsigned char)p->s[p->at.pos] : 0; }

void ttc_lex_advance(parser *p) {
    if (p->at.pos >= p->len) return;
    if (p->s[p->at.pos] == '\n') { p->at.line++; p->at.line_start = p->at.pos + 1; }
    p->at.pos++;
}

void ttc_lex_skip_inline(parser *p) {
    while (ttc_lex_peek(p) == ' ' || ttc_lex_peek(p) == '\t' || ttc_lex_peek(p) == '\r') ttc_lex_advance(p);
}

/* Whitespace, newlines and full-line comments. */
void ttc_lex_skip_ws(parser *p) {
    for (;;) {
        int c = ttc_lex_peek(p);
        if (c == ' ' || c == '\t' || c == '\r' || c == '\n') ttc_lex_advance(p);
        else if (c == '#') while (ttc_lex_peek(p) && ttc_lex_peek(p) != '\n') ttc_lex_advance(p);
        else return;
    }
}

/* Describes what is at the cursor, for "expected X, found Y". */
const char *ttc_lex_found(const parser *p, char *buf, size_t n) {
    int c = ttc_lex_peek(p);
    if (!c) return "end of input";
    if (c == '\n') return "end of line";
    if (c >= 0x21 && c < 0x7f) snprintf(buf, n, "'%c'", c);
    else snprintf(buf, n, "byte 0x%02x", c);
    return buf;
}

bool ttc_lex_accept(parser *p, int c) {
    ttc_lex_skip_ws(p);
    if (ttc_lex_peek(p) != c) return false;
    ttc_lex_advance(p);
    return true;
}

ttc_status ttc_lex_expect(parser *p, int c, const char *what) {
    if (ttc_lex_accept(p, c)) return TTC_OK;
    char b[16];
    return PERR(p, "expected %s, found %s", what, ttc_lex_found(p, b, sizeof b));
}

/* [A-Za-z_][A-Za-z0-9_.]* at the cursor (after whitespace); NULL if none. */
char *ttc_lex_read_word(parser *p) {
    ttc_lex_skip_ws(p);
    if (!ttc_text_is_word_start(ttc_lex_peek(p))) return NULL;
    size_t start = p->at.pos;
    while (ttc_text_is_name_char(ttc_lex_peek(p))) ttc_lex_advance(p);
    size_t n = p->at.pos - start;
    char *w = ttc_malloc(n + 1);
    if (!w) return NULL;
    memcpy(w, p->s + start, n);
    w[n] = 0;
    return w;
}

bool ttc_lex_accept_word(parser *p, const char *word) {
    ttc_lex_skip_ws(p);
    size_t n = strlen(word);
    if (p->at.pos + n > p->len || memcmp(p->s + p->at.pos, word, n)) return false;
    if (p->at.pos + n < p->len && ttc_text_is_name_char((unsigned char)p->s[p->at.pos + n])) return false;
    for (size_t i = 0; i < n; i++) ttc_lex_advance(p);
    return true;
}

static int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

ttc_status ttc_lex_read_quoted(parser *p, char **out) {
    *out = NULL;
    ttc_lex_skip_ws(p);
    pos_t start = p->at;
    if (ttc_lex_peek(p) != '"') return PERR(p, "expected a quoted string");
    ttc_lex_advance(p);
    ttc_sbuf b = {0};
    for (;;) {
        int c = ttc_lex_peek(p);
        if (!c || c == '\n') { ttc_sbuf_free(&b); return ttc_lex_perr_at(p, start, "unterminated string"); }
        ttc_lex_advance(p);
        if (c == '"') break;
        if (c == '\\') {
            int e = ttc_lex_peek(p);
            pos_t esc = p->at;
            ttc_lex_advance(p);
            char ch;
            switch (e) {
            case 'n': ch = '\n'; break;
            case 't': ch = '\t'; break;
            case 'r': ch = '\r'; break;
            case '"': ch = '"'; break;
            case '\\': ch = '\\'; break;
            case 'x': {
                int h1 = hexval(ttc_lex_peek(p));
                if (h1 >= 0) ttc_lex_advance(p);
                int h2 = h1 >= 0 ? hexval(ttc_lex_peek(p)) : -1;
                if (h2 < 0) { ttc_sbuf_free(&b); return ttc_lex_perr_at(p, esc, "expected two hex digits after \\x"); }
                ttc_lex_advance(p);
                ch = (char)(h1 * 16 + h2);
                if (!ch) { ttc_sbuf_free(&b); return ttc_lex_perr_at(p, esc, "\\x00 is not allowed in strings"); }
                break;
            }
            default: ttc_sbuf_free(&b); return ttc_lex_perr_at(p, esc, "unknown escape in string");
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
ttc_status ttc_lex_read_value_name(parser *p, char **out, pos_t *where) {
    *out = NULL;
    ttc_lex_skip_ws(p);
    *where = p->at;
    char b[16];
    if (ttc_lex_peek(p) != '%') return PERR(p, "expected a value (%%name), found %s", ttc_lex_found(p, b, sizeof b));
    ttc_lex_advance(p);
    if (ttc_lex_peek(p) == '"') {
        TTC_TRY(ttc_lex_read_quoted(p, out));
        if (!**out) { free(*out); *out = NULL; return ttc_lex_perr_at(p, *where, "empty value name"); }
        return TTC_OK;
    }
    size_t start = p->at.pos;
    while (ttc_text_is_name_char(ttc_lex_peek(p))) ttc_lex_advance(p);
    size_t n = p->at.pos - start;
    if (!n) return PERR(p, "expected a value name after '%%', found %s", ttc_lex_found(p, b, sizeof b));
    *out = ttc_malloc(n + 1);
    if (!*out) return TTC_ERR_NOMEM;
    memcpy(*out, p->s + start, n);
    (*out)[n] = 0;
    return TTC_OK;
}

/* Optional sign and decimal digits, with overflow checks. */
ttc_status ttc_lex_read_int(parser *p, int64_t *out) {
    ttc_lex_skip_ws(p);
    pos_t start = p->at;
    bool neg = false;
    if (ttc_lex_peek(p) == '-' || ttc_lex_peek(p) == '+') { neg = ttc_lex_peek(p) == '-'; ttc_lex_advance(p); }
    if (!(ttc_lex_peek(p) >= '0' && ttc_lex_peek(p) <= '9')) return PERR(p, "expected an integer");
    uint64_t v = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    while (ttc_lex_peek(p) >= '0' && ttc_lex_peek(p) <= '9') {
        uint64_t d = (uint64_t)(ttc_lex_peek(p) - '0');
        if (v > (lim - d) / 10) return ttc_lex_perr_at(p, start, "integer out of range");
        v = v * 10 + d;
        ttc_lex_advance(p);
    }
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return TTC_OK;
}

/* An int or float literal (inf, nan, -inf included). */
ttc_status ttc_lex_read_number(parser *p, bool *is_float, int64_t *iv, double *fv) {
    ttc_lex_skip_ws(p);
    pos_t start = p->at;
    size_t s0 = p->at.pos;
    bool neg = ttc_lex_peek(p) == '-';
    if (ttc_lex_peek(p) == '-' || ttc_lex_peek(p) == '+') ttc_lex_advance(p);
    if (ttc_lex_accept_word(p, "inf")) { *is_float = true; *fv = neg ? -INFINITY : INFINITY; return TTC_OK; }
    if (ttc_lex_accept_word(p, "nan")) { *is_float = true; *fv = NAN; return TTC_OK; }
    bool flt = false;
    int digits = 0;
    while (ttc_lex_peek(p) >= '0' && ttc_lex_peek(p) <= '9') { ttc_lex_advance(p); digits++; }
    if (ttc_lex_peek(p) == '.') {
        flt = true;
        ttc_lex_advance(p);
        while (ttc_lex_peek(p) >= '0' && ttc_lex_peek(p) <= '9') { ttc_lex_advance(p); digits++; }
    }
    if (!digits) return ttc_lex_perr_at(p, start, "expected a number");
    if (ttc_lex_peek(p) == 'e' || ttc_lex_peek(p) == 'E') {
        flt = true;
        ttc_lex_advance(p);
        if (ttc_lex_peek(p) == '-' || ttc_lex_peek(p) == '+') ttc_lex_advance(p);
        if (!(ttc_lex_peek(p) >= '0' && ttc_lex_peek(p) <= '9')) return PERR(p, "expected exponent digits");
        while (ttc_lex_peek(p) >= '0' && ttc_lex_peek(p) <= '9') ttc_lex_advance(p);
    }
    size_t n = p->at.pos - s0;
    if (n >= 400) return ttc_lex_perr_at(p, start, "number too long");
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
    ttc_status st = ttc_lex_read_int(p, iv);
    if (st == TTC_OK) p->at = end;
    return st;
}
