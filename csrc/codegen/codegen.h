/*
 * Code generation: every kernel op of an engine becomes one kernel ("k<i>") of one OpenCL
 * program, plus an argument spec saying how the launch plan fills each argument from the
 * concrete shapes (buffers, offsets, strides, dims) and how big the launch is.
 *
 *   ttc_codegen cg;
 *   TTC_TRY(ttc_codegen_run(kir, dev_is_gpu, &cg));   // cg.source, cg.kernels[i].args
 *
 * The layer (see csrc/codegen/README.md): one row per kernel kind (ttc_kind_row: name,
 * generator, launch rule, native), one parameter builder (ttc_kparams) that writes each
 * kernel parameter together with its argument spec, and the expression spelling as a table
 * (ttc_spelling) a second renderer can replace.
 */
#ifndef TTC_CODEGEN_CODEGEN_H
#define TTC_CODEGEN_CODEGEN_H

#include "../kir/kir.h"

typedef enum ttc_arg_kind {
    TTC_ARG_BUF = 0,   /* t: the buffer behind tensor t */
    TTC_ARG_OFF,       /* t: element offset of t in its buffer */
    TTC_ARG_STRIDE,    /* t, d, r: stride of t for dim d of a rank-r index space (right-aligned,
                          0 where t broadcasts) */
    TTC_ARG_DIM,       /* t, d: size of dim d */
    TTC_ARG_PROD,      /* t, d..r: product of dims [d, r), times v when v > 0, divided by -v
                          when v < 0 */
    TTC_ARG_INT,       /* v: a literal int */
    TTC_ARG_ERRFLAG,   /* the execution's error flag (a __global int, 0 before the launches): index
                          kernels store kernel op index + 1 there on an out-of-range index */
    TTC_ARG_LOCAL,     /* a __local buffer of units of v bytes: d units where OpenCL launches it
                          (what fits the device's local memory per work-group, decided by codegen),
                          up to r where the launch can give more (the CUDA driver's dynamic shared
                          memory, exec_cuda.c); the plan's value is the OpenCL size in bytes */
    TTC_ARG_LOCAL_N,   /* int: how many units the kernel's TTC_ARG_LOCAL argument holds (same d, r,
                          v; the plan's value is d) */
} ttc_arg_kind;

typedef struct ttc_argspec { ttc_arg_kind kind; int32_t t, d, r; int64_t v; } ttc_argspec;
/* TTC_ARG_BUF with v = TTC_ARG_BUF_TMAP: a GEMM operand's tensor map (gemm_tc.cl FL & 16; d =
 * the box's rows, r = 0 for A, 1 for B). The CUDA launch path passes a CUtensorMap of the
 * buffer by value (exec_cuda.c); elsewhere the buffer is bound and never read. */
#define TTC_ARG_BUF_TMAP 1

/* One launch dimension: ceil(product of dims [from, to) of tensor t * mul / div), rounded
 * up to a multiple of local (when local > 0). */
typedef struct ttc_gdim { int32_t t, from, to; int32_t div; int32_t local; int32_t mul; /* 0 = 1 */ } ttc_gdim;

typedef struct ttc_kspec {
    int32_t op;               /* kernel op index */
    char name[16];
    ttc_argspec *args;
    int32_t n_args, cap_args;
    ttc_gdim g[3];
    int32_t work_dims;
    bool use_local;           /* pass local sizes (tiled GPU kernels) */
    /* native GEMM/convolution (ttc_codegen_native_ops below): the first n_native_args
     * arguments are the native call's, the rest the OpenCL epilogue kernel's, launched only
     * when native_epi */
    int8_t native;
    bool native_epi;
    bool native_post;         /* the epilogue starts with oneDNN post-ops (backend/cpu/native_post.h) */
    int32_t n_native_args;
    /* the last n_store_args arguments are the store function's (every kernel); lib_epi: the
     * program also defines "<name>_e(int n, <store arguments>)", the epilogue alone applied in
     * place to the n elements of the output (TTC_LIB_EPI_V per work-item), for a library call that writes the raw result
     * there (the CUDA launch path's cuBLAS GEMMs, backend/cuda/exec_cuda_lib.c) */
    int32_t n_store_args;
    bool lib_epi;
    /* lib_epih: also "<name>_eh(int n, <store arguments>)", the same over an output and dense
     * leaves stored channels-last (kir/nhwc.c): a cuDNN NHWC convolution's epilogue */
    bool lib_epih;
    /* gemm_w: the program also defines "<name>_w", the same GEMM and epilogue on tile
     * gemm_w_tile (TTC_GEMM_WIDE_TILE or _BIG; codegen.c, wide_wanted), whose arguments are the kernel's first nine
     * (A, offA, B, offB, M, N, K, sAb, sBb), then dsm, nst and the tensor maps of A and B, then
     * the store function's: the CUDA launch path may run it instead (exec_cuda.c) */
    bool gemm_w;
    int16_t gemm_w_tile;      /* its tile (codegen.c, wide_tile) */
    /* gemm_v: the program also defines "<name>_v", the same product and epilogue in GEMV form
     * (gemv_gpu.cl: a warp per column, TTC_GEMM_V_WARPS per work-group, TTC_GEMM_V_ROWS rows a
     * work-group), whose arguments are the kernel's first nine then the store function's
     * (ttc_kspec_gemv_arg): plans of at most TTC_GEMM_V_ROWS rows launch it instead (plan.c) */
    bool gemm_v;
} ttc_kspec;
enum { TTC_GEMM_V_ROWS = 8, TTC_GEMM_V_WARPS = 4 };
/* Elements per work-item of a "<name>_e" kernel: work-groups of L work-items cover
 * TTC_LIB_EPI_V * L elements (work-item t takes t + j * L, j < TTC_LIB_EPI_V). */
#define TTC_LIB_EPI_V 8

typedef struct ttc_codegen {
    char *source;
    ttc_kspec *kernels;       /* one per live kernel op, in execution order */
    int32_t n_kernels;
    int32_t n_unique;         /* distinct kernel bodies (duplicates launch the first copy) */
    /* Where each kernel's text lies in source, so that the program can be built in parts
     * (build.c): source[0, head_len) is the header every kernel needs (math functions), chunk i
     * is source[chunk_off[i], chunk_off[i + 1]) (chunk_off[n_chunks] = the source's length)
     * and defines the kernels named chunk_name[i] (with its helpers: a chunk's text compiles
     * after the header alone). */
    size_t head_len;
    int32_t n_chunks;
    size_t *chunk_off;
    char (*chunk_name)[16];
} ttc_codegen;
/* codegen_dedupe.c: the kernel texts seen so far in one program. After kernel ks's text was
 * appended to src from `start`, _add either remembers it or, when an equal one (up to the
 * kernel's name) came before, points ks->name at that one and sets *cut = start (the caller
 * truncates src there). TORCHTRT_C_DEDUPE_KERNELS=0 (the target's dedupe_kernels) turns it off. */
typedef struct ttc_codegen_dedupe {
    char **canon;
    uint64_t *hash;
    char (*owner)[16];
    int32_t n, cap_c, cap_h, cap_o;
} ttc_codegen_dedupe;
bool ttc_codegen_dedupe_enabled(const ttc_kir *k);
ttc_status ttc_codegen_dedupe_add(ttc_codegen_dedupe *d, ttc_sbuf *src, size_t start, ttc_kspec *ks, size_t *cut);
void ttc_codegen_dedupe_free(ttc_codegen_dedupe *d);

/* How each expression op and value conversion is written. The generators read every
 * spelling from here; ttc_spelling_opencl() is OpenCL C and the default. A format string
 * takes: %a %b %c the operands converted to the node's type, %A %B %C the operands as they
 * are (v<i>), %t the node's type, %h the literal prefix of half nodes ("(half)" or ""),
 * %i the index dim (TTC_EOP_INDEX), %% a percent sign. */
typedef struct ttc_eop_spelling {
    const char *fl;      /* floating node (operand a floating, for by_operand ops) */
    const char *in;      /* integer node; NULL: as fl */
    const char *half;    /* node computed in half; NULL: as fl/in */
    const char *boolean; /* node of dtype bool; NULL: as fl/in */
    const char *fl16;    /* floating node computed in float in an expression whose value is
                          * stored as half: where half's precision allows a cheaper form; NULL: as fl */
    bool by_operand;     /* fl/in chosen by operand a's dtype, not the node's */
} ttc_eop_spelling;
typedef struct ttc_spelling {
    ttc_eop_spelling op[TTC_EOP_COUNT];
    const char *pow_square, *pow_sqrt;           /* x ** 2 and x ** 0.5 (float) */
    const char *nan, *inf, *ninf, *float_lit;    /* literals; float_lit: printf format of a double */
    const char *half_cast;                       /* prefix converting a value to half */
    /* value conversions, printf formats: (idx, ptr) for scalars, (width, address) for
     * vectors, (value, idx, ptr) for the store */
    const char *load_half, *load_float, *load_half_vec, *load_vec, *store_half;
    /* bfloat16 (engine inputs and outputs only: convert/convert.c), as the half ones; bf16_fns:
     * the definitions store_bf16 calls, emitted once in programs that hold bfloat16 tensors */
    const char *load_bf16, *store_bf16, *bf16_fns;
} ttc_spelling;
const ttc_spelling *ttc_spelling_opencl(void);

ttc_status ttc_codegen_run(const ttc_kir *k, bool gpu, ttc_codegen *out);
/* The same with another spelling table (NULL: OpenCL C). */
ttc_status ttc_codegen_run_spelled(const ttc_kir *k, bool gpu, const ttc_spelling *sp, ttc_codegen *out);

/* Native library calls in place of OpenCL kernels (kinds whose row says native, in an engine
 * with k->native). The layer that launches them (backend/cpu/native_ops.c) owns their argument
 * layout and hands both functions down, so that no include runs from codegen/ up to engine/.
 * op_ok: whether op runs natively; gen: its kernel spec (the first n_native_args arguments)
 * and the OpenCL text of its epilogue, P/A_ the store function's parameters and call list. */
typedef struct ttc_codegen_native_ops {
    bool (*op_ok)(const ttc_kir *k, const ttc_kop *op);
    ttc_status (*gen)(ttc_sbuf *src, const ttc_kir *k, const ttc_kop *op, ttc_kspec *ks, const char *P,
                      const char *A_);
} ttc_codegen_native_ops;
/* ttc_codegen_run_spelled with native calls (native NULL: every op an OpenCL kernel). */
ttc_status ttc_codegen_run_native(const ttc_kir *k, bool gpu, const ttc_spelling *sp, const ttc_codegen_native_ops *native,
                                  ttc_codegen *out);
void ttc_codegen_free(ttc_codegen *cg);

/* ---- kernel parameters and their arguments, written together ----
 * A kernel's parameter list (sig), the names in the same order (call: what a call passes on,
 * e.g. the store function's arguments) and ks's argument specs grow in one call each, so the
 * three cannot drift apart. The first failure sticks (st) and later calls do nothing, so a
 * generator checks once, at ttc_kp_done.
 *
 *   ttc_kparams p; ttc_kp_init(&p, k, ks, false);
 *   ttc_kp_int(&p, TTC_ARG_PROD, op->out, 0, R, 0, "n");   // int n     <- numel(out)
 *   ttc_kp_tensor(&p, op->in[0], "x", 0);                // __global const float *x, int x_off, int x_s0..
 *   TTC_TRY(ttc_kp_done(&p));  ... "__kernel void k3(%s)", ttc_kp_sig(&p) ... ttc_kp_free(&p);
 *
 * Kernels written as csrc/kernels templates declare their parameters themselves: the generator
 * binds them through the same calls and ttc_kp_check_template compares the names. */
typedef struct ttc_kparams {
    const ttc_kir *k;
    ttc_kspec *ks;
    ttc_sbuf sig, call;
    int32_t n;
    bool lead;        /* every parameter starts with ", " (a list appended after others) */
    ttc_status st;
} ttc_kparams;
void ttc_kp_init(ttc_kparams *p, const ttc_kir *k, ttc_kspec *ks, bool lead);
/* __global const T *nm, int off (off NULL: "<nm>_off"): tensor t's buffer and offset. */
void ttc_kp_buffer(ttc_kparams *p, int32_t t, const char *nm, const char *off);
/* The output buffer "__global T *nm, int <nm>off" (writable). */
void ttc_kp_out(ttc_kparams *p, int32_t t, const char *nm, const char *off);
/* Buffer and offset, then "int <nm>_s<d>" strides for t's own dims, or with r > 0 for a
 * rank-r index space t broadcasts into (right-aligned, 0 where it broadcasts). */
void ttc_kp_tensor(ttc_kparams *p, int32_t t, const char *nm, int32_t r);
/* One int parameter named by fmt; its value the argument spec (kind, t, d, r, v). */
void ttc_kp_int(ttc_kparams *p, ttc_arg_kind kind, int32_t t, int32_t d, int32_t r, int64_t v, const char *fmt, ...)
    TTC_PRINTF(7, 8);
/* The execution's error flag "__global int *errf" (index kernels; t: the op's output). */
void ttc_kp_errflag(ttc_kparams *p, int32_t t);
/* "__global const ulong16 *<nm>": operand (0 = A, 1 = B) tensor t's tensor map with boxes of
 * box_rows rows (TTC_ARG_BUF_TMAP). */
void ttc_kp_tmap(ttc_kparams *p, int32_t t, const char *nm, int32_t operand, int32_t box_rows);
/* "__local <type> *<nm>, int <nm_n>": a local buffer of n units of unit_bytes (TTC_ARG_LOCAL,
 * TTC_ARG_LOCAL_N): n_cl units under OpenCL, up to n_max where the launch allows more. */
void ttc_kp_local(ttc_kparams *p, const char *type, const char *nm, const char *nm_n, int64_t unit_bytes, int32_t n_cl,
                  int32_t n_max);
/* The parameter list (never NULL). */
static inline const char *ttc_kp_sig(const ttc_kparams *p) { return p->sig.data ? p->sig.data : ""; }
static inline const char *ttc_kp_call(const ttc_kparams *p) { return p->call.data ? p->call.data : ""; }
ttc_status ttc_kp_done(ttc_kparams *p);
void ttc_kp_free(ttc_kparams *p);
/* The template kernel emitted into src from `from` (its "KNAME(" parameter list, before
 * EPI_PARAMS) must declare p's parameters by name, in order. */
ttc_status ttc_kp_check_template(const ttc_kparams *p, const ttc_sbuf *src, size_t from, const char *tmpl);

/* ---- the kernel kinds ---- */
/* What a generator gets: the program so far, the op, its kernel spec (the store function's
 * arguments already in ks->args), the device family, the spelling, and the store
 * function's parameters P and arguments A_ (each item starting with ", "), which kernels
 * append to their own. */
typedef struct ttc_kgen {
    ttc_sbuf *src;
    const ttc_kir *k;
    const ttc_kop *op;
    ttc_kspec *ks;
    bool gpu;
    const ttc_spelling *sp;
    const char *P, *A_;
    int32_t tile_leaf, tile_p0, tile_p1;   /* ELEMENTWISE: ttc_codegen_tiled_leaf's choice (-1: none) */
    int32_t vec;                           /* ELEMENTWISE: elements per work-item ("<name>_storev" when > 1) */
} ttc_kgen;
typedef ttc_status (*ttc_kind_gen)(const ttc_kgen *g);
/* How big a kind's launch is, set before its generator runs (which may still replace it). */
typedef enum ttc_launch_rule {
    TTC_LAUNCH_OWN = 0,  /* the generator sets ks->g (tiles, rows, work-groups) */
    TTC_LAUNCH_OUT,      /* one work-item per output element, 1-D */
} ttc_launch_rule;
typedef struct ttc_kind_row {
    const char *name;      /* in kernel descriptions: "k3 gemm: linear_1+relu" */
    ttc_kind_gen gen;      /* NULL: no kernel of this kind is ever made */
    ttc_launch_rule launch;
    bool native;           /* may run as a library call where the device runs native kernels */
} ttc_kind_row;
/* The row of kind (NULL outside the enum); the name ("?" outside). */
const ttc_kind_row *ttc_codegen_kind_row(ttc_kop_kind kind);
const char *ttc_codegen_kind_name(ttc_kop_kind kind);

/* GEMM kernel candidates (ttc_kop.tile indexes ttc_gemm_tiles; tune.c picks one per GEMM by
 * device, dtype and shape). Families: CPU (gemm_cpu.cl; bm = work-group edge, 0 = the
 * driver's choice), SIMT (gemm_gpu.cl: bm x bn work-group tile, bk deep, tm x tn outputs per
 * work-item), MMA (gemm_mma.cl, NVIDIA tensor cores, fp16 inputs: bm x bn x bk tile, tm x tn
 * warps, kw groups of them splitting k), TC and TF32 (gemm_tc.cl, tensor cores through the
 * PTX prelude with a kw-stage cp.async pipeline: TC half operands (or float ones rounded to
 * half), TF32 float operands rounded to TF32). Any family runs on any OpenCL device except MMA
 * (raw PTX); TC and TF32 run anywhere through the prelude's emulation (tests force them on
 * the CPU), though only NVIDIA targets choose them. */
typedef enum ttc_gemm_family { TTC_GEMM_CPU = 0, TTC_GEMM_SIMT, TTC_GEMM_MMA, TTC_GEMM_TC, TTC_GEMM_TF32 } ttc_gemm_family;
/* gm (TC/TF32): the grid rasterised in groups of gm tile rows for L2 reuse (0: row by row);
 * fl (TC/TF32): 1 copies global to local memory through L1 (gemm_tc.cl's FL) */
typedef struct ttc_gemm_tile { ttc_gemm_family family; int16_t bm, bn, bk, tm, tn, kw, gm, fl; } ttc_gemm_tile;
#define TTC_GEMM_TILES 63
extern const ttc_gemm_tile ttc_gemm_tiles[TTC_GEMM_TILES];
/* Work-groups of tile ti over a B x M x N product, and the fraction of the slots busy over its
 * waves as a percentage (slots = work-groups one of cu compute units holds at once). */
int64_t ttc_gemm_tile_wgs(int32_t ti, int64_t B, int64_t M, int64_t N);
int64_t ttc_gemm_tile_fill(int32_t ti, int64_t B, int64_t M, int64_t N, int64_t cu, int64_t slots);
/* Tiles whose stages come from a __local argument (pipelined families, fl & 4): the bytes of
 * one stage and how many stages (2..kw) an OpenCL launch on target tg gets (what fits its local
 * memory per work-group beside the kernel's own); TTC_ERR_UNSUPPORTED when not even two fit. */
ttc_status ttc_gemm_tile_local(const ttc_target *tg, int32_t ti, int64_t *unit_bytes, int32_t *n_cl);
/* Whether tile ti runs on tg at all (true for tiles without a local-memory argument; the
 * warpgroup-MMA tiles, fl & 8, on NVIDIA: compute capability 9.0, through the CUDA launch path). */
bool ttc_gemm_tile_fits(const ttc_target *tg, int32_t ti);

/* Storage type of dtype in OpenCL C ("float", "half", "long", "int", "uchar", "char"). */
const char *ttc_cl_storage_type(ttc_dtype d);

/* Argument specs and launch dims, for kernels written outside the parameter builder (the
 * native ops' library calls, backend/cpu/native_ops.c). */
ttc_status ttc_codegen_add_arg(ttc_kspec *ks, ttc_arg_kind kind, int32_t t, int32_t d, int32_t r, int64_t v);
void ttc_codegen_gdim(ttc_kspec *ks, int32_t i, int32_t t, int32_t from, int32_t to, int32_t div, int32_t local);

#endif
