/* Shape functions (filled in next). */
#include "ir.h"
ttc_status ttc_infer_types(const ttc_graph *g, const ttc_node *n, ttc_type *out, int32_t n_out) {
    (void)g; (void)out; (void)n_out;
    return ttc_fail(TTC_ERR_UNSUPPORTED, "no shape function for %s", n->op_name);
}
