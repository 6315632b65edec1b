/*
 * The partitioner's support hook backed by the converter registry (csrc/convert/registry.h),
 * here in the binding, which sits above both (the partitioner never includes the conversion),
 * with the partitioner's wording: "no converter for <op>" when the registry has none ("<op>: the
 * schema has N inputs, the table knows M" for a known op of another arity), otherwise
 * "validator: <why>".
 *
 *   s.support = ttc_partition_registry_support;
 */
#include "py_registry_support.h"
#include "../convert/registry.h"

#include <stdlib.h>

bool ttc_partition_registry_support(const ttc_graph *g, const ttc_node *n, const ttc_partition_settings *s,
                                    char **why_not, bool *dynamic_ok) {
    if (!ttc_converter_get(n->op) && !ttc_is_symint_arith(n)) {  /* size arithmetic: no kernel */
        /* a known op whose schema grew (or shrank) an argument was imported as opaque;
         * some known ops never convert, for a stated reason (issue 11) */
        const char *never = ttc_never_converted_reason(n->op);
        if (!(*why_not = ttc_node_schema_mismatch(n)))
            *why_not = never ? ttc_strfmt("%s: %s", n->op_name, never) : ttc_strfmt("no converter for %s", n->op_name);
        return false;
    }
    char *w = NULL;
    if (ttc_op_supported(g, n, s->fp16, &w, dynamic_ok)) { free(w); return true; }
    *why_not = ttc_strfmt("validator: %s", w ? w : "rejected");
    free(w);
    return false;
}
