/*
 * Code generation: every kernel op of an engine becomes one kernel ("k<i>") of one OpenCL
 * program, plus an argument spec saying how the launch plan fills each argument from the
 * concrete shapes (buffers, offsets, strides, dims) and how big the launch is.
 *
 *   ttc_codegen cg;
 *   TTC_TRY(ttc_codegen_run(kir, dev_is_gpu, &cg));   // cg.source, cg.kernels[i].args
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
} ttc_arg_kind;

typedef struct ttc_argspec { ttc_arg_kind kind; int32_t t, d, r; int64_t v; } ttc_argspec;

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
    /* native GEMM/convolution (engine/native_ops.h): the first n_native_args arguments are the
     * native call's, the rest the OpenCL epilogue kernel's, launched only when native_epi */
    int8_t native;
    bool native_epi;
    int32_t n_native_args;
} ttc_kspec;

typedef struct ttc_codegen {
    char *source;
    ttc_kspec *kernels;       /* one per live kernel op, in execution order */
    int32_t n_kernels;
    int32_t n_unique;         /* distinct kernel bodies (duplicates launch the first copy) */
} ttc_codegen;
/* codegen_dedupe.c: the kernel texts seen so far in one program. After kernel ks's text was
 * appended to src from `start`, _add either remembers it or, when an equal one (up to the
 * kernel's name) came before, points ks->name at that one and sets *cut = start (the caller
 * truncates src there). TORCHTRT_C_DEDUPE_KERNELS=0 turns it off (ttc_codegen_dedupe_enabled). */
typedef struct ttc_codegen_dedupe {
    char **canon;
    uint64_t *hash;
    char (*owner)[16];
    int32_t n, cap_c, cap_h, cap_o;
} ttc_codegen_dedupe;
bool ttc_codegen_dedupe_enabled(void);
ttc_status ttc_codegen_dedupe_add(ttc_codegen_dedupe *d, ttc_sbuf *src, size_t start, ttc_kspec *ks, size_t *cut);
void ttc_codegen_dedupe_free(ttc_codegen_dedupe *d);

ttc_status ttc_codegen_run(const ttc_kir *k, bool gpu, ttc_codegen *out);
void ttc_codegen_free(ttc_codegen *cg);

/* GEMM kernel candidates (ttc_kop.tile indexes ttc_gemm_tiles; tune.c picks one per GEMM by
 * device, dtype and shape). Families: CPU (gemm_cpu.cl; bm = work-group edge, 0 = the
 * driver's choice), SIMT (gemm_gpu.cl: bm x bn work-group tile, bk deep, tm x tn outputs per
 * work-item), MMA (gemm_mma.cl, NVIDIA tensor cores, fp16 inputs: bm x bn x bk tile, tm x tn
 * warps, kw groups of them splitting k). Any family runs on any OpenCL device except MMA
 * (NVIDIA PTX). */
typedef enum ttc_gemm_family { TTC_GEMM_CPU = 0, TTC_GEMM_SIMT, TTC_GEMM_MMA } ttc_gemm_family;
typedef struct ttc_gemm_tile { ttc_gemm_family family; int16_t bm, bn, bk, tm, tn, kw; } ttc_gemm_tile;
#define TTC_GEMM_TILES 26
extern const ttc_gemm_tile ttc_gemm_tiles[TTC_GEMM_TILES];

/* CPU convolution (codegen_conv_cpu.c): enabled unless TORCHTRT_C_CONV_CPU=ocb8. */
bool ttc_conv_cpu_enabled(void);
ttc_status ttc_codegen_conv_cpu(ttc_sbuf *src, const ttc_kir *k, const ttc_kop *op, ttc_kspec *ks, const char *P,
                                const char *A_);

/* Cumulative sum (TTC_KOP_SCAN, codegen_scan.c). */
ttc_status ttc_codegen_scan(ttc_sbuf *src, const ttc_kir *k, const ttc_kop *op, ttc_kspec *ks, const char *P,
                            const char *A_);
/* Storage type of dtype in OpenCL C ("float", "half", "long", "int", "uchar", "char"). */
const char *ttc_cl_storage_type(ttc_dtype d);

/* Helpers for kind-specific generators (codegen_*.c). */
ttc_status ttc_codegen_add_arg(ttc_kspec *ks, ttc_arg_kind kind, int32_t t, int32_t d, int32_t r, int64_t v);
void ttc_codegen_gdim(ttc_kspec *ks, int32_t i, int32_t t, int32_t from, int32_t to, int32_t div, int32_t local);
/* Appends template `tmpl` (csrc/kernels/<tmpl>.cl) between #define/#undef of the
 * NULL-terminated name/value pairs in defs. */
ttc_status ttc_codegen_template(ttc_sbuf *src, const char *tmpl, const char *const *defs);
/* "#define <name>(p,i) ..." loaders reading dtype d as float (scalar, or 8-vector). */
void ttc_codegen_loader(ttc_sbuf *src, const char *name, ttc_dtype d, bool vec8);

#endif
