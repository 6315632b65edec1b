/*
 * The target description: everything conversion, tuning, code generation and the engine
 * builder may ask about a device, in one struct. A backend fills the facts when it
 * discovers the device; ttc_target_make (target.c) adds the probed capabilities and the
 * decisions, reading every TORCHTRT_C_* knob that changes device behaviour there and nowhere
 * else. Engines take a copy when they are made, so a knob set later (tests set them per test)
 * applies to the next engine, never to one half built.
 *
 *   ttc_target t;
 *   TTC_TRY(ttc_target_make(dev, &t));
 *   if (t.gpu_kernels) ...           // GPU kernel families
 *   if (t.native) ...                // GEMM/convolution through the host BLAS
 *
 * The knobs are the rows of the settings table (knobs.def, docs/settings.md); ttc_target_decide
 * reads them all through knobs.h. Device selection (TORCHTRT_C_DEVICE) and the cache directory
 * (TORCHTRT_C_CACHE_DIR) are read by backend.c, where devices are chosen and caches opened.
 */
#ifndef TTC_TARGET_TARGET_H
#define TTC_TARGET_TARGET_H

#include "../common/status.h"

typedef enum ttc_device_kind { TTC_DEVICE_OTHER = 0, TTC_DEVICE_CPU, TTC_DEVICE_GPU } ttc_device_kind;

typedef struct ttc_target {
    /* ---- facts (the backend, at discovery) ---- */
    const char *backend;          /* "OpenCL" */
    int32_t index;                /* in ttc_device_list order */
    char platform[128], name[256], vendor[128], version[128], driver[128];
    ttc_device_kind kind;
    bool is_gpu, is_cpu;          /* kind == GPU / CPU, for readability */
    bool nvidia;                  /* NVIDIA device or platform (tensor-core GEMM family) */
    int32_t nv_sm;                /* NVIDIA compute capability as major * 10 + minor (90: H100/H200;
                                   * 0 unknown or not NVIDIA): sm_90a instructions need exactly 90 */
    bool fp16;                    /* half arithmetic usable (advertised, or a known-good GPU) */
    bool fp16_advertised;         /* the driver says so (cl_khr_fp16) */
    bool lang2;                   /* kernel language 2.0+ (OpenCL C 2/3) */
    bool host_memory;             /* host pointers can back device buffers without copies (CPU) */
    bool host_tasks;              /* queues can run host functions (native kernels) */
    bool can_record;              /* queues can record launches and replay them */
    uint32_t compute_units;
    size_t max_work_group;
    uint64_t local_mem, global_mem, max_alloc;
    uint32_t mem_align_bits;
    /* ---- probed once per device, then decisions (ttc_target_make) ---- */
    bool half_compute;            /* generated code may compute in half where the device does
                                   * (ttc_device_half_compute, probed by fp16 builds; HALF_COMPUTE=0: no) */
    bool native;                  /* GEMM/convolution run as host tasks calling the BLAS */
    bool native_epi_math;         /* native epilogues may take exp/erf/tanh steps (GELU, ...) */
    bool native_attn;             /* float32 attention as a native call (BLAS + C softmax) */
    bool native_attn_dnnl;        /* its GEMMs as oneDNN batched matmuls (NATIVE_ATTN_GEMM=blas: no) */
    bool native_norm;             /* float32 layer norm as a native call */
    int32_t step_threads;         /* threads for native calls' C steps (backend/cpu/step_threads.h) */
    bool host_const_copy;         /* weights copied by the core on step_threads (engine/build.c;
                                   * CONST_COPY=driver: by the driver, clCreateBuffer) */
    bool native_elementwise;      /* float32 elementwise ops fed by native ops as native calls */
    bool native_post;             /* native convolutions take bias + activations as oneDNN
                                   * post-ops (backend/cpu/native_post.h; NATIVE_POST=0: no) */
    bool conv_winograd;           /* 3x3 stride-1 native convolutions as oneDNN Winograd
                                   * (backend/cpu/native_conv_dnnl.c; CONV_WINOGRAD=0: off) */
    bool native_post_hswish;      /* ... hardswish too (NATIVE_POST_HSWISH=0: in C) */
    bool native_gemm_post;        /* native GEMMs through oneDNN take bias + activations as
                                   * matmul post-ops (backend/cpu/native_post.h; NATIVE_GEMM_POST=0: in C) */
    bool native_layout;           /* image tensors between native convolutions stay NHWC
                                   * (backend/cpu/native_layout.h; NATIVE_LAYOUT=0: all NCHW) */
    bool native_ew;               /* image-shaped float32 elementwise ops between native ops and
                                   * layer norms run as native calls too (backend/cpu/native_ops.c;
                                   * NATIVE_EW=0: no) */
    int32_t native_gemv;          /* native GEMMs with constant [N, K] weights and at most this
                                   * many rows run as the C GEMV (backend/cpu/native_gemv.h;
                                   * NATIVE_GEMV_ROWS=0: never) */
    int32_t native_gemm;          /* library of native float32 GEMMs (TTC_NATIVE_GEMM_*;
                                   * NATIVE_GEMM=blas|auto|dnnl, backend/cpu/native_gemm_dnnl.h) */
    bool host_in_place;           /* host-backed buffers need no sync (probe; HOST_IN_PLACE=0: no) */
    bool gpu_kernels;             /* GPU kernel families (a GPU, or KERNELS=gpu) */
    bool dw_rows;                 /* GPU depthwise convolutions: the row kernel only
                                   * (DW=rows; default: the column kernel where it applies) */
    bool keep_binaries;           /* program builds fetch binaries (cache, engine blobs) */
    int32_t gemm_tile;            /* forced GEMM candidate, -1: choose */
    int32_t gemm_wide;            /* TTC_GEMM_WIDE_*: half GEMMs also as "<name>_w", tile
                                   * TTC_GEMM_WIDE_TILE (tensor copies + warpgroup MMA), which the
                                   * CUDA launch path times against the kernel and the library per
                                   * shape (exec_cuda.c): auto (default) where that path runs on
                                   * NVIDIA compute capability 9.0 with the CUDA libraries off
                                   * (with them on it gained nothing end to end and cost 2-2.5 s of
                                   * compile per transformer: RESULTS session 16), 0 never, 1 on
                                   * any device and beside the libraries, always as 1 and taken
                                   * wherever it can run, untimed (tests) */
    int32_t gemm_gemv;            /* TTC_GEMM_GEMV_*: x @ W^T GEMMs also as "<name>_v", their GEMV form
                                   * for products of few rows (codegen.c, gemv_wanted) */
    int32_t conv_ksplit_cap;      /* most split-K slices of a convolution (1: never split) */
    int32_t conv_tile;            /* forced implicit-GEMM convolution tile, -1: choose (tensor-core
                                   * convolutions: an index into their own table) */
    int32_t conv_mma;             /* tensor-core convolutions: -1 choose (NVIDIA), 0 never, 1 every
                                   * eligible one on any device (PoCL runs the emulation),
                                   * 2 (=tf32) also fp32 ones in TF32 whatever the policy */
    bool conv_tiles_v1;           /* the small-problem tile rule everywhere (A/B runs) */
    int32_t conv_double_buffer;   /* -1: choose, 0/1: force single/double buffering */
    bool conv_cpu_ocb8;           /* CPU convolutions: the 8-channel blocked kernel */
    bool dedupe_kernels;          /* identical kernel bodies compiled once */
    bool inline_concat;           /* GPU families: concatenations read only by a slot write or split
                                   * attention computed by it (kir/fuse.c; INLINE_CONCAT=0: no) */
    int32_t tune_threads;         /* threads preparing tuning candidates (1..16) */
    int32_t tune_mode;            /* TTC_TUNE_*: which GEMM candidates optimization_level 3 times */
    int32_t tune_max;             /* fast tuning: most GEMM shapes timed per engine (0: no cap) */
    bool cuda_launch;             /* CUDA tensors: the program's PTX launched through the CUDA driver on
                                   * torch's stream (backend/cuda/exec_cuda.h; CUDA_LAUNCH=0: the shared-memory path) */
    int32_t cuda_graphs;          /* CUDA launch path: a call's launches replayed as one CUDA graph
                                   * once the same pointers and shapes came twice (bench/RESULTS.md:
                                   * launch-bound engines); 0: never (TORCHTRT_C_CUDA_GRAPHS=0),
                                   * else the most graphs kept per engine (=N, default 8) */
    int32_t cuda_libs;            /* CUDA launch path: GEMMs through cuBLAS, convolutions through
                                   * cuDNN where faster (backend/cuda/exec_cuda_lib.c; TTC_CUDA_LIBS_*):
                                   * =0 never, =auto (default) each shape timed once against the
                                   * engine's kernel, =1 always where the library can (and the
                                   * epilogue kernels emitted on any device: tests) */
    bool cuda_lt;                 /* CUDA launch path: a cuBLAS GEMM's whole epilogue inside the product
                                   * where cuBLASLt can take it (bias, residual, tanh GELU), no
                                   * epilogue kernel after it (TORCHTRT_C_CUDA_LT=0: never) */
    bool cuda_nhwc;               /* CUDA launch path: tensors between cuDNN convolutions kept
                                   * channels-last (kir/nhwc.c; TORCHTRT_C_CUDA_NHWC=0: never) */
    int32_t attn_mma;             /* attention on tensor cores (attn_mma.cl fp16, attn_tf32.cl fp32):
                                   * -1 choose (NVIDIA),
                                   * 0/1 force off/on (on: the prelude's emulation off NVIDIA) */
    int32_t qgemm_mma;            /* integer GEMMs on int8 tensor cores (codegen_qgemm.c): -1 choose
                                   * (NVIDIA sm_80+), 0 never, 1 on any device (the emulation) */
    int32_t wq_split;             /* weight-only GEMVs (codegen_wq.c): warps splitting a row's K;
                                   * 0 choose, 1/2/4 forced */
    bool norm_split;              /* norms of at most 4 rows split between a group's warps (norm_warp.cl) */
    int32_t wq_mb, wq_u, wq_r;
    bool wq_pipe;                 /* weight-only GEMVs: next pass's loads before this pass's products */    /* weight-only GEMVs (codegen_wq.c): rows of x a work-group, 16-byte
                                   * chunks in flight a row, weight rows a warp; 0 choose */
    int32_t wq_mma;               /* weight-only products on fp16 tensor cores (codegen_wq.c):
                                   * 0 never, 1 always (gen_wq_mma), 2 (auto) the GEMV's kernel
                                   * takes them for calls of more than WQ_MMA_ROWS rows of x */
    bool wq_glu;                  /* act(gate) * up into the gate/up weight-only GEMV (kir/fuse.c) */
    int32_t attn_nw, attn_bn;     /* forced tensor-core attention tile: warps (16 query rows each)
                                   * and keys per block; 0: choose */
    int32_t build_threads;        /* an engine program is built in up to this many parts at once (1..64) */
    int32_t build_procs;          /* uncached programs compiled first in this many worker processes (1: none) */
    int64_t build_proc_bytes;     /* ... at most one worker per this many bytes of uncached source */
    bool batch_launch;            /* an execution's launches held until all are enqueued
                                   * (ttc_queue_hold): CPU devices, BATCH_LAUNCH=0/1 overrides */
    bool cuda_interop;            /* memory shared with CUDA where the device can (CUDA_INTEROP=0: no) */
    int32_t caller_thread;        /* engines run on the device's caller-thread companion
                                   * (backend.h, ttc_device_caller_thread): 0 never
                                   * (CALLER_THREAD=0), 1 small engines (default), 2 every
                                   * engine without native steps (=all, for tests) */
    int64_t caller_thread_items;  /* "small": at most this size (per launch the larger of its
                                   * work-items and its tensors' elements, summed) at the
                                   * engine's largest shapes (CALLER_THREAD_ITEMS=N) */
    bool native_epi;              /* cheap epilogues inside native calls (NATIVE_EPI=0: no) */
    bool native_pool;             /* max/average pooling as native calls (NATIVE_POOL=0: no) */
    bool native_qconv;            /* int8 QCONV2D/QGEMM as oneDNN int8 native calls
                                   * (backend/cpu/native_qconv.h; NATIVE_QCONV=0: no) */
    bool native_qmm;              /* aten._int_mm as oneDNN int8 matmul native calls
                                   * (backend/cpu/native_qmm.h; NATIVE_QMM=0: no) */
    /* ---- the engine's compile settings (engine options, set by the engine builder) ---- */
    bool tf32_matmul;             /* fp32 GEMMs may use TF32 tensor cores (allow_tf32_matmul on an
                                   * NVIDIA target; false elsewhere: no tensor cores) */
    bool tf32_conv;               /* fp32 convolutions may (allow_tf32_conv on NVIDIA) */
} ttc_target;

/* Which library runs native GEMMs: OpenBLAS always; oneDNN's matmul where the weights are an
 * engine constant (reordered once), OpenBLAS for products of two activations; oneDNN for
 * every one. oneDNN where it loads, else OpenBLAS. */
enum { TTC_CUDA_LIBS_OFF = 0, TTC_CUDA_LIBS_AUTO = 1, TTC_CUDA_LIBS_ALL = 2 };
enum { TTC_GEMM_WIDE_OFF = 0, TTC_GEMM_WIDE_AUTO = 1, TTC_GEMM_WIDE_ON = 2, TTC_GEMM_WIDE_ALWAYS = 3 };
enum { TTC_GEMM_GEMV_OFF = 0, TTC_GEMM_GEMV_AUTO = 1, TTC_GEMM_GEMV_ON = 2 };
/* the tiles of "<name>_w" kernels (codegen.c, wide_tile; tensor copies + warpgroup MMA):
 * 128x128x64 in 3 stages, or 192x256x64 in 4 where its waves fill the device better */
#define TTC_GEMM_WIDE_TILE 62
#define TTC_GEMM_WIDE_TILE_BIG 61
/* Whether the program carries what the CUDA launch path's library steps run beside the
 * libraries (epilogue kernels "<name>_e", "_eh"): NVIDIA devices with the launch path and
 * cuda_libs not off, or any device with TORCHTRT_C_CUDA_LIBS=1 (tests). */
static inline bool ttc_target_lib_steps(const ttc_target *t) {
    return t->cuda_libs == TTC_CUDA_LIBS_ALL || (t->cuda_libs != TTC_CUDA_LIBS_OFF && t->nvidia && t->cuda_launch);
}
enum { TTC_NATIVE_GEMM_BLAS = 0, TTC_NATIVE_GEMM_AUTO = 1, TTC_NATIVE_GEMM_DNNL = 2 };
/* GEMM tuning at optimization_level 3 (TORCHTRT_C_TUNE): fast (the default) times the
 * heuristic's shortlist of the biggest tune_max shapes per engine (engine/tune.c); full every
 * candidate of the device's families for every shape (as before: A/B runs); heuristic times
 * nothing (the choice of levels 0-2). */
enum { TTC_TUNE_FAST = 0, TTC_TUNE_FULL = 1, TTC_TUNE_HEURISTIC = 2 };

typedef struct ttc_device ttc_device;

/* What the decisions ask of the device beyond its facts, answered by the backend
 * (backend.c, ttc_target_make) and asked lazily, in the order the decisions need them: a
 * probe may build a program. */
typedef struct ttc_target_probes {
    void *dev;
    bool (*host_tasks)(void *dev);     /* queues run host functions (native kernels) */
    bool (*host_in_place)(void *dev);  /* host-backed buffers need no map */
    bool (*caller_thread)(void *dev);  /* the device has a caller-thread companion */
    bool (*blas)(void);                /* the host BLAS loads (backend/blas.h) */
} ttc_target_probes;

/* The target of a device with these facts, its probes and the environment's knobs applied.
 * Fails only on a malformed knob (TTC_ERR_INVALID_ARG naming it). Backends call it through
 * ttc_target_make (backend.h). */
ttc_status ttc_target_decide(const ttc_target *facts, const ttc_target_probes *pr, ttc_target *out);
/* Whether program builds on a device with these facts fetch their binary (for the on-disk
 * cache and engine blobs): not on PoCL; TORCHTRT_C_PROGRAM_BINARIES=0/1 overrides. Backends
 * ask it when they build, hence a function of its own. */
bool ttc_target_keep_binaries(const ttc_target *facts);
/* Whether memory may be shared with CUDA (TORCHTRT_C_CUDA_INTEROP is not 0): asked by the
 * backend per (device, CUDA device) pair outside any engine, hence a function of its own. */
bool ttc_target_cuda_interop(void);
/* Whether native convolutions take im2col + the BLAS instead of oneDNN
 * (TORCHTRT_C_NATIVE_CONV=blas). Read again on every call, not fixed in the target: tests and
 * bench/cpu_ab.py switch it between calls of one engine. */
bool ttc_target_native_conv_blas(void);
/* Whether native calls' C steps run on oneDNN's OpenMP team (TORCHTRT_C_STEP_POOL=omp) instead
 * of backend/cpu/step_threads.c's pool; read again on every call, for A/B runs. */
bool ttc_target_step_pool_omp(void);
/* STEP_SPIN: microseconds a step-pool thread polls for work before it sleeps */
int64_t ttc_target_step_spin_us(void);
/* The defaults for code that runs without a device (conversion and codegen tests): a CPU
 * target with no knob set. */
const ttc_target *ttc_target_defaults(void);

#endif
