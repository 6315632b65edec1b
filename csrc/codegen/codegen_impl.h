/*
 * Inside the code generator: the generators the kind table (codegen_kinds.c) dispatches to,
 * and the pieces they share. Each generator writes one kernel for g->op into g->src (its
 * parameters through a ttc_kparams, so that ks->args follow the signature), appends the
 * store function's parameters g->P to its own, and sets the launch unless its kind's
 * rule already did.
 *
 *   static ttc_status gen_pad(const ttc_kgen *g);   // a row: {"pad", gen_pad, TTC_LAUNCH_OUT}
 */
#ifndef TTC_CODEGEN_CODEGEN_IMPL_H
#define TTC_CODEGEN_CODEGEN_IMPL_H

#include "codegen.h"

/* codegen_expr.c: the store function "<kname>_store(float acc, int lin, ...)" of op; its
 * parameters go to p (a leading-comma list: P and A_ of the generators). */
ttc_status ttc_codegen_store_fn(ttc_sbuf *src, const ttc_kir *k, const ttc_kop *op, const ttc_spelling *sp,
                                ttc_kparams *p);
/* The same with leaf `given` (-1: none) passed by the kernel as the store function's third
 * parameter "given" (held in ttc_codegen_leaf_type) instead of read from memory. */
ttc_status ttc_codegen_store_fn_given(ttc_sbuf *src, const ttc_kir *k, const ttc_kop *op, const ttc_spelling *sp,
                                      ttc_kparams *p, int32_t given);
/* The same, and where vec > 1 also "<kname>_storev(int lin, ...)" with the same parameters:
 * the V = vec elements from lin (a multiple of vec) computed and stored together (one decomposed
 * index, V-wide accesses where adjacent and aligned); raw_acc: their acc is the output's current
 * value (a library call's raw result), else 0. vec must be ttc_codegen_vec_width's or a
 * divisor of it. */
ttc_status ttc_codegen_store_fns(ttc_sbuf *src, const ttc_kir *k, const ttc_kop *op, const ttc_spelling *sp,
                                 ttc_kparams *p, int32_t given, int32_t vec, bool raw_acc, bool all_dims);
/* (all_dims: the sizes of every symbolic output dim among the parameters, as "<name>_storeh"
 * needs them.) "<name>_storeh(int lin, ...)" (the store functions' parameters, p done, made
 * with all_dims): <name>_storev for an output stored channels-last (kir/nhwc.c), lin walking
 * [N, H, W, C]; a dense leaf is read at lin where nhwc (per tensor) says it is stored so too,
 * else at its NCHW index; acc is the output's raw value (a cuDNN result). V:
 * ttc_codegen_vec_width_nhwc (divides C). */
ttc_status ttc_codegen_store_nhwc(ttc_sbuf *src, const ttc_kir *k, const ttc_kop *op, const ttc_spelling *sp,
                                  const ttc_kparams *p, int32_t V, const bool *nhwc);
int32_t ttc_codegen_vec_width_nhwc(const ttc_kir *k, const ttc_kop *op);
/* The store function's pieces, for a function computing op's epilogue elsewhere (an inlined
 * op: ttc_codegen_inline_fn): _leaf_params adds the leaves' parameters "<pre>l<j>" (buffer,
 * offset, strides unless dense like op's output) to p; _epi_value writes, after "int i<d>" (the
 * output element lin's index, needed unless every leaf is dense like the output) and
 * "float acc", each leaf's "l<j>_v" (but leaf `given`, -1: none, the caller's "given") and the
 * expression over them, and puts the name of its value in res ("acc" without an expression). */
void ttc_codegen_leaf_params(ttc_kparams *p, const ttc_kop *op, const char *pre);
ttc_status ttc_codegen_epi_value(ttc_sbuf *src, const ttc_kir *k, const ttc_kop *op, const ttc_spelling *sp,
                                 const char *pre, int32_t given, char *res, size_t res_len);
/* codegen_data.c: whether tensor t is the result of an inlined op (ttc_kop.inlined, kir/fuse.c),
 * which its reader computes: ttc_codegen_inline_fn writes "static inline float <fn>(int lin,
 * ...)", element lin (row-major) of t as the op's own kernel would have stored it and the
 * reader loaded it (rounded to t's dtype), its parameters added to fp (made with lead: the
 * reader's kernel declares ttc_kp_sig(fp) after its own and calls <fn>(lin<ttc_kp_call(fp)>)). */
bool ttc_codegen_inlined(const ttc_kir *k, int32_t t);
ttc_status ttc_codegen_inline_fn(const ttc_kgen *g, int32_t t, ttc_kparams *fp, const char *fn);
/* How many adjacent output elements of op one work-item may store together (_storev): 8 float16
 * or 4 float32 (16 bytes), halved until it divides the output's innermost dim; 1 where that dim
 * is symbolic or the output is neither float16 nor float32. */
int32_t ttc_codegen_vec_width(const ttc_kir *k, const ttc_kop *op);
const char *ttc_codegen_leaf_type(const ttc_kir *k, int32_t t);
/* The leaf of ELEMENTWISE op that is a permuted view of a dense tensor whose innermost dim is
 * not the output's (an NHWC <-> NCHW copy): read one element per work-item, neighbouring
 * work-items touch addresses a whole row apart. -1 when there is none (or the tile would be
 * mostly empty); output dims [*p0, *p1]: the run along which that leaf is dense. */
int32_t ttc_codegen_tiled_leaf(const ttc_kir *k, const ttc_kop *op, int32_t *p0, int32_t *p1);
bool ttc_codegen_floatish(ttc_dtype d);
/* ptr[idx] read as stored (float16 without half arithmetic: converted to float). */
void ttc_codegen_load(ttc_sbuf *b, const ttc_kir *k, const ttc_spelling *sp, ttc_dtype d, const char *ptr,
                      const char *idx);
/* A literal v of dtype d (integers as ((int_type)v)). */
void ttc_codegen_literal(ttc_sbuf *b, const ttc_spelling *sp, double v, ttc_dtype d, const char *int_type);
/* "<ind>o_[o_off + at] = val;" in dtype od's storage; fval: val as a float, for half storage
 * without half arithmetic. */
void ttc_codegen_store(ttc_sbuf *b, const ttc_kir *k, const ttc_spelling *sp, ttc_dtype od, const char *val,
                       const char *fval, const char *at, const char *ind);

/* codegen_data.c: "<val> written at output element lin": through the store function when an
 * epilogue was fused into g->op, else directly in the output's type (int64 copied exactly). */
void ttc_codegen_write_out(const ttc_kgen *g, const char *val, const char *lin);

/* codegen.c: templates and loaders. Appends template `tmpl` (csrc/kernels/<tmpl>.cl) between
 * #define/#undef of the NULL-terminated name/value pairs in defs. */
ttc_status ttc_codegen_template(ttc_sbuf *src, const char *tmpl, const char *const *defs);
/* The same, then checks the template kernel's parameters against p (ttc_kp_check_template). */
ttc_status ttc_codegen_template_checked(ttc_sbuf *src, const char *tmpl, const char *const *defs, const ttc_kparams *p);
/* The PTX prelude (kernels/ptx.cl: mma.sync, ldmatrix, cp.async, shuffles) for a kernel that
 * uses it: the real instructions on NVIDIA targets, the portable emulation elsewhere (forced
 * families on PoCL). Emitting it again for a second kernel of the program is harmless. */
ttc_status ttc_codegen_ptx_prelude(ttc_sbuf *src, const ttc_kir *k);
/* "#define <name>(p,i) ..." loaders reading dtype d as float (scalar, or 8-vector). */
void ttc_codegen_loader(ttc_sbuf *src, const ttc_spelling *sp, const char *name, ttc_dtype d, bool vec8);
/* codegen_ops.c: the parameters every convolution template starts with: X, offX, W, offW, H,
 * Wd, OH, OW (w: the weight tensor the kernel reads). */
void ttc_codegen_conv_params(ttc_kparams *p, const ttc_kop *op, int32_t w);
/* The split-K implicit-GEMM convolutions (conv2d_igemm, conv2d_mma): template `tmpl` with
 * defs, parameters = conv params (weights op->in[2]) + the batch NB_ (S images per split), and
 * the grid: dim 0 ceil(N*OH*OW / tile_n) work-groups of nt, dim 1 groups, dim 2 S. */
ttc_status ttc_codegen_conv_splitk(ttc_sbuf *src, const ttc_kir *k, ttc_kspec *ks, const ttc_kop *op, const char *tmpl,
                                   const char *const *defs, int64_t S, int64_t OC, int32_t tile_n, int32_t nt,
                                   int64_t groups);
/* CPU convolution (codegen_conv_cpu.c): enabled unless TORCHTRT_C_CONV_CPU=ocb8. */
bool ttc_conv_cpu_enabled(const ttc_kir *k);
/* Whether TORCHTRT_C_KERNELS=gpu asks for the GPU kernel families on any device. */
bool ttc_codegen_gpu_forced(const ttc_kir *k);

/* codegen_attn_mma.c: whether attention op takes the tensor-core kernel (attn_mma.cl) on k's
 * target, and its generator (called by ttc_gen_attention, which owns p). */
bool ttc_attn_mma_ok(const ttc_kir *k, const ttc_kop *op);
ttc_status ttc_gen_attention_mma(const ttc_kgen *g, ttc_kparams *p);

/* The usual locals of a generator (each may go unused). */
#define TTC_KGEN_LOCALS(g)                                                                   \
    const ttc_kir *k = (g)->k;                                                               \
    const ttc_kop *op = (g)->op;                                                             \
    ttc_kspec *ks = (g)->ks;                                                                 \
    ttc_sbuf *src = (g)->src;                                                                \
    const char *P = (g)->P, *A_ = (g)->A_;                                                   \
    (void)k; (void)op; (void)ks; (void)src; (void)P; (void)A_

/* The generators, by file. */
ttc_status ttc_gen_elementwise(const ttc_kgen *g);           /* codegen.c */
ttc_status ttc_gen_gemm(const ttc_kgen *g);
ttc_status ttc_gen_conv(const ttc_kgen *g);                  /* codegen_ops.c */
ttc_status ttc_gen_softmax(const ttc_kgen *g);
ttc_status ttc_gen_norm(const ttc_kgen *g);
ttc_status ttc_gen_pool(const ttc_kgen *g);
ttc_status ttc_gen_reduce(const ttc_kgen *g);
ttc_status ttc_gen_conv_cpu(const ttc_kgen *g);              /* codegen_conv_cpu.c (from ttc_gen_conv) */
ttc_status ttc_gen_conv_mma(const ttc_kgen *g);              /* codegen_conv_mma.c (from ttc_gen_conv) */
ttc_status ttc_gen_conv_transpose(const ttc_kgen *g);        /* codegen_convt.c */
ttc_status ttc_gen_concat(const ttc_kgen *g);                /* codegen_data.c */
ttc_status ttc_gen_pad(const ttc_kgen *g);
ttc_status ttc_gen_index(const ttc_kgen *g);
ttc_status ttc_gen_gather(const ttc_kgen *g);
ttc_status ttc_gen_resize(const ttc_kgen *g);
ttc_status ttc_gen_attention(const ttc_kgen *g);
ttc_status ttc_gen_sort(const ttc_kgen *g);
ttc_status ttc_gen_wq_linear(const ttc_kgen *g);              /* codegen_wq.c */
ttc_status ttc_gen_scatter(const ttc_kgen *g);
ttc_status ttc_gen_scan(const ttc_kgen *g);                  /* codegen_scan.c */
ttc_status ttc_gen_slot_write(const ttc_kgen *g);            /* codegen_kv.c */
ttc_status ttc_gen_kv_attention(const ttc_kgen *g);
ttc_status ttc_gen_kv_reduce(const ttc_kgen *g);
ttc_status ttc_gen_qgemm(const ttc_kgen *g);                 /* codegen_qgemm.c */
ttc_status ttc_gen_qconv2d(const ttc_kgen *g);

#endif
