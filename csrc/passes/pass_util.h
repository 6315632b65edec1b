/*
 * Helpers shared by the lowering passes: value replacement that also updates the graph's
 * outputs, O(n) bulk erasure (graph.c's erase is O(n) per node), turning a node into a
 * constant in place (no insertion, so folding stays linear), and small constant readers.
 *
 *   ttc_pass_replace_value(g, n->outputs[0], n->inputs[0]);   // users and graph outputs
 *   kill[n->order] = true;
 *   TTC_TRY(ttc_pass_erase_marked(g, kill));                   // one compaction
 */
#ifndef TTC_PASS_UTIL_H
#define TTC_PASS_UTIL_H

#include "../ir/ir.h"

/* Every use of old (node inputs and graph outputs) becomes repl. */
ttc_status ttc_pass_replace_value(ttc_graph *g, ttc_value *old, ttc_value *repl);

/* Erases every node i with kill[i] (indexed by position in g->nodes) in one pass. Fails,
 * erasing nothing, if a killed node's output is a graph output or used by a live node. */
ttc_status ttc_pass_erase_marked(ttc_graph *g, const bool *kill);
/* The same for a list of nodes (each listed once). */
ttc_status ttc_pass_erase_nodes(ttc_graph *g, ttc_node *const *nodes, int32_t n);

/* Turns n into prim.Constant with the given value attribute (copied); its single output
 * keeps its name, users and type. n's inputs are released. */
ttc_status ttc_pass_make_constant(ttc_node *n, const ttc_attr *value);

/* The tensor constant behind v (NULL if v is not one). */
const ttc_attr *ttc_pass_tensor_const(const ttc_value *v);

/* An int / float / none constant input, with a default when the input is None. */
bool ttc_pass_int_arg(const ttc_value *v, int64_t dflt, int64_t *out);
bool ttc_pass_float_arg(const ttc_value *v, double dflt, double *out);

/* True when v is one of the graph's outputs. */
bool ttc_pass_is_output(const ttc_graph *g, const ttc_value *v);

/* v's live producer when v is its only output, v has one use and is not a graph output, and
 * the producer is op (TTC_OP_COUNT: any op); NULL otherwise (also for v NULL). What a fusion
 * may swallow without changing another consumer. */
ttc_node *ttc_pass_single_use_producer(const ttc_graph *g, const ttc_value *v, ttc_op_id op);

/* A float32 tensor value. */
bool ttc_pass_is_f32(const ttc_value *v);

/* Normalises dim d against rank (negative counts from the end); false when out of range. */
bool ttc_pass_norm_dim(int64_t d, int32_t rank, int64_t *out);

#endif
