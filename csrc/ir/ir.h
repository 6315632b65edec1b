/*
 * Graph IR: one node struct for every op, values with types, symbolic dims.
 *
 * A graph owns everything reachable from it. Nodes are kept in a flat array in program
 * order (g->nodes[0..n_nodes)); passes that insert or erase nodes keep it in order.
 * Values are produced by nodes (or are graph inputs) and remember their users.
 *
 * Literals (ints, floats, lists of ints, None, strings) and weights are produced by
 * prim.Constant nodes, lists of values by prim.ListConstruct, as in TorchScript. Every
 * node's inputs follow the ATen schema's argument order (kwarg-only arguments included,
 * defaults filled in by the importer), so converters read arguments by position.
 *
 *   ttc_graph *g = ttc_graph_new();
 *   ttc_type t = ttc_type_tensor(TTC_DTYPE_FLOAT32, 2, (int64_t[]){2, 3});
 *   ttc_value *x = ttc_graph_add_input(g, "x", &t);
 *   ttc_node *n = ttc_graph_append_node(g, "aten.relu.default", &x, 1, &t, 1, "relu");
 *   ttc_graph_set_outputs(g, &n->outputs[0], 1);
 *
 * Dims are affine in at most one symbol: value = mul * sym + add (sym < 0: the constant
 * `add`). That covers dynamic batch through flatten/reshape/view; a shape that needs more
 * makes the op unsupported for dynamic shapes (it falls back to torch), never wrong.
 */
#ifndef TTC_IR_H
#define TTC_IR_H

#include "../include/torchtrt_c.h"
#include "../common/status.h"

#define TTC_MAX_RANK 8

typedef struct ttc_dim {
    int32_t sym;  /* index into g->syms, or -1 for a concrete dim */
    int64_t mul;  /* coefficient of the symbol (ignored when sym < 0) */
    int64_t add;  /* constant term; the whole value when sym < 0 */
} ttc_dim;

static inline ttc_dim ttc_dim_const(int64_t v) { ttc_dim d = {-1, 0, v}; return d; }
static inline ttc_dim ttc_dim_sym(int32_t s) { ttc_dim d = {s, 1, 0}; return d; }
static inline bool ttc_dim_is_const(ttc_dim d) { return d.sym < 0; }
static inline bool ttc_dim_eq(ttc_dim a, ttc_dim b) {
    if (a.sym < 0 || b.sym < 0) return a.sym == b.sym && a.add == b.add;
    return a.sym == b.sym && a.mul == b.mul && a.add == b.add;
}

/* Affine dim arithmetic (dim.c): false when the result is not affine in one symbol or
 * overflows. floordiv needs k > 0 dividing the coefficient; divexact needs b to divide a. */
static inline int64_t ttc_i64_floordiv(int64_t a, int64_t b) { /* b != 0; rounds toward -inf */
    int64_t q = a / b;
    return (a % b != 0) && ((a < 0) != (b < 0)) ? q - 1 : q;
}
bool ttc_dim_add(ttc_dim a, ttc_dim b, ttc_dim *r);
bool ttc_dim_add_const(ttc_dim a, int64_t c, ttc_dim *r);
bool ttc_dim_mul_const(ttc_dim a, int64_t k, ttc_dim *r);
bool ttc_dim_mul(ttc_dim a, ttc_dim b, ttc_dim *r);
bool ttc_dim_floordiv(ttc_dim a, int64_t k, ttc_dim *r);
bool ttc_dim_divexact(ttc_dim a, ttc_dim b, ttc_dim *r);

typedef struct ttc_symbol {
    char *name;      /* "s0" */
    int64_t min, opt, max;
} ttc_symbol;

typedef enum ttc_type_kind {
    TTC_TYPE_TENSOR = 0,
    TTC_TYPE_INT,
    TTC_TYPE_FLOAT,
    TTC_TYPE_BOOL,
    TTC_TYPE_STR,
    TTC_TYPE_NONE,
    TTC_TYPE_LIST,    /* elem says of what: INT, FLOAT, BOOL, TENSOR, or ANY */
    TTC_TYPE_ANY,     /* opaque values (devices, layouts, objects of unknown ops) */
    TTC_TYPE_KIND_COUNT
} ttc_type_kind;

typedef struct ttc_type {
    ttc_type_kind kind;
    ttc_type_kind elem;    /* for LIST */
    ttc_dtype dtype;       /* for TENSOR */
    int32_t rank;          /* for TENSOR; -1 = unknown rank */
    ttc_dim dims[TTC_MAX_RANK];
} ttc_type;

/* The floating dtypes engines take: float32 and float16, and bfloat16, which engines only
 * store (inputs, outputs, weights): they compute bfloat16 graphs in float (convert.c). */
static inline bool ttc_dtype_engine_float(ttc_dtype d) {
    return d == TTC_DTYPE_FLOAT32 || d == TTC_DTYPE_FLOAT16 || d == TTC_DTYPE_BFLOAT16;
}

ttc_type ttc_type_scalar(ttc_type_kind kind);
ttc_type ttc_type_list(ttc_type_kind elem);
ttc_type ttc_type_tensor(ttc_dtype dtype, int32_t rank, const int64_t *shape);
bool ttc_type_eq(const ttc_type *a, const ttc_type *b);
bool ttc_type_is_static(const ttc_type *t);            /* tensor with all dims concrete */
int64_t ttc_type_numel_static(const ttc_type *t);       /* -1 if not static */

/* ---- tensor data (weights): held without copying where the source allows ---- */
typedef struct ttc_tensor_data {
    void *data;              /* contiguous, row-major */
    size_t nbytes;
    void (*release)(void *owner);  /* called once when the last reference goes */
    void *owner;
    int32_t refcount;
} ttc_tensor_data;

/* Wraps external memory (release(owner) called at the end) or copies when owner==NULL
 * and copy==true. Returns NULL on allocation failure (error set). */
ttc_tensor_data *ttc_tensor_data_wrap(void *data, size_t nbytes, void (*release)(void *), void *owner);
ttc_tensor_data *ttc_tensor_data_copy(const void *data, size_t nbytes);
ttc_tensor_data *ttc_tensor_data_ref(ttc_tensor_data *d);
/* Whether d is memory the core allocated itself (a copy, or a buffer it made and handed over
 * with free as the release) rather than a view of someone else's (torch's parameters). */
bool ttc_tensor_data_core_owned(const ttc_tensor_data *d);
void ttc_tensor_data_unref(ttc_tensor_data *d);
/* Tensor data alive now, process-wide, and its bytes (the weights graphs and engines hold in
 * host memory, wrapped or copied: leak checks). */
void ttc_tensor_data_stats(int64_t *live, int64_t *bytes);

/* ---- attributes (only prim.Constant carries `value`; passes may tag others) ---- */
typedef enum ttc_attr_kind {
    TTC_ATTR_NONE = 0,
    TTC_ATTR_INT,
    TTC_ATTR_FLOAT,
    TTC_ATTR_BOOL,
    TTC_ATTR_STR,
    TTC_ATTR_INTS,
    TTC_ATTR_FLOATS,
    TTC_ATTR_BOOLS,
    TTC_ATTR_TENSOR,
} ttc_attr_kind;

typedef struct ttc_attr {
    char *name;
    ttc_attr_kind kind;
    int64_t i;            /* INT, BOOL */
    double f;             /* FLOAT */
    char *s;              /* STR; for TENSOR the tensor's name (printed, may be NULL) */
    int64_t *ints;        /* INTS, BOOLS */
    double *floats;       /* FLOATS */
    int32_t n;            /* length of ints/floats */
    ttc_tensor_data *tensor; /* TENSOR: dtype/shape are the output value's type */
} ttc_attr;

/* ---- op table (see ops.def) ---- */
typedef enum ttc_op_id {
#define TTC_OP(id, name, n_in, n_out, flags, shape, conv) TTC_OP_##id,
#include "ops.def"
#undef TTC_OP
    TTC_OP_COUNT,
    TTC_OP_OPAQUE = TTC_OP_COUNT  /* an op the table does not know: node keeps its name */
} ttc_op_id;

enum {
    TTC_OPF_ELEMENTWISE = 1u << 0,
    TTC_OPF_REDUCTION   = 1u << 1,
    TTC_OPF_VIEW        = 1u << 2,  /* no compute: does not count for min_block_size */
    TTC_OPF_IMPURE      = 1u << 3,  /* side effects: never removed, never on OpenCL */
    TTC_OPF_PRIM        = 1u << 4,  /* prim.* structural node (constant, list, tuple access) */
    TTC_OPF_NOOP_INFER  = 1u << 5,  /* identity at inference (dropout, clone, ...) */
};

struct ttc_node;
struct ttc_graph;
/* Computes output types from input types; may fail with TTC_ERR_UNSUPPORTED. */
typedef ttc_status (*ttc_shape_fn)(const struct ttc_graph *g, const struct ttc_node *n,
                                   ttc_type *out_types, int32_t n_out);

typedef struct ttc_op_info {
    ttc_op_id id;
    const char *name;     /* ATen overload name, "aten.relu.default", or "prim.Constant" */
    int32_t n_inputs;     /* -1: variadic */
    int32_t n_outputs;    /* -1: variadic */
    uint32_t flags;
} ttc_op_info;

const ttc_op_info *ttc_op_info_get(ttc_op_id id);      /* NULL for OPAQUE/out of range */
ttc_op_id ttc_op_lookup(const char *name);             /* TTC_OP_OPAQUE if unknown */
/* Whether n_in inputs and n_out outputs fit info's arity (true for info NULL: opaque). */
bool ttc_op_arity_ok(const ttc_op_info *info, int32_t n_in, int32_t n_out);
struct ttc_node;
/* For a node whose name the table knows but whose arity differs (so it was imported as
 * opaque): a malloc'd reason ("<op>: the schema has 8 inputs, the table knows 7"); else NULL. */
char *ttc_node_schema_mismatch(const struct ttc_node *n);
/* dropout / native_dropout that leaves its input as is (p = 0 or train = false, constants):
 * only those are no-ops at inference; a training-mode dropout stays in torch. */
bool ttc_dropout_is_identity(const struct ttc_node *n);

/* ---- values, nodes, graph ---- */
typedef struct ttc_value {
    int32_t id;               /* unique within the graph, stable */
    char *name;               /* unique within the graph (printed as %name) */
    ttc_type type;
    struct ttc_node *producer;  /* NULL for graph inputs */
    int32_t output_index;
    struct ttc_node **users;  /* one entry per use (a node using it twice appears twice) */
    int32_t n_users, cap_users;
} ttc_value;

typedef struct ttc_node {
    int32_t id;               /* unique within the graph, stable */
    ttc_op_id op;
    char *op_name;            /* always set; for OPAQUE the only identity */
    char *name;               /* debug name (FX node name); may be NULL */
    char *module_stack;       /* qualified module path(s) from capture; may be NULL */
    ttc_value **inputs;
    int32_t n_inputs;
    ttc_value **outputs;
    int32_t n_outputs;
    ttc_attr *attrs;
    int32_t n_attrs;
    int32_t order;            /* position in g->nodes (kept up to date by the graph) */
    bool dead;                /* erased; freed at ttc_graph_free */
    /* Partition bookkeeping (written by the partitioner, read by everyone after). */
    int32_t target;           /* backend index; -1 = unassigned */
    int32_t segment;          /* -1 = none */
    char *reason;             /* why not on the preferred backend; NULL if on it */
} ttc_node;

struct ttc_graph {
    ttc_node **nodes;         /* live nodes in program order */
    int32_t n_nodes, cap_nodes;
    ttc_value **inputs;
    int32_t n_inputs, cap_inputs;
    ttc_value **outputs;
    int32_t n_outputs, cap_outputs;
    ttc_symbol *syms;
    int32_t n_syms, cap_syms;
    /* ownership of everything ever created (erased nodes too) */
    ttc_node **all_nodes;
    int32_t n_all_nodes, cap_all_nodes;
    ttc_value **all_values;
    int32_t n_all_values, cap_all_values;
    int32_t next_name;        /* counter for generated value names */
};

ttc_graph *ttc_graph_new(void);   /* NULL on OOM (error set) */
/* ttc_graph_free is in the public header. */

/* Symbols. Returns the index or -1 on error. */
int32_t ttc_graph_add_symbol(ttc_graph *g, const char *name, int64_t min, int64_t opt, int64_t max);
int32_t ttc_graph_find_symbol(const ttc_graph *g, const char *name);

/* Inputs/outputs. name may be NULL (a fresh name is made). Returns NULL on error. */
ttc_value *ttc_graph_add_input(ttc_graph *g, const char *name, const ttc_type *type);
ttc_status ttc_graph_set_outputs(ttc_graph *g, ttc_value *const *outs, int32_t n);

/* Creates a node with n_out outputs of the given types; op_name is looked up in the op
 * table (unknown names make an OPAQUE node). The node is appended at the end
 * (append) or placed right before `before` (insert_before). Output value names are
 * fresh unless out_names is given. Returns NULL on error. */
ttc_node *ttc_graph_append_node(ttc_graph *g, const char *op_name,
                                ttc_value *const *inputs, int32_t n_in,
                                const ttc_type *out_types, int32_t n_out, const char *name);
ttc_node *ttc_graph_insert_node_before(ttc_graph *g, ttc_node *before, const char *op_name,
                                       ttc_value *const *inputs, int32_t n_in,
                                       const ttc_type *out_types, int32_t n_out, const char *name);
ttc_status ttc_node_set_output_name(ttc_graph *g, ttc_node *n, int32_t i, const char *name);

/* Constants: a prim.Constant node with attr `value`, appended (or inserted before `before`
 * when not NULL). The tensor form takes a reference on data. */
ttc_value *ttc_graph_const_int(ttc_graph *g, ttc_node *before, int64_t v);
ttc_value *ttc_graph_const_float(ttc_graph *g, ttc_node *before, double v);
ttc_value *ttc_graph_const_bool(ttc_graph *g, ttc_node *before, bool v);
ttc_value *ttc_graph_const_str(ttc_graph *g, ttc_node *before, const char *s);
ttc_value *ttc_graph_const_none(ttc_graph *g, ttc_node *before);
ttc_value *ttc_graph_const_ints(ttc_graph *g, ttc_node *before, const int64_t *v, int32_t n);
ttc_value *ttc_graph_const_floats(ttc_graph *g, ttc_node *before, const double *v, int32_t n);
ttc_value *ttc_graph_const_tensor(ttc_graph *g, ttc_node *before, const char *name,
                                  const ttc_type *type, ttc_tensor_data *data);

/* Attributes (copied). */
ttc_status ttc_node_set_attr(ttc_node *n, const ttc_attr *a);
const ttc_attr *ttc_node_attr(const ttc_node *n, const char *name);
void ttc_attr_clear(ttc_attr *a);
ttc_status ttc_attr_copy(ttc_attr *dst, const ttc_attr *src);

/* For prim.Constant producers: the literal behind a value (NULL if not a constant). */
const ttc_attr *ttc_value_const(const ttc_value *v);
bool ttc_value_const_int(const ttc_value *v, int64_t *out);
bool ttc_value_const_float(const ttc_value *v, double *out);  /* ints convert too */
bool ttc_value_const_ints(const ttc_value *v, int64_t **out, int32_t *n); /* from INTS or a ListConstruct of int constants; *out malloc'd */
bool ttc_value_is_none(const ttc_value *v);
/* Whether torch holds v as a non-contiguous view (a reorder, broadcast or inner slice of its
 * input's memory), so that a reshape or contiguous() of it copies (strided.c). */
bool ttc_value_is_strided_view(const ttc_value *v);

/* Editing. */
ttc_status ttc_node_set_input(ttc_node *n, int32_t i, ttc_value *v);
void ttc_value_replace_all_uses(ttc_value *old, ttc_value *repl);
/* Fails (TTC_ERR_INVALID_ARG) if any output still has users or is a graph output. */
ttc_status ttc_graph_erase_node(ttc_graph *g, ttc_node *n);
bool ttc_value_is_graph_output(const ttc_graph *g, const ttc_value *v);
ttc_value *ttc_graph_find_value(const ttc_graph *g, const char *name);
ttc_node *ttc_graph_find_node(const ttc_graph *g, const char *name);

/* Analysis / utilities (graph_utils.c). */
/* Returns node pointers in a topological order of the dataflow (malloc'd, n_nodes long). */
ttc_status ttc_graph_topo_order(const ttc_graph *g, ttc_node ***out);
/* Reorders g->nodes to a topological order (stable where already ordered). */
ttc_status ttc_graph_toposort(ttc_graph *g);
/* Copies nodes[0..n) (in g's order) into a new standalone graph: values defined outside
 * the set become inputs (constants are copied in instead), values used outside the set
 * or graph outputs become outputs. in_map/out_map (optional, malloc'd) give, for each
 * new input/output, the original value. */
ttc_status ttc_graph_extract(const ttc_graph *g, ttc_node *const *nodes, int32_t n,
                             ttc_graph **out, ttc_value ***in_map, int32_t *n_in_map,
                             ttc_value ***out_map, int32_t *n_out_map);
ttc_status ttc_graph_clone(const ttc_graph *g, ttc_graph **out);
bool ttc_graph_equal(const ttc_graph *a, const ttc_graph *b); /* structural, names included */

/* Text format (print.c, parse.c). ttc_graph_print returns a malloc'd string. */
char *ttc_graph_print(const ttc_graph *g);
/* ttc_graph_parse is in the public header. Tensor constants whose data is not inline
 * are looked up by name through `lookup` (may be NULL: then they are an error); lookup
 * returns a new reference, which the parser takes over, or NULL. Parsing checks syntax and
 * names only: call ttc_graph_verify for the semantic checks. */
typedef ttc_tensor_data *(*ttc_tensor_lookup_fn)(void *ctx, const char *name,
                                                 const ttc_type *type);
ttc_status ttc_graph_parse_ex(const char *text, ttc_tensor_lookup_fn lookup, void *ctx,
                              ttc_graph **out);

/* Verifier (verify.c): defs before uses, users lists consistent, types consistent with
 * shape functions where the op has one, outputs defined, no dangling pointers. */
ttc_status ttc_graph_verify(const ttc_graph *g);

/* Shape rules (shape.c; named in the ops.def rows); TTC_ERR_UNSUPPORTED where the op has none. */
ttc_status ttc_infer_types(const ttc_graph *g, const ttc_node *n, ttc_type *out, int32_t n_out);
/* Whether op's ops.def row names a shape rule (ttc_infer_types can do more than refuse). */
bool ttc_op_has_shape_rule(ttc_op_id op);

#endif
