/* The lowering pass manager (see pass_manager.h). */
#include "pass_manager.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct pass_entry {
    char *name;
    ttc_pass_fn fn;
    void *ctx;
    bool enabled;
} pass_entry;

struct ttc_pass_manager {
    pass_entry *passes;
    int32_t n, cap;
    ttc_pass_instrument *ins;
    int32_t n_ins, cap_ins;
    bool debug;
    char *dump_after;
    void (*sink)(void *, const char *, const char *);
    void *sink_ctx;
};

static const struct { const char *name; ttc_pass_fn fn; bool on; } default_pipeline[] = {
    {"remove_asserts", ttc_pass_remove_asserts, true},
    {"remove_noops", ttc_pass_remove_noops, true},
    {"constant_fold", ttc_pass_constant_fold, true},
    {"unpack_addmm", ttc_pass_unpack_addmm, false},
    {"unpack_log_softmax", ttc_pass_unpack_log_softmax, false},
    {"fuse_linear", ttc_pass_fuse_linear, true},
    {"remove_flatten_linear", ttc_pass_remove_flatten_linear, false},
    {"fold_batch_norm", ttc_pass_fold_batch_norm, true},
    {"fuse_rms_norm", ttc_pass_fuse_rms_norm, true},
    {"fuse_gelu_tanh", ttc_pass_fuse_gelu_tanh, true},
    {"fuse_parallel_linear", ttc_pass_fuse_parallel_linear, false},   /* on with its setting (py_passes.c) */
    {"merge_split_views", ttc_pass_merge_split_views, true},
    {"cse", ttc_pass_cse, true},
    {"dce", ttc_pass_dce, true},
};

static int32_t find(const ttc_pass_manager *pm, const char *name) {
    for (int32_t i = 0; i < pm->n; i++)
        if (!strcmp(pm->passes[i].name, name)) return i;
    return -1;
}

static ttc_status unknown(const ttc_pass_manager *pm, const char *name) {
    ttc_sbuf b = {0};
    for (int32_t i = 0; i < pm->n; i++) ttc_sbuf_printf(&b, "%s%s", i ? ", " : "", pm->passes[i].name);
    char *list = ttc_sbuf_take(&b);
    ttc_status s = ttc_fail(TTC_ERR_INVALID_ARG, "unknown pass '%s' (passes: %s)", name, list ? list : "");
    free(list);
    return s;
}

static ttc_status insert(ttc_pass_manager *pm, int32_t pos, const char *name, ttc_pass_fn fn, void *ctx, bool on) {
    TTC_TRY(ttc_grow((void **)&pm->passes, &pm->cap, pm->n + 1, sizeof(pass_entry)));
    char *nm = ttc_strdup(name);
    if (!nm) return TTC_ERR_NOMEM;
    memmove(&pm->passes[pos + 1], &pm->passes[pos], sizeof(pass_entry) * (size_t)(pm->n - pos));
    pm->passes[pos] = (pass_entry){nm, fn, ctx, on};
    pm->n++;
    return TTC_OK;
}

ttc_pass_manager *ttc_pass_manager_new(void) {
    ttc_pass_manager *pm = ttc_calloc(1, sizeof *pm);
    if (!pm) return NULL;
    for (size_t i = 0; i < sizeof default_pipeline / sizeof default_pipeline[0]; i++)
        if (insert(pm, pm->n, default_pipeline[i].name, default_pipeline[i].fn, NULL, default_pipeline[i].on)) {
            ttc_pass_manager_free(pm);
            return NULL;
        }
    return pm;
}

void ttc_pass_manager_free(ttc_pass_manager *pm) {
    if (!pm) return;
    for (int32_t i = 0; i < pm->n; i++) free(pm->passes[i].name);
    free(pm->passes);
    free(pm->ins);
    free(pm->dump_after);
    free(pm);
}

int32_t ttc_pass_manager_count(const ttc_pass_manager *pm) { return pm->n; }
const char *ttc_pass_manager_name(const ttc_pass_manager *pm, int32_t i) {
    return i >= 0 && i < pm->n ? pm->passes[i].name : NULL;
}
bool ttc_pass_manager_is_enabled(const ttc_pass_manager *pm, int32_t i) {
    return i >= 0 && i < pm->n && pm->passes[i].enabled;
}

ttc_status ttc_pass_manager_set_enabled(ttc_pass_manager *pm, const char *name, bool on) {
    int32_t i = name ? find(pm, name) : -1;
    if (i < 0) return unknown(pm, name ? name : "(null)");
    pm->passes[i].enabled = on;
    return TTC_OK;
}

ttc_status ttc_pass_manager_register(ttc_pass_manager *pm, const char *name, ttc_pass_fn fn, void *ctx,
                                     const char *after) {
    if (!name || !*name || !fn) return TTC_FAIL(TTC_ERR_INVALID_ARG, "register pass: a name and a function are required");
    if (find(pm, name) >= 0) return TTC_FAIL(TTC_ERR_INVALID_ARG, "register pass: '%s' already exists", name);
    int32_t pos = pm->n;
    if (after && !*after) pos = 0;
    else if (after) {
        int32_t i = find(pm, after);
        if (i < 0) return unknown(pm, after);
        pos = i + 1;
    }
    return insert(pm, pos, name, fn, ctx, true);
}

ttc_status ttc_pass_manager_add_instrument(ttc_pass_manager *pm, const ttc_pass_instrument *ins) {
    TTC_TRY(ttc_grow((void **)&pm->ins, &pm->cap_ins, pm->n_ins + 1, sizeof *ins));
    pm->ins[pm->n_ins++] = *ins;
    return TTC_OK;
}

void ttc_pass_manager_set_debug(ttc_pass_manager *pm, bool on) { pm->debug = on; }

ttc_status ttc_pass_manager_dump_after(ttc_pass_manager *pm, const char *name,
                                       void (*sink)(void *, const char *, const char *), void *ctx) {
    if (name && find(pm, name) < 0) return unknown(pm, name);
    char *nm = ttc_strdup(name);
    if (name && !nm) return TTC_ERR_NOMEM;
    free(pm->dump_after);
    pm->dump_after = nm;
    pm->sink = sink;
    pm->sink_ctx = ctx;
    return TTC_OK;
}

void ttc_pass_report_free(ttc_pass_report *rep, int32_t n) {
    if (!rep) return;
    for (int32_t i = 0; i < n; i++) free(rep[i].name);
    free(rep);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

ttc_status ttc_pass_manager_run(ttc_pass_manager *pm, ttc_graph *g, ttc_pass_report **rep, int32_t *n_rep) {
    if (rep) *rep = NULL;
    if (n_rep) *n_rep = 0;
    ttc_pass_report *r = ttc_calloc((size_t)(pm->n ? pm->n : 1), sizeof *r);
    if (!r) return TTC_ERR_NOMEM;
    int32_t nr = 0;
    ttc_status s = TTC_OK;
    if (pm->debug && (s = ttc_graph_verify(g)) != TTC_OK) {
        s = ttc_fail_context(s, "before lowering");
        goto out;
    }
    for (int32_t i = 0; i < pm->n; i++) {
        pass_entry *p = &pm->passes[i];
        if (!p->enabled) continue;
        for (int32_t k = 0; k < pm->n_ins; k++)
            if (pm->ins[k].before) pm->ins[k].before(pm->ins[k].ctx, p->name, g);
        bool changed = false;
        double t0 = now_s();
        s = p->fn(g, p->ctx, &changed);
        double dt = now_s() - t0;
        if (s != TTC_OK) { s = ttc_fail_context(s, "pass %s", p->name); goto out; }
        if (!(r[nr].name = ttc_strdup(p->name))) { s = TTC_ERR_NOMEM; goto out; }
        r[nr].seconds = dt;
        r[nr].changed = changed;
        nr++;
        for (int32_t k = 0; k < pm->n_ins; k++)
            if (pm->ins[k].after) pm->ins[k].after(pm->ins[k].ctx, p->name, g, changed, dt);
        if (pm->dump_after && !strcmp(pm->dump_after, p->name)) {
            char *txt = ttc_graph_print(g);
            if (!txt) { s = TTC_ERR_NOMEM; goto out; }
            if (pm->sink) pm->sink(pm->sink_ctx, p->name, txt);
            else fprintf(stderr, "== graph after %s\n%s", p->name, txt);
            free(txt);
        }
        if (pm->debug && (s = ttc_graph_verify(g)) != TTC_OK) {
            s = ttc_fail_context(s, "graph invalid after pass %s", p->name);
            goto out;
        }
    }
out:
    if (s == TTC_OK && rep) { *rep = r; *n_rep = nr; }
    else ttc_pass_report_free(r, nr);
    return s;
}
