/*
 * Capability: can this node run on OpenCL (or on a given backend), and if not, why.
 *
 * The partitioner does not link against the converter registry: the support question is a
 * hook in the settings (settings.support), so that C tests can state "lgamma and
 * log_sigmoid are unsupported" and the binding can plug in csrc/convert/registry.h.
 * The hook answers "a converter exists and its validator accepts this node"; the
 * capability check adds what the settings say (forced nodes, torch_executed_ops, impure
 * ops, dynamic shapes), in that order, and records the first reason that applies:
 *
 *   "forced: <reason>"                 settings.forced_nodes
 *   "in torch_executed_ops"
 *   "impure"
 *   "no converter for aten.lgamma.default" / "validator: <why>"   from the hook
 *   "dynamic shapes not supported by converter"
 *
 *   static bool no_lgamma(const ttc_graph *g, const ttc_node *n,
 *                         const ttc_partition_settings *s, char **why, bool *dyn) {
 *       if (n->op != TTC_OP_LGAMMA) { *dyn = true; return true; }
 *       *why = ttc_strfmt("no converter for %s", n->op_name);
 *       return false;
 *   }
 */
#ifndef TTC_CAPABILITY_H
#define TTC_CAPABILITY_H

#include "../ir/ir.h"

struct ttc_partition_settings;

/* True when n can run on the backend. On false, *why_not gets a malloc'd reason (may be
 * left NULL: then "no converter for <op>" is used). *dynamic_ok (preset false) says
 * whether the converter handles symbolic dims. The hook reads settings->support_ctx. */
typedef bool (*ttc_support_fn)(const ttc_graph *g, const ttc_node *n,
                               const struct ttc_partition_settings *s,
                               char **why_not, bool *dynamic_ok);

/* A backend of the hierarchical strategy. With use_support set it asks settings.support
 * (the converter registry); otherwise it supports exactly the ops matched by `ops`
 * (same spellings as torch_executed_ops), all of them dynamic-capable. */
typedef struct ttc_backend_spec {
    const char *name;
    const char *const *ops;
    int32_t n_ops;
    bool use_support;
} ttc_backend_spec;

typedef struct ttc_partition_settings {
    int32_t min_block_size;                   /* default 5 */
    const char *const *torch_executed_ops;    /* "aten.add.Tensor", "torch.ops.aten.add.Tensor", "aten::add" */
    int32_t n_torch_executed_ops;
    const char *const *forced_nodes;          /* node names forced to torch ... */
    const char *const *forced_reasons;        /* ... and why (may be NULL entries) */
    int32_t n_forced;
    bool require_full_compilation;
    int32_t strategy;                         /* ttc_partition_strategy */
    bool assume_dynamic_shape_support;
    bool fp16;                                /* passed on to validators through the hook */
    bool enable_resource_partitioning;
    int64_t cpu_memory_budget;                /* bytes; <= 0: available memory / 4 */
    const ttc_backend_spec *backends;         /* hierarchical, in priority order */
    int32_t n_backends;
    /* Extra atomic subgraphs for resource partitioning, one string each:
     * "aten.mm.default -> aten.relu.default|aten.gelu.default" */
    const char *const *atomic_patterns;
    int32_t n_atomic_patterns;
    ttc_support_fn support;                   /* NULL: nothing is supported */
    void *support_ctx;
} ttc_partition_settings;

/* Whether op name `op` ("aten.add.Tensor") matches a user spelling of an op:
 * "aten.add.Tensor", "torch.ops.aten.add.Tensor", "aten::add" or "aten.add" (every
 * overload of the packet). */
bool ttc_op_name_matches(const char *op, const char *pattern);

/* The capability answer for one node on the backend that settings.support describes.
 * Returns true when supported; otherwise *reason gets a malloc'd reason. Fails (returns
 * false with *reason NULL and an error set) only on OOM. */
bool ttc_node_capable(const ttc_graph *g, const ttc_node *n, const ttc_partition_settings *s,
                      char **reason);
/* Same check against backend b of the hierarchical strategy. */
bool ttc_node_capable_on(const ttc_graph *g, const ttc_node *n, const ttc_partition_settings *s,
                         const ttc_backend_spec *b, char **reason);
/* True when any tensor input or output of n has a symbolic dim. */
bool ttc_node_has_dynamic_shapes(const ttc_node *n);

#endif
