/* The target description (target.h): a device's facts, its probed capabilities, and the
 * decisions the settings table's knobs (knobs.def) change, read through knobs.h. */
#include "target.h"
#include "knobs.h"

#include <pthread.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* PoCL makes its binary by compiling every kernel's work-group function then and there (for
 * no particular local size: at launch it compiles the specialised one again), which took
 * 18 s of a 34 s ResNet compile; its own kernel cache (POCL_CACHE_DIR) already keeps builds
 * between processes. So PoCL programs keep no binary (engines store only their source) unless
 * TORCHTRT_C_PROGRAM_BINARIES=1; =0 turns binaries off on any device. */
bool ttc_target_keep_binaries(const ttc_target *facts) {
    return ttc_knob_flag(TTC_KNOB_PROGRAM_BINARIES, !strstr(facts->platform, "Portable Computing Language"));
}

bool ttc_target_cuda_interop(void) { return ttc_knob_flag(TTC_KNOB_CUDA_INTEROP, true); }

bool ttc_target_native_conv_blas(void) { return ttc_knob_is(TTC_KNOB_NATIVE_CONV, "blas"); }
bool ttc_target_step_pool_omp(void) { return ttc_knob_is(TTC_KNOB_STEP_POOL, "omp"); }

int64_t ttc_target_step_spin_us(void) {
    const char *v = ttc_knob_str(TTC_KNOB_STEP_SPIN);
    long us = v ? strtol(v, NULL, 10) : 100;
    return us < 0 ? 0 : us > 100000 ? 100000 : us;
}

static void decisions_default(ttc_target *t) {
    t->gemm_tile = -1;
    t->conv_ksplit_cap = 32;
    t->conv_tile = -1;
    t->conv_mma = -1;
    t->conv_double_buffer = -1;
    t->dedupe_kernels = true;
    t->tune_threads = 1;
    t->tune_mode = TTC_TUNE_FAST;
    t->tune_max = 16;
    t->cuda_launch = true;
    t->cuda_graphs = 8;
    t->cuda_libs = TTC_CUDA_LIBS_AUTO;
    t->gemm_wide = TTC_GEMM_WIDE_AUTO;
    t->gemm_gemv = TTC_GEMM_GEMV_OFF;   /* until the GPU measurement (knobs.def) */
    t->cuda_lt = true;
    t->cuda_nhwc = true;
    t->attn_mma = -1;
    t->qgemm_mma = -1;
    t->wq_glu = true;
    t->norm_split = false;   /* until the GPU measurement (knobs.def) */
    t->build_threads = 1;
    t->build_procs = 1;
    t->build_proc_bytes = 64 * 1024;
    t->native_epi_math = true;
    t->native_attn = t->native_attn_dnnl = true;
    t->native_norm = true;
    t->step_threads = 1;
    t->native_elementwise = true;
    t->cuda_interop = t->native_epi = t->native_pool = t->native_qconv = t->native_qmm = true;
}

static pthread_once_t defaults_once = PTHREAD_ONCE_INIT;
static ttc_target defaults;

static void defaults_init(void) {
    defaults.backend = "none";
    defaults.kind = TTC_DEVICE_CPU;
    defaults.is_cpu = true;
    decisions_default(&defaults);
}

const ttc_target *ttc_target_defaults(void) {
    pthread_once(&defaults_once, defaults_init);
    return &defaults;
}

/* kv's reading of knob K: given (SET), its value (VAL), a FLAG's on/off with a default
 * (FLAG), a WORD/CHOICE's value named by its index in the row's VALUES (IS) */
#define SET(K) (kv.set[TTC_KNOB_##K])
#define VAL(K) (kv.val[TTC_KNOB_##K])
#define FLAG(K, dflt) (SET(K) ? VAL(K) != 0 : (dflt))
#define IS(K, index) (SET(K) && VAL(K) == (index))

ttc_status ttc_target_decide(const ttc_target *facts, const ttc_target_probes *pr, ttc_target *out) {
    ttc_target t = *facts;
    decisions_default(&t);
    /* every row of the table, parsed by its type (a malformed CHOICE/INT fails here) */
    ttc_knob_vals kv;
    TTC_TRY(ttc_knobs_read(&kv));
    t.gpu_kernels = t.is_gpu || IS(KERNELS, 1 /* gpu */);
    t.dw_rows = IS(DW, 1 /* rows */);
    /* half arithmetic allowed (=0 for A/B measurements or a suspect driver); whether the device
     * computes in half is probed at the first fp16 engine build (build.c), so fp32-only
     * processes build no probe program */
    t.half_compute = FLAG(HALF_COMPUTE, true);
    /* GEMM/convolution through the host BLAS where the queues run host tasks (and the
     * library loads); the GPU kernel families keep their own kernels */
    t.native = FLAG(NATIVE, true) && !t.gpu_kernels && pr->host_tasks(pr->dev) && pr->blas();
    /* exp/erf/tanh/GELU/sigmoid/SiLU steps inside native calls' epilogues (=0: such
     * epilogues stay OpenCL kernels after the call, for A/B runs) */
    t.native_epi_math = FLAG(NATIVE_EPI_MATH, true);
    /* scaled dot-product attention as a native call where native ops run (=0: the OpenCL
     * attention kernel) */
    t.native_attn = FLAG(NATIVE_ATTN, true);
    /* its Q K^T and P V as one oneDNN batched matmul per chunk of heads where oneDNN loads
     * (=blas: OpenBLAS per head, for A/B runs) */
    t.native_attn_dnnl = !IS(NATIVE_ATTN_GEMM, 1 /* blas */);
    /* layer norm likewise (=0: the OpenCL kernel) */
    t.native_norm = FLAG(NATIVE_NORM, true);
    /* the C steps of native calls (norms, epilogues, softmax, pooling) on this many threads,
     * the calling PoCL worker included: online CPUs, at most 16 (TORCHTRT_C_STEP_THREADS=1:
     * one thread; steps under backend/cpu/step_threads.h's grain stay on one anyway) */
    long nst = SET(STEP_THREADS) ? (long)VAL(STEP_THREADS) : sysconf(_SC_NPROCESSORS_ONLN);
    t.step_threads = nst < 1 ? 1 : nst > 16 ? 16 : (int32_t)nst;
    /* an engine's weight copies made by the core on those threads, then wrapped, where host
     * memory backs buffers (=driver: the driver copies them, one buffer at a time) */
    t.host_const_copy = t.host_memory && !IS(CONST_COPY, 1 /* driver */);
    /* float32 elementwise ops reading a native GEMM/attention/norm result (copies of permuted
     * views, q/k/v splits, RMS norm scaling) as native calls (=0: OpenCL kernels) */
    t.native_elementwise = FLAG(NATIVE_ELEMENTWISE, true);
    /* bias + activation inside the oneDNN convolution (=0 for A/B runs: they run in C after it) */
    t.native_post = t.native && FLAG(NATIVE_POST, true);
    /* 3x3 stride-1 native convolutions through oneDNN's Winograd kernel where it has one (=0:
     * its direct kernels only; backend/cpu/native_conv_dnnl.c) */
    /* (opt-in for part of session 8: it crashed through oneDNN's library scratchpad, which is
     * per thread; engines now hand every primitive the calling thread's own: native_conv_dnnl.c) */
    t.conv_winograd = t.native && FLAG(CONV_WINOGRAD, true);
    /* ... hardswish among them (=0: in C after it, as before session 8) */
    t.native_post_hswish = t.native_post && FLAG(NATIVE_POST_HSWISH, true);
    /* a native GEMM's bias + activations as oneDNN matmul post-ops (=0 for A/B runs: they run
     * in C after it, as before session 9) */
    t.native_gemm_post = t.native && FLAG(NATIVE_GEMM_POST, true);
    /* elementwise ops fed by native ops, and layer norms, without an OpenCL hand-over (=0: OpenCL kernels) */
    t.native_ew = t.native && FLAG(NATIVE_EW, true);
    /* activations kept channels-last between native convolutions (=0: NCHW, reorders in each call) */
    t.native_layout = t.native && FLAG(NATIVE_LAYOUT, true);
    t.keep_binaries = FLAG(PROGRAM_BINARIES, !strstr(t.platform, "Portable Computing Language"));
    /* inputs/outputs over host memory with no map (CPU devices whose probe says so) */
    t.host_in_place = t.host_memory && FLAG(HOST_IN_PLACE, true) && pr->host_in_place(pr->dev);
    if (SET(GEMM_TILE)) t.gemm_tile = (int32_t)VAL(GEMM_TILE);
    if (SET(CONV_KSPLIT) && VAL(CONV_KSPLIT) >= 1) t.conv_ksplit_cap = (int32_t)VAL(CONV_KSPLIT);
    if (SET(CONV_TILE)) t.conv_tile = (int32_t)VAL(CONV_TILE);  /* the digit's index is the digit */
    t.conv_tiles_v1 = IS(CONV_TILES, 1 /* v1 */);
    if (SET(CONV_MMA)) t.conv_mma = (int32_t)VAL(CONV_MMA);     /* 0, 1, 2 = tf32 */
    if (SET(CONV_DB)) t.conv_double_buffer = (int32_t)VAL(CONV_DB);
    t.conv_cpu_ocb8 = IS(CONV_CPU, 1 /* ocb8 */);
    /* oneDNN's matmul for GEMMs with constant weights by default: faster than OpenBLAS 0.3.21
     * on the zoo's linears (bench/cpu_gemm.py); blas/dnnl for A/B runs and tests */
    t.native_gemm = SET(NATIVE_GEMM) ? (int32_t)VAL(NATIVE_GEMM) : TTC_NATIVE_GEMM_AUTO;  /* blas|auto|dnnl */
    /* decode-step linears (a few rows, constant weights) through the C GEMV: memory-bound, and
     * oneDNN's matmul ran them at a fraction of the bandwidth; up to 4 rows (a small Llama's
     * decode at batch 4: 7.9 ms/token, oneDNN 9.8; at batch 8 oneDNN was faster: 15.8 vs 25.2,
     * the GEMV's FMAs then the limit) (=0 for A/B runs) */
    t.native_gemv = SET(NATIVE_GEMV_ROWS) ? (int32_t)VAL(NATIVE_GEMV_ROWS) : 4;
    t.dedupe_kernels = FLAG(DEDUPE_KERNELS, true);
    t.inline_concat = t.gpu_kernels && FLAG(INLINE_CONCAT, true);
    t.cuda_launch = FLAG(CUDA_LAUNCH, true);
    if (SET(CUDA_GRAPHS)) t.cuda_graphs = VAL(CUDA_GRAPHS) > 64 ? 64 : (int32_t)VAL(CUDA_GRAPHS);
    static const int32_t cuda_libs[] = {TTC_CUDA_LIBS_OFF, TTC_CUDA_LIBS_ALL, TTC_CUDA_LIBS_AUTO};  /* 0|1|auto */
    if (SET(CUDA_LIBS)) t.cuda_libs = cuda_libs[VAL(CUDA_LIBS)];
    static const int32_t gemm_wide[] = {TTC_GEMM_WIDE_OFF, TTC_GEMM_WIDE_ON, TTC_GEMM_WIDE_ALWAYS,
                                        TTC_GEMM_WIDE_AUTO};  /* 0|1|always|auto */
    if (SET(GEMM_WIDE)) t.gemm_wide = gemm_wide[VAL(GEMM_WIDE)];
    static const int32_t gemm_gemv[] = {TTC_GEMM_GEMV_OFF, TTC_GEMM_GEMV_ON, TTC_GEMM_GEMV_AUTO};  /* 0|1|auto */
    if (SET(GEMM_GEMV)) t.gemm_gemv = gemm_gemv[VAL(GEMM_GEMV)];
    if (SET(CUDA_LT)) t.cuda_lt = VAL(CUDA_LT) == 1;
    if (SET(CUDA_NHWC)) t.cuda_nhwc = VAL(CUDA_NHWC) == 1;
    /* =1 runs the tensor-core attention through the PTX prelude's emulation where the device
     * is not NVIDIA (tests on PoCL), =0 keeps the row kernel on NVIDIA (A/B runs) */
    if (SET(ATTN_MMA)) t.attn_mma = (int32_t)VAL(ATTN_MMA);
    if (SET(QGEMM_MMA)) t.qgemm_mma = (int32_t)VAL(QGEMM_MMA);
    static const int32_t wq_split[] = {1, 2, 4};  /* 1|2|4 */
    if (SET(WQ_SPLIT)) t.wq_split = wq_split[VAL(WQ_SPLIT)];
    static const int32_t wq_mb[] = {1, 2, 4, 8}, wq_u[] = {1, 2, 4}, wq_r[] = {2, 4, 8};
    if (SET(WQ_MB)) t.wq_mb = wq_mb[VAL(WQ_MB)];
    if (SET(WQ_U)) t.wq_u = wq_u[VAL(WQ_U)];
    if (SET(WQ_R)) t.wq_r = wq_r[VAL(WQ_R)];
    if (SET(WQ_MMA)) t.wq_mma = (int32_t)VAL(WQ_MMA);   /* 0|1|auto */
    t.wq_glu = FLAG(WQ_GLU, true);
    t.norm_split = FLAG(NORM_SPLIT, false);
    t.wq_pipe = FLAG(WQ_PIPE, false);
    const char *v;
    if ((v = ttc_knob_str(TTC_KNOB_ATTN_TILE))) {
        int nw = 0, bn = 0;
        char extra;
        if (sscanf(v, "%dx%d%c", &nw, &bn, &extra) != 2 || (nw != 2 && nw != 4 && nw != 8) ||
            (bn != 16 && bn != 32 && bn != 64 && bn != 128))
            return ttc_fail(TTC_ERR_INVALID_ARG, "TORCHTRT_C_ATTN_TILE=%s: expected <warps 2/4/8>x<keys 16/32/64/128>", v);
        t.attn_nw = nw;
        t.attn_bn = bn;
    }
    /* threads preparing tuning candidates: online CPUs, at most 16 (the candidates' driver
     * compiles overlap; a 16-core GPU host was held to 8) */
    long n = SET(TUNE_THREADS) ? (long)VAL(TUNE_THREADS) : sysconf(_SC_NPROCESSORS_ONLN);
    t.tune_threads = n < 1 ? 1 : n > 16 ? 16 : (int32_t)n;
    if (SET(TUNE)) t.tune_mode = (int32_t)VAL(TUNE);  /* fast|full|heuristic: TTC_TUNE_* */
    /* 16 shapes: ResNet-50's 13 timed GEMM shapes all fit; EfficientNet-B0 at b32 has more */
    if (SET(TUNE_MAX)) t.tune_max = (int32_t)VAL(TUNE_MAX);
    /* engine programs built in parts by this many threads: on GPUs online CPUs, at most 16
     * (H100, ResNet-50 fp16: the program step 12.6 s as one program, 10.1 s as 16 parts; the
     * driver seems to compile about one program at a time per process, so more threads buy
     * little more: bench/RESULTS.md, "Cold compile, session 6").
     * CPU devices: 1 (on PoCL a part costs about what the whole program does: ResNet-18 as one
     * program 0.39 s, as two parts 0.70 s each, built side by side on 2 cores).
     * TORCHTRT_C_BUILD_THREADS=N overrides (1: one program). */
    n = SET(BUILD_THREADS) ? (long)VAL(BUILD_THREADS) : t.is_gpu ? sysconf(_SC_NPROCESSORS_ONLN) : 1;
    if (!SET(BUILD_THREADS) && n > 16) n = 16;
    t.build_threads = n < 1 ? 1 : n > 64 ? 64 : (int32_t)n;
    /* programs missing from the binary cache compiled by this many worker processes first
     * (backend.h: ttc_program_prebuild): on NVIDIA, whose OpenCL compiles one program at a time
     * per process, as many as build_threads; elsewhere 1 (none: PoCL builds in threads, and
     * keeps no binaries). TORCHTRT_C_BUILD_PROCS=N overrides (0 or 1: none). */
    n = SET(BUILD_PROCS) ? (long)VAL(BUILD_PROCS) : t.nvidia ? t.build_threads : 1;
    t.build_procs = n < 1 ? 1 : n > 32 ? 32 : (int32_t)n;
    /* one worker per 64 KiB of uncached source at most (H100: ~0.75 s of compile per 40 KiB,
     * ~0.5 s to start a worker; a test suite of tiny engines must not spawn processes);
     * TORCHTRT_C_BUILD_PROC_BYTES=N overrides (tests force workers with 1) */
    t.build_proc_bytes = SET(BUILD_PROC_BYTES) ? VAL(BUILD_PROC_BYTES) : 64 * 1024;
    if (t.build_proc_bytes < 0) t.build_proc_bytes = 0;
    /* on a CPU device the enqueuing thread and the device's workers share the cores, so an
     * execution's launches are enqueued before any starts; a GPU starts on the first while the
     * host enqueues the rest */
    t.batch_launch = FLAG(BATCH_LAUNCH, t.is_cpu);
    t.cuda_interop = FLAG(CUDA_INTEROP, true);
    /* small engines on the caller's thread (engine/exec.c says when; RESULTS.md, issue 13
     * item 4, has the threshold's measurements): 0|1|all */
    t.caller_thread = !pr->caller_thread(pr->dev) ? 0 : SET(CALLER_THREAD) ? (int32_t)VAL(CALLER_THREAD) : 1;
    t.caller_thread_items = SET(CALLER_THREAD_ITEMS) ? VAL(CALLER_THREAD_ITEMS) : 32768;
    /* epilogues inside native calls, native pooling: on unless turned off (A/B runs) */
    t.native_epi = FLAG(NATIVE_EPI, true);
    t.native_pool = FLAG(NATIVE_POOL, true);
    t.native_qconv = FLAG(NATIVE_QCONV, true);
    t.native_qmm = FLAG(NATIVE_QMM, true);
    *out = t;
    return TTC_OK;
}
