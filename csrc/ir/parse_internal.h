/*
 * Internal to the IR text parser (parse.c, parse_lex.c, parse_literal.c): the parser state,
 * the lexer (positions, tokens, numbers, quoted strings, %value names) and the readers of
 * types and attribute literals. Errors carry "line L, column C".
 *
 *   parser p = {.s = text, .len = strlen(text), .at = {0, 1, 0}, .g = g};
 *   ttc_type t;
 *   TTC_TRY(ttc_lit_parse_type(&p, &t));     // e.g. "f32[B, 3]"
 */
#ifndef TTC_PARSE_INTERNAL_H
#define TTC_PARSE_INTERNAL_H

#include "ir.h"
#include "strmap.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/* ---- lexer (parse_lex.c) ---- */
ttc_status ttc_lex_perr_at(parser *p, pos_t at, const char *fmt, ...) TTC_PRINTF(3, 4);
#define PERR(p, ...) ttc_lex_perr_at((p), (p)->at, __VA_ARGS__)
int ttc_lex_peek(const parser *p);
void ttc_lex_advance(parser *p);
void ttc_lex_skip_inline(parser *p);   /* spaces and tabs */
void ttc_lex_skip_ws(parser *p);       /* also newlines and # comments */
const char *ttc_lex_found(const parser *p, char *buf, size_t n); /* the next token, for messages */
bool ttc_lex_accept(parser *p, int c);
ttc_status ttc_lex_expect(parser *p, int c, const char *what);
char *ttc_lex_read_word(parser *p);    /* NULL when no bare word is next */
bool ttc_lex_accept_word(parser *p, const char *word);
ttc_status ttc_lex_read_quoted(parser *p, char **out);
ttc_status ttc_lex_read_value_name(parser *p, char **out, pos_t *where);
ttc_status ttc_lex_read_int(parser *p, int64_t *out);
ttc_status ttc_lex_read_number(parser *p, bool *is_float, int64_t *iv, double *fv);

/* ---- types and literals (parse_literal.c) ---- */
ttc_status ttc_lit_parse_dim(parser *p, ttc_dim *d);
ttc_status ttc_lit_parse_type(parser *p, ttc_type *t);
/* out_type: the type of the node's single output (tensor literals take their dtype from it) */
ttc_status ttc_lit_parse_attr_value(parser *p, ttc_attr *a, const ttc_type *out_type);

#endif
