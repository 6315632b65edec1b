/* The parameter builder (see codegen.h, ttc_kparams): a parameter's declaration, its name in
 * call lists and its argument spec are written by the same call, in the same order. */
#include "codegen.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void ttc_kp_init(ttc_kparams *p, const ttc_kir *k, ttc_kspec *ks, bool lead) {
    memset(p, 0, sizeof *p);
    p->k = k;
    p->ks = ks;
    p->lead = lead;
}

static void sep(ttc_kparams *p) {
    if (p->lead || p->n > 0) ttc_sbuf_printf(&p->sig, ", ");
    ttc_sbuf_printf(&p->call, ", ");
    p->n++;
}

static void spec(ttc_kparams *p, ttc_arg_kind kind, int32_t t, int32_t d, int32_t r, int64_t v) {
    if (p->st == TTC_OK) p->st = ttc_codegen_add_arg(p->ks, kind, t, d, r, v);
}

static void buffer(ttc_kparams *p, int32_t t, const char *nm, const char *off, bool writable) {
    if (p->st != TTC_OK) return;
    if (t < 0 || t >= p->k->n_ts) {
        p->st = ttc_fail(TTC_ERR_INTERNAL, "codegen: parameter %s names tensor %d of %d", nm, t, p->k->n_ts);
        return;
    }
    const char *ty = ttc_cl_storage_type(p->k->ts[t].dtype);
    sep(p);
    if (off) ttc_sbuf_printf(&p->sig, "__global %s%s *%s, int %s", writable ? "" : "const ", ty, nm, off);
    else ttc_sbuf_printf(&p->sig, "__global %s%s *%s, int %s_off", writable ? "" : "const ", ty, nm, nm);
    if (off) ttc_sbuf_printf(&p->call, "%s, %s", nm, off);
    else ttc_sbuf_printf(&p->call, "%s, %s_off", nm, nm);
    p->n++;   /* the offset is a parameter of its own */
    spec(p, TTC_ARG_BUF, t, 0, 0, 0);
    spec(p, TTC_ARG_OFF, t, 0, 0, 0);
}

void ttc_kp_buffer(ttc_kparams *p, int32_t t, const char *nm, const char *off) { buffer(p, t, nm, off, false); }

void ttc_kp_out(ttc_kparams *p, int32_t t, const char *nm, const char *off) { buffer(p, t, nm, off, true); }

void ttc_kp_tensor(ttc_kparams *p, int32_t t, const char *nm, int32_t r) {
    buffer(p, t, nm, NULL, false);
    if (p->st != TTC_OK) return;
    int32_t rank = r > 0 ? r : p->k->ts[t].rank;
    for (int32_t d = 0; d < rank; d++) ttc_kp_int(p, TTC_ARG_STRIDE, t, d, rank, 0, "%s_s%d", nm, d);
}

void ttc_kp_int(ttc_kparams *p, ttc_arg_kind kind, int32_t t, int32_t d, int32_t r, int64_t v, const char *fmt, ...) {
    if (p->st != TTC_OK) return;
    char nm[64];
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(nm, sizeof nm, fmt, ap);
    va_end(ap);
    if (len < 0 || len >= (int)sizeof nm) {
        p->st = ttc_fail(TTC_ERR_INTERNAL, "codegen: parameter name %s... too long", nm);
        return;
    }
    sep(p);
    ttc_sbuf_printf(&p->sig, "int %s", nm);
    ttc_sbuf_printf(&p->call, "%s", nm);
    spec(p, kind, t, d, r, v);
}

void ttc_kp_errflag(ttc_kparams *p, int32_t t) {
    if (p->st != TTC_OK) return;
    sep(p);
    ttc_sbuf_printf(&p->sig, "__global int *errf");
    ttc_sbuf_printf(&p->call, "errf");
    spec(p, TTC_ARG_ERRFLAG, t, 0, 0, 0);
}

void ttc_kp_local(ttc_kparams *p, const char *type, const char *nm, const char *nm_n, int64_t unit_bytes, int32_t n_cl,
                  int32_t n_max) {
    if (p->st != TTC_OK) return;
    if (unit_bytes <= 0 || n_cl < 1 || n_max < n_cl) {
        p->st = ttc_fail(TTC_ERR_INTERNAL, "codegen: local buffer %s of %d..%d units of %lld bytes", nm, (int)n_cl,
                         (int)n_max, (long long)unit_bytes);
        return;
    }
    sep(p);
    ttc_sbuf_printf(&p->sig, "__local %s *%s", type, nm);
    ttc_sbuf_printf(&p->call, "%s", nm);
    spec(p, TTC_ARG_LOCAL, 0, n_cl, n_max, unit_bytes);
    sep(p);
    ttc_sbuf_printf(&p->sig, "int %s", nm_n);
    ttc_sbuf_printf(&p->call, "%s", nm_n);
    spec(p, TTC_ARG_LOCAL_N, 0, n_cl, n_max, unit_bytes);
}

void ttc_kp_tmap(ttc_kparams *p, int32_t t, const char *nm, int32_t operand, int32_t box_rows) {
    if (p->st != TTC_OK) return;
    if (t < 0 || t >= p->k->n_ts || operand < 0 || operand > 1 || box_rows < 1 || box_rows > 256) {
        p->st = ttc_fail(TTC_ERR_INTERNAL, "codegen: tensor map %s of tensor %d, operand %d, %d rows", nm, (int)t,
                         (int)operand, (int)box_rows);
        return;
    }
    sep(p);
    ttc_sbuf_printf(&p->sig, "__global const ulong16 *%s", nm);
    ttc_sbuf_printf(&p->call, "%s", nm);
    spec(p, TTC_ARG_BUF, t, box_rows, operand, TTC_ARG_BUF_TMAP);
}

ttc_status ttc_kp_done(ttc_kparams *p) {
    if (p->st == TTC_OK && (p->sig.oom || p->call.oom)) p->st = ttc_fail(TTC_ERR_NOMEM, "generating kernel parameters");
    return p->st;
}

void ttc_kp_free(ttc_kparams *p) {
    ttc_sbuf_free(&p->sig);
    ttc_sbuf_free(&p->call);
}

/* The last identifier of [s, e) (a parameter's name), as [*ns, *ne). */
static void last_ident(const char *s, const char *e, const char **ns, const char **ne) {
    while (e > s && !(isalnum((unsigned char)e[-1]) || e[-1] == '_')) e--;
    const char *b = e;
    while (b > s && (isalnum((unsigned char)b[-1]) || b[-1] == '_')) b--;
    *ns = b;
    *ne = e;
}

ttc_status ttc_kp_check_template(const ttc_kparams *p, const ttc_sbuf *src, size_t from, const char *tmpl) {
    TTC_TRY(ttc_kp_done((ttc_kparams *)p));
    if (!src->data || from > src->len) return ttc_fail(TTC_ERR_NOMEM, "generating %s", tmpl);
    const char *open = strstr(src->data + from, "KNAME(");
    const char *close = open ? strchr(open, ')') : NULL;
    if (!close) return ttc_fail(TTC_ERR_INTERNAL, "codegen: %s.cl declares no KNAME kernel", tmpl);
    const char *s = open + strlen("KNAME("), *want = ttc_kp_call(p);
    /* the store function's parameters follow the kernel's own, after EPI_PARAMS */
    const char *epi = strstr(s, "EPI_PARAMS");
    const char *end = epi && epi < close ? epi : close;
    int32_t i = 0;
    bool ok = true;
    while (ok && s < end) {
        const char *c = memchr(s, ',', (size_t)(end - s));
        const char *pe = c ? c : end, *ns, *ne;
        last_ident(s, pe, &ns, &ne);
        if (ne > ns) {
            /* want is ", a, b, ...": the i-th name */
            while (*want == ',' || *want == ' ') want++;
            size_t wl = strcspn(want, ",");
            ok = wl == (size_t)(ne - ns) && !memcmp(want, ns, wl);
            want += wl;
            i++;
        }
        s = c ? c + 1 : end;
    }
    while (*want == ',' || *want == ' ') want++;
    if (!ok || *want || i != p->n)
        return ttc_fail(TTC_ERR_INTERNAL, "codegen: %s.cl's kernel parameter %d differs from what codegen binds (%s)",
                        tmpl, i, ttc_kp_call(p));
    return TTC_OK;
}
