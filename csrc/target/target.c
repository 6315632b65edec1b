/* The target description (target.h): a device's facts, its probed capabilities, and every
 * environment knob that changes device behaviour, read here and nowhere else. */
#include "target.h"

#include <pthread.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *env(const char *name) {
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

static bool env_is(const char *name, const char *value) {
    const char *v = env(name);
    return v && !strcmp(v, value);
}

/* PoCL makes its binary by compiling every kernel's work-group function then and there (for
 * no particular local size: at launch it compiles the specialised one again), which took
 * 18 s of a 34 s ResNet compile; its own kernel cache (POCL_CACHE_DIR) already keeps builds
 * between processes. So PoCL programs keep no binary (engines store only their source) unless
 * TORCHTRT_C_PROGRAM_BINARIES=1; =0 turns binaries off on any device. */
bool ttc_target_keep_binaries(const ttc_target *facts) {
    const char *v = env("TORCHTRT_C_PROGRAM_BINARIES");
    if (v) return strcmp(v, "0") != 0;
    return !strstr(facts->platform, "Portable Computing Language");
}

/* Whether TORCHTRT_C_NATIVE turns native GEMM/convolution off. */
static bool native_disabled(void) {
    return env_is("TORCHTRT_C_NATIVE", "0") || env_is("TORCHTRT_C_NATIVE", "off") || env_is("TORCHTRT_C_NATIVE", "false");
}

bool ttc_target_cuda_interop(void) { return !env_is("TORCHTRT_C_CUDA_INTEROP", "0"); }

bool ttc_target_native_conv_blas(void) { return env_is("TORCHTRT_C_NATIVE_CONV", "blas"); }
bool ttc_target_step_pool_omp(void) { return env_is("TORCHTRT_C_STEP_POOL", "omp"); }

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
    t->cuda_lt = true;
    t->cuda_nhwc = true;
    t->attn_mma = -1;
    t->build_threads = 1;
    t->build_procs = 1;
    t->build_proc_bytes = 64 * 1024;
    t->native_epi_math = true;
    t->native_attn = t->native_attn_dnnl = true;
    t->native_norm = true;
    t->step_threads = 1;
    t->native_elementwise = true;
    t->cuda_interop = t->native_epi = t->native_pool = true;
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

ttc_status ttc_target_decide(const ttc_target *facts, const ttc_target_probes *pr, ttc_target *out) {
    ttc_target t = *facts;
    decisions_default(&t);
    t.gpu_kernels = t.is_gpu || env_is("TORCHTRT_C_KERNELS", "gpu");
    t.dw_rows = env_is("TORCHTRT_C_DW", "rows");
    /* half arithmetic allowed (=0 for A/B measurements or a suspect driver); whether the device
     * computes in half is probed at the first fp16 engine build (build.c), so fp32-only
     * processes build no probe program */
    t.half_compute = !env_is("TORCHTRT_C_HALF_COMPUTE", "0");
    /* GEMM/convolution through the host BLAS where the queues run host tasks (and the
     * library loads); the GPU kernel families keep their own kernels */
    t.native = !native_disabled() && !t.gpu_kernels && pr->host_tasks(pr->dev) && pr->blas();
    /* exp/erf/tanh/GELU/sigmoid/SiLU steps inside native calls' epilogues (=0: such
     * epilogues stay OpenCL kernels after the call, for A/B runs) */
    t.native_epi_math = !env_is("TORCHTRT_C_NATIVE_EPI_MATH", "0");
    /* scaled dot-product attention as a native call where native ops run (=0: the OpenCL
     * attention kernel) */
    t.native_attn = !env_is("TORCHTRT_C_NATIVE_ATTN", "0");
    /* its Q K^T and P V as one oneDNN batched matmul per chunk of heads where oneDNN loads
     * (=blas: OpenBLAS per head, for A/B runs) */
    t.native_attn_dnnl = !env_is("TORCHTRT_C_NATIVE_ATTN_GEMM", "blas");
    /* layer norm likewise (=0: the OpenCL kernel) */
    t.native_norm = !env_is("TORCHTRT_C_NATIVE_NORM", "0");
    /* the C steps of native calls (norms, epilogues, softmax, pooling) on this many threads,
     * the calling PoCL worker included: online CPUs, at most 16 (TORCHTRT_C_STEP_THREADS=1:
     * one thread; steps under backend/cpu/step_threads.h's grain stay on one anyway) */
    const char *st = env("TORCHTRT_C_STEP_THREADS");
    long nst = st ? strtol(st, NULL, 10) : sysconf(_SC_NPROCESSORS_ONLN);
    t.step_threads = nst < 1 ? 1 : nst > 16 ? 16 : (int32_t)nst;
    /* an engine's weight copies made by the core on those threads, then wrapped, where host
     * memory backs buffers (=driver: the driver copies them, one buffer at a time) */
    t.host_const_copy = t.host_memory && !env_is("TORCHTRT_C_CONST_COPY", "driver");
    /* float32 elementwise ops reading a native GEMM/attention/norm result (copies of permuted
     * views, q/k/v splits, RMS norm scaling) as native calls (=0: OpenCL kernels) */
    t.native_elementwise = !env_is("TORCHTRT_C_NATIVE_ELEMENTWISE", "0");
    /* bias + activation inside the oneDNN convolution (=0 for A/B runs: they run in C after it) */
    t.native_post = t.native && !env_is("TORCHTRT_C_NATIVE_POST", "0");
    /* 3x3 stride-1 native convolutions through oneDNN's Winograd kernel where it has one (=0:
     * its direct kernels only; backend/cpu/native_conv_dnnl.c) */
    /* (opt-in for part of session 8: it crashed through oneDNN's library scratchpad, which is
     * per thread; engines now hand every primitive the calling thread's own: native_conv_dnnl.c) */
    t.conv_winograd = t.native && !env_is("TORCHTRT_C_CONV_WINOGRAD", "0");
    /* ... hardswish among them (=0: in C after it, as before session 8) */
    t.native_post_hswish = t.native_post && !env_is("TORCHTRT_C_NATIVE_POST_HSWISH", "0");
    /* a native GEMM's bias + activations as oneDNN matmul post-ops (=0 for A/B runs: they run
     * in C after it, as before session 9) */
    t.native_gemm_post = t.native && !env_is("TORCHTRT_C_NATIVE_GEMM_POST", "0");
    /* elementwise ops fed by native ops, and layer norms, without an OpenCL hand-over (=0: OpenCL kernels) */
    t.native_ew = t.native && !env_is("TORCHTRT_C_NATIVE_EW", "0");
    /* activations kept channels-last between native convolutions (=0: NCHW, reorders in each call) */
    t.native_layout = t.native && !env_is("TORCHTRT_C_NATIVE_LAYOUT", "0");
    t.keep_binaries = ttc_target_keep_binaries(&t);
    /* inputs/outputs over host memory with no map (CPU devices whose probe says so) */
    t.host_in_place = t.host_memory && !env_is("TORCHTRT_C_HOST_IN_PLACE", "0") && pr->host_in_place(pr->dev);
    const char *v = env("TORCHTRT_C_GEMM_TILE");
    if (v) {
        char *end;
        long x = strtol(v, &end, 10);
        if (*end || x < 0 || x > 1000)
            return ttc_fail(TTC_ERR_INVALID_ARG, "TORCHTRT_C_GEMM_TILE=%s: expected a GEMM candidate index", v);
        t.gemm_tile = (int32_t)x;
    }
    if ((v = env("TORCHTRT_C_CONV_KSPLIT")) && atoi(v) >= 1) t.conv_ksplit_cap = atoi(v);
    if ((v = env("TORCHTRT_C_CONV_TILE")) && *v >= '0' && *v <= '9' && !v[1]) t.conv_tile = *v - '0';
    t.conv_tiles_v1 = env_is("TORCHTRT_C_CONV_TILES", "v1");
    if ((v = env("TORCHTRT_C_CONV_MMA"))) {
        if (!strcmp(v, "0") || !strcmp(v, "1")) t.conv_mma = v[0] - '0';
        else if (!strcmp(v, "tf32")) t.conv_mma = 2;
        else return ttc_fail(TTC_ERR_INVALID_ARG, "TORCHTRT_C_CONV_MMA=%s: expected 0, 1 or tf32", v);
    }
    if ((v = env("TORCHTRT_C_CONV_DB")) && (!strcmp(v, "0") || !strcmp(v, "1"))) t.conv_double_buffer = v[0] == '1';
    t.conv_cpu_ocb8 = env_is("TORCHTRT_C_CONV_CPU", "ocb8");
    /* oneDNN's matmul for GEMMs with constant weights by default: faster than OpenBLAS 0.3.21
     * on the zoo's linears (bench/cpu_gemm.py); blas/dnnl for A/B runs and tests */
    t.native_gemm = TTC_NATIVE_GEMM_AUTO;
    if ((v = env("TORCHTRT_C_NATIVE_GEMM")) != NULL) {
        if (!strcmp(v, "blas")) t.native_gemm = TTC_NATIVE_GEMM_BLAS;
        else if (!strcmp(v, "dnnl")) t.native_gemm = TTC_NATIVE_GEMM_DNNL;
        else if (strcmp(v, "auto"))
            return ttc_fail(TTC_ERR_INVALID_ARG, "TORCHTRT_C_NATIVE_GEMM=%s: expected blas, auto or dnnl", v);
    }
    t.dedupe_kernels = !env_is("TORCHTRT_C_DEDUPE_KERNELS", "0");
    t.cuda_launch = !env_is("TORCHTRT_C_CUDA_LAUNCH", "0");
    if ((v = env("TORCHTRT_C_CUDA_GRAPHS")) != NULL) {
        char *end = NULL;
        long g = strtol(v, &end, 10);
        if (end == v || *end || g < 0)
            return ttc_fail(TTC_ERR_INVALID_ARG, "TORCHTRT_C_CUDA_GRAPHS=%s: expected 0 (off) or the most graphs "
                            "kept per engine", v);
        t.cuda_graphs = g > 64 ? 64 : (int32_t)g;
    }
    if ((v = env("TORCHTRT_C_CUDA_LIBS")) != NULL) {
        if (!strcmp(v, "0")) t.cuda_libs = TTC_CUDA_LIBS_OFF;
        else if (!strcmp(v, "1")) t.cuda_libs = TTC_CUDA_LIBS_ALL;
        else if (!strcmp(v, "auto")) t.cuda_libs = TTC_CUDA_LIBS_AUTO;
        else return ttc_fail(TTC_ERR_INVALID_ARG, "TORCHTRT_C_CUDA_LIBS=%s: expected 0, 1 or auto", v);
    }
    if ((v = env("TORCHTRT_C_GEMM_WIDE")) != NULL) {
        if (!strcmp(v, "0")) t.gemm_wide = TTC_GEMM_WIDE_OFF;
        else if (!strcmp(v, "1")) t.gemm_wide = TTC_GEMM_WIDE_ON;
        else if (!strcmp(v, "always")) t.gemm_wide = TTC_GEMM_WIDE_ALWAYS;
        else if (!strcmp(v, "auto")) t.gemm_wide = TTC_GEMM_WIDE_AUTO;
        else return ttc_fail(TTC_ERR_INVALID_ARG, "TORCHTRT_C_GEMM_WIDE=%s: expected 0, 1, always or auto", v);
    }
    if ((v = env("TORCHTRT_C_CUDA_LT")) != NULL) {
        if (strcmp(v, "0") && strcmp(v, "1")) return ttc_fail(TTC_ERR_INVALID_ARG, "TORCHTRT_C_CUDA_LT=%s: expected 0 or 1", v);
        t.cuda_lt = v[0] == '1';
    }
    if ((v = env("TORCHTRT_C_CUDA_NHWC")) != NULL) {
        if (strcmp(v, "0") && strcmp(v, "1")) return ttc_fail(TTC_ERR_INVALID_ARG, "TORCHTRT_C_CUDA_NHWC=%s: expected 0 or 1", v);
        t.cuda_nhwc = v[0] == '1';
    }
    /* =1 runs the tensor-core attention through the PTX prelude's emulation where the device
     * is not NVIDIA (tests on PoCL), =0 keeps the row kernel on NVIDIA (A/B runs) */
    if ((v = env("TORCHTRT_C_ATTN_MMA")) && (!strcmp(v, "0") || !strcmp(v, "1"))) t.attn_mma = v[0] == '1';
    if ((v = env("TORCHTRT_C_ATTN_TILE"))) {
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
    v = env("TORCHTRT_C_TUNE_THREADS");
    long n = v ? strtol(v, NULL, 10) : sysconf(_SC_NPROCESSORS_ONLN);
    t.tune_threads = n < 1 ? 1 : n > 16 ? 16 : (int32_t)n;
    if ((v = env("TORCHTRT_C_TUNE"))) {
        if (!strcmp(v, "fast")) t.tune_mode = TTC_TUNE_FAST;
        else if (!strcmp(v, "full")) t.tune_mode = TTC_TUNE_FULL;
        else if (!strcmp(v, "heuristic")) t.tune_mode = TTC_TUNE_HEURISTIC;
        else return ttc_fail(TTC_ERR_INVALID_ARG, "TORCHTRT_C_TUNE=%s: expected fast, full or heuristic", v);
    }
    /* 16 shapes: ResNet-50's 13 timed GEMM shapes all fit; EfficientNet-B0 at b32 has more */
    if ((v = env("TORCHTRT_C_TUNE_MAX"))) {
        char *end;
        long x = strtol(v, &end, 10);
        if (*end || x < 0 || x > 100000)
            return ttc_fail(TTC_ERR_INVALID_ARG, "TORCHTRT_C_TUNE_MAX=%s: expected a count (0: no cap)", v);
        t.tune_max = (int32_t)x;
    }
    /* engine programs built in parts by this many threads: on GPUs online CPUs, at most 16
     * (H100, ResNet-50 fp16: the program step 12.6 s as one program, 10.1 s as 16 parts; the
     * driver seems to compile about one program at a time per process, so more threads buy
     * little more: bench/RESULTS.md, "Cold compile, session 6").
     * CPU devices: 1 (on PoCL a part costs about what the whole program does: ResNet-18 as one
     * program 0.39 s, as two parts 0.70 s each, built side by side on 2 cores).
     * TORCHTRT_C_BUILD_THREADS=N overrides (1: one program). */
    v = env("TORCHTRT_C_BUILD_THREADS");
    n = v ? strtol(v, NULL, 10) : t.is_gpu ? sysconf(_SC_NPROCESSORS_ONLN) : 1;
    if (!v && n > 16) n = 16;
    t.build_threads = n < 1 ? 1 : n > 64 ? 64 : (int32_t)n;
    /* programs missing from the binary cache compiled by this many worker processes first
     * (backend.h: ttc_program_prebuild): on NVIDIA, whose OpenCL compiles one program at a time
     * per process, as many as build_threads; elsewhere 1 (none: PoCL builds in threads, and
     * keeps no binaries). TORCHTRT_C_BUILD_PROCS=N overrides (0 or 1: none). */
    v = env("TORCHTRT_C_BUILD_PROCS");
    n = v ? strtol(v, NULL, 10) : t.nvidia ? t.build_threads : 1;
    t.build_procs = n < 1 ? 1 : n > 32 ? 32 : (int32_t)n;
    /* one worker per 64 KiB of uncached source at most (H100: ~0.75 s of compile per 40 KiB,
     * ~0.5 s to start a worker; a test suite of tiny engines must not spawn processes);
     * TORCHTRT_C_BUILD_PROC_BYTES=N overrides (tests force workers with 1) */
    v = env("TORCHTRT_C_BUILD_PROC_BYTES");
    t.build_proc_bytes = v ? strtoll(v, NULL, 10) : 64 * 1024;
    if (t.build_proc_bytes < 0) t.build_proc_bytes = 0;
    /* on a CPU device the enqueuing thread and the device's workers share the cores, so an
     * execution's launches are enqueued before any starts; a GPU starts on the first while the
     * host enqueues the rest */
    v = env("TORCHTRT_C_BATCH_LAUNCH");
    t.batch_launch = v ? strcmp(v, "0") != 0 : t.is_cpu;
    t.cuda_interop = ttc_target_cuda_interop();
    /* small engines on the caller's thread (engine/exec.c says when; RESULTS.md, issue 13
     * item 4, has the threshold's measurements) */
    t.caller_thread = !pr->caller_thread(pr->dev) ? 0 : env_is("TORCHTRT_C_CALLER_THREAD", "0") ? 0
                      : env_is("TORCHTRT_C_CALLER_THREAD", "all") ? 2 : 1;
    v = env("TORCHTRT_C_CALLER_THREAD_ITEMS");
    t.caller_thread_items = v ? strtoll(v, NULL, 10) : 32768;
    /* epilogues inside native calls, native pooling: on unless turned off (A/B runs) */
    t.native_epi = !env_is("TORCHTRT_C_NATIVE_EPI", "0") && !env_is("TORCHTRT_C_NATIVE_EPI", "off") &&
                   !env_is("TORCHTRT_C_NATIVE_EPI", "false");
    t.native_pool = !env_is("TORCHTRT_C_NATIVE_POOL", "0");
    *out = t;
    return TTC_OK;
}
