/* Capability: the per-node "can this run on the backend, and if not, why" answer. */
#include "capability.h"

#include <stdlib.h>
#include <string.h>

/* Normalises a user spelling into "ns.name[.overload]" in buf; returns the number of
 * dot-separated parts (2 = a packet: every overload matches). */
static int normalise(const char *p, char *buf, size_t cap) {
    if (!strncmp(p, "torch.ops.", 10)) p += 10;
    size_t j = 0;
    for (size_t i = 0; p[i] && j + 1 < cap; i++) {
        if (p[i] == ':' && p[i + 1] == ':') { buf[j++] = '.'; i++; continue; }
        buf[j++] = p[i];
    }
    buf[j] = 0;
    int parts = 1;
    for (size_t i = 0; i < j; i++) parts += buf[i] == '.';
    return parts;
}

bool ttc_op_name_matches(const char *op, const char *pattern) {
    if (!op || !pattern) return false;
    char buf[256];
    int parts = normalise(pattern, buf, sizeof buf);
    if (!strcmp(op, buf)) return true;
    if (parts != 2) return false;
    size_t l = strlen(buf);
    return !strncmp(op, buf, l) && op[l] == '.' && !strchr(op + l + 1, '.');
}

bool ttc_node_has_dynamic_shapes(const ttc_node *n) {
    for (int side = 0; side < 2; side++) {
        int32_t cnt = side ? n->n_outputs : n->n_inputs;
        ttc_value *const *vs = side ? n->outputs : n->inputs;
        for (int i = 0; i < cnt; i++) {
            const ttc_type *t = &vs[i]->type;
            if (t->kind != TTC_TYPE_TENSOR) continue;
            if (t->rank < 0) return true;
            for (int d = 0; d < t->rank; d++)
                if (!ttc_dim_is_const(t->dims[d])) return true;
        }
    }
    return false;
}

/* ATen names in-place overloads with a trailing underscore ("aten.resize_.default"). */
static bool in_place(const char *op) {
    const char *dot = op ? strrchr(op, '.') : NULL;
    return dot && dot > op && dot[-1] == '_' && strncmp(op, "aten.", 5) == 0 && dot - op > 6;
}

/* The settings-level reasons, common to every backend. NULL when none applies. */
static char *forced_reason(const ttc_node *n, const ttc_partition_settings *s, bool *oom) {
    char *r = NULL;
    for (int i = 0; i < s->n_forced && n->name; i++)
        if (s->forced_nodes[i] && !strcmp(s->forced_nodes[i], n->name)) {
            const char *why = s->forced_reasons && s->forced_reasons[i] ? s->forced_reasons[i] : "forced to torch";
            r = ttc_strfmt("forced: %s", why);
            goto out;
        }
    for (int i = 0; i < s->n_torch_executed_ops; i++)
        if (ttc_op_name_matches(n->op_name, s->torch_executed_ops[i])) {
            r = ttc_strdup("in torch_executed_ops");
            goto out;
        }
    {
        const ttc_op_info *info = ttc_op_info_get(n->op);
        if (info && (info->flags & TTC_OPF_IMPURE))
            r = ttc_strdup(in_place(n->op_name) ? "impure (in-place: mutates its input, stays with torch)" : "impure");
        else return NULL;
    }
out:
    if (!r) *oom = true;
    return r;
}

static bool ask_hook(const ttc_graph *g, const ttc_node *n, const ttc_partition_settings *s, char **reason) {
    char *why = NULL;
    bool dyn = false;
    bool ok = s->support && s->support(g, n, s, &why, &dyn);
    if (!ok) {
        *reason = why ? why : ttc_strfmt("no converter for %s", n->op_name);
        return false;
    }
    free(why);
    if (!dyn && !s->assume_dynamic_shape_support && ttc_node_has_dynamic_shapes(n)) {
        *reason = ttc_strdup("dynamic shapes not supported by converter");
        return false;
    }
    return true;
}

bool ttc_node_capable(const ttc_graph *g, const ttc_node *n, const ttc_partition_settings *s, char **reason) {
    bool oom = false;
    *reason = forced_reason(n, s, &oom);
    if (*reason || oom) return false;
    return ask_hook(g, n, s, reason);
}

bool ttc_node_capable_on(const ttc_graph *g, const ttc_node *n, const ttc_partition_settings *s,
                         const ttc_backend_spec *b, char **reason) {
    bool oom = false;
    *reason = forced_reason(n, s, &oom);
    if (*reason || oom) return false;
    if (b->use_support) return ask_hook(g, n, s, reason);
    for (int i = 0; i < b->n_ops; i++)
        if (ttc_op_name_matches(n->op_name, b->ops[i])) return true;
    *reason = ttc_strfmt("%s has no support for %s", b->name ? b->name : "backend", n->op_name);
    return false;
}
