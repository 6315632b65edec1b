/*
 * The partitioner: decides, for every node of a lowered graph, whether it runs on OpenCL
 * (or another registered backend) or stays in torch, and cuts the graph into segments.
 *
 * Pipeline (partition.c):
 *   1. capability (capability.c): a target and a reason for every node;
 *   2. segmentation by strategy: naive linear scan, fast (dependency aware, seeds/000),
 *      global (fewest segments), hierarchical (fast over several backends);
 *   3. merge of adjacent same-target segments (respecting do_not_merge);
 *   4. fix-up, repeated until stable: OpenCL segments with fewer than min_block_size compute
 *      ops go back to torch, and so do nodes that would pass a non-tensor value (a list, an
 *      opaque object) across an OpenCL segment boundary;
 *   5. resource partitioning (resource.c): split OpenCL segments whose weights exceed the
 *      memory budget, keeping atomic subgraphs (conv->bn->act, ...) whole.
 *
 * Constants are not segmented. prim.Constant nodes, and prim.ListConstruct/TupleConstruct
 * built only from constants, keep segment -1 and target -1; each segment lists the ones
 * it uses in `constants` (in graph order) and its consumer re-materialises them (the same
 * thing ttc_graph_extract does). Segment inputs therefore never include constants.
 *
 * The result is written into the nodes (target, segment, reason) and returned.
 *
 *   ttc_partition_settings s;
 *   ttc_partition_settings_init(&s);
 *   s.min_block_size = 1;
 *   s.support = my_support;              // e.g. the converter registry (py_partition.c)
 *   ttc_partition_result *r = NULL;
 *   if (ttc_partition(g, &s, &r) != TTC_OK) fprintf(stderr, "%s\n", ttc_last_error());
 *   for (int i = 0; i < r->n_segments; i++) printf("%s\n", r->targets[r->segments[i].target]);
 *   ttc_partition_result_free(r);
 */
#ifndef TTC_PARTITION_H
#define TTC_PARTITION_H

#include "../ir/ir.h"
#include "capability.h"

typedef enum ttc_partition_strategy {
    TTC_PARTITION_FAST = 0,
    TTC_PARTITION_GLOBAL,
    TTC_PARTITION_HIERARCHICAL,
    TTC_PARTITION_NAIVE,
} ttc_partition_strategy;

/* Target indices in every result: 0 is torch, 1 the preferred backend ("opencl", or the
 * first of settings.backends for the hierarchical strategy), then the other backends. */
#define TTC_TARGET_TORCH 0

typedef struct ttc_segment {
    int32_t target;
    bool do_not_merge;
    ttc_node **nodes;         /* in graph order (a topological order) */
    int32_t n_nodes;
    ttc_value **inputs;       /* graph inputs or outputs of earlier segments; no constants */
    int32_t n_inputs;
    ttc_value **outputs;      /* used by later segments or graph outputs */
    int32_t n_outputs;
    ttc_node **constants;     /* constant nodes it uses (to re-materialise), graph order */
    int32_t n_constants;
    int64_t weight_bytes;     /* bytes of tensor constants it uses */
} ttc_segment;

typedef struct ttc_partition_result {
    char **targets;           /* names, [0] = "torch" */
    int32_t n_targets;
    ttc_segment *segments;    /* a valid topological order */
    int32_t n_segments;
} ttc_partition_result;

void ttc_partition_settings_init(ttc_partition_settings *s);

/* The hook the binding sets is backed by the converter registry (python/py_registry_support.c,
 * above both layers, so that the partitioner never includes the conversion). */

/* Partitions g (whose node array must be in topological order, as the verifier demands).
 * Writes target/segment/reason into every node. With require_full_compilation, fails with
 * TTC_ERR_PARTITION listing every node that cannot run on the preferred backend. */
ttc_status ttc_partition(ttc_graph *g, const ttc_partition_settings *s, ttc_partition_result **out);
void ttc_partition_result_free(ttc_partition_result *r);

/* Coverage, like get_graph_converter_support: over non-constant nodes. */
typedef struct ttc_coverage_op {
    char *op;                 /* op name */
    int32_t supported, total;
} ttc_coverage_op;

typedef struct ttc_coverage {
    int32_t supported, total;
    ttc_coverage_op *ops;     /* sorted by op name */
    int32_t n_ops;
    ttc_node **fallback;      /* nodes that fall back, in graph order */
    char **reasons;           /* reasons[i] for fallback[i] */
    int32_t n_fallback;
} ttc_coverage;

ttc_status ttc_partition_coverage(const ttc_graph *g, const ttc_partition_settings *s, ttc_coverage **out);
void ttc_coverage_free(ttc_coverage *c);

/* ---- internals shared by the partition/ files ---- */

/* Working state: per node (indexed by position in g->nodes). */
typedef struct ttc_part_state {
    const ttc_graph *g;
    const ttc_partition_settings *s;
    int32_t n;                /* g->n_nodes */
    int32_t n_targets;
    bool *constlike;          /* constant node or list of constants: not segmented */
    int32_t *target;          /* current target per node (-1 for constlike) */
    int32_t *want;            /* capability answer (before min_block_size etc.) */
    char **reason;            /* malloc'd, NULL when on the preferred backend */
    bool *isolate;            /* control flow: a segment of its own, never merged */
    int32_t *seg;             /* segment per node after segmentation */
    bool *seg_nomerge;        /* per segment */
    int32_t n_segs;
} ttc_part_state;

/* Strategies: fill st->seg / st->n_segs / st->seg_nomerge from st->target. */
ttc_status ttc_part_segment_naive(ttc_part_state *st);
ttc_status ttc_part_segment_fast(ttc_part_state *st);   /* any number of targets */
ttc_status ttc_part_segment_global(ttc_part_state *st); /* two targets */
/* Merges adjacent segments of the same target unless either is do_not_merge; renumbers. */
ttc_status ttc_part_merge_adjacent(ttc_part_state *st);
/* Resource partitioning (resource.c): splits backend segments over the memory budget. */
ttc_status ttc_part_split_resources(ttc_part_state *st);
/* The memory budget in bytes: settings.cpu_memory_budget, else available memory / 4. */
int64_t ttc_part_memory_budget(const ttc_partition_settings *s);
/* Builds inputs/outputs/constants of every segment from per-node segments. */
ttc_status ttc_part_build_segments(ttc_part_state *st, ttc_partition_result *r);
/* Compute ops count toward min_block_size: not prim, not views, not constants. */
bool ttc_part_is_compute(const ttc_node *n);

#endif
