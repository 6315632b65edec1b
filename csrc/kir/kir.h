/*
 * Kernel IR: what converters emit and the engine builder fuses, plans, generates and runs.
 *
 * An engine is a list of engine tensors (ttc_et) and a list of kernel ops (ttc_kop) in
 * execution order. Tensors have a dtype and affine symbolic dims (as in the graph IR), and
 * are one of: an engine input, a constant (weights), an intermediate produced by a kernel
 * op, or a view (alias of another tensor: reshape/permute/expand/slice/select) resolved to
 * (buffer, offset, strides) when the launch plan is made for concrete symbol values.
 *
 * Every kernel op may carry an expression (ttc_expr): a small SSA program over leaves
 * (the value the op produced, "acc", and extra input tensors read at the output element's
 * index with broadcasting). An ELEMENTWISE op is only an expression; for GEMM/CONV/... it
 * is the epilogue, which is how bias, activation and residual adds fold into them.
 *
 *   ttc_kir *k = ttc_kir_new();
 *   int32_t x = ttc_kir_tensor(k, TTC_ET_INPUT, TTC_DTYPE_FLOAT32, 2, dims, "x");
 *   ttc_expr e; ttc_expr_init(&e);
 *   int32_t a = ttc_expr_leaf(&e, x, TTC_DTYPE_FLOAT32);
 *   ttc_expr_op(&e, TTC_EOP_RELU, a, -1, -1, TTC_DTYPE_FLOAT32);   (the newest node is the result)
 *   int32_t y = ttc_kir_elementwise(k, &e, TTC_DTYPE_FLOAT32, 2, dims, "relu");
 */
#ifndef TTC_KIR_KIR_H
#define TTC_KIR_KIR_H

#include "../target/target.h"
#include "../ir/ir.h"

#define TTC_EXPR_MAX_LEAVES 16

#define TTC_SLICE_END_FROM_TYPE INT64_MIN

/* The expression ops: the rows of eops.def, which says what each needs where. */
typedef enum ttc_eop {
#define EOP(name, arity, cmp, half, native, mathfn, dnnl, cublas) TTC_EOP_##name,
#include "eops.def"
#undef EOP
    TTC_EOP_COUNT
} ttc_eop;

/* Where native calls' epilogues run an op (eops.def's NATIVE column). */
typedef enum ttc_eop_native { TTC_EOP_NATIVE_NONE, TTC_EOP_NATIVE_CHEAP, TTC_EOP_NATIVE_MATH, TTC_EOP_NATIVE_POW23 } ttc_eop_native;

/* eops.def's columns that every layer may read, indexed by ttc_eop. */
typedef struct ttc_eop_info {
    const char *name;        /* "ADD" */
    int8_t arity;
    bool compare;            /* CMP */
    bool half;               /* HALF: computes in half where the engine stores half */
    ttc_eop_native native;
} ttc_eop_info;
extern const ttc_eop_info ttc_eops[TTC_EOP_COUNT];

typedef struct ttc_enode {
    ttc_eop op;
    ttc_dtype dtype;    /* result dtype (compute type is float for floating dtypes) */
    int32_t a, b, c;    /* operand node indices (earlier nodes) */
    double f;
} ttc_enode;

typedef struct ttc_expr {
    ttc_enode *nodes;
    int32_t n, cap;
    int32_t root;                       /* node giving the result */
    int32_t leaves[TTC_EXPR_MAX_LEAVES];/* tensor id of each leaf */
    int32_t n_leaves;
} ttc_expr;

void ttc_expr_init(ttc_expr *e);
void ttc_expr_free(ttc_expr *e);
/* Each returns the new node index, or -1 on failure (error set). */
int32_t ttc_expr_leaf(ttc_expr *e, int32_t tensor, ttc_dtype dtype); /* reuses a leaf for the same tensor */
int32_t ttc_expr_acc(ttc_expr *e, ttc_dtype dtype);
int32_t ttc_expr_const(ttc_expr *e, double v, ttc_dtype dtype);
int32_t ttc_expr_cast(ttc_expr *e, int32_t a, ttc_dtype to);
int32_t ttc_expr_op(ttc_expr *e, ttc_eop op, int32_t a, int32_t b, int32_t c, ttc_dtype dtype);
/* The output element's index along output dim `dim` (arange, triu/tril masks). */
int32_t ttc_expr_index(ttc_expr *e, int32_t dim, ttc_dtype dtype);
bool ttc_eop_is_compare(ttc_eop op);
/* Whether op reads operand b (binary ops, where excluded: it reads b and c). */
bool ttc_eop_is_binary(ttc_eop op);

/* ---- tensors ---- */
typedef enum ttc_et_kind {
    TTC_ET_INPUT = 0,
    TTC_ET_CONST,
    TTC_ET_INTER,      /* produced by a kernel op (also an engine output when binding >= 0) */
    TTC_ET_VIEW,
} ttc_et_kind;

typedef enum ttc_view_kind {
    TTC_VIEW_RESHAPE = 0,  /* base is contiguous: same memory, new dims */
    TTC_VIEW_PERMUTE,      /* perm[] */
    TTC_VIEW_EXPAND,       /* size-1 dims of base broadcast (rank may grow at the front) */
    TTC_VIEW_SLICE,        /* vdim, start, end, step (clamped at plan time) */
    TTC_VIEW_SELECT,       /* vdim, start (negative counts from the end) */
} ttc_view_kind;

typedef struct ttc_et {
    ttc_et_kind kind;
    ttc_dtype dtype;
    int32_t rank;
    ttc_dim dims[TTC_MAX_RANK];
    char *name;               /* IR value name (for messages) */
    int32_t binding;          /* INPUT: input index; INTER: output index or -1 */
    int32_t producer;         /* INTER: kernel op index */
    ttc_tensor_data *data;    /* CONST */
    /* VIEW */
    int32_t base;
    ttc_view_kind vkind;
    int32_t perm[TTC_MAX_RANK];
    int32_t vdim;
    int64_t start, end, step;  /* end TTC_SLICE_END_FROM_TYPE: known only at run time (the typed dim) */
    bool contig;              /* statically dense row-major */
    int32_t n_reads;          /* kernel ops reading it (directly) */
} ttc_et;

/* ---- kernel ops ---- */
typedef enum ttc_kop_kind {
    TTC_KOP_ELEMENTWISE = 0,
    TTC_KOP_GEMM,
    TTC_KOP_CONV2D,
    TTC_KOP_REDUCE,
    TTC_KOP_SOFTMAX,
    TTC_KOP_NORM,
    TTC_KOP_POOL,
    TTC_KOP_GATHER,
    TTC_KOP_COPY,          /* reserved: strided copies are ELEMENTWISE identity ops */
    /* data movement, indexing, resize and attention kernels (codegen/codegen_data.c) */
    TTC_KOP_CONCAT,        /* in[0..n) joined along p.concat.dim; `stacked` inputs lack that dim */
    TTC_KOP_PAD,           /* in[0] padded by p.pad.lo per dim (negative crops), filled with value */
    TTC_KOP_INDEX,         /* in[0] indexed on dims p.index.dims[j] by in[1+j], broadcast together */
    TTC_KOP_RESIZE,        /* in[0] [N, C, H, W] upsampled, nearest or bilinear */
    TTC_KOP_ATTENTION,     /* softmax(q k^T * scale + mask) v: in q, k, v, mask (-1: none) */
    TTC_KOP_CONV_TRANSPOSE, /* in: x [N, C, H, W], w [OC, ICG, KH, KW] (repacked); p.conv (codegen/codegen_convt.c) */
    TTC_KOP_SORT,          /* out: int64 positions along p.sort.dim of the first p.sort.k of in[0] in order */
    TTC_KOP_SCATTER,       /* in[0] with in[1] (or p.scatter.value) written at indexed positions */
    TTC_KOP_SCAN,          /* in[0] cumulatively summed (multiplied, log-sum-exp'd) along p.scan.dim (codegen/codegen_scan.c) */
    /* the KV cache (codegen/codegen_kv.c): SLOT_WRITE writes in[0] into its out, an engine INPUT
     * of the same rank (a cache, written in place), at slots in[1] [S] along dim p.slot.dim (in
     * place index_copy: out[.., in[1][j], ..] = in[0][.., j, ..]);
     * with in[2] >= 0 it also writes in[2] into in[3], another cache input of out's dims and dtype
     * (in[2] has in[0]'s dims), at the same slots: keys and values in one kernel (GPU families);
     * KV_ATTENTION attends q in[0] [B, Hq, S, E] over caches in[1], in[2] [B, Hkv, L, E/EV]
     * at slots in[3] with the key mask in[4] [B, L] (p.kva) */
    TTC_KOP_SLOT_WRITE,
    TTC_KOP_KV_ATTENTION,
    /* with p.kva.splits > 0 (GPU kernel families) KV_ATTENTION writes per-split partial results
     * [B, Hq, S, splits, EV + 2] (max, sum, unnormalised values) and KV_REDUCE (in[0]: them)
     * combines the splits into [B, Hq, S, EV] */
    TTC_KOP_KV_REDUCE,
    /* integer GEMM (codegen/codegen_qgemm.c): out[m, n] = sum_k (in[0][m, k] - p.qgemm.a_zp) *
     * in[1][k, n], int8/uint8 operands (any strides) accumulated in int32; an epilogue reads the
     * accumulator as float (as torch's int32 -> float32 conversion rounds it) */
    TTC_KOP_QGEMM,
    /* weight-only quantized linear (codegen/codegen_wq.c, backend/cpu/native_wq.c): out [.., N] =
     * in[0] [.., K] (dense) times dequant(in[1])^T, dequant(q)[n, k] = (q[n, k] - z[n, g]) * s[n, g]
     * with g = k / p.wq.group, s = in[2] [N, G] float, z = in[3] [N, G] float (-1: 0). bits 8: in[1]
     * int8 [N, K]; bits 4: in[1] uint8 [N, K / 2], element 2j in the low nibble of byte j, 2j + 1
     * in the high one, values 0..15. gemv: the GPU family's decode kernel (warps over rows, wide
     * loads; any M, built for M <= 8). glu (gemv only; kir/fuse.c fuse_gated_wq): out is
     * [.., N / 2] = act(h[.., gate half]) * h[.., other half] of that product h, act the eop
     * glu_act (SILU, GELU_ERF, GELU_TANH), the gate half the rows [N / 2, N) when glu_hi, else
     * [0, N / 2) (an MLP's gate and up projections joined by passes/fuse_parallel_linear.c) */
    TTC_KOP_WQ_LINEAR,
    /* integer convolution (codegen/codegen_qgemm.c): in[0] x [N, C, H, W] uint8/int8, in[1] w
     * [OC, C/groups, KH, KW] int8; sum of (x - p.qconv.a_zp) * w in int32 (padding taps add
     * nothing), read as float by the epilogue */
    TTC_KOP_QCONV2D,
    TTC_KOP_KIND_COUNT
} ttc_kop_kind;

typedef enum ttc_reduce_kind { TTC_RED_SUM, TTC_RED_MEAN, TTC_RED_MAX, TTC_RED_MIN, TTC_RED_VAR,
                               TTC_RED_ARGMAX, TTC_RED_ARGMIN, TTC_RED_PROD } ttc_reduce_kind;
typedef enum ttc_pool_kind { TTC_POOL_MAX, TTC_POOL_AVG, TTC_POOL_ADAPTIVE_AVG } ttc_pool_kind;

#define TTC_KOP_MAX_IN 5

typedef struct ttc_kop {
    ttc_kop_kind kind;
    int32_t out;              /* tensor written */
    int32_t in[TTC_KOP_MAX_IN]; /* primary inputs (kind-specific), -1 unused */
    ttc_expr epi;             /* ELEMENTWISE: the op; others: epilogue over acc (may be empty) */
    char *name;               /* IR node name(s), for messages and info() */
    bool dead;
    /* computed by its one reader where that reads it, no kernel of its own (kir/fuse.c,
     * inline_concat_reads): a CONCAT whose result only the GPU families' slot write (in[0], the
     * keys) or split-K attention (in[0], the queries) reads; the reader's kernel evaluates the
     * concatenation and its epilogue at each element it loads (codegen: ttc_codegen_inline_fn).
     * The op stays live in the IR: its inputs and leaves are still read (by the reader's kernel) */
    bool inlined;
    union {
        /* in: A, B (B may be [N,K] when trans_b). reshaped: out is a contiguous reshape of tensor
         * `shape` (the GEMM's own [.., M, N] result, fused away by fuse.c): the kernel loops over
         * shape's dims and stores at the same linear index in out (ttc_kop_gemm_shape) */
        struct { bool trans_b; bool reshaped; int32_t shape; } gemm;
        /* in: x, w, w packed [G][K][OCG4] for GPU implicit GEMM (-1 when depthwise), w packed by 8 (ocb 8) */
        /* ksplit > 1: the reduction is cut into ksplit slices and out is [ksplit*N, OC, OH, OW]
         * fp32 partial sums (no epilogue) that a following REDUCE op adds up */
        /* mma (chosen at conversion, conv_nn.c): 1 fp16 / 2 TF32 tensor cores (conv2d_mma.cl),
         * with in[2] packed [G][OCG][KP] instead (KP: K = ICG*KH*KW rounded up to 32) */
        struct { int32_t stride[2], pad[2], dil[2], groups, ocb, k[2], ksplit, mma; } conv;
        struct { ttc_reduce_kind kind; uint32_t mask; int64_t correction; bool keepdim; } red;
        struct { int32_t dim; bool log; } softmax;
        /* in: x, w, b; rms: x * rsqrt(mean(x^2) + eps) (no mean subtracted, no b) */
        struct { int32_t groups; int32_t axis_from; double eps; bool group, rms; } norm;
        struct { ttc_pool_kind kind; int32_t k[2], stride[2], pad[2], dil[2]; bool ceil, count_pad;
                 int64_t divisor; } pool;
        struct { int32_t dim; int32_t mode; } gather;  /* mode 0: index_select/embedding rows */
        /* TTC_KOP_GATHER with mode 1: torch.gather along dim (see codegen_data.c) */
        /* neg: inputs read negated (bit i: in[i]; rotate_half's -x2, fused by kir/fuse.c) */
        struct { int32_t dim; int32_t n; uint32_t stacked, neg; } concat;
        struct { int64_t lo[TTC_MAX_RANK]; double value; } pad;
        /* the broadcast index dims (brank of them) sit at output dim `at` */
        struct { int32_t n; int32_t dims[3]; int32_t brank; int32_t at;
                 bool wrap; } index;  /* wrap: negative indices count from the end (index.Tensor) */
        struct { bool bilinear, align_corners; double scale[2]; } resize; /* scale 0: in/out */
        struct { double scale; bool causal; int32_t e, ev, group; } attn;  /* group: query heads per k/v head (GQA), 1 otherwise */
        struct { int32_t dim; bool descending; } sort;  /* k is out's size along dim */
        /* mode 0: scatter along dim with index in[2] (rank of x); mode 1: index_put with n
         * index tensors in[2..] on dims [at, at + n) broadcast to rank brank. reduce (mode 0):
         * TTC_SCATTER_* how the updates landing on an element combine (with x's value or not) */
        struct { int32_t mode, dim, n, at, brank; bool accumulate; double value;
                 int32_t reduce; bool include_self; } scatter;
        struct { int32_t dim, kind; } scan;  /* kind: TTC_SCAN_* */
        /* window > 0: a query at slot p sees keys j > p - window; softcap > 0: scores become
         * softcap * tanh(score / softcap); group: query heads per k/v head */
        /* splits > 0: keys in `splits` ranges of `kps` each (split-K, the GPU kernel); hg:
         * query heads of one k/v head sharing a work-group */
        /* bshe (KV_REDUCE): out is [B, S, Hq, EV], the result's transpose(1, 2) (an elementwise
         * consumer of that view fused into the reduction: kir/fuse.c) */
        struct { double scale, softcap; int32_t window, e, ev, group, splits, kps, hg; bool bshe; } kva;
        struct { int32_t dim; } slot;
        struct { int32_t a_zp; } qgemm;
        /* rms (GEMV only, kir/fuse.c rms_into_wq): in[0] is an RMS norm's input, normalised in
         * the product: out = rsqrt(mean(x^2) + rms_eps) * (x * g) times dequant(q)^T, g = in[4]
         * [K] (-1: 1), each row's sum of squares gathered with its dot products */
        struct { int32_t group, bits, n, k; bool gemv, rms, glu, glu_hi; double rms_eps; int32_t glu_act; } wq;
        struct { int32_t stride[2], pad[2], dil[2], groups, a_zp; } qconv;
    } p;
    int32_t tile;             /* tuning choice (index into the kind's candidate list) */
} ttc_kop;

/* p.scan.kind: what the scan accumulates */
enum { TTC_SCAN_SUM = 0, TTC_SCAN_PROD, TTC_SCAN_LOGSUMEXP };

/* p.scatter.reduce: scatter_reduce's reductions (ASSIGN: plain scatter, the last update wins) */
enum { TTC_SCATTER_ASSIGN = 0, TTC_SCATTER_SUM, TTC_SCATTER_PROD, TTC_SCATTER_MEAN, TTC_SCATTER_AMAX,
       TTC_SCATTER_AMIN };

typedef struct ttc_kir {
    ttc_et *ts;
    int32_t n_ts, cap_ts;
    ttc_kop *ops;
    int32_t n_ops, cap_ops;
    int32_t *inputs;  int32_t n_inputs;   /* tensor ids by binding index */
    int32_t *outputs; int32_t n_outputs;
    char **in_names, **out_names;
    ttc_symbol *syms; int32_t n_syms;     /* copied from the graph */
    bool fp16;                            /* intermediates/compute in half */
    bool half_compute;                    /* fp16 and the device computes in half (set by the
                                             builder before codegen; see codegen_expr.c) */
    bool native;                          /* GEMM/convolution may run as native kernels (set by
                                             the builder; backend/cpu/native_ops.h) */
    const ttc_target *target;             /* the engine's target (set by the builder): kernel
                                             families and knobs; NULL: ttc_target_defaults() */
} ttc_kir;

/* The target code generation reads: k's, else the defaults (tests without a device). */
static inline const ttc_target *ttc_kir_target(const ttc_kir *k) {
    return k->target ? k->target : ttc_target_defaults();
}

ttc_kir *ttc_kir_new(void);
void ttc_kir_free(ttc_kir *k);

/* Tensor creation; each returns the tensor id or -1 (error set). */
int32_t ttc_kir_tensor(ttc_kir *k, ttc_et_kind kind, ttc_dtype dt, int32_t rank,
                       const ttc_dim *dims, const char *name);
int32_t ttc_kir_const(ttc_kir *k, ttc_dtype dt, int32_t rank, const int64_t *shape,
                      ttc_tensor_data *data, const char *name); /* takes a reference */
/* A constant made from host floats converted to dt (copied). */
int32_t ttc_kir_const_f32(ttc_kir *k, ttc_dtype dt, int32_t rank, const int64_t *shape,
                          const float *vals, const char *name);
/* f rounded to the nearest half (ties to even), as IEEE binary16 bits. */
uint16_t ttc_half_from_float(float f);
/* v rounded to the nearest value of floating dtype d (ties to even); other dtypes: v. */
double ttc_round_to_dtype(double v, ttc_dtype d);
/* fp16 engines: float32 constants (and their views) become float16 where that is safe
 * (kir/const_half.c); run after fusion, before tuning. Counts the constants changed. */
ttc_status ttc_kir_consts_to_half(ttc_kir *k, int32_t *n_converted);
/* kir/fuse.c: elementwise chains into one op; elementwise consumers into producers' epilogues. */
ttc_status ttc_fuse(ttc_kir *k, int32_t *n_fused);
int32_t ttc_kir_view(ttc_kir *k, int32_t base, ttc_view_kind vk, int32_t rank,
                     const ttc_dim *dims, const char *name);
/* Adds a kernel op producing a fresh INTER tensor; returns the op index or -1.
 * The expression (for ELEMENTWISE/epilogues) is moved into the op. */
int32_t ttc_kir_op(ttc_kir *k, ttc_kop_kind kind, ttc_dtype out_dt, int32_t rank,
                   const ttc_dim *dims, const char *name);
/* Shortcut: ELEMENTWISE op over expression e (moved), returns the output tensor id. */
int32_t ttc_kir_elementwise(ttc_kir *k, ttc_expr *e, ttc_dtype dt, int32_t rank,
                            const ttc_dim *dims, const char *name);

/* The tensor whose dims [.., M, N] a GEMM op computes over (its out unless reshaped). */
static inline int32_t ttc_kop_gemm_shape(const ttc_kop *op) {
    return op->kind == TTC_KOP_GEMM && op->p.gemm.reshaped ? op->p.gemm.shape : op->out;
}

/* kir/nhwc.c: the tensors the CUDA launch path keeps channels-last (NHWC) between cuDNN
 * convolutions. nhwc: k->n_ts flags, set for those tensors (all false unless the target has
 * cuda_nhwc and cuDNN may run: TORCHTRT_C_CUDA_LIBS=1 on any device, an NVIDIA device with the
 * CUDA launch path otherwise). Returns how many. ttc_kir_nhwc_conv: whether op is a
 * convolution cuDNN may run channels-last (dense, float32/float16, host weights). */
int32_t ttc_kir_nhwc_plan(const ttc_kir *k, bool *nhwc);
bool ttc_kir_nhwc_conv(const ttc_kir *k, const ttc_kop *op);

/* Concrete value of a dim for symbol values sv. */
static inline int64_t ttc_dim_eval(ttc_dim d, const int64_t *sv) {
    return d.sym < 0 ? d.add : d.mul * sv[d.sym] + d.add;
}
bool ttc_dims_eq(int32_t ra, const ttc_dim *a, int32_t rb, const ttc_dim *b);
/* The tensor a view (of a view ...) of t stands on: t itself when it is no view; -1 for -1. */
static inline int32_t ttc_kir_root(const ttc_kir *k, int32_t t) {
    while (t >= 0 && k->ts[t].kind == TTC_ET_VIEW) t = k->ts[t].base;
    return t;
}
/* Whether tensor t is read at out's own linear index: dense, with out's dims (an epilogue's
 * leaf). */
static inline bool ttc_kir_dense_like(const ttc_kir *k, const ttc_et *out, int32_t t) {
    return k->ts[t].contig && ttc_dims_eq(out->rank, out->dims, k->ts[t].rank, k->ts[t].dims);
}

#endif
