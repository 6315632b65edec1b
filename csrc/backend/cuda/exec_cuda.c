/* Engines launched through the CUDA driver (exec_cuda.h). The launch plan is the OpenCL
 * path's own (plan.c): the same argument values and launch sizes, with buffers replaced by
 * device pointers. OpenCL passes a buffer and its offset separately, so every pointer argument
 * is the base of its memory (input, output, constant block or arena). A __local argument
 * (TTC_ARG_LOCAL: units of v bytes, d where OpenCL launches it, up to r) becomes dynamic shared
 * memory here: as many units as the block may have (227 KiB on an H100 with the opt-in, not
 * OpenCL's 48 KiB), its TTC_ARG_LOCAL_N argument saying how many. */
#include "exec_cuda.h"

#include "cuda_driver.h"
#include "exec_cuda_lib.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONST_ALIGN 256          /* every constant starts where OpenCL's buffers would */
#define ARENA_TAIL 256           /* the index-error flag sits after the arena */

struct ttc_cuda_engine {
    const ttc_engine_view *e;
    int32_t ordinal;
    void **mods;                 /* one module per program part (one for a single program) */
    int32_t n_mods;
    void **fn;                   /* per kernel of e->cg */
    int32_t *max_threads;
    uint32_t (*req)[3];          /* per kernel: the block size its PTX requires (0: none) */
    size_t *dyn;                 /* per kernel: dynamic shared memory bytes (its __local argument) */
    int32_t *units;              /* per kernel: the units of its __local argument */
    int32_t *n_maps;             /* per kernel: its tensor-map arguments (TTC_ARG_BUF_TMAP) */
    /* "<name>_w" (ttc_kspec.gemm_w; NULL: none, or it could not be loaded): its function,
     * dynamic shared memory and stages; per GEMM kernel the shape ({M, N, K, batches}) whose
     * choice wpick holds (-1: none timed yet; 0: the kernel, 1: "_w"). Under wlock. */
    void **wfn;
    size_t *wdyn;
    int32_t *wunits;
    int8_t *wpick;
    int64_t (*wkey)[4];
    pthread_mutex_t wlock;
    int32_t n_wide;
    int64_t wide_calls, wide_timed;   /* atomics */
    /* "<name>_v" (ttc_kspec.gemm_v; NULL: none, or it could not be loaded): the GEMV form that
     * plans of few rows launch (plan.h, gemv) */
    void **vfn;
    int32_t *vmax;
    int32_t n_gemv;
    int64_t gemv_calls;          /* atomic */
    size_t dyn_max;
    uint64_t consts;             /* one block holding every constant */
    uint64_t *const_ptr;         /* per tensor id (0: not a constant) */
    size_t const_bytes;
    int32_t max_args;
    bool errf;                   /* some kernel takes the index-error flag */
    int64_t calls, launches, flag_reads;   /* atomics */
    /* CUDA graphs (target.cuda_graphs slots): a call whose pointers and shapes came before is
     * one graph launch instead of a launch per kernel. Under glock. */
    pthread_mutex_t glock;
    struct gslot { uint64_t *key; void *exec; int64_t stamp, launches; } *gs;
    int32_t n_gs;
    size_t key_len;              /* arena, inputs, outputs, input shapes */
    int64_t gclock;
    uint64_t rec_stream;         /* private stream the launches are recorded on (made on first use) */
    bool gbroken;                /* a recording failed: plain launches from then on */
    int64_t graph_calls, graphs_recorded;
    /* library steps (exec_cuda_lib.h): per kernel whether cuBLAS may run it, and its epilogue
     * kernel "<name>_e" (NULL: none, the product is the output) */
    bool *lib;
    void **efn;
    int32_t *emax;
    int32_t n_lib;
    size_t ws_bytes;             /* cuBLAS's or cuDNN's workspace, in the arena after the intermediates */
    uint64_t *cw;                /* per convolution kernel cuDNN may run: its weights, OIHW in the
                                  * input's dtype (in cw_mem) */
    uint64_t cw_mem;
    int64_t lib_calls, lib_timed, lib_fused;   /* atomics */
    /* channels-last (kir/nhwc.c): per tensor whether it is kept NHWC (NULL: none, or the engine
     * cannot: then every tensor is NCHW); per kernel whether it is a convolution cuDNN runs
     * NHWC (its input or output kept so), its OHWI weights (in cw_mem) and "<name>_eh" */
    bool *nhwc;
    bool *conv_h;
    uint64_t *cwh;
    void **ehfn;
    int32_t *ehmax;
    int64_t lib_nhwc, nhwc_calls;   /* atomics: NHWC convolutions run, calls run channels-last */
};

static size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

static bool is_tmap(const ttc_argspec *as) { return as->kind == TTC_ARG_BUF && as->v == TTC_ARG_BUF_TMAP; }

/* The constants' values, read back from the engine's OpenCL buffers (whatever conversion,
 * packing or half rounding made them) and uploaded into one CUDA block. */
static ttc_status upload_consts(ttc_cuda_engine *c) {
    const ttc_engine_view *e = c->e;
    int32_t n = e->k->n_ts;
    c->const_ptr = ttc_calloc((size_t)n + 1, sizeof(uint64_t));
    if (!c->const_ptr) return TTC_ERR_NOMEM;
    size_t total = 0;
    for (int32_t t = 0; t < n; t++)
        if (e->const_mem && e->const_mem[t]) total = align_up(total, CONST_ALIGN) + ttc_buf_size(e->const_mem[t]);
    if (!total) return TTC_OK;
    TTC_TRY(ttc_cuda_alloc(total, &c->consts));
    c->const_bytes = total;
    ttc_queue *q = NULL;
    unsigned char *host = NULL;
    ttc_status s = ttc_queue_new(e->dev, false, &q);
    size_t off = 0;
    for (int32_t t = 0; t < n && s == TTC_OK; t++) {
        if (!e->const_mem || !e->const_mem[t]) continue;
        size_t sz = ttc_buf_size(e->const_mem[t]);
        off = align_up(off, CONST_ALIGN);
        free(host);
        host = ttc_malloc(sz ? sz : 1);
        if (!host) { s = TTC_ERR_NOMEM; break; }
        s = ttc_buf_read(q, e->const_mem[t], 0, sz, host, true);
        if (s == TTC_OK) s = ttc_cuda_upload(c->consts + off, host, sz);
        c->const_ptr[t] = c->consts + off;
        off += sz;
    }
    free(host);
    ttc_queue_free(q);
    return s;
}

/* The weights of the convolutions cuDNN may run, as cuDNN takes them: OIHW (the kernel IR's
 * own float32 weight constant, kept on the host: conv_nn.c makes it, const_half.c leaves it)
 * in the input's dtype. The GPU kernels read packed copies instead, so these are made here; a
 * convolution whose weights are not on the host keeps its kernel. */
static ttc_status upload_conv_weights(ttc_cuda_engine *c) {
    const ttc_kir *k = c->e->k;
    int32_t nk = c->e->cg->n_kernels;
    size_t total = 0;
    for (int32_t pass = 0; pass < 2; pass++) {
        size_t off = 0;
        for (int32_t i = 0; i < nk; i++) {
            const ttc_kop *op = &k->ops[c->e->cg->kernels[i].op];
            if (!c->lib[i] || op->kind != TTC_KOP_CONV2D) continue;
            int32_t w = op->in[1];
            while (w >= 0 && k->ts[w].kind == TTC_ET_VIEW) w = k->ts[w].base;
            const ttc_et *wt = w >= 0 ? &k->ts[w] : NULL;
            ttc_dtype xd = k->ts[op->in[0]].dtype;
            int64_t n = 1;
            for (int32_t d = 0; wt && d < wt->rank; d++) n *= wt->dims[d].add;
            size_t es = ttc_dtype_size(xd);
            if (!wt || wt->kind != TTC_ET_CONST || wt->rank != 4 || !wt->data || !wt->data->data ||
                wt->dtype != TTC_DTYPE_FLOAT32 || wt->data->nbytes < (size_t)n * sizeof(float) ||
                (xd != TTC_DTYPE_FLOAT32 && xd != TTC_DTYPE_FLOAT16)) {
                c->lib[i] = false;
                continue;
            }
            /* OIHW for cuDNN's NCHW calls; OHWI (layout 1) too for a convolution run NHWC */
            for (int32_t lay = 0; lay < 1 + (c->conv_h && c->conv_h[i]); lay++) {
                off = align_up(off, CONST_ALIGN);
                if (pass == 1) {
                    void *host = ttc_malloc((size_t)n * es + 1);
                    if (!host) return TTC_ERR_NOMEM;
                    int64_t C = wt->dims[1].add, HW = wt->dims[2].add * wt->dims[3].add;
                    for (int64_t j = 0; j < n; j++) {
                        /* destination j: OIHW as it is, or OHWI [o][hw][ci] from source [o][ci][hw] */
                        int64_t src = j;
                        if (lay) {
                            int64_t o = j / (HW * C), r = j % (HW * C);
                            src = (o * C + r % C) * HW + r / C;
                        }
                        float v = ((const float *)wt->data->data)[src];
                        if (xd == TTC_DTYPE_FLOAT32) ((float *)host)[j] = v;
                        else ((uint16_t *)host)[j] = ttc_half_from_float(v);
                    }
                    ttc_status s = ttc_cuda_upload(c->cw_mem + off, host, (size_t)n * es);
                    free(host);
                    TTC_TRY(s);
                    if (lay) c->cwh[i] = c->cw_mem + off;
                    else c->cw[i] = c->cw_mem + off;
                }
                off += (size_t)n * es;
            }
        }
        total = off;
        if (pass == 0) {
            if (!total) return TTC_OK;
            TTC_TRY(ttc_cuda_alloc(total, &c->cw_mem));
        }
    }
    return TTC_OK;
}

static ttc_status refuse_why(const ttc_engine_view *e, int32_t ordinal) {
    if (!e->tg->cuda_launch) return ttc_fail(TTC_ERR_UNSUPPORTED, "TORCHTRT_C_CUDA_LAUNCH=0");
    char why[256];
    if (!ttc_cuda_available(why, sizeof why)) return ttc_fail(TTC_ERR_UNSUPPORTED, "%s", why);
    unsigned char a[16], b[16];
    if (!ttc_device_uuid(e->dev, a))
        return ttc_fail(TTC_ERR_UNSUPPORTED, "device %s reports no UUID (its driver lacks the device-UUID extension)",
                        e->tg->name);
    if (ttc_cuda_device_uuid(ordinal, b) != TTC_OK) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", ttc_last_error());
        return ttc_fail(TTC_ERR_UNSUPPORTED, "%s", msg);
    }
    if (memcmp(a, b, sizeof a))
        return ttc_fail(TTC_ERR_UNSUPPORTED, "device %s is not CUDA device %d (UUIDs differ)", e->tg->name, (int)ordinal);
    for (int32_t i = 0; i < e->cg->n_kernels; i++)
        if (e->cg->kernels[i].native)
            return ttc_fail(TTC_ERR_UNSUPPORTED, "kernel %s is a host task", e->cg->kernels[i].name);
    size_t len = 0;
    if (!ttc_program_binary(e->prog, &len) || !len)
        return ttc_fail(TTC_ERR_UNSUPPORTED, "the engine's program keeps no binary (TORCHTRT_C_PROGRAM_BINARIES)");
    return TTC_OK;
}

/* Kernel i's __local argument (at most one) as dynamic shared memory: the most units (up to
 * r) that fit beside its static shared memory, at least the d OpenCL gives it. */
static ttc_status size_local(ttc_cuda_engine *c, int32_t i) {
    const ttc_kspec *ks = &c->e->cg->kernels[i];
    const ttc_argspec *loc = NULL;
    for (int32_t a = 0; a < ks->n_args; a++) {
        if (ks->args[a].kind != TTC_ARG_LOCAL) continue;
        if (loc) return ttc_fail(TTC_ERR_UNSUPPORTED, "kernel %s takes more than one __local argument", ks->name);
        loc = &ks->args[a];
    }
    if (!loc) return TTC_OK;
    size_t st = 0, max = 0;
    TTC_TRY(ttc_cuda_shared_limits(c->ordinal, c->fn[i], &st, &max));
    int64_t unit = loc->v, n = max > st ? (int64_t)((max - st) / (size_t)unit) : 0;
    if (n > loc->r) n = loc->r;
    if (n < loc->d) n = loc->d;
    size_t bytes = (size_t)(n * unit);
    if (st + bytes > max)
        return ttc_fail(TTC_ERR_UNSUPPORTED, "kernel %s: %zu bytes of static and %zu of dynamic shared memory exceed the "
                        "block's %zu", ks->name, st, bytes, max);
    TTC_TRY(ttc_cuda_set_dynamic_shared(c->fn[i], bytes));
    c->dyn[i] = bytes;
    c->units[i] = (int32_t)n;
    if (bytes > c->dyn_max) c->dyn_max = bytes;
    return TTC_OK;
}

/* Kernel i's "<name>_w" from module m (prepared text ptx): its function, its two tensor-map
 * parameters as the rewrite made them, and all its tile's stages of dynamic shared memory (tile
 * 62: two work-groups per multiprocessor at 96 KiB). */
static ttc_status wide_load(ttc_cuda_engine *c, int32_t m, int32_t i, const char *ptx) {
    const ttc_kspec *ks = &c->e->cg->kernels[i];
    if (ks->gemm_w_tile < 0 || ks->gemm_w_tile >= TTC_GEMM_TILES || !(ttc_gemm_tiles[ks->gemm_w_tile].fl & 16))
        return ttc_fail(TTC_ERR_INTERNAL, "kernel %s: \"_w\" tile %d", ks->name, (int)ks->gemm_w_tile);
    const ttc_gemm_tile *t = &ttc_gemm_tiles[ks->gemm_w_tile];
    char wn[24];
    snprintf(wn, sizeof wn, "%s_w", ks->name);
    int32_t mt = 0;
    TTC_TRY(ttc_cuda_function(c->mods[m], wn, &c->wfn[i], &mt));
    if (ttc_cuda_ptx_maps(ptx, wn) != 2)
        return ttc_fail(TTC_ERR_UNSUPPORTED, "kernel %s: its tensor-map parameters were not found in the PTX", wn);
    if (mt < 32 * t->tm * t->tn) return ttc_fail(TTC_ERR_UNSUPPORTED, "kernel %s: %d threads per block", wn, (int)mt);
    size_t st = 0, max = 0, bytes = (size_t)t->kw * (size_t)(t->bm + t->bn) * (size_t)t->bk * 2;
    TTC_TRY(ttc_cuda_shared_limits(c->ordinal, c->wfn[i], &st, &max));
    if (st + 1024 + bytes > max)
        return ttc_fail(TTC_ERR_UNSUPPORTED, "kernel %s: %zu bytes of shared memory exceed the block's %zu", wn, st + bytes, max);
    TTC_TRY(ttc_cuda_set_dynamic_shared(c->wfn[i], bytes));
    c->wdyn[i] = bytes;
    c->wunits[i] = t->kw;
    c->n_wide++;
    return TTC_OK;
}

/* Loads part m's PTX (the whole program's when it has no parts) and resolves the kernels
 * that part defines. */
static ttc_status load_part(ttc_cuda_engine *c, int32_t m) {
    const ttc_engine_view *e = c->e;
    int32_t np = ttc_program_n_parts(e->prog);
    const ttc_program *pp = np ? ttc_program_part_program(e->prog, m) : e->prog;
    size_t len = 0;
    const unsigned char *bin = ttc_program_binary(pp, &len);
    if (!bin || !len) return ttc_fail(TTC_ERR_UNSUPPORTED, "program part %d keeps no binary", (int)m);
    char *ptx = NULL;
    TTC_TRY(ttc_cuda_ptx_prepare((const char *)bin, len, &ptx));
    ttc_status s = ttc_cuda_module_load(ptx, &c->mods[m]);
    for (int32_t i = 0; i < e->cg->n_kernels && s == TTC_OK; i++) {
        const ttc_kspec *ks = &e->cg->kernels[i];
        if (np && ttc_program_part_of(e->prog, ks->name) != m) continue;
        ttc_cuda_ptx_reqntid(ptx, ks->name, c->req[i]);
        for (int32_t a = 0; a < ks->n_args; a++) c->n_maps[i] += is_tmap(&ks->args[a]);
        if (c->n_maps[i] && ttc_cuda_ptx_maps(ptx, ks->name) != c->n_maps[i]) {
            s = ttc_fail(TTC_ERR_UNSUPPORTED, "kernel %s: %d tensor-map parameters, %d of them found in its PTX (NVIDIA's "
                         "OpenCL declared them in another form)", ks->name, (int)c->n_maps[i],
                         (int)ttc_cuda_ptx_maps(ptx, ks->name));
            break;
        }
        s = ttc_cuda_function(c->mods[m], ks->name, &c->fn[i], &c->max_threads[i]);
        if (s == TTC_OK) s = size_local(c, i);
        if (s == TTC_OK && ks->lib_epi && c->lib) {
            char en[24];
            snprintf(en, sizeof en, "%s_e", ks->name);
            s = ttc_cuda_function(c->mods[m], en, &c->efn[i], &c->emax[i]);
        }
        if (s == TTC_OK && ks->gemm_w && e->tg->gemm_wide != TTC_GEMM_WIDE_OFF && wide_load(c, m, i, ptx) != TTC_OK) {
            ttc_clear_error();   /* the kernel alone, as without "_w" */
            c->wfn[i] = NULL;
        }
        if (s == TTC_OK && ks->gemm_v) {
            char vn[40];
            snprintf(vn, sizeof vn, "%s_v", ks->name);
            if (ttc_cuda_function(c->mods[m], vn, &c->vfn[i], &c->vmax[i]) != TTC_OK ||
                c->vmax[i] < TTC_GEMM_V_WARPS * 32) {
                ttc_clear_error();   /* the kernel alone, as without "_v" */
                c->vfn[i] = NULL;
            } else {
                c->n_gemv++;
            }
        }
        if (s == TTC_OK && ks->lib_epih && c->ehfn) {
            char en[24];
            snprintf(en, sizeof en, "%s_eh", ks->name);
            s = ttc_cuda_function(c->mods[m], en, &c->ehfn[i], &c->ehmax[i]);
        }
    }
    free(ptx);
    return s;
}

/* The engine's host arrays (everything but its device objects). */
static void free_arrays(ttc_cuda_engine *c) {
    free(c->mods); free(c->fn); free(c->max_threads); free(c->req); free(c->dyn); free(c->units); free(c->n_maps);
    free(c->lib); free(c->efn); free(c->emax); free(c->cw);
    free(c->wfn); free(c->wdyn); free(c->wunits); free(c->wpick); free(c->wkey);
    free(c->vfn); free(c->vmax);
    free(c->nhwc); free(c->conv_h); free(c->cwh); free(c->ehfn); free(c->ehmax);
}

ttc_status ttc_cuda_engine_new(const ttc_engine_view *e, int32_t ordinal, ttc_cuda_engine **out) {
    *out = NULL;
    TTC_TRY(refuse_why(e, ordinal));
    ttc_cuda_engine *c = ttc_calloc(1, sizeof *c);
    int32_t nk = e->cg->n_kernels, np = ttc_program_n_parts(e->prog);
    if (c) {
        c->n_mods = np > 0 ? np : 1;
        c->mods = ttc_calloc((size_t)c->n_mods, sizeof(void *));
        c->fn = ttc_calloc((size_t)nk + 1, sizeof(void *));
        c->max_threads = ttc_calloc((size_t)nk + 1, sizeof(int32_t));
        c->req = ttc_calloc((size_t)nk + 1, sizeof *c->req);
        c->dyn = ttc_calloc((size_t)nk + 1, sizeof *c->dyn);
        c->units = ttc_calloc((size_t)nk + 1, sizeof *c->units);
        c->n_maps = ttc_calloc((size_t)nk + 1, sizeof *c->n_maps);
        c->wfn = ttc_calloc((size_t)nk + 1, sizeof *c->wfn);
        c->wdyn = ttc_calloc((size_t)nk + 1, sizeof *c->wdyn);
        c->wunits = ttc_calloc((size_t)nk + 1, sizeof *c->wunits);
        c->vfn = ttc_calloc((size_t)nk + 1, sizeof *c->vfn);
        c->vmax = ttc_calloc((size_t)nk + 1, sizeof *c->vmax);
        c->wpick = ttc_calloc((size_t)nk + 1, sizeof *c->wpick);
        c->wkey = ttc_calloc((size_t)nk + 1, sizeof *c->wkey);
        if (e->tg->cuda_libs != TTC_CUDA_LIBS_OFF && (ttc_cublas_available(NULL, 0) || ttc_cudnn_available(NULL, 0))) {
            c->lib = ttc_calloc((size_t)nk + 1, sizeof *c->lib);
            c->efn = ttc_calloc((size_t)nk + 1, sizeof *c->efn);
            c->emax = ttc_calloc((size_t)nk + 1, sizeof *c->emax);
            c->cw = ttc_calloc((size_t)nk + 1, sizeof *c->cw);
            if (ttc_cudnn_available(NULL, 0)) {
                c->nhwc = ttc_calloc((size_t)e->k->n_ts + 1, sizeof *c->nhwc);
                if (c->nhwc && !ttc_kir_nhwc_plan(e->k, c->nhwc)) { free(c->nhwc); c->nhwc = NULL; }
                if (c->nhwc) {
                    c->conv_h = ttc_calloc((size_t)nk + 1, sizeof *c->conv_h);
                    c->cwh = ttc_calloc((size_t)nk + 1, sizeof *c->cwh);
                    c->ehfn = ttc_calloc((size_t)nk + 1, sizeof *c->ehfn);
                    c->ehmax = ttc_calloc((size_t)nk + 1, sizeof *c->ehmax);
                }
            }
        }
    }
    if (!c || !c->mods || !c->fn || !c->max_threads || !c->req || !c->dyn || !c->units || !c->n_maps || !c->wfn ||
        !c->wdyn || !c->wunits || !c->wpick || !c->wkey || !c->vfn || !c->vmax ||
        (c->lib && (!c->efn || !c->emax || !c->cw)) || (c->nhwc && (!c->conv_h || !c->cwh || !c->ehfn || !c->ehmax))) {
        if (c) { free_arrays(c); free(c); }
        return TTC_ERR_NOMEM;
    }
    c->e = e;
    c->ordinal = ordinal;
    pthread_mutex_init(&c->wlock, NULL);
    for (int32_t i = 0; i < nk; i++) c->wpick[i] = -1;
    for (int32_t i = 0; i < nk; i++) {
        const ttc_kspec *ks = &e->cg->kernels[i];
        if (ks->n_args > c->max_args) c->max_args = ks->n_args;
        c->errf = c->errf || ttc_kspec_has_errflag(ks);
    }
    ttc_cuda_scope sc;
    ttc_status s = ttc_cuda_enter(ordinal, &sc);
    if (s != TTC_OK) {
        free_arrays(c);
        free(c);
        return s;
    }
    for (int32_t m = 0; m < c->n_mods && s == TTC_OK; m++) s = load_part(c, m);
    /* PTX the driver does not take is a kernel form this path cannot run: a refusal */
    if (s == TTC_ERR_DEVICE) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", ttc_last_error());   /* ttc_fail writes where it lies */
        s = ttc_fail(TTC_ERR_UNSUPPORTED, "the CUDA driver does not take the engine's PTX: %s", msg);
    }
    /* GEMM kernels cuBLAS may run, convolution kernels cuDNN may run: the library's result
     * alone, or with the epilogue kernel after it */
    bool gemms = false, convs = false;
    for (int32_t i = 0; i < nk && s == TTC_OK && c->lib; i++) {
        const ttc_kspec *ks = &e->cg->kernels[i];
        const ttc_kop *op = &e->k->ops[ks->op];
        bool fits = !ks->native && (op->epi.n == 0 || c->efn[i]);
        c->lib[i] = fits && ((op->kind == TTC_KOP_GEMM && ttc_cublas_available(NULL, 0)) ||
                             (op->kind == TTC_KOP_CONV2D && op->p.conv.ksplit <= 1 && ttc_cudnn_available(NULL, 0)));
        gemms |= c->lib[i] && op->kind == TTC_KOP_GEMM;
        convs |= c->lib[i] && op->kind == TTC_KOP_CONV2D;
        if (c->nhwc && ttc_kir_nhwc_conv(e->k, op))
            c->conv_h[i] = c->nhwc[op->in[0]] || c->nhwc[op->out];
    }
    if (s == TTC_OK) s = upload_consts(c);
    if (s == TTC_OK && convs) s = upload_conv_weights(c);
    convs = false;   /* those whose weights could be made */
    for (int32_t i = 0; i < nk && c->lib; i++) {
        c->n_lib += c->lib[i];
        convs |= c->lib[i] && c->cw[i];
    }
    /* channels-last needs every convolution touching an NHWC tensor to run through cuDNN with
     * its epilogue kernel: else the engine keeps every tensor NCHW */
    for (int32_t i = 0; i < nk && c->nhwc && s == TTC_OK; i++) {
        const ttc_kop *op = &e->k->ops[e->cg->kernels[i].op];
        if (!c->conv_h[i]) continue;
        bool epi = op->epi.n > 0;
        if (!c->lib[i] || !c->cwh[i] || (epi && (!c->efn[i] || (c->nhwc[op->out] && !c->ehfn[i])))) {
            free(c->nhwc);
            c->nhwc = NULL;
        }
    }
    if (gemms) c->ws_bytes = ttc_cublas_workspace_bytes();
    if (convs && c->ws_bytes < TTC_CUDNN_WS_MAX) c->ws_bytes = TTC_CUDNN_WS_MAX;
    if (s == TTC_OK && e->tg->cuda_graphs > 0 && ttc_cuda_graphs_available()) {
        c->gs = ttc_calloc((size_t)e->tg->cuda_graphs, sizeof *c->gs);
        if (!c->gs) s = TTC_ERR_NOMEM;
        else {
            c->n_gs = e->tg->cuda_graphs;
            c->key_len = 1 + (size_t)e->n_in * (1 + TTC_MAX_RANK) + (size_t)e->n_out;
            pthread_mutex_init(&c->glock, NULL);
        }
    }
    ttc_cuda_leave(&sc);
    if (s != TTC_OK) { ttc_cuda_engine_free(c); return s; }
    *out = c;
    return TTC_OK;
}

void ttc_cuda_engine_free(ttc_cuda_engine *c) {
    if (!c) return;
    ttc_cuda_scope sc;
    if (ttc_cuda_enter(c->ordinal, &sc) == TTC_OK) {
        for (int32_t i = 0; i < c->n_gs; i++) ttc_cuda_graph_free(c->gs[i].exec);
        ttc_cuda_stream_free(c->rec_stream);
        ttc_cuda_free(c->consts);
        if (c->cw_mem) ttc_cuda_free(c->cw_mem);
        for (int32_t m = 0; m < c->n_mods; m++)
            if (c->mods[m]) ttc_cuda_module_unload(c->mods[m]);
        ttc_cuda_leave(&sc);
    }
    free_arrays(c);
    free(c->const_ptr);
    for (int32_t i = 0; i < c->n_gs; i++) free(c->gs[i].key);
    free(c->gs);
    if (c->n_gs) pthread_mutex_destroy(&c->glock);
    pthread_mutex_destroy(&c->wlock);
    free(c);
}

static ttc_status plan_for(ttc_cuda_engine *c, const int64_t (*in_shapes)[TTC_MAX_RANK], ttc_plan **p) {
    return c->e->plan_for(c->e->engine, in_shapes, p);
}

/* The arena: intermediates, then the libraries' workspace at ws_offset (engines with library
 * steps: cuBLAS's or cuDNN's, whichever is larger), then the index-error flag. */
static size_t ws_offset(const ttc_plan *p) { return align_up(p->arena_bytes ? p->arena_bytes : 16, ARENA_TAIL); }

static size_t tensor_bytes(const ttc_cuda_engine *c, const ttc_plan *p, int32_t t) {
    return align_up((size_t)p->res[t].numel * ttc_dtype_size(c->e->k->ts[t].dtype), ARENA_TAIL);
}

/* The scratch channels-last convolutions need after the workspace: a copy of an NCHW input
 * in NHWC, and an NHWC result on its way to an NCHW output (the most any one kernel needs). */
static size_t nhwc_scratch(const ttc_cuda_engine *c, const ttc_plan *p) {
    size_t most = 0;
    for (int32_t ki = 0; c->nhwc && ki < c->e->cg->n_kernels; ki++) {
        if (!c->conv_h[ki]) continue;
        const ttc_kop *op = &c->e->k->ops[c->e->cg->kernels[ki].op];
        size_t b = (c->nhwc[op->in[0]] ? 0 : tensor_bytes(c, p, op->in[0])) + (c->nhwc[op->out] ? 0 : tensor_bytes(c, p, op->out));
        if (b > most) most = b;
    }
    return most;
}

static size_t arena_need(const ttc_cuda_engine *c, const ttc_plan *p) {
    return ws_offset(p) + c->ws_bytes + nhwc_scratch(c, p) + (c->errf ? ARENA_TAIL : 0);
}

ttc_status ttc_cuda_engine_arena_bytes(ttc_cuda_engine *c, const int64_t (*in_shapes)[TTC_MAX_RANK], size_t *out) {
    ttc_plan *p;
    TTC_TRY(plan_for(c, in_shapes, &p));
    *out = arena_need(c, p);
    c->e->plan_release(c->e->engine, p);
    return TTC_OK;
}

/* The largest divisor of n that is at most cap: OpenCL 1.2 launches cover exactly the
 * global size, and kernels check only some dims against their bounds. */
static uint32_t divisor_at_most(size_t n, size_t cap) {
    for (size_t b = cap < n ? cap : n; b > 1; b--)
        if (n % b == 0) return (uint32_t)b;
    return 1;
}

/* Grid and block of kernel ki; TTC_ERR_UNSUPPORTED where CUDA cannot launch it so. */
static ttc_status dims(const ttc_cuda_engine *c, const ttc_plan *p, int32_t ki, uint32_t grid[3], uint32_t block[3]) {
    static const size_t block_max[3] = {1024, 1024, 64};   /* CUDA's block limits per dim */
    const ttc_kspec *ks = &c->e->cg->kernels[ki];
    size_t cap = c->max_threads[ki] < 256 ? (size_t)c->max_threads[ki] : 256, threads = 1;
    for (int32_t d = 0; d < 3; d++) {
        size_t g = p->gws[ki][d], b;
        size_t left = cap / threads < block_max[d] ? cap / threads : block_max[d];
        if (ks->use_local) b = p->lws[ki][d];
        else if (c->req[ki][0]) b = c->req[ki][d];   /* OpenCL takes reqd_work_group_size when given none */
        else b = d < ks->work_dims ? divisor_at_most(g, left ? left : 1) : 1;
        if (c->req[ki][0] && b != c->req[ki][d])
            return ttc_fail(TTC_ERR_UNSUPPORTED, "kernel %s: local size %zu in dim %d, its PTX requires %u", ks->name, b,
                            (int)d, c->req[ki][d]);
        if (!b || g % b) return ttc_fail(TTC_ERR_INTERNAL, "kernel %s: global size %zu not a multiple of %zu", ks->name, g, b);
        if (b > block_max[d])
            return ttc_fail(TTC_ERR_UNSUPPORTED, "kernel %s: %zu threads in dim %d of a block exceed CUDA's %zu", ks->name,
                            b, (int)d, block_max[d]);
        threads *= b;
        size_t n = g / b;
        if (n > (d ? 65535u : 2147483647u))
            return ttc_fail(TTC_ERR_UNSUPPORTED, "kernel %s: %zu blocks in dim %d exceed CUDA's grid", ks->name, n, (int)d);
        grid[d] = (uint32_t)n;
        block[d] = (uint32_t)b;
    }
    if (threads > (size_t)c->max_threads[ki])
        return ttc_fail(TTC_ERR_UNSUPPORTED, "kernel %s: %zu threads per block, the CUDA function allows %d", ks->name,
                        threads, (int)c->max_threads[ki]);
    return TTC_OK;
}

/* The device pointer behind tensor t (ttc_exec_buf's mapping). */
static uint64_t ptr_of(const ttc_cuda_engine *c, const ttc_plan *p, int32_t t, const uint64_t *in, const uint64_t *out,
                       uint64_t arena) {
    const ttc_res *r = &p->res[t];
    uint64_t v = 0;
    switch (r->root) {
    case TTC_ROOT_INPUT: v = in[r->idx]; break;
    case TTC_ROOT_OUTPUT: v = out[r->idx]; break;
    case TTC_ROOT_CONST: v = c->const_ptr[r->idx]; break;
    case TTC_ROOT_ARENA: v = arena; break;
    default: break;
    }
    return v ? v : arena;   /* empty tensors: any valid memory, never read */
}

/* A kernel argument's value: a pointer, an int, or (TTC_ARG_BUF_TMAP) a CUtensorMap by value. */
typedef union { uint64_t p; int32_t i; _Alignas(64) unsigned char map[128]; } arg_val;

/* One call's memory: what the launch plan's arguments map to. */
typedef struct call_mem {
    const ttc_cuda_engine *c;
    const ttc_plan *p;
    const uint64_t *in, *out;
    uint64_t arena, flag, stream;
} call_mem;

/* The tensor map of GEMM kernel ki's operand argument a (TTC_ARG_BUF_TMAP: gemm_tc.cl FL & 16)
 * into map (64-byte aligned). Its arguments are A, offA, B, offB, M, N, K, sAb, sBb (codegen.c,
 * ttc_gen_gemm); batches are rows further down one 2-D map (row b * (sAb / K) + m), so a
 * batch stride must be a whole number of rows. */
static ttc_status tmap_make(const call_mem *m, int32_t ki, int32_t B, int32_t box_rows, int32_t tile,
                            unsigned char *map) {
    const ttc_kspec *ks = &m->c->e->cg->kernels[ki];
    const int64_t *av = m->p->argv[ki];
    memset(map, 0, 128);
    if (ks->n_args < 9 || ks->args[0].kind != TTC_ARG_BUF || ks->args[1].kind != TTC_ARG_OFF ||
        ks->args[2].kind != TTC_ARG_BUF || ks->args[3].kind != TTC_ARG_OFF || ks->args[6].kind != TTC_ARG_DIM)
        return ttc_fail(TTC_ERR_INTERNAL, "kernel %s: a tensor map outside a GEMM kernel's arguments", ks->name);
    int64_t off = av[B ? 3 : 1], rows = av[B ? 5 : 4], K = av[6], sb = av[B ? 8 : 7], nb = (int64_t)m->p->gws[ki][2];
    if (K <= 0 || rows <= 0) return TTC_OK;   /* the kernel copies nothing */
    int64_t total = rows;
    if (sb && nb > 1) {
        if (sb % K)
            return ttc_fail(TTC_ERR_UNSUPPORTED, "kernel %s: GEMM operand %c's batch stride %lld is not a whole number of "
                            "its %lld-element rows, which its tensor map needs (GEMM tile %d)", ks->name, B ? 'B' : 'A',
                            (long long)sb, (long long)K, (int)tile);
        total = (nb - 1) * (sb / K) + rows;
    }
    uint64_t base = ptr_of(m->c, m->p, (int32_t)av[B ? 2 : 0], m->in, m->out, m->arena) + (uint64_t)off * 2;
    ttc_status s = ttc_cuda_tensor_map(map, base, (uint64_t)K, (uint64_t)total, 64, (uint32_t)box_rows);
    if (s != TTC_OK)
        return ttc_fail_context(s, "kernel %s: GEMM operand %c (GEMM tile %d copies it through a tensor map)", ks->name,
                                B ? 'B' : 'A', (int)tile);
    return TTC_OK;
}

static ttc_status tmap_of(const call_mem *m, int32_t ki, int32_t a, unsigned char *map) {
    const ttc_kspec *ks = &m->c->e->cg->kernels[ki];
    return tmap_make(m, ki, ks->args[a].r == 1, ks->args[a].d, m->c->e->k->ops[ks->op].tile, map);
}

/* Kernel ki's arguments [from, n_args) as values vals[0..] (params point at them). */
/* Kernel ki's arguments from `from` on; gemv: its "<name>_v"'s (those ttc_kspec_gemv_arg keeps,
 * M as rows). */
static ttc_status args_of(const call_mem *m, int32_t ki, int32_t from, arg_val *vals, void **params, bool gemv,
                          int32_t rows) {
    const ttc_kspec *ks = &m->c->e->cg->kernels[ki];
    for (int32_t a = from, j = 0; a < ks->n_args; a++) {
        if (gemv && !ttc_kspec_gemv_arg(&ks->args[a])) continue;
        int64_t v = gemv && a == 4 ? rows : m->p->argv[ki][a];
        if (is_tmap(&ks->args[a])) TTC_TRY(tmap_of(m, ki, a, vals[j].map));
        else if (ks->args[a].kind == TTC_ARG_BUF) vals[j].p = ptr_of(m->c, m->p, (int32_t)v, m->in, m->out, m->arena);
        else if (ks->args[a].kind == TTC_ARG_ERRFLAG) vals[j].p = m->flag;
        else if (ks->args[a].kind == TTC_ARG_LOCAL) vals[j].p = 0;   /* its offset in the dynamic shared memory */
        else if (ks->args[a].kind == TTC_ARG_LOCAL_N) vals[j].i = m->c->units[ki];
        else vals[j].i = (int32_t)v;
        params[j] = &vals[j];
        j++;
    }
    return TTC_OK;
}

static ttc_status fill_args(const call_mem *m, int32_t ki, int32_t from, arg_val *vals, void **params) {
    return args_of(m, ki, from, vals, params, false, 0);
}

/* Whether kernel ki's tensor maps can be made for this call (checked before any launch). */
static ttc_status tmaps_check(const call_mem *m, int32_t ki) {
    const ttc_kspec *ks = &m->c->e->cg->kernels[ki];
    _Alignas(64) unsigned char map[128];
    for (int32_t a = 0; a < ks->n_args; a++)
        if (is_tmap(&ks->args[a])) TTC_TRY(tmap_of(m, ki, a, map));
    return TTC_OK;
}

static uint64_t addr_of(void *ctx, int32_t t) {
    const call_mem *m = ctx;
    const ttc_res *r = &m->p->res[t];
    return ptr_of(m->c, m->p, t, m->in, m->out, m->arena) + (uint64_t)r->off * ttc_dtype_size(m->c->e->k->ts[t].dtype);
}

/* GEMM kernel ki as "<name>_w" (tile gemm_w_tile): the kernel's first nine arguments,
 * then dsm (offset 0 of the dynamic shared memory), nst and the tensor maps of A and B, then the
 * store function's (codegen.c, ttc_kspec.gemm_w). vals holds n_args + 4 values, the maps at
 * n_args + 2 and + 3 already made for this call (wide_choice). */
static ttc_status wide_launch(const call_mem *m, int32_t ki, arg_val *vals, int64_t *launched) {
    ttc_cuda_engine *c = (ttc_cuda_engine *)m->c;
    const ttc_kspec *ks = &c->e->cg->kernels[ki];
    const ttc_gemm_tile *t = &ttc_gemm_tiles[ks->gemm_w_tile];
    int32_t n = ks->n_args;
    void **wp = ttc_malloc(sizeof(void *) * ((size_t)n + 4));
    if (!wp) return TTC_ERR_NOMEM;
    ttc_status s = fill_args(m, ki, 0, vals, wp + 4);   /* wp[4 + a] = &vals[a] */
    arg_val *x = vals + n;
    x[0].p = 0;
    x[1].i = c->wunits[ki];
    if (s == TTC_OK) {
        for (int32_t a = 0; a < 9; a++) wp[a] = &vals[a];
        for (int32_t j = 0; j < 4; j++) wp[9 + j] = &x[j];
        for (int32_t a = 9; a < n; a++) wp[a + 4] = &vals[a];
        const int64_t *av = m->p->argv[ki];
        int64_t M = av[4], N = av[5];
        uint32_t grid[3] = {(uint32_t)((N + t->bn - 1) / t->bn), (uint32_t)((M + t->bm - 1) / t->bm),
                            (uint32_t)m->p->gws[ki][2]};
        uint32_t block[3] = {(uint32_t)(32 * t->tm * t->tn), 1, 1};
        s = ttc_cuda_launch(c->wfn[ki], grid, block, c->wdyn[ki], m->stream, wp);
        (*launched)++;
        __atomic_fetch_add(&c->wide_calls, 1, __ATOMIC_RELAXED);
    }
    free(wp);
    return s;
}

/* Kernel ki itself (wide: as "<name>_w"). */
static ttc_status own_launch(const call_mem *m, int32_t ki, const uint32_t grid[3], const uint32_t block[3], bool wide,
                             arg_val *vals, void **params, int64_t *launched) {
    if (wide) return wide_launch(m, ki, vals, launched);
    TTC_TRY(fill_args(m, ki, 0, vals, params));
    (*launched)++;
    return ttc_cuda_launch(m->c->fn[ki], grid, block, m->c->dyn[ki], m->stream, params);
}

/* Two ways of running kernel ki, timed on the caller's stream: a warm-up of each (a library
 * picks its kernel on its first call), then three of each between CUDA events; *t0, *t1 the
 * milliseconds of way 0's and way 1's three. The output holds way 1's result afterwards. */
typedef ttc_status (*way_fn)(const call_mem *m, int32_t ki, int32_t way, void *ctx);
static ttc_status time_ways(const call_mem *m, int32_t ki, way_fn run, void *ctx, float *t0, float *t1) {
    void *ev[3] = {0};
    ttc_status s = TTC_OK;
    for (int i = 0; i < 3 && s == TTC_OK; i++) s = ttc_cuda_event_new(&ev[i]);
    enum { REPS = 3 };
    for (int32_t pass = 0; pass < 2 && s == TTC_OK; pass++) {
        int32_t reps = pass ? REPS : 1;
        if (pass) s = ttc_cuda_event_record(ev[0], m->stream);
        for (int32_t r = 0; r < reps && s == TTC_OK; r++) s = run(m, ki, 0, ctx);
        if (pass && s == TTC_OK) s = ttc_cuda_event_record(ev[1], m->stream);
        for (int32_t r = 0; r < reps && s == TTC_OK; r++) s = run(m, ki, 1, ctx);
        if (pass && s == TTC_OK) s = ttc_cuda_event_record(ev[2], m->stream);
    }
    if (s == TTC_OK) s = ttc_cuda_event_ms(ev[0], ev[1], t0);
    if (s == TTC_OK) s = ttc_cuda_event_ms(ev[1], ev[2], t1);
    for (int i = 0; i < 3; i++) ttc_cuda_event_free(ev[i]);
    return s;
}

/* What the timings launch: the kernel (wide: as "<name>_w") and, for the library's way, its call. */
typedef struct way_ctx {
    const uint32_t *grid, *block;
    bool wide;
    arg_val *vals;
    void **params;
    int64_t *launched;
    const struct lib_call *lc;
} way_ctx;

/* way 0: the kernel; way 1: "<name>_w" */
static ttc_status kernel_or_wide(const call_mem *m, int32_t ki, int32_t way, void *ctx) {
    way_ctx *w = ctx;
    return own_launch(m, ki, w->grid, w->block, way == 1, w->vals, w->params, w->launched);
}

/* Whether this call runs GEMM kernel ki as "<name>_w": where it was loaded and its tensor maps
 * can be made for this call's pointers (16-byte aligned operands), TORCHTRT_C_GEMM_WIDE=always
 * always, else the faster of the two for the shape, timed on its first call (a warm-up of each,
 * then three of each, CUDA events on the caller's stream); where nothing can be timed (the
 * stream is being recorded), "_w" for products of at least 512 rows. */
static ttc_status wide_choice(const call_mem *m, int32_t ki, const uint32_t grid[3], const uint32_t block[3],
                              arg_val *vals, void **params, bool *wide, int64_t *launched) {
    ttc_cuda_engine *c = (ttc_cuda_engine *)m->c;
    *wide = false;
    if (!c->wfn[ki]) return TTC_OK;
    /* the maps, made once for the call's launches of "_w" (wide_launch) */
    int32_t wt = c->e->cg->kernels[ki].gemm_w_tile;
    const ttc_gemm_tile *t = &ttc_gemm_tiles[wt];
    arg_val *x = vals + c->e->cg->kernels[ki].n_args;
    if (tmap_make(m, ki, 0, t->bm, wt, x[2].map) != TTC_OK || tmap_make(m, ki, 1, t->bn, wt, x[3].map) != TTC_OK) {
        ttc_clear_error();
        return TTC_OK;
    }
    if (c->e->tg->gemm_wide == TTC_GEMM_WIDE_ALWAYS) { *wide = true; return TTC_OK; }
    const int64_t *av = m->p->argv[ki];
    int64_t key[4] = {av[4], av[5], av[6], (int64_t)m->p->gws[ki][2]};
    pthread_mutex_lock(&c->wlock);
    int pick = memcmp(c->wkey[ki], key, sizeof key) ? -1 : c->wpick[ki];
    pthread_mutex_unlock(&c->wlock);
    if (pick >= 0) { *wide = pick == 1; return TTC_OK; }
    if (!ttc_cuda_events_available() || ttc_cuda_stream_capturing(m->stream)) { *wide = key[0] >= 512; return TTC_OK; }
    way_ctx w = {grid, block, false, vals, params, launched, NULL};
    float t_k = 0, t_w = 0;
    ttc_status s = time_ways(m, ki, kernel_or_wide, &w, &t_k, &t_w);
    if (s != TTC_OK) return ttc_fail_context(s, "timing %s against %s_w", c->e->cg->kernels[ki].name, c->e->cg->kernels[ki].name);
    pthread_mutex_lock(&c->wlock);
    memcpy(c->wkey[ki], key, sizeof key);
    c->wpick[ki] = t_w < t_k;
    pthread_mutex_unlock(&c->wlock);
    __atomic_fetch_add(&c->wide_timed, 1, __ATOMIC_RELAXED);
    *wide = t_w < t_k;
    return TTC_OK;
}

/* A kernel's library call: cuBLAS's product (conv NULL) or cuDNN's convolution of x by w
 * into y. */
typedef struct lib_call {
    ttc_cublas_gemm g;     /* fused (ttc_cublas_gemm_fused): cuBLASLt applies the epilogue, no "_e" */
    const ttc_cudnn_plan *conv;
    uint64_t x, w, y;
} lib_call;

/* Kernel ki's epilogue kernel fn ("<name>_e" or "_eh", at most fmax threads a block) in place
 * over the output's n elements (TTC_LIB_EPI_V per work-item). */
static ttc_status epi_launch(const call_mem *m, int32_t ki, void *fn, int32_t fmax, uint64_t stream, arg_val *vals,
                             void **params, int64_t *launched) {
    const ttc_kspec *ks = &m->c->e->cg->kernels[ki];
    int64_t n = m->p->res[m->c->e->k->ops[ks->op].out].numel;
    vals[0].i = (int32_t)n;
    params[0] = &vals[0];
    TTC_TRY(fill_args(m, ki, ks->n_args - ks->n_store_args, vals + 1, params + 1));
    uint32_t bs = fmax < 256 ? (uint32_t)fmax : 256;
    int64_t per = (int64_t)bs * TTC_LIB_EPI_V;   /* elements per block */
    uint32_t grid[3] = {(uint32_t)((n + per - 1) / per), 1, 1}, block[3] = {bs, 1, 1};
    (*launched)++;
    return ttc_cuda_launch(fn, grid, block, 0, stream, params);
}

/* The library's result, then the epilogue kernel in place over the output's n elements
 * (TTC_LIB_EPI_V per work-item). */
static ttc_status lib_run(const call_mem *m, int32_t ki, const lib_call *lc, uint64_t stream, arg_val *vals,
                          void **params, int64_t *launched) {
    ttc_cuda_engine *c = (ttc_cuda_engine *)m->c;
    uint64_t ws = m->arena + ws_offset(m->p);
    if (lc->conv) TTC_TRY(ttc_cudnn_conv_run(lc->conv, lc->x, lc->w, lc->y, ws, c->ws_bytes, stream));
    else TTC_TRY(ttc_cublas_gemm_run(c->ordinal, &lc->g, stream, ws, c->ws_bytes));
    __atomic_fetch_add(&c->lib_calls, 1, __ATOMIC_RELAXED);
    (*launched)++;
    if (!lc->conv && ttc_cublas_gemm_fused(&lc->g)) {
        __atomic_fetch_add(&c->lib_fused, 1, __ATOMIC_RELAXED);
        return TTC_OK;
    }
    if (!c->efn[ki]) return TTC_OK;
    return epi_launch(m, ki, c->efn[ki], c->emax[ki], stream, vals, params, launched);
}

/* way 0: the kernel (or its "_w"); way 1: the library's call */
static ttc_status kernel_or_library(const call_mem *m, int32_t ki, int32_t way, void *ctx) {
    way_ctx *w = ctx;
    if (way == 0) return own_launch(m, ki, w->grid, w->block, w->wide, w->vals, w->params, w->launched);
    return lib_run(m, ki, w->lc, m->stream, w->vals, w->params, w->launched);
}

/* Kernel ki's library call in this call (false: the library cannot run it), its choice key
 * and the guess where nothing can be timed. A convolution's cuDNN plan is made on its shape's
 * first call: its algorithm timed then (synchronising the device once), or, on a stream
 * being recorded, cuDNN's heuristic choice. */
static bool lib_call_of(const call_mem *m, int32_t ki, lib_call *lc, ttc_cuda_lib_key *key, bool *guess) {
    ttc_cuda_engine *c = (ttc_cuda_engine *)m->c;
    const ttc_engine_view *e = c->e;
    const ttc_kop *op = &e->k->ops[e->cg->kernels[ki].op];
    memset(lc, 0, sizeof *lc);
    if (op->kind != TTC_KOP_CONV2D) {
        if (!ttc_cuda_lib_gemm(e, m->p, ki, addr_of, (void *)m, &lc->g, NULL, 0)) return false;
        /* the epilogue inside the product where cuBLASLt can take all of it */
        ttc_cublas_gemm f = lc->g;
        if (c->efn[ki] && e->tg->cuda_lt && ttc_cuda_lib_gemm_epi(e, m->p, ki, addr_of, (void *)m, &f) &&
            ttc_cublaslt_ready(c->ordinal, &f, c->ws_bytes))
            lc->g = f;
        ttc_cuda_lib_key_make(&lc->g, op->tile, c->efn[ki] != NULL && !ttc_cublas_gemm_fused(&lc->g), key);
        *guess = ttc_cuda_lib_guess(&lc->g);
        return true;
    }
    ttc_cudnn_conv d;
    size_t ws = 0;
    if (!c->cw[ki] || !ttc_cuda_lib_conv(e, m->p, ki, addr_of, (void *)m, &d, &lc->x, &lc->y, NULL, 0)) return false;
    ttc_cudnn_plan *plan = NULL;
    if (ttc_cudnn_conv_prepare(&d, c->ordinal, !ttc_cuda_stream_capturing(m->stream), &plan, &ws) != TTC_OK ||
        ws > c->ws_bytes) {
        ttc_clear_error();   /* no cuDNN algorithm for it: the kernel runs */
        return false;
    }
    lc->conv = plan;
    lc->w = c->cw[ki];
    ttc_cuda_lib_key_conv(&d, op->p.conv.mma, c->efn[ki] != NULL, key);
    *guess = ttc_cuda_lib_conv_guess(&d);
    return true;
}

/* Whether kernel ki runs as its library call in this call: *lc the call when yes. Auto mode
 * times both ways once per shape (exec_cuda_lib.h) on the caller's stream, unless it is being
 * recorded; *done: the timing left the chosen (the library's) result in the output. */
static ttc_status lib_pick(const call_mem *m, int32_t ki, const uint32_t grid[3], const uint32_t block[3],
                           bool wide, arg_val *vals, void **params, lib_call *lc, bool *use, bool *done,
                           int64_t *launched) {
    ttc_cuda_engine *c = (ttc_cuda_engine *)m->c;
    const ttc_engine_view *e = c->e;
    *use = *done = false;
    ttc_cuda_lib_key key;
    bool guess = false;
    if (!lib_call_of(m, ki, lc, &key, &guess)) return TTC_OK;
    if (wide && !lc->conv) key.v[13] = e->cg->kernels[ki].gemm_w_tile;   /* the kernel timed is "<name>_w" */
    if (m->c->efn[ki] && m->p->res[e->k->ops[e->cg->kernels[ki].op].out].numel > 2147483647 - 8 * 1024 * TTC_LIB_EPI_V)
        return TTC_OK;   /* its index b + j * L stays an int */
    if (e->tg->cuda_libs == TTC_CUDA_LIBS_ALL) { *use = true; return TTC_OK; }
    int pick = ttc_cuda_lib_choice(&key);
    if (pick >= 0) { *use = pick == 1; return TTC_OK; }
    if (!ttc_cuda_events_available() || ttc_cuda_stream_capturing(m->stream)) { *use = guess; return TTC_OK; }
    const ttc_kspec *ks = &e->cg->kernels[ki];
    way_ctx w = {grid, block, wide, vals, params, launched, lc};
    float t_k = 0, t_l = 0;
    ttc_status s = time_ways(m, ki, kernel_or_library, &w, &t_k, &t_l);
    if (s != TTC_OK) return ttc_fail_context(s, "timing %s against %s", ks->name, lc->conv ? "cuDNN" : "cuBLAS");
    ttc_cuda_lib_choose(&key, t_l < t_k);
    __atomic_fetch_add(&c->lib_timed, 1, __ATOMIC_RELAXED);
    /* the library ran last: its output stands when it won, else the kernel writes its own, so that
     * the first call's result is the one every later call gives */
    *use = false;
    *done = t_l < t_k;
    return TTC_OK;
}

/* Kernel ki's cuDNN plan for its convolution in NHWC (conv_h), made on its shape's first call
 * (timed unless the stream is being recorded). false: this call cannot run it so (sizes beyond
 * int, a strided or misaligned tensor, no algorithm within the workspace). */
static bool nhwc_plan_of(const call_mem *m, int32_t ki, const ttc_cudnn_plan **plan) {
    ttc_cuda_engine *c = (ttc_cuda_engine *)m->c;
    const ttc_engine_view *e = c->e;
    ttc_cudnn_conv d;
    uint64_t x, y;
    if (!ttc_cuda_lib_conv(e, m->p, ki, addr_of, (void *)m, &d, &x, &y, NULL, 0)) return false;
    d.nhwc = true;
    ttc_cudnn_plan *p = NULL;
    size_t ws = 0;
    if (ttc_cudnn_conv_prepare(&d, c->ordinal, !ttc_cuda_stream_capturing(m->stream), &p, &ws) != TTC_OK ||
        ws > c->ws_bytes) {
        ttc_clear_error();
        return false;
    }
    *plan = p;
    return true;
}

/* Convolution ki channels-last: its input made NHWC in the scratch unless kept so, cuDNN's
 * result written NHWC (into the scratch when the output is kept NCHW, then changed into it),
 * then its epilogue kernel over the output as stored. */
static ttc_status nhwc_run(const call_mem *m, int32_t ki, const ttc_cudnn_plan *plan, uint64_t stream, arg_val *vals,
                          void **params, int64_t *launched) {
    ttc_cuda_engine *c = (ttc_cuda_engine *)m->c;
    const ttc_kop *op = &c->e->k->ops[c->e->cg->kernels[ki].op];
    const ttc_cudnn_conv *d = ttc_cudnn_plan_conv(plan);
    int32_t X = op->in[0], Y = op->out;
    uint64_t x = addr_of((void *)m, X), y = addr_of((void *)m, Y);
    uint64_t ws = m->arena + ws_offset(m->p), scratch = ws + c->ws_bytes;
    if (!c->nhwc[X]) {
        TTC_TRY(ttc_cudnn_transform(c->ordinal, d->dtype, d->n, d->c, d->h, d->w, true, x, scratch, stream));
        x = scratch;
        scratch += tensor_bytes(c, m->p, X);
        (*launched)++;
    }
    uint64_t yc = c->nhwc[Y] ? y : scratch;
    TTC_TRY(ttc_cudnn_conv_run(plan, x, c->cwh[ki], yc, ws, c->ws_bytes, stream));
    (*launched)++;
    __atomic_fetch_add(&c->lib_calls, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&c->lib_nhwc, 1, __ATOMIC_RELAXED);
    if (!c->nhwc[Y]) {
        TTC_TRY(ttc_cudnn_transform(c->ordinal, d->dtype, d->n, d->k, d->oh, d->ow, false, yc, y, stream));
        (*launched)++;
    }
    if (!c->efn[ki]) return TTC_OK;
    if (c->nhwc[Y]) return epi_launch(m, ki, c->ehfn[ki], c->ehmax[ki], stream, vals, params, launched);
    return epi_launch(m, ki, c->efn[ki], c->emax[ki], stream, vals, params, launched);
}

/* Whether this call runs GEMM kernel ki as "<name>_v" (the plan chose it and it was loaded). */
static bool gemv_of(const ttc_cuda_engine *c, const ttc_plan *p, int32_t ki) { return p->gemv[ki] && c->vfn[ki]; }

/* Grid and block of kernel ki's "<name>_v" (ttc_plan_gemv_dims). */
static ttc_status gemv_dims(const ttc_cuda_engine *c, const ttc_plan *p, int32_t ki, uint32_t grid[3], uint32_t block[3]) {
    size_t g[3], l[3];
    (void)ttc_plan_gemv_dims(p, ki, g, l);
    for (int32_t d = 0; d < 3; d++) {
        size_t n = g[d] / l[d];
        if (n > (d ? 65535u : 2147483647u))
            return ttc_fail(TTC_ERR_UNSUPPORTED, "kernel %s_v: %zu blocks in dim %d exceed CUDA's grid",
                            c->e->cg->kernels[ki].name, n, (int)d);
        grid[d] = (uint32_t)n;
        block[d] = (uint32_t)l[d];
    }
    return TTC_OK;
}

/* GEMM kernel ki as "<name>_v": the kernel's arguments but a tile's local stages and tensor
 * maps (ttc_kspec_gemv_arg), no dynamic shared memory. */
static ttc_status gemv_launch(const call_mem *m, int32_t ki, const uint32_t grid[3], const uint32_t block[3],
                              arg_val *vals, void **params, int64_t *launched) {
    ttc_cuda_engine *c = (ttc_cuda_engine *)m->c;
    size_t g[3], l[3];
    TTC_TRY(args_of(m, ki, 0, vals, params, true, ttc_plan_gemv_dims(m->p, ki, g, l)));
    (*launched)++;
    __atomic_fetch_add(&c->gemv_calls, 1, __ATOMIC_RELAXED);
    return ttc_cuda_launch(c->vfn[ki], grid, block, 0, m->stream, params);
}

static ttc_status launch_all(ttc_cuda_engine *c, const ttc_plan *p, const uint64_t *in, const uint64_t *out,
                             uint64_t arena, uint64_t flag, uint64_t stream, int64_t *launched) {
    const ttc_engine_view *e = c->e;
    int32_t nk = e->cg->n_kernels;
    uint32_t (*g)[3] = ttc_malloc(sizeof(uint32_t) * 6 * ((size_t)nk + 1));
    arg_val *vals = aligned_alloc(_Alignof(arg_val), sizeof(arg_val) * ((size_t)c->max_args + 8));
    void **params = ttc_malloc(sizeof(void *) * ((size_t)c->max_args + 8));
    ttc_status s = g && vals && params ? TTC_OK : TTC_ERR_NOMEM;
    uint32_t (*b)[3] = g ? g + nk + 1 : NULL;
    call_mem m = {c, p, in, out, arena, flag, stream};
    /* every launch is checked before the first is made: a refusal leaves the stream untouched */
    for (int32_t ki = 0; ki < nk && s == TTC_OK; ki++)
        if (!p->skip[ki] && gemv_of(c, p, ki)) {
            s = gemv_dims(c, p, ki, g[ki], b[ki]);
        } else if (!p->skip[ki]) {
            s = dims(c, p, ki, g[ki], b[ki]);
            if (s == TTC_OK && c->n_maps[ki]) s = tmaps_check(&m, ki);
        }
    /* channels-last where every convolution touching an NHWC tensor can run so in this call;
     * else the whole call NCHW (as with TORCHTRT_C_CUDA_NHWC=0) */
    const ttc_cudnn_plan **hp = NULL;
    if (s == TTC_OK && c->nhwc) {
        hp = ttc_calloc((size_t)nk + 1, sizeof *hp);
        if (!hp) s = TTC_ERR_NOMEM;
        for (int32_t ki = 0; ki < nk && hp; ki++)
            if (c->conv_h[ki] && (p->skip[ki] || !nhwc_plan_of(&m, ki, &hp[ki]))) { free(hp); hp = NULL; }
        if (hp) __atomic_fetch_add(&c->nhwc_calls, 1, __ATOMIC_RELAXED);
    }
    if (s == TTC_OK && flag) s = ttc_cuda_memset32(flag, 0, 1, stream);
    int64_t n = 0;
    for (int32_t ki = 0; ki < nk && s == TTC_OK; ki++) {
        if (p->skip[ki]) continue;
        const ttc_kspec *ks = &e->cg->kernels[ki];
        if (hp && c->conv_h[ki]) {
            s = nhwc_run(&m, ki, hp[ki], stream, vals, params, &n);
            if (s != TTC_OK) s = ttc_fail_context(s, "running %s (%s) through cuDNN channels-last", ks->name, e->k->ops[ks->op].name);
            continue;
        }
        if (gemv_of(c, p, ki)) {
            s = gemv_launch(&m, ki, g[ki], b[ki], vals, params, &n);
            if (s != TTC_OK) s = ttc_fail_context(s, "launching %s_v (%s)", ks->name, e->k->ops[ks->op].name);
            continue;
        }
        bool wide = false;
        s = wide_choice(&m, ki, g[ki], b[ki], vals, params, &wide, &n);
        if (s != TTC_OK) break;
        if (c->lib && c->lib[ki]) {
            lib_call lc;
            bool use = false, done = false;
            s = lib_pick(&m, ki, g[ki], b[ki], wide, vals, params, &lc, &use, &done, &n);
            if (s == TTC_OK && done) continue;   /* timed, output written */
            if (s == TTC_OK && use) s = lib_run(&m, ki, &lc, stream, vals, params, &n);
            if (s != TTC_OK)
                s = ttc_fail_context(s, "running %s (%s) through %s", ks->name, e->k->ops[ks->op].name,
                                     e->k->ops[ks->op].kind == TTC_KOP_CONV2D ? "cuDNN" : "cuBLAS");
            if (s != TTC_OK || use) continue;
        }
        s = own_launch(&m, ki, g[ki], b[ki], wide, vals, params, &n);
        if (s != TTC_OK) s = ttc_fail_context(s, "launching %s%s (%s)", ks->name, wide ? "_w" : "", e->k->ops[ks->op].name);
    }
    *launched = n;
    free(hp);
    free(g);
    free(vals);
    free(params);
    return s;
}

/* The call through a graph where one is kept for its key, or recorded now when the key came
 * before (once is not enough: a one-off key would pay the recording, about a launch per
 * kernel plus instantiation, for nothing). *done: the call's work is on the stream. */
static ttc_status graph_run(ttc_cuda_engine *c, const ttc_plan *p, const uint64_t *in,
                            const int64_t (*in_shapes)[TTC_MAX_RANK], const uint64_t *out, uint64_t arena,
                            uint64_t flag, uint64_t stream, bool *done) {
    const ttc_engine_view *e = c->e;
    *done = false;
    /* a stream the caller records (torch.cuda.graph) takes plain launches only: the driver
     * refuses to launch a graph into it (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED) */
    if (ttc_cuda_stream_capturing(stream)) return TTC_OK;
    uint64_t *key = ttc_malloc(c->key_len * sizeof *key);
    if (!key) return TTC_OK;   /* plain launches need no memory of their own */
    size_t k = 0;
    key[k++] = arena;
    for (int32_t i = 0; i < e->n_in; i++) {
        key[k++] = in[i];
        for (int32_t d = 0; d < TTC_MAX_RANK; d++) key[k++] = (uint64_t)in_shapes[i][d];
    }
    for (int32_t i = 0; i < e->n_out; i++) key[k++] = out[i];
    ttc_status s = TTC_OK;
    pthread_mutex_lock(&c->glock);
    if (c->gbroken) goto out;
    struct gslot *g = NULL, *old = &c->gs[0];
    for (int32_t i = 0; i < c->n_gs; i++) {
        if (c->gs[i].key && !memcmp(c->gs[i].key, key, c->key_len * sizeof *key)) { g = &c->gs[i]; break; }
        if (c->gs[i].stamp < old->stamp) old = &c->gs[i];
    }
    if (!g) {   /* first sight: remember it in the least recently used slot */
        /* a graph still running is freed by the driver when it completes */
        ttc_cuda_graph_free(old->exec);
        free(old->key);
        old->key = key;
        key = NULL;
        old->exec = NULL;
        old->stamp = ++c->gclock;
        goto out;
    }
    g->stamp = ++c->gclock;
    if (!g->exec) {
        if (!c->rec_stream && ttc_cuda_stream_new(&c->rec_stream) != TTC_OK) { c->gbroken = true; goto out; }
        int64_t n = 0;
        if (ttc_cuda_record_begin(c->rec_stream) != TTC_OK) { c->gbroken = true; goto out; }
        /* the index-error flag's reset is recorded too (its address follows from the arena's
         * and the shapes, both in the key); the caller reads it back after the replay */
        ttc_status ls = launch_all(c, p, in, out, arena, flag, c->rec_stream, &n);
        ttc_status rs = ttc_cuda_record_end(c->rec_stream, ls == TTC_OK, &g->exec);
        /* launch_all refuses launches that do not fit CUDA before making any: the plain path
         * after us says so to the caller; a recording the driver refuses ends graphs here */
        if (ls != TTC_OK) { g->exec = NULL; goto out; }
        if (rs != TTC_OK || !g->exec) { g->exec = NULL; c->gbroken = true; goto out; }
        g->launches = n;
        c->graphs_recorded++;
    }
    s = ttc_cuda_graph_launch(g->exec, stream);
    if (s == TTC_OK) {
        *done = true;
        c->graph_calls++;
        __atomic_fetch_add(&c->launches, g->launches, __ATOMIC_RELAXED);
    }
out:
    pthread_mutex_unlock(&c->glock);
    free(key);
    return s;
}

ttc_status ttc_cuda_engine_run(ttc_cuda_engine *c, const uint64_t *in, const int64_t (*in_shapes)[TTC_MAX_RANK],
                               const uint64_t *out, uint64_t arena, size_t arena_bytes, uint64_t stream) {
    const ttc_engine_view *e = c->e;
    ttc_plan *p;
    TTC_TRY(plan_for(c, in_shapes, &p));
    ttc_status s = TTC_OK;
    size_t need = arena_need(c, p);
    if (arena_bytes < need || !arena)
        s = ttc_fail(TTC_ERR_INPUT, "engine %s: the arena has %zu bytes, %zu needed", e->name, arena_bytes, need);
    for (int32_t i = 0; i < e->n_in && s == TTC_OK; i++)
        if (in[i] % 16 && p->res[e->k->inputs[i]].numel)
            s = ttc_fail(TTC_ERR_INPUT, "input %s: device memory not aligned to 16 bytes", e->ins[i].name);
    for (int32_t i = 0; i < e->n_out && s == TTC_OK; i++)
        if ((out[i] % 16 || !out[i]) && p->res[e->k->outputs[i]].numel)
            s = ttc_fail(TTC_ERR_INPUT, "output %s: no device memory or not aligned to 16 bytes", e->outs[i].name);
    uint64_t flag = c->errf ? arena + need - ARENA_TAIL : 0;
    ttc_cuda_scope sc = {0};
    if (s == TTC_OK) s = ttc_cuda_enter(c->ordinal, &sc);
    if (s == TTC_OK) {
        bool done = false;
        if (c->n_gs) s = graph_run(c, p, in, in_shapes, out, arena, flag, stream, &done);
        if (s == TTC_OK && !done) {
            int64_t n = 0;
            s = launch_all(c, p, in, out, arena, flag, stream, &n);
            __atomic_fetch_add(&c->launches, n, __ATOMIC_RELAXED);
        }
        int32_t v = 0;
        if (s == TTC_OK && flag && e->check_indices) {
            s = ttc_cuda_download(&v, flag, sizeof v, stream);
            __atomic_fetch_add(&c->flag_reads, 1, __ATOMIC_RELAXED);
        }
        if (s == TTC_OK && v > 0 && v <= e->k->n_ops)
            s = ttc_fail(TTC_ERR_INPUT, "node %s: index out of range (an index tensor holds a value outside the dim "
                         "it indexes); the outputs of this call are not valid", e->k->ops[v - 1].name);
        else if (s == TTC_OK && v)
            s = ttc_fail(TTC_ERR_INTERNAL, "engine %s: index error flag holds %d", e->name, (int)v);
        ttc_cuda_leave(&sc);
    }
    if (s == TTC_OK) __atomic_fetch_add(&c->calls, 1, __ATOMIC_RELAXED);
    e->plan_release(e->engine, p);
    return s;
}

ttc_cuda_engine_stats ttc_cuda_engine_stats_get(const ttc_cuda_engine *c) {
    ttc_cuda_engine_stats st = {__atomic_load_n(&c->calls, __ATOMIC_RELAXED),
                                __atomic_load_n(&c->launches, __ATOMIC_RELAXED),
                                __atomic_load_n(&c->flag_reads, __ATOMIC_RELAXED), c->const_bytes, 0, 0, c->n_gs, c->dyn_max,
                                c->n_lib, __atomic_load_n(&c->lib_calls, __ATOMIC_RELAXED),
                                __atomic_load_n(&c->lib_timed, __ATOMIC_RELAXED),
                                __atomic_load_n(&c->lib_fused, __ATOMIC_RELAXED),
                                __atomic_load_n(&c->lib_nhwc, __ATOMIC_RELAXED),
                                __atomic_load_n(&c->nhwc_calls, __ATOMIC_RELAXED), 0, c->n_wide,
                                __atomic_load_n(&c->wide_calls, __ATOMIC_RELAXED),
                                __atomic_load_n(&c->wide_timed, __ATOMIC_RELAXED), c->n_gemv,
                                __atomic_load_n(&c->gemv_calls, __ATOMIC_RELAXED)};
    for (int32_t t = 0; c->nhwc && t < c->e->k->n_ts; t++) st.nhwc_tensors += c->nhwc[t];
    if (c->n_gs) {
        ttc_cuda_engine *m = (ttc_cuda_engine *)c;   /* the lock only: counters are read */
        pthread_mutex_lock(&m->glock);
        st.graph_calls = c->graph_calls;
        st.graphs_recorded = c->graphs_recorded;
        pthread_mutex_unlock(&m->glock);
    }
    return st;
}
