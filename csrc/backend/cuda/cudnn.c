/* cuDNN's forward convolution through dlopen (cudnn.h). cuDNN's handles and descriptors are
 * pointers and its enums ints here: the values cudnn_*.h of cuDNN 8 and 9 give them (stable
 * across both: the legacy API kept its ABI). */
#include "cudnn.h"

#include "cuda_driver.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int dnn_status;
enum { DNN_NCHW = 0, DNN_NHWC = 1 };                                   /* cudnnTensorFormat_t */
enum { DNN_FLOAT = 0, DNN_HALF = 2, DNN_BFLOAT16 = 9 };                /* cudnnDataType_t */
enum { DNN_CROSS_CORRELATION = 1 };                                    /* cudnnConvolutionMode_t */
enum { DNN_DEFAULT_MATH = 0, DNN_TENSOR_OP_MATH = 1, DNN_FMA_MATH = 3 }; /* cudnnMathType_t */
#define DNN_FWD_ALGOS 8                                                /* CUDNN_CONVOLUTION_FWD_ALGO_COUNT */

/* cudnnConvolutionFwdAlgoPerf_t */
typedef struct {
    int algo;
    dnn_status status;
    float time;
    size_t memory;
    int determinism;
    int math;
    int reserved[3];
} dnn_perf;

#define DNN_FUNCS(X)                                                                                        \
    X(cudnnGetVersion, size_t (*)(void))                                                                    \
    X(cudnnGetErrorString, const char *(*)(dnn_status))                                                     \
    X(cudnnCreate, dnn_status (*)(void **))                                                                 \
    X(cudnnSetStream, dnn_status (*)(void *, void *))                                                       \
    X(cudnnCreateTensorDescriptor, dnn_status (*)(void **))                                                 \
    X(cudnnSetTensor4dDescriptor, dnn_status (*)(void *, int, int, int, int, int, int))                     \
    X(cudnnDestroyTensorDescriptor, dnn_status (*)(void *))                                                 \
    X(cudnnCreateFilterDescriptor, dnn_status (*)(void **))                                                 \
    X(cudnnSetFilter4dDescriptor, dnn_status (*)(void *, int, int, int, int, int, int))                     \
    X(cudnnDestroyFilterDescriptor, dnn_status (*)(void *))                                                 \
    X(cudnnCreateConvolutionDescriptor, dnn_status (*)(void **))                                            \
    X(cudnnSetConvolution2dDescriptor, dnn_status (*)(void *, int, int, int, int, int, int, int, int))      \
    X(cudnnSetConvolutionGroupCount, dnn_status (*)(void *, int))                                           \
    X(cudnnSetConvolutionMathType, dnn_status (*)(void *, int))                                             \
    X(cudnnDestroyConvolutionDescriptor, dnn_status (*)(void *))                                            \
    X(cudnnGetConvolution2dForwardOutputDim, dnn_status (*)(void *, void *, void *, int *, int *, int *, int *)) \
    X(cudnnGetConvolutionForwardAlgorithm_v7,                                                               \
      dnn_status (*)(void *, void *, void *, void *, void *, int, int *, dnn_perf *))                       \
    X(cudnnFindConvolutionForwardAlgorithmEx,                                                               \
      dnn_status (*)(void *, void *, const void *, void *, const void *, void *, void *, void *, int, int *,  \
                     dnn_perf *, void *, size_t))                                                           \
    X(cudnnGetConvolutionForwardWorkspaceSize,                                                              \
      dnn_status (*)(void *, void *, void *, void *, void *, int, size_t *))                                \
    X(cudnnConvolutionForward,                                                                              \
      dnn_status (*)(void *, const void *, void *, const void *, void *, const void *, void *, int, void *,   \
                     size_t, const void *, void *, void *))                                                 \
    X(cudnnTransformTensor,                                                                                 \
      dnn_status (*)(void *, const void *, void *, const void *, const void *, void *, void *))

static struct {
#define X(name, type) __typeof__(type) name;
    DNN_FUNCS(X)
#undef X
    size_t version;
} dnn;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char load_msg[256];        /* empty when cuDNN loaded */

#define WS_CAP TTC_CUDNN_WS_MAX
#define MAX_DEV 64

struct ttc_cudnn_plan {
    ttc_cudnn_conv d;
    int32_t ordinal;
    void *xd, *yd, *wd, *cd;      /* descriptors, read-only once made */
    int algo, math;
    size_t ws;
    bool timed;
    double us;                   /* the timed run's microseconds (0: not timed) */
    struct ttc_cudnn_plan *next;
};

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static ttc_cudnn_plan *plans;     /* every plan made, for the process */
static pthread_mutex_t dev_lock[MAX_DEV];
static void *handle[MAX_DEV];     /* under dev_lock[ordinal] */

static void load(void) {
    for (int i = 0; i < MAX_DEV; i++) pthread_mutex_init(&dev_lock[i], NULL);
    char why[256];
    if (!ttc_cuda_available(why, sizeof why)) { snprintf(load_msg, sizeof load_msg, "%s", why); return; }
    /* torch's own copy first: two cuDNNs in one process would each keep their own kernels */
    static const char *names[] = {"libcudnn.so.9", "libcudnn.so.8"};
    void *h = ttc_cuda_dlopen_first(names, 2);
    if (!h) { snprintf(load_msg, sizeof load_msg, "libcudnn.so.9 (or .8) could not be loaded (no cuDNN on the loader's path)"); return; }
#define X(name, type)                                                                                       \
    dnn.name = (type)dlsym(h, #name);                                                                       \
    if (!dnn.name) { snprintf(load_msg, sizeof load_msg, "cuDNN has no %s", #name); return; }
    DNN_FUNCS(X)
#undef X
    dnn.version = dnn.cudnnGetVersion();
    if (dnn.version < 8000) snprintf(load_msg, sizeof load_msg, "cuDNN %zu is older than 8", dnn.version);
}

bool ttc_cudnn_available(char *why, size_t why_len) {
    pthread_once(&once, load);
    if (why && why_len) snprintf(why, why_len, "%s", load_msg);
    return !load_msg[0];
}

size_t ttc_cudnn_version(void) { return ttc_cudnn_available(NULL, 0) ? dnn.version : 0; }

static ttc_status dnn_fail(dnn_status r, const char *what) {
    const char *nm = dnn.cudnnGetErrorString ? dnn.cudnnGetErrorString(r) : NULL;
    return ttc_fail_device("cuDNN", (int32_t)r, nm, "%s failed: %s (cuDNN status %d)", what, nm ? nm : "unknown", r);
}

#define DNN(call, what)                                                                                     \
    do {                                                                                                    \
        dnn_status _r = (call);                                                                             \
        if (_r) { s = dnn_fail(_r, what); goto fail; }                                                      \
    } while (0)

static ttc_status check_conv(const ttc_cudnn_conv *d, int32_t ordinal) {
    if (ordinal < 0 || ordinal >= MAX_DEV) return ttc_fail(TTC_ERR_INVALID_ARG, "CUDA device %d out of range", (int)ordinal);
    if (d->dtype != TTC_DTYPE_FLOAT32 && d->dtype != TTC_DTYPE_FLOAT16 && d->dtype != TTC_DTYPE_BFLOAT16)
        return ttc_fail(TTC_ERR_UNSUPPORTED, "cuDNN convolution in %s (float32, float16 and bfloat16 only)",
                        ttc_dtype_name(d->dtype));
    if (d->n < 1 || d->c < 1 || d->h < 1 || d->w < 1 || d->k < 1 || d->kh < 1 || d->kw < 1 || d->groups < 1)
        return ttc_fail(TTC_ERR_INVALID_ARG, "convolution sizes must be positive (n %d c %d h %d w %d k %d kernel %dx%d groups %d)",
                        d->n, d->c, d->h, d->w, d->k, d->kh, d->kw, d->groups);
    if (d->c % d->groups || d->k % d->groups)
        return ttc_fail(TTC_ERR_INVALID_ARG, "%d groups do not divide %d input / %d output channels", d->groups, d->c, d->k);
    for (int i = 0; i < 2; i++)
        if (d->stride[i] < 1 || d->dil[i] < 1 || d->pad[i] < 0)
            return ttc_fail(TTC_ERR_INVALID_ARG, "stride %d, dilation %d and padding %d: stride and dilation must be positive, padding not negative",
                            d->stride[i], d->dil[i], d->pad[i]);
    /* int64: sizes near INT32_MAX must not wrap into a plausible answer */
    int64_t oh = ((int64_t)d->h + 2 * (int64_t)d->pad[0] - (int64_t)d->dil[0] * (d->kh - 1) - 1) / d->stride[0] + 1;
    int64_t ow = ((int64_t)d->w + 2 * (int64_t)d->pad[1] - (int64_t)d->dil[1] * (d->kw - 1) - 1) / d->stride[1] + 1;
    if (oh < 1 || ow < 1 || oh != d->oh || ow != d->ow)
        return ttc_fail(TTC_ERR_INVALID_ARG, "convolution output %dx%d given, its sizes give %lldx%lld", d->oh, d->ow,
                        (long long)oh, (long long)ow);
    return TTC_OK;
}

static bool same_conv(const ttc_cudnn_conv *a, const ttc_cudnn_conv *b) {
    return a->dtype == b->dtype && a->tf32 == b->tf32 && a->nhwc == b->nhwc && a->n == b->n && a->c == b->c &&
           a->h == b->h && a->w == b->w && a->k == b->k && a->groups == b->groups && a->kh == b->kh &&
           a->kw == b->kw && !memcmp(a->stride, b->stride, sizeof a->stride) && !memcmp(a->pad, b->pad, sizeof a->pad) &&
           !memcmp(a->dil, b->dil, sizeof a->dil) && a->oh == b->oh && a->ow == b->ow;
}

static ttc_cudnn_plan *find_plan(const ttc_cudnn_conv *d, int32_t ordinal) {
    pthread_mutex_lock(&cache_lock);
    ttc_cudnn_plan *p = plans;
    while (p && !(p->ordinal == ordinal && same_conv(&p->d, d))) p = p->next;
    pthread_mutex_unlock(&cache_lock);
    return p;
}

static void plan_free(ttc_cudnn_plan *p) {
    if (!p) return;
    if (p->xd) dnn.cudnnDestroyTensorDescriptor(p->xd);
    if (p->yd) dnn.cudnnDestroyTensorDescriptor(p->yd);
    if (p->wd) dnn.cudnnDestroyFilterDescriptor(p->wd);
    if (p->cd) dnn.cudnnDestroyConvolutionDescriptor(p->cd);
    free(p);
}

static int dnn_type(ttc_dtype t) { return t == TTC_DTYPE_FLOAT16 ? DNN_HALF : t == TTC_DTYPE_BFLOAT16 ? DNN_BFLOAT16 : DNN_FLOAT; }

/* The math the descriptor allows (see cudnn.h). */
static int policy_math(const ttc_cudnn_conv *d) {
    if (d->dtype != TTC_DTYPE_FLOAT32) return DNN_TENSOR_OP_MATH;
    return d->tf32 ? DNN_DEFAULT_MATH : DNN_FMA_MATH;
}

static ttc_status make_descriptors(ttc_cudnn_plan *p) {
    const ttc_cudnn_conv *d = &p->d;
    ttc_status s = TTC_OK;
    int fmt = d->nhwc ? DNN_NHWC : DNN_NCHW, ty = dnn_type(d->dtype);
    DNN(dnn.cudnnCreateTensorDescriptor(&p->xd), "cudnnCreateTensorDescriptor");
    DNN(dnn.cudnnSetTensor4dDescriptor(p->xd, fmt, ty, d->n, d->c, d->h, d->w), "cudnnSetTensor4dDescriptor (input)");
    DNN(dnn.cudnnCreateTensorDescriptor(&p->yd), "cudnnCreateTensorDescriptor");
    DNN(dnn.cudnnSetTensor4dDescriptor(p->yd, fmt, ty, d->n, d->k, d->oh, d->ow), "cudnnSetTensor4dDescriptor (output)");
    DNN(dnn.cudnnCreateFilterDescriptor(&p->wd), "cudnnCreateFilterDescriptor");
    DNN(dnn.cudnnSetFilter4dDescriptor(p->wd, ty, fmt, d->k, d->c / d->groups, d->kh, d->kw), "cudnnSetFilter4dDescriptor");
    DNN(dnn.cudnnCreateConvolutionDescriptor(&p->cd), "cudnnCreateConvolutionDescriptor");
    DNN(dnn.cudnnSetConvolution2dDescriptor(p->cd, d->pad[0], d->pad[1], d->stride[0], d->stride[1], d->dil[0], d->dil[1],
                                            DNN_CROSS_CORRELATION, DNN_FLOAT),
        "cudnnSetConvolution2dDescriptor");
    DNN(dnn.cudnnSetConvolutionGroupCount(p->cd, d->groups), "cudnnSetConvolutionGroupCount");
    DNN(dnn.cudnnSetConvolutionMathType(p->cd, policy_math(d)), "cudnnSetConvolutionMathType");
    int n, c, h, w;
    DNN(dnn.cudnnGetConvolution2dForwardOutputDim(p->cd, p->xd, p->wd, &n, &c, &h, &w), "cudnnGetConvolution2dForwardOutputDim");
    if (n != d->n || c != d->k || h != d->oh || w != d->ow)
        return ttc_fail(TTC_ERR_INTERNAL, "cuDNN gives the convolution output %dx%dx%dx%d, not %dx%dx%dx%d", n, c, h, w, d->n,
                        d->k, d->oh, d->ow);
fail:
    return s;
}

static bool usable(const dnn_perf *r) { return !r->status && r->memory <= WS_CAP; }

/* The math a result runs with: the one it was timed or ranked with, except that true fp32
 * stays FMA-only whatever a result reports (DEFAULT would allow TF32 again). */
static int result_math(const ttc_cudnn_conv *d, const dnn_perf *r) {
    return policy_math(d) == DNN_FMA_MATH ? DNN_FMA_MATH : r->math;
}

static size_t elem_count(int64_t a, int64_t b, int64_t c, int64_t d) { return (size_t)(a * b * c * d); }

/* Seconds per call of algo (p's descriptors as they are now) on the scratch buffers: calls
 * recorded as a graph on stream rec and replayed on stream 0, or (rec 0, or the recording
 * failed) plain calls on stream 0 timed on the host. false: a call failed. */
#define GRAPH_CALLS 10
static bool time_one(void *h, const ttc_cudnn_plan *p, int algo, size_t need, uint64_t x, uint64_t w, uint64_t y,
                     uint64_t ws, uint64_t rec, double *t) {
    const float one = 1.0f, zero = 0.0f;
    unsigned char sink[4];
#define CALL()                                                                                              \
    (!dnn.cudnnConvolutionForward(h, &one, p->xd, (void *)(uintptr_t)x, p->wd, (void *)(uintptr_t)w, p->cd, algo,  \
                                  (void *)(uintptr_t)ws, need, &zero, p->yd, (void *)(uintptr_t)y))
    bool ok = !dnn.cudnnSetStream(h, NULL) && CALL() && CALL() && ttc_cuda_download(sink, y, sizeof sink, 0) == TTC_OK;
    if (!ok) { ttc_clear_error(); return false; }
    void *exec = NULL;
    if (rec && !dnn.cudnnSetStream(h, (void *)(uintptr_t)rec) && ttc_cuda_record_begin(rec) == TTC_OK) {
        bool rok = true;
        for (int i = 0; i < GRAPH_CALLS && rok; i++) rok = CALL();
        if (ttc_cuda_record_end(rec, rok, &exec) != TTC_OK || !rok) exec = NULL;
    }
    ttc_clear_error();
    dnn.cudnnSetStream(h, NULL);
    if (exec) {
        /* one replay to warm up, then three timed */
        ok = ttc_cuda_graph_launch(exec, 0) == TTC_OK && ttc_cuda_download(sink, y, sizeof sink, 0) == TTC_OK;
        double t0 = ttc_now_s();
        for (int r = 0; r < 3 && ok; r++) ok = ttc_cuda_graph_launch(exec, 0) == TTC_OK;
        ok = ok && ttc_cuda_download(sink, y, sizeof sink, 0) == TTC_OK;
        *t = (ttc_now_s() - t0) / (3 * GRAPH_CALLS);
        ttc_cuda_graph_free(exec);
    } else {
        double t0 = ttc_now_s();
        for (int r = 0; r < GRAPH_CALLS && ok; r++) ok = CALL();
        ok = ok && ttc_cuda_download(sink, y, sizeof sink, 0) == TTC_OK;
        *t = (ttc_now_s() - t0) / GRAPH_CALLS;
    }
#undef CALL
    if (!ok) ttc_clear_error();
    return ok;
}

/* cudnnFindConvolutionForwardAlgorithmEx on scratch buffers of the plan's shapes (filled with
 * ones: garbage could hold NaNs or denormals that time differently). Under the device lock,
 * in the device's context. *found: false when no timed result is usable. */
static ttc_status time_algos(ttc_cudnn_plan *p, void *h, bool *found) {
    const ttc_cudnn_conv *d = &p->d;
    *found = false;
    size_t es = ttc_dtype_size(d->dtype);
    size_t nx = elem_count(d->n, d->c, d->h, d->w), nw = elem_count(d->k, d->c / d->groups, d->kh, d->kw),
           ny = elem_count(d->n, d->k, d->oh, d->ow);
    dnn_perf heur[DNN_FWD_ALGOS], res[DNN_FWD_ALGOS];
    int nh = 0, nr = 0;
    ttc_status s = TTC_OK;
    uint64_t x = 0, w = 0, y = 0, ws = 0;
    DNN(dnn.cudnnSetStream(h, NULL), "cudnnSetStream");
    /* the workspace Find may use: the most any usable heuristic result asks for */
    DNN(dnn.cudnnGetConvolutionForwardAlgorithm_v7(h, p->xd, p->wd, p->cd, p->yd, DNN_FWD_ALGOS, &nh, heur),
        "cudnnGetConvolutionForwardAlgorithm_v7");
    size_t ws_bytes = 0;
    for (int i = 0; i < nh; i++)
        if (!heur[i].status && heur[i].memory <= WS_CAP && heur[i].memory > ws_bytes) ws_bytes = heur[i].memory;
    uint32_t one = d->dtype == TTC_DTYPE_FLOAT32 ? 0x3f800000u : d->dtype == TTC_DTYPE_FLOAT16 ? 0x3c003c00u : 0x3f803f80u;
    if ((s = ttc_cuda_alloc(nx * es, &x)) || (s = ttc_cuda_alloc(nw * es, &w)) || (s = ttc_cuda_alloc(ny * es, &y)) ||
        (ws_bytes && (s = ttc_cuda_alloc(ws_bytes, &ws))))
        goto fail;
    /* in 4-byte words (an odd count of 2-byte elements leaves the last one unset) */
    if ((s = ttc_cuda_memset32(x, one, nx * es / 4, 0)) || (s = ttc_cuda_memset32(w, one, nw * es / 4, 0))) goto fail;
    DNN(dnn.cudnnFindConvolutionForwardAlgorithmEx(h, p->xd, (void *)(uintptr_t)x, p->wd, (void *)(uintptr_t)w, p->cd,
                                                   p->yd, (void *)(uintptr_t)y, DNN_FWD_ALGOS, &nr, res,
                                                   (void *)(uintptr_t)ws, ws_bytes),
        "cudnnFindConvolutionForwardAlgorithmEx");
    /* Find's ranking times each algorithm once, its first call included (module loading):
     * for kernels of tens of microseconds that is noise. Each candidate is timed again here,
     * after warm-up calls, the fastest kept. Half and bfloat16 also try every algorithm with
     * tensor-core math (Find reports some under default math only). */
    struct { int algo, math; } cand[2 * DNN_FWD_ALGOS];
    int nc = 0;
    for (int i = 0; i < nr; i++)
        if (usable(&res[i]) && res[i].memory <= ws_bytes) {
            cand[nc].algo = res[i].algo;
            cand[nc++].math = result_math(d, &res[i]);
        }
    for (int i = 0, n0 = nc; i < n0 && d->dtype != TTC_DTYPE_FLOAT32; i++) {
        bool have = false;
        for (int j = 0; j < nc; j++) have |= cand[j].algo == cand[i].algo && cand[j].math == DNN_TENSOR_OP_MATH;
        if (!have) { cand[nc].algo = cand[i].algo; cand[nc++].math = DNN_TENSOR_OP_MATH; }
    }
    /* GPU time, not host time: cuDNN's legacy calls cost 50-300 us of host time each on an
     * H100's host (bench/cudnn_ab.py), more than many of these convolutions take on the GPU,
     * and engines replay their calls as CUDA graphs. So each candidate's calls are recorded
     * once as a graph (on a private stream) and the replays timed; without graphs, plain
     * calls are. */
    uint64_t rec = 0;
    if (!ttc_cuda_graphs_available() || ttc_cuda_stream_new(&rec) != TTC_OK) { rec = 0; ttc_clear_error(); }
    double best = 0;
    for (int i = 0; i < nc; i++) {
        size_t need = 0;
        double t;
        if (dnn.cudnnSetConvolutionMathType(p->cd, cand[i].math) ||
            dnn.cudnnGetConvolutionForwardWorkspaceSize(h, p->xd, p->wd, p->cd, p->yd, cand[i].algo, &need) ||
            need > ws_bytes || !time_one(h, p, cand[i].algo, need, x, w, y, ws, rec, &t))
            continue;
        if (!*found || t < best) {
            best = t;
            p->algo = cand[i].algo;
            p->math = cand[i].math;
            p->ws = need;
            p->us = t * 1e6;
            *found = true;
        }
    }
    if (rec) ttc_cuda_stream_free(rec);
    dnn.cudnnSetConvolutionMathType(p->cd, policy_math(d));
fail:
    if (x) ttc_cuda_free(x);
    if (w) ttc_cuda_free(w);
    if (y) ttc_cuda_free(y);
    if (ws) ttc_cuda_free(ws);
    return s;
}

static ttc_status heuristic_algo(ttc_cudnn_plan *p, void *h) {
    dnn_perf res[DNN_FWD_ALGOS];
    int nr = 0;
    ttc_status s = TTC_OK;
    DNN(dnn.cudnnGetConvolutionForwardAlgorithm_v7(h, p->xd, p->wd, p->cd, p->yd, DNN_FWD_ALGOS, &nr, res),
        "cudnnGetConvolutionForwardAlgorithm_v7");
    for (int i = 0; i < nr; i++) {
        if (!usable(&res[i])) continue;
        p->algo = res[i].algo;
        p->math = result_math(&p->d, &res[i]);
        p->ws = res[i].memory;
        return TTC_OK;
    }
    return ttc_fail(TTC_ERR_UNSUPPORTED, "cuDNN has no forward algorithm for this convolution (%d candidates)", nr);
fail:
    return s;
}

/* The device's handle, made on first use; the caller holds dev_lock[ordinal] in its context. */
static ttc_status get_handle(int32_t ordinal, void **h) {
    if (!handle[ordinal]) {
        dnn_status r = dnn.cudnnCreate(&handle[ordinal]);
        if (r) { handle[ordinal] = NULL; return dnn_fail(r, "cudnnCreate"); }
    }
    *h = handle[ordinal];
    return TTC_OK;
}

/* Chooses p's algorithm, math and workspace: timed if asked and possible, else heuristic. */
static ttc_status choose(ttc_cudnn_plan *p, bool time_it) {
    ttc_cuda_scope sc;
    TTC_TRY(ttc_cuda_enter(p->ordinal, &sc));
    pthread_mutex_lock(&dev_lock[p->ordinal]);
    void *h = NULL;
    ttc_status s = get_handle(p->ordinal, &h);
    if (s == TTC_OK && time_it) {
        bool found = false;
        /* a failed timing (e.g. no memory for the scratch buffers) leaves the heuristic */
        if (time_algos(p, h, &found) == TTC_OK && found) {
            p->timed = true;
        } else {
            ttc_clear_error();
        }
    }
    if (s == TTC_OK && !p->timed) s = heuristic_algo(p, h);
    if (s == TTC_OK) {
        /* the math the chosen result was timed or ranked with */
        dnn_status r = dnn.cudnnSetConvolutionMathType(p->cd, p->math);
        size_t need = 0;
        if (!r) r = dnn.cudnnGetConvolutionForwardWorkspaceSize(h, p->xd, p->wd, p->cd, p->yd, p->algo, &need);
        if (r) s = dnn_fail(r, "cudnnGetConvolutionForwardWorkspaceSize");
        else if (need > p->ws) p->ws = need;
    }
    pthread_mutex_unlock(&dev_lock[p->ordinal]);
    ttc_cuda_leave(&sc);
    return s;
}

ttc_status ttc_cudnn_conv_prepare(const ttc_cudnn_conv *d, int32_t ordinal, bool time_it, ttc_cudnn_plan **plan,
                                  size_t *workspace_bytes) {
    *plan = NULL;
    *workspace_bytes = 0;
    TTC_TRY(check_conv(d, ordinal));
    char why[256];
    if (!ttc_cudnn_available(why, sizeof why)) return ttc_fail(TTC_ERR_UNSUPPORTED, "cuDNN unavailable: %s", why);
    ttc_cudnn_plan *p = find_plan(d, ordinal);
    if (p) {
        *plan = p;
        *workspace_bytes = p->ws;
        return TTC_OK;
    }
    p = ttc_calloc(1, sizeof *p);
    if (!p) return TTC_ERR_NOMEM;
    p->d = *d;
    p->ordinal = ordinal;
    ttc_status s = make_descriptors(p);
    if (s == TTC_OK) s = choose(p, time_it);
    if (s != TTC_OK) { plan_free(p); return s; }
    /* two threads may have made the same plan: the first one kept wins */
    pthread_mutex_lock(&cache_lock);
    ttc_cudnn_plan *q = plans;
    while (q && !(q->ordinal == ordinal && same_conv(&q->d, d))) q = q->next;
    if (!q) {
        p->next = plans;
        plans = p;
        q = p;
        p = NULL;
    }
    pthread_mutex_unlock(&cache_lock);
    plan_free(p);
    *plan = q;
    *workspace_bytes = q->ws;
    return TTC_OK;
}

const ttc_cudnn_conv *ttc_cudnn_plan_conv(const ttc_cudnn_plan *p) { return &p->d; }

void ttc_cudnn_plan_algo(const ttc_cudnn_plan *p, bool *timed, int32_t *algo, int32_t *math, double *us) {
    if (timed) *timed = p->timed;
    if (us) *us = p->us;
    if (algo) *algo = p->algo;
    if (math) *math = p->math;
}

ttc_status ttc_cudnn_conv_run(const ttc_cudnn_plan *p, uint64_t x, uint64_t w, uint64_t y, uint64_t ws,
                              size_t ws_bytes, uint64_t stream) {
    if (!p) return ttc_fail(TTC_ERR_INVALID_ARG, "no cuDNN plan");
    if (ws_bytes < p->ws || (p->ws && !ws))
        return ttc_fail(TTC_ERR_INVALID_ARG, "cuDNN convolution needs %zu bytes of workspace, %zu given", p->ws, ws_bytes);
    if (!x || !w || !y) return ttc_fail(TTC_ERR_INVALID_ARG, "cuDNN convolution given a null pointer");
    ttc_cuda_scope sc;
    TTC_TRY(ttc_cuda_enter(p->ordinal, &sc));
    const float one = 1.0f, zero = 0.0f;   /* alpha, beta: float for float, half and bfloat16 data */
    ttc_status s = TTC_OK;
    pthread_mutex_lock(&dev_lock[p->ordinal]);
    void *h = NULL;
    s = get_handle(p->ordinal, &h);
    if (s == TTC_OK) {
        dnn_status r = dnn.cudnnSetStream(h, (void *)(uintptr_t)stream);
        if (r) s = dnn_fail(r, "cudnnSetStream");
        else if ((r = dnn.cudnnConvolutionForward(h, &one, p->xd, (const void *)(uintptr_t)x, p->wd,
                                                  (const void *)(uintptr_t)w, p->cd, p->algo, (void *)(uintptr_t)ws,
                                                  p->ws, &zero, p->yd, (void *)(uintptr_t)y)))
            s = dnn_fail(r, "cudnnConvolutionForward");
    }
    pthread_mutex_unlock(&dev_lock[p->ordinal]);
    ttc_cuda_leave(&sc);
    return s;
}

ttc_status ttc_cudnn_transform(int32_t ordinal, ttc_dtype dtype, int32_t n, int32_t c, int32_t h, int32_t w, bool to_nhwc,
                               uint64_t x, uint64_t y, uint64_t stream) {
    if (ordinal < 0 || ordinal >= MAX_DEV) return ttc_fail(TTC_ERR_INVALID_ARG, "CUDA device %d out of range", (int)ordinal);
    if (dtype != TTC_DTYPE_FLOAT32 && dtype != TTC_DTYPE_FLOAT16 && dtype != TTC_DTYPE_BFLOAT16)
        return ttc_fail(TTC_ERR_UNSUPPORTED, "cuDNN layout change in %s", ttc_dtype_name(dtype));
    if (n < 1 || c < 1 || h < 1 || w < 1 || !x || !y)
        return ttc_fail(TTC_ERR_INVALID_ARG, "cuDNN layout change of %dx%dx%dx%d at %#llx -> %#llx", n, c, h, w,
                        (unsigned long long)x, (unsigned long long)y);
    char why[256];
    if (!ttc_cudnn_available(why, sizeof why)) return ttc_fail(TTC_ERR_UNSUPPORTED, "cuDNN unavailable: %s", why);
    ttc_cuda_scope sc;
    TTC_TRY(ttc_cuda_enter(ordinal, &sc));
    const float one = 1.0f, zero = 0.0f;
    void *xd = NULL, *yd = NULL, *hd = NULL;
    int ty = dnn_type(dtype);
    ttc_status s = TTC_OK;
    pthread_mutex_lock(&dev_lock[ordinal]);
    s = get_handle(ordinal, &hd);
    if (s != TTC_OK) goto fail;
    DNN(dnn.cudnnCreateTensorDescriptor(&xd), "cudnnCreateTensorDescriptor");
    DNN(dnn.cudnnSetTensor4dDescriptor(xd, to_nhwc ? DNN_NCHW : DNN_NHWC, ty, n, c, h, w), "cudnnSetTensor4dDescriptor");
    DNN(dnn.cudnnCreateTensorDescriptor(&yd), "cudnnCreateTensorDescriptor");
    DNN(dnn.cudnnSetTensor4dDescriptor(yd, to_nhwc ? DNN_NHWC : DNN_NCHW, ty, n, c, h, w), "cudnnSetTensor4dDescriptor");
    DNN(dnn.cudnnSetStream(hd, (void *)(uintptr_t)stream), "cudnnSetStream");
    DNN(dnn.cudnnTransformTensor(hd, &one, xd, (const void *)(uintptr_t)x, &zero, yd, (void *)(uintptr_t)y),
        "cudnnTransformTensor");
fail:
    if (xd) dnn.cudnnDestroyTensorDescriptor(xd);
    if (yd) dnn.cudnnDestroyTensorDescriptor(yd);
    pthread_mutex_unlock(&dev_lock[ordinal]);
    ttc_cuda_leave(&sc);
    return s;
}
