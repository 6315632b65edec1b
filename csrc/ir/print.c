/*
 * IR text printer. The format is TorchScript-like and parses back (parse.c) to an equal
 * graph (ttc_graph_equal):
 *
 *   graph(%x : Float(s0, 3), %w : Float(4, 3)) where s0 in [1, 8, 32]:
 *     %c : int = prim.Constant[value=1]()
 *     %t : Float(2, 2) = prim.Constant[value=tensor([1., 2., 3., 4.])]()
 *     %big : Float(64, 3) = prim.Constant[value=tensor(name="conv.weight")]()
 *     %y : Float(s0, 3) = aten.relu.default(%x)  # name=relu module=layer1.0
 *     %a : Float(s0), %b : Long(s0) = aten.max.dim(%y, %c, %false)
 *     return (%y, %a)
 *
 * Dims are ints or affine in one symbol ("s0", "3*s0", "s0-1", "2*s0+1"); "(*)" is an
 * unknown rank. Names that are not [A-Za-z0-9_.]+ are quoted (%"a b"). Attribute literals:
 * 1, 0.5, true, "str", None, [1, 2], [1., 2.], [true], float[] / bool[] (empty lists),
 * tensor([...], name="w") inline (<= 64 elements, or no name), tensor(name="w") by name.
 * The trailing comment carries debug name, module stack and partition results.
 */
#include "ir.h"
#include "text_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define TTC_INLINE_TENSOR_MAX 64

static void put_quoted(ttc_sbuf *b, const char *s) {
    ttc_sbuf_append(b, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        switch (*p) {
        case '"': ttc_sbuf_append(b, "\\\"", 2); break;
        case '\\': ttc_sbuf_append(b, "\\\\", 2); break;
        case '\n': ttc_sbuf_append(b, "\\n", 2); break;
        case '\t': ttc_sbuf_append(b, "\\t", 2); break;
        case '\r': ttc_sbuf_append(b, "\\r", 2); break;
        default:
            if (*p < 0x20 || *p == 0x7f) ttc_sbuf_printf(b, "\\x%02x", *p);
            else ttc_sbuf_append(b, (const char *)p, 1);
        }
    }
    ttc_sbuf_append(b, "\"", 1);
}

static bool all_chars(const char *s, bool (*ok)(int)) {
    if (!s || !*s) return false;
    for (; *s; s++)
        if (!ok((unsigned char)*s)) return false;
    return true;
}

static bool is_word_char(int c) { return ttc_text_is_name_char(c); }

static void put_name(ttc_sbuf *b, const char *s) {
    if (all_chars(s, ttc_text_is_name_char)) ttc_sbuf_printf(b, "%s", s);
    else put_quoted(b, s);
}

/* A word (op name, attribute name) starts with a letter or '_'. */
static void put_word(ttc_sbuf *b, const char *s) {
    if (s && ttc_text_is_word_start((unsigned char)*s) && all_chars(s, is_word_char)) ttc_sbuf_printf(b, "%s", s);
    else put_quoted(b, s);
}

enum { REAL_F64, REAL_F32, REAL_F16, REAL_BF16 };

/* Whether text read back with strtod and rounded to the element type gives v again. */
static bool reads_back(const char *buf, double v, int as) {
    double back = strtod(buf, NULL);
    switch (as) {
    case REAL_F32: return (float)back == (float)v;
    case REAL_F16: return ttc_float_to_half((float)back) == ttc_float_to_half((float)v);
    case REAL_BF16: return ttc_float_to_bf16((float)back) == ttc_float_to_bf16((float)v);
    default: return back == v;
    }
}

/* Shortest decimal that reads back to the same value of the element type `as`. */
static void put_real(ttc_sbuf *b, double v, int as) {
    char buf[64];
    if (isnan(v)) { ttc_sbuf_printf(b, "nan"); return; }
    if (isinf(v)) { ttc_sbuf_printf(b, v > 0 ? "inf" : "-inf"); return; }
    if (v == floor(v) && fabs(v) < 1e15) { ttc_sbuf_printf(b, "%.0f.", v); return; }
    for (int p = 1; p <= 17; p++) {
        snprintf(buf, sizeof buf, "%.*g", p, v);
        if (reads_back(buf, v, as)) break;
    }
    if (!strpbrk(buf, ".e")) strcat(buf, ".");
    ttc_sbuf_printf(b, "%s", buf);
}

static void put_dim(ttc_sbuf *b, const ttc_graph *g, ttc_dim d) {
    if (d.sym < 0) { ttc_sbuf_printf(b, "%lld", (long long)d.add); return; }
    if (d.sym >= g->n_syms) ttc_sbuf_printf(b, "?sym%d", d.sym);
    else if (d.mul == 1) ttc_sbuf_printf(b, "%s", g->syms[d.sym].name);
    else ttc_sbuf_printf(b, "%lld*%s", (long long)d.mul, g->syms[d.sym].name);
    if (d.add > 0) ttc_sbuf_printf(b, "+%lld", (long long)d.add);
    else if (d.add < 0) ttc_sbuf_printf(b, "-%llu", 0ull - (unsigned long long)d.add);
}

static const char *scalar_type_name(ttc_type_kind k) {
    switch (k) {
    case TTC_TYPE_TENSOR: return "Tensor";
    case TTC_TYPE_INT: return "int";
    case TTC_TYPE_FLOAT: return "float";
    case TTC_TYPE_BOOL: return "bool";
    case TTC_TYPE_STR: return "str";
    case TTC_TYPE_NONE: return "NoneType";
    case TTC_TYPE_ANY: return "Any";
    default: return "?";
    }
}

static void put_type(ttc_sbuf *b, const ttc_graph *g, const ttc_type *t) {
    if (t->kind == TTC_TYPE_LIST) { ttc_sbuf_printf(b, "%s[]", scalar_type_name(t->elem)); return; }
    if (t->kind != TTC_TYPE_TENSOR) { ttc_sbuf_printf(b, "%s", scalar_type_name(t->kind)); return; }
    ttc_sbuf_printf(b, "%s(", ttc_dtype_ir_name(t->dtype));
    if (t->rank < 0) ttc_sbuf_printf(b, "*");
    for (int i = 0; i < t->rank && i < TTC_MAX_RANK; i++) {
        if (i) ttc_sbuf_printf(b, ", ");
        put_dim(b, g, t->dims[i]);
    }
    ttc_sbuf_printf(b, ")");
}

static void put_tensor_elems(ttc_sbuf *b, ttc_dtype dt, const ttc_tensor_data *d) {
    size_t es = ttc_dtype_size(dt);
    size_t n = (es && d && d->data) ? d->nbytes / es : 0;
    const unsigned char *p = d ? d->data : NULL;
    ttc_sbuf_printf(b, "[");
    for (size_t i = 0; i < n; i++) {
        if (i) ttc_sbuf_printf(b, ", ");
        const void *e = p + i * es;
        switch (dt) {
        case TTC_DTYPE_FLOAT32: { float f; memcpy(&f, e, 4); put_real(b, f, REAL_F32); break; }
        case TTC_DTYPE_FLOAT64: { double f; memcpy(&f, e, 8); put_real(b, f, REAL_F64); break; }
        case TTC_DTYPE_FLOAT16: { uint16_t h; memcpy(&h, e, 2); put_real(b, ttc_half_to_float(h), REAL_F16); break; }
        case TTC_DTYPE_BFLOAT16: { uint16_t h; memcpy(&h, e, 2); put_real(b, ttc_bf16_to_float(h), REAL_BF16); break; }
        case TTC_DTYPE_INT64: { int64_t v; memcpy(&v, e, 8); ttc_sbuf_printf(b, "%lld", (long long)v); break; }
        case TTC_DTYPE_INT32: { int32_t v; memcpy(&v, e, 4); ttc_sbuf_printf(b, "%d", v); break; }
        case TTC_DTYPE_INT8: ttc_sbuf_printf(b, "%d", (int)*(const int8_t *)e); break;
        case TTC_DTYPE_UINT8: ttc_sbuf_printf(b, "%u", (unsigned)*(const uint8_t *)e); break;
        case TTC_DTYPE_BOOL: ttc_sbuf_printf(b, "%s", *(const uint8_t *)e ? "true" : "false"); break;
        default: ttc_sbuf_printf(b, "?"); break;
        }
    }
    ttc_sbuf_printf(b, "]");
}

/* `type` is the producing node's single output type (for tensor literals), or NULL. */
static void put_attr_value(ttc_sbuf *b, const ttc_attr *a, const ttc_type *type) {
    switch (a->kind) {
    case TTC_ATTR_NONE: ttc_sbuf_printf(b, "None"); break;
    case TTC_ATTR_INT: ttc_sbuf_printf(b, "%lld", (long long)a->i); break;
    case TTC_ATTR_FLOAT: put_real(b, a->f, REAL_F64); break;
    case TTC_ATTR_BOOL: ttc_sbuf_printf(b, "%s", a->i ? "true" : "false"); break;
    case TTC_ATTR_STR: put_quoted(b, a->s); break;
    case TTC_ATTR_INTS:
    case TTC_ATTR_BOOLS:
    case TTC_ATTR_FLOATS:
        if (a->n <= 0) {
            ttc_sbuf_printf(b, "%s", a->kind == TTC_ATTR_INTS ? "[]" : a->kind == TTC_ATTR_BOOLS ? "bool[]" : "float[]");
            break;
        }
        ttc_sbuf_printf(b, "[");
        for (int i = 0; i < a->n; i++) {
            if (i) ttc_sbuf_printf(b, ", ");
            if (a->kind == TTC_ATTR_FLOATS) put_real(b, a->floats ? a->floats[i] : 0, REAL_F64);
            else if (a->kind == TTC_ATTR_BOOLS) ttc_sbuf_printf(b, "%s", a->ints && a->ints[i] ? "true" : "false");
            else ttc_sbuf_printf(b, "%lld", a->ints ? (long long)a->ints[i] : 0ll);
        }
        ttc_sbuf_printf(b, "]");
        break;
    case TTC_ATTR_TENSOR: {
        ttc_dtype dt = type && type->kind == TTC_TYPE_TENSOR ? type->dtype : TTC_DTYPE_FLOAT32;
        size_t es = ttc_dtype_size(dt);
        size_t numel = a->tensor && es ? a->tensor->nbytes / es : 0;
        bool by_name = a->s && numel > TTC_INLINE_TENSOR_MAX;
        ttc_sbuf_printf(b, "tensor(");
        if (!by_name) put_tensor_elems(b, dt, a->tensor);
        if (a->s) {
            ttc_sbuf_printf(b, by_name ? "name=" : ", name=");
            put_quoted(b, a->s);
        }
        ttc_sbuf_printf(b, ")");
        break;
    }
    default: ttc_sbuf_printf(b, "?"); break;
    }
}

static void put_comment_value(ttc_sbuf *b, const char *s) {
    if (all_chars(s, ttc_text_is_bare_char)) ttc_sbuf_printf(b, "%s", s);
    else put_quoted(b, s);
}

static void put_node(ttc_sbuf *b, const ttc_graph *g, const ttc_node *n) {
    ttc_sbuf_printf(b, "  ");
    for (int i = 0; i < n->n_outputs; i++) {
        const ttc_value *v = n->outputs[i];
        if (i) ttc_sbuf_printf(b, ", ");
        ttc_sbuf_printf(b, "%%");
        put_name(b, v ? v->name : "?");
        ttc_sbuf_printf(b, " : ");
        if (v) put_type(b, g, &v->type);
    }
    ttc_sbuf_printf(b, n->n_outputs ? " = " : "= ");
    put_word(b, n->op_name);
    const ttc_type *single = n->n_outputs == 1 && n->outputs[0] ? &n->outputs[0]->type : NULL;
    int shown = 0;
    for (int i = 0; i < n->n_attrs; i++) {
        const ttc_attr *a = &n->attrs[i];
        /* None constants print as `prim.Constant()`, as in TorchScript. */
        if (n->op == TTC_OP_CONSTANT && a->kind == TTC_ATTR_NONE && a->name && !strcmp(a->name, "value") &&
            single && single->kind == TTC_TYPE_NONE)
            continue;
        ttc_sbuf_printf(b, shown++ ? ", " : "[");
        put_word(b, a->name);
        ttc_sbuf_printf(b, "=");
        put_attr_value(b, a, single);
    }
    if (shown) ttc_sbuf_printf(b, "]");
    ttc_sbuf_printf(b, "(");
    for (int i = 0; i < n->n_inputs; i++) {
        if (i) ttc_sbuf_printf(b, ", ");
        ttc_sbuf_printf(b, "%%");
        put_name(b, n->inputs[i] ? n->inputs[i]->name : "?");
    }
    ttc_sbuf_printf(b, ")");
    if (n->name || n->module_stack || n->target >= 0 || n->segment >= 0 || n->reason) {
        ttc_sbuf_printf(b, "  #");
        if (n->name) { ttc_sbuf_printf(b, " name="); put_comment_value(b, n->name); }
        if (n->module_stack) { ttc_sbuf_printf(b, " module="); put_comment_value(b, n->module_stack); }
        if (n->target >= 0) ttc_sbuf_printf(b, " target=%d", n->target);
        if (n->segment >= 0) ttc_sbuf_printf(b, " segment=%d", n->segment);
        if (n->reason) { ttc_sbuf_printf(b, " reason="); put_comment_value(b, n->reason); }
    }
    ttc_sbuf_printf(b, "\n");
}

char *ttc_graph_print(const ttc_graph *g) {
    if (!g) { ttc_fail(TTC_ERR_INVALID_ARG, "print: NULL graph"); return NULL; }
    ttc_sbuf b = {0};
    ttc_sbuf_printf(&b, "graph(");
    for (int i = 0; i < g->n_inputs; i++) {
        const ttc_value *v = g->inputs[i];
        if (i) ttc_sbuf_printf(&b, ", ");
        ttc_sbuf_printf(&b, "%%");
        put_name(&b, v ? v->name : "?");
        ttc_sbuf_printf(&b, " : ");
        if (v) put_type(&b, g, &v->type);
    }
    ttc_sbuf_printf(&b, ")");
    for (int i = 0; i < g->n_syms; i++) {
        const ttc_symbol *s = &g->syms[i];
        ttc_sbuf_printf(&b, "%s%s in [%lld, %lld, %lld]", i ? ", " : " where ", s->name, (long long)s->min,
                        (long long)s->opt, (long long)s->max);
    }
    ttc_sbuf_printf(&b, ":\n");
    for (int i = 0; i < g->n_nodes; i++) put_node(&b, g, g->nodes[i]);
    ttc_sbuf_printf(&b, "  return (");
    for (int i = 0; i < g->n_outputs; i++) {
        if (i) ttc_sbuf_printf(&b, ", ");
        ttc_sbuf_printf(&b, "%%");
        put_name(&b, g->outputs[i] ? g->outputs[i]->name : "?");
    }
    ttc_sbuf_printf(&b, ")\n");
    return ttc_sbuf_take(&b);
}
