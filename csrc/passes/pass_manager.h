/*
 * The lowering pass manager: an explicit, ordered pipeline of named passes (no dependency
 * resolution, as in TVM). Instruments run before and after every pass: the built-in ones
 * time each pass and dump the graph's text after a named pass; in debug mode the verifier
 * runs before the pipeline and after every pass, naming the pass that broke the graph.
 * Passes can be switched off (or the off-by-default ones on) by name, and callers can
 * register their own C passes at any point of the pipeline.
 *
 * The default pipeline (pass_manager.c), in order:
 *   remove_asserts, remove_noops, constant_fold, unpack_addmm*, unpack_log_softmax*,
 *   fuse_linear, remove_flatten_linear*, fold_batch_norm, fuse_rms_norm, fuse_gelu_tanh,
 *   fuse_parallel_linear*, merge_split_views, cse, dce
 * (* = off by default: for converter sets that want them; fuse_parallel_linear where its
 * setting TORCHTRT_C_FUSE_PARALLEL_LINEAR is on, which the binding reads: py_passes.c).
 *
 *   ttc_pass_manager *pm = ttc_pass_manager_new();
 *   ttc_pass_manager_set_enabled(pm, "cse", false);
 *   ttc_pass_manager_set_debug(pm, true);
 *   ttc_pass_report *rep; int32_t n;
 *   if (ttc_pass_manager_run(pm, g, &rep, &n) == TTC_OK) { ...; ttc_pass_report_free(rep, n); }
 *   ttc_pass_manager_free(pm);
 */
#ifndef TTC_PASS_MANAGER_H
#define TTC_PASS_MANAGER_H

#include "../ir/ir.h"

/* A pass rewrites g in place and says whether it changed anything. */
typedef ttc_status (*ttc_pass_fn)(ttc_graph *g, void *ctx, bool *changed);

typedef struct ttc_pass_instrument {
    void (*before)(void *ctx, const char *pass, const ttc_graph *g);
    void (*after)(void *ctx, const char *pass, const ttc_graph *g, bool changed, double seconds);
    void *ctx;
} ttc_pass_instrument;

typedef struct ttc_pass_report {
    char *name;
    double seconds;
    bool changed;
} ttc_pass_report;

typedef struct ttc_pass_manager ttc_pass_manager;

ttc_pass_manager *ttc_pass_manager_new(void);   /* the default pipeline; NULL on OOM */
void ttc_pass_manager_free(ttc_pass_manager *pm);

int32_t ttc_pass_manager_count(const ttc_pass_manager *pm);
const char *ttc_pass_manager_name(const ttc_pass_manager *pm, int32_t i);
bool ttc_pass_manager_is_enabled(const ttc_pass_manager *pm, int32_t i);

/* TTC_ERR_INVALID_ARG for an unknown name (the message lists the known ones). */
ttc_status ttc_pass_manager_set_enabled(ttc_pass_manager *pm, const char *name, bool on);
/* Inserts a pass after `after` (NULL: at the end; "" : at the start). Names are unique. */
ttc_status ttc_pass_manager_register(ttc_pass_manager *pm, const char *name, ttc_pass_fn fn, void *ctx,
                                     const char *after);
ttc_status ttc_pass_manager_add_instrument(ttc_pass_manager *pm, const ttc_pass_instrument *ins);
void ttc_pass_manager_set_debug(ttc_pass_manager *pm, bool on);
/* After pass `name` runs, its graph text goes to sink (NULL: stderr). */
ttc_status ttc_pass_manager_dump_after(ttc_pass_manager *pm, const char *name,
                                       void (*sink)(void *ctx, const char *pass, const char *text), void *ctx);

/* Runs the enabled passes in order; *rep (may be NULL) gets one entry per pass run. On a
 * failure the message names the pass. */
ttc_status ttc_pass_manager_run(ttc_pass_manager *pm, ttc_graph *g, ttc_pass_report **rep, int32_t *n_rep);
void ttc_pass_report_free(ttc_pass_report *rep, int32_t n);

/* The passes themselves (one file each). ctx is unused unless stated. */
ttc_status ttc_pass_remove_asserts(ttc_graph *g, void *ctx, bool *changed);
ttc_status ttc_pass_remove_noops(ttc_graph *g, void *ctx, bool *changed);
ttc_status ttc_pass_constant_fold(ttc_graph *g, void *ctx, bool *changed);
ttc_status ttc_pass_unpack_addmm(ttc_graph *g, void *ctx, bool *changed);
ttc_status ttc_pass_unpack_log_softmax(ttc_graph *g, void *ctx, bool *changed);
ttc_status ttc_pass_fuse_linear(ttc_graph *g, void *ctx, bool *changed);
ttc_status ttc_pass_remove_flatten_linear(ttc_graph *g, void *ctx, bool *changed);
ttc_status ttc_pass_fold_batch_norm(ttc_graph *g, void *ctx, bool *changed);
ttc_status ttc_pass_fuse_parallel_linear(ttc_graph *g, void *ctx, bool *changed);
ttc_status ttc_pass_fuse_rms_norm(ttc_graph *g, void *ctx, bool *changed);
/* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) -> aten.gelu(x, approximate="tanh") (passes/fuse_gelu_tanh.c) */
ttc_status ttc_pass_fuse_gelu_tanh(ttc_graph *g, void *ctx, bool *changed);
/* reshape(merge) -> permute -> reshape(split back) as one split reshape and one permute */
ttc_status ttc_pass_merge_split_views(ttc_graph *g, void *ctx, bool *changed);
ttc_status ttc_pass_cse(ttc_graph *g, void *ctx, bool *changed);
ttc_status ttc_pass_dce(ttc_graph *g, void *ctx, bool *changed);

/* Constant folding folds ops on constant tensors of at most this many elements. */
#define TTC_FOLD_MAX_NUMEL (1 << 20)

#endif
