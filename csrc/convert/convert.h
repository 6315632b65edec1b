/*
 * The conversion context: one per segment graph, turning IR nodes into kernel-IR ops.
 *
 * It keeps the value -> engine tensor map and the map of evaluated static values. Static
 * values (prim.Constant, prim.ListConstruct of constants, ...) are evaluated on demand,
 * recursively, the first time a converter asks for them. Converters read their arguments
 * by position through the ttc_cx_* accessors, which fail with a message naming the node
 * and the argument, and record their results with ttc_cx_set_output.
 *
 *   static ttc_status convert_relu(ttc_conv_ctx *cx, const ttc_node *n) {
 *       int32_t x;
 *       TTC_TRY(ttc_cx_tensor(cx, n, 0, &x));
 *       ...emit kernel IR into cx->k...
 *       return ttc_cx_set_output(cx, n, 0, y);
 *   }
 */
#ifndef TTC_CONVERT_H
#define TTC_CONVERT_H

#include "../target/target.h"
#include "../kir/kir.h"
#include "registry.h"

typedef enum ttc_ival_kind {
    TTC_IVAL_UNSET = 0, TTC_IVAL_NONE, TTC_IVAL_INT, TTC_IVAL_FLOAT, TTC_IVAL_BOOL,
    TTC_IVAL_STR, TTC_IVAL_INTS, TTC_IVAL_FLOATS, TTC_IVAL_TENSORS,
} ttc_ival_kind;

/* An evaluated static value. */
typedef struct ttc_ival {
    ttc_ival_kind kind;
    int64_t i;
    double f;
    char *s;
    int64_t *ints;        /* INTS (also BOOLS) */
    double *floats;
    int32_t *tensors;     /* TENSORS: engine tensor ids (a list of tensors, for cat/stack) */
    int32_t n;
} ttc_ival;

typedef struct ttc_conv_ctx {
    const ttc_graph *g;
    ttc_kir *k;
    int32_t *tensor_of;   /* value id -> engine tensor id, -1 when none */
    ttc_ival *ival_of;    /* value id -> evaluated static value */
    int32_t n_values;
    bool fp16;            /* engine precision: compute floating intermediates in half */
    bool split_k;         /* convolutions may split their reduction (GPU kernels; see conv_nn.c) */
    int32_t ksplit_cap;   /* most split-K slices (the target's conv_ksplit_cap) */
    const ttc_target *tg; /* the engine's target (NULL: none, no tensor-core convolutions) */
} ttc_conv_ctx;

/* Converts a whole segment graph into kernel IR (engine inputs/outputs = graph's). */
ttc_status ttc_convert_graph(const ttc_graph *g, bool fp16, ttc_kir **out);
/* The same for the engine's target: without the GPU kernel families (a CPU device running its
 * own kernel families) convolutions stay unsplit, split-K only fills a GPU. tg NULL (and
 * ttc_convert_graph): split-K allowed, at most 32 slices. */
ttc_status ttc_convert_graph_for(const ttc_graph *g, bool fp16, const ttc_target *tg, ttc_kir **out);

/* ---- argument accessors (i = input position in the ATen schema) ---- */
ttc_status ttc_cx_tensor(ttc_conv_ctx *cx, const ttc_node *n, int32_t i, int32_t *tid);
bool ttc_cx_is_tensor(ttc_conv_ctx *cx, const ttc_node *n, int32_t i);
bool ttc_cx_is_none(ttc_conv_ctx *cx, const ttc_node *n, int32_t i);
ttc_status ttc_cx_eval(ttc_conv_ctx *cx, const ttc_node *n, int32_t i, const ttc_ival **out);
ttc_status ttc_cx_int(ttc_conv_ctx *cx, const ttc_node *n, int32_t i, int64_t *v);
ttc_status ttc_cx_float(ttc_conv_ctx *cx, const ttc_node *n, int32_t i, double *v);
ttc_status ttc_cx_bool(ttc_conv_ctx *cx, const ttc_node *n, int32_t i, bool *v);
/* A list of ints (an int is accepted as a list of one); *v points into the context. */
ttc_status ttc_cx_ints(ttc_conv_ctx *cx, const ttc_node *n, int32_t i, const int64_t **v, int32_t *len);
ttc_status ttc_cx_tensors(ttc_conv_ctx *cx, const ttc_node *n, int32_t i, const int32_t **v, int32_t *len);
ttc_status ttc_cx_set_output(ttc_conv_ctx *cx, const ttc_node *n, int32_t i, int32_t tid);

/* Helpers shared by converters. */
static inline const ttc_et *ttc_cx_et(ttc_conv_ctx *cx, int32_t tid) { return &cx->k->ts[tid]; }
/* The dtype in which floating intermediates are stored (float16 in fp16 mode). */
ttc_dtype ttc_cx_float_dtype(ttc_conv_ctx *cx, ttc_dtype declared);
/* Normalises a dim index (negative counts from the end); fails naming the node. */
ttc_status ttc_cx_dim(const ttc_node *n, int64_t d, int32_t rank, int32_t *out);
/* A contiguous copy of tensor t when it is not statically dense (else t itself). */
ttc_status ttc_cx_contiguous(ttc_conv_ctx *cx, int32_t t, const char *name, int32_t *out);

#endif
