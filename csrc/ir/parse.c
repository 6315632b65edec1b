/*
 * IR text parser: the inverse of print.c (format described there). This file reads
 * statements and whole graphs; the lexer is parse_lex.c, types and literals parse_literal.c.
 * It checks names and syntax (undefined or duplicate values, unknown symbols, malformed types and literals) and
 * leaves semantic checks to ttc_graph_verify. Errors are TTC_ERR_PARSE with
 * "line L, column C: ...". It never recurses (the grammar is flat), checks every integer
 * for overflow and reads only within the NUL-terminated text.
 *
 *   ttc_graph *g;
 *   ttc_status s = ttc_graph_parse_ex(text, my_lookup, my_ctx, &g);
 */
#include "parse_internal.h"
#include "text_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    TTC_TRY(ttc_lex_read_value_name(p, &name, &at));
    *out = ttc_strmap_get(&p->vals, name);
    ttc_status st = *out ? TTC_OK : ttc_lex_perr_at(p, at, "use of undefined value %%%s", name);
    free(name);
    return st;
}

static ttc_status read_def(parser *p, char **name, pos_t *at) {
    TTC_TRY(ttc_lex_read_value_name(p, name, at));
    if (ttc_strmap_get(&p->vals, *name)) {
        ttc_status st = ttc_lex_perr_at(p, *at, "value %%%s is defined twice", *name);
        free(*name);
        *name = NULL;
        return st;
    }
    return TTC_OK;
}

static ttc_status parse_annotation(parser *p, stmt *s) {
    /* cursor after '#': key=value pairs up to the end of the line */
    for (;;) {
        ttc_lex_skip_inline(p);
        if (!ttc_lex_peek(p) || ttc_lex_peek(p) == '\n') return TTC_OK;
        pos_t at = p->at;
        char *key = NULL;
        if (ttc_text_is_word_start(ttc_lex_peek(p))) key = ttc_lex_read_word(p);
        if (!key || ttc_lex_peek(p) != '=') {
            free(key);
            return ttc_lex_perr_at(p, at, "expected key=value annotation (name=, module=, target=, segment=, reason=)");
        }
        ttc_lex_advance(p);
        char *val = NULL;
        if (ttc_lex_peek(p) == '"') {
            ttc_status st = ttc_lex_read_quoted(p, &val);
            if (st) { free(key); return st; }
        } else {
            size_t start = p->at.pos;
            while (ttc_lex_peek(p) && ttc_lex_peek(p) != ' ' && ttc_lex_peek(p) != '\t' && ttc_lex_peek(p) != '\r' && ttc_lex_peek(p) != '\n') ttc_lex_advance(p);
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
            if (*slot) st = ttc_lex_perr_at(p, at, "annotation %s given twice", key);
            else { *slot = val; val = NULL; }
        } else if (num) {
            char *end;
            errno = 0;
            long v = strtol(val, &end, 10);
            if (*end || errno || v < 0 || v > INT32_MAX) st = ttc_lex_perr_at(p, at, "annotation %s needs an int >= 0", key);
            else *num = (int32_t)v;
        } else {
            st = ttc_lex_perr_at(p, at, "unknown annotation '%s' (name, module, target, segment, reason)", key);
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
    ttc_lex_skip_ws(p);
    if (ttc_lex_peek(p) != '=') {
        for (;;) {
            if (ttc_grow((void **)&s->out_names, &s->cap_out, s->n_out + 1, sizeof(char *)) ||
                !(s->out_at = ttc_realloc(s->out_at, sizeof(pos_t) * (size_t)s->cap_out)) ||
                !(s->out_types = ttc_realloc(s->out_types, sizeof(ttc_type) * (size_t)s->cap_out)))
                return TTC_ERR_NOMEM;
            TTC_TRY(read_def(p, &s->out_names[s->n_out], &s->out_at[s->n_out]));
            s->n_out++;
            for (int i = 0; i < s->n_out - 1; i++)
                if (!strcmp(s->out_names[i], s->out_names[s->n_out - 1]))
                    return ttc_lex_perr_at(p, s->out_at[s->n_out - 1], "value %%%s is defined twice", s->out_names[i]);
            TTC_TRY(ttc_lex_expect(p, ':', "':' and a type after the value name"));
            TTC_TRY(ttc_lit_parse_type(p, &s->out_types[s->n_out - 1]));
            if (ttc_lex_accept(p, '=')) break;
            TTC_TRY(ttc_lex_expect(p, ',', "',' or '=' after an output"));
        }
    } else {
        ttc_lex_advance(p);
    }
    ttc_lex_skip_ws(p);
    char b[16];
    if (ttc_lex_peek(p) == '"') TTC_TRY(ttc_lex_read_quoted(p, &s->op));
    else if (!(s->op = ttc_lex_read_word(p))) return PERR(p, "expected an op name, found %s", ttc_lex_found(p, b, sizeof b));
    if (!*s->op) return PERR(p, "empty op name");
    const ttc_type *single = s->n_out == 1 ? &s->out_types[0] : NULL;
    if (ttc_lex_accept(p, '[') && !ttc_lex_accept(p, ']')) {
        for (;;) {
            TTC_TRY(ttc_grow((void **)&s->attrs, &s->cap_attrs, s->n_attrs + 1, sizeof(ttc_attr)));
            ttc_attr *a = &s->attrs[s->n_attrs];
            memset(a, 0, sizeof *a);
            s->n_attrs++;
            ttc_lex_skip_ws(p);
            pos_t at = p->at;
            if (ttc_lex_peek(p) == '"') TTC_TRY(ttc_lex_read_quoted(p, &a->name));
            else if (!(a->name = ttc_lex_read_word(p))) return PERR(p, "expected an attribute name, found %s", ttc_lex_found(p, b, sizeof b));
            for (int i = 0; i < s->n_attrs - 1; i++)
                if (!strcmp(s->attrs[i].name, a->name)) return ttc_lex_perr_at(p, at, "attribute %s given twice", a->name);
            TTC_TRY(ttc_lex_expect(p, '=', "'=' after the attribute name"));
            TTC_TRY(ttc_lit_parse_attr_value(p, a, single));
            if (ttc_lex_accept(p, ']')) break;
            TTC_TRY(ttc_lex_expect(p, ',', "',' or ']' in the attribute list"));
        }
    }
    TTC_TRY(ttc_lex_expect(p, '(', "'(' before the op's inputs"));
    if (!ttc_lex_accept(p, ')')) {
        for (;;) {
            TTC_TRY(ttc_grow((void **)&s->ins, &s->cap_in, s->n_in + 1, sizeof(ttc_value *)));
            TTC_TRY(read_use(p, &s->ins[s->n_in]));
            s->n_in++;
            if (ttc_lex_accept(p, ')')) break;
            TTC_TRY(ttc_lex_expect(p, ',', "',' or ')' in the input list"));
        }
    }
    ttc_lex_skip_inline(p);
    if (ttc_lex_peek(p) == '#') {
        ttc_lex_advance(p);
        TTC_TRY(parse_annotation(p, s));
    }
    ttc_lex_skip_inline(p);
    if (ttc_lex_peek(p) && ttc_lex_peek(p) != '\n') return PERR(p, "expected end of line after the node, found %s", ttc_lex_found(p, b, sizeof b));

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
    TTC_TRY(ttc_lex_expect(p, '(', "'(' after return"));
    ttc_value **outs = NULL;
    int32_t n = 0, cap = 0;
    ttc_status st = TTC_OK;
    if (!ttc_lex_accept(p, ')')) {
        for (;;) {
            if ((st = ttc_grow((void **)&outs, &cap, n + 1, sizeof(ttc_value *)))) goto done;
            if ((st = read_use(p, &outs[n]))) goto done;
            n++;
            if (ttc_lex_accept(p, ')')) break;
            if ((st = ttc_lex_expect(p, ',', "',' or ')' in the return list"))) goto done;
        }
    }
    if ((st = ttc_graph_set_outputs(p->g, outs, n))) goto done;
    ttc_lex_skip_ws(p);
    char b[16];
    if (ttc_lex_peek(p)) st = PERR(p, "expected end of input after return, found %s", ttc_lex_found(p, b, sizeof b));
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
        int c = ttc_lex_peek(p);
        if (!c) return ttc_lex_perr_at(p, open, "unterminated graph input list");
        if (c == '"') { char *tmp; TTC_TRY(ttc_lex_read_quoted(p, &tmp)); free(tmp); continue; }
        if (c == '(') depth++;
        if (c == ')') depth--;
        ttc_lex_advance(p);
    }
    return TTC_OK;
}

static ttc_status parse_graph(parser *p) {
    ttc_lex_skip_ws(p);
    char b[16];
    if (!ttc_lex_accept_word(p, "graph")) return PERR(p, "expected 'graph', found %s", ttc_lex_found(p, b, sizeof b));
    TTC_TRY(ttc_lex_expect(p, '(', "'(' after graph"));
    pos_t inputs_at = p->at;
    TTC_TRY(skip_inputs(p));
    if (ttc_lex_accept_word(p, "where")) {
        for (;;) {
            ttc_lex_skip_ws(p);
            pos_t at = p->at;
            char *name = ttc_lex_read_word(p);
            if (!name) return PERR(p, "expected a symbol name, found %s", ttc_lex_found(p, b, sizeof b));
            int64_t r[3] = {0, 0, 0};
            ttc_status st = TTC_OK;
            if (!ttc_lex_accept_word(p, "in")) st = PERR(p, "expected 'in' after symbol %s", name);
            if (!st) st = ttc_lex_expect(p, '[', "'[' before the symbol's min, opt, max");
            for (int i = 0; i < 3 && !st; i++) {
                st = ttc_lex_read_int(p, &r[i]);
                if (!st) st = ttc_lex_expect(p, i < 2 ? ',' : ']', i < 2 ? "','" : "']'");
            }
            if (!st && ttc_graph_add_symbol(p->g, name, r[0], r[1], r[2]) < 0) {
                char msg[512];
                snprintf(msg, sizeof msg, "%s", ttc_last_error());
                st = ttc_lex_perr_at(p, at, "%s", msg);
            }
            free(name);
            if (st) return st;
            if (!ttc_lex_accept(p, ',')) break;
        }
    }
    TTC_TRY(ttc_lex_expect(p, ':', "':' after the graph header"));
    pos_t body_at = p->at;
    p->at = inputs_at;
    if (!ttc_lex_accept(p, ')')) {
        for (;;) {
            char *name;
            pos_t at;
            ttc_type t;
            TTC_TRY(read_def(p, &name, &at));
            ttc_status st = ttc_lex_expect(p, ':', "':' and a type after the input name");
            if (!st) st = ttc_lit_parse_type(p, &t);
            ttc_value *v = st ? NULL : ttc_graph_add_input(p->g, name, &t);
            free(name);
            if (st) return st;
            if (!v) return TTC_ERR_NOMEM;
            TTC_TRY(ttc_strmap_put(&p->vals, v->name, v));
            if (ttc_lex_accept(p, ')')) break;
            TTC_TRY(ttc_lex_expect(p, ',', "',' or ')' in the graph inputs"));
        }
    }
    p->at = body_at;
    for (;;) {
        ttc_lex_skip_ws(p);
        if (!ttc_lex_peek(p)) return PERR(p, "expected 'return' before the end of input");
        if (ttc_lex_accept_word(p, "return")) return parse_return(p);
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
