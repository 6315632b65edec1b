/*
 * The converter registry: the single source of truth for what runs on OpenCL.
 *
 * An op is supported iff the converter column of its ops.def row names a converter;
 * registry.c builds this table from those rows. Each entry has the converter (IR node ->
 * kernel-IR ops), an optional validator (says no, with a reason, for argument combinations
 * the converter cannot handle) and flags.
 *
 *   char *why = NULL; bool dyn = false;
 *   if (!ttc_op_supported(g, n, false, &why, &dyn)) printf("%s: %s\n", n->name, why);
 *   free(why);
 *
 * See csrc/convert/README.md for how to add a converter.
 */
#ifndef TTC_CONVERT_REGISTRY_H
#define TTC_CONVERT_REGISTRY_H

#include "../ir/ir.h"

struct ttc_conv_ctx;

/* Converts node n: reads its inputs through the context, records its outputs. */
typedef ttc_status (*ttc_convert_fn)(struct ttc_conv_ctx *cx, const ttc_node *n);
/* Returns true when n can be converted; otherwise sets *why_not (malloc'd). */
typedef bool (*ttc_validate_fn)(const ttc_graph *g, const ttc_node *n, bool fp16, char **why_not);

enum {
    TTC_CONVF_DYNAMIC = 1u << 0,  /* handles symbolic dims (sizes are kernel arguments) */
    TTC_CONVF_EVAL    = 1u << 1,  /* a static-value evaluator (prim nodes), no kernels */
};

typedef struct ttc_converter {
    ttc_convert_fn convert;
    ttc_validate_fn validate;     /* NULL: every node of this op is accepted */
    uint32_t flags;
    const char *never;            /* no converter, ever, for this reason (NEVER("why")); else NULL */
} ttc_converter;

/* The registry entry for op (NULL when there is no converter). */
const ttc_converter *ttc_converter_get(ttc_op_id op);

/* Whether node n can run on OpenCL. fp16: the engine would compute in half precision.
 * why_not (may be NULL) gets a malloc'd reason when false; dynamic_ok (may be NULL) says
 * whether the converter handles symbolic dims. */
bool ttc_op_supported(const ttc_graph *g, const ttc_node *n, bool fp16, char **why_not,
                      bool *dynamic_ok);

/* Python int arithmetic on sizes (operator.mul/floordiv/... on SymInts, imported as opaque
 * "py.<name>" nodes with int inputs and outputs): supported with no kernel, like sym_size.
 * Only view/expand-like sizes use them, and those converters read dims from the IR types;
 * a converter that needs the number fails naming the node (convert.c). */
bool ttc_is_symint_arith(const ttc_node *n);
/* Their names, NULL-terminated ("py.mul", "py.floordiv", ...). */
extern const char *const ttc_symint_arith_ops[];
/* Why a known op never converts whatever its arguments (data-dependent output shape,
 * in-place storage change), for the partition report; NULL for other ops. */
const char *ttc_never_converted_reason(ttc_op_id op);

#endif
