/* GEMM kernel choice. Every GEMM gets a candidate of ttc_gemm_tiles (codegen.h):
 * - TORCHTRT_C_GEMM_TILE=<index> forces one for every GEMM (tests use it to run the GPU
 *   kernel families on the CPU device; the tensor-core family needs NVIDIA and fp16 inputs);
 *   TORCHTRT_C_KERNELS=gpu makes any device choose among the GPU families;
 * - optimization_level >= 3: candidates are timed on the device at the symbols' opt values,
 *   each as a one-kernel program of its own built and launched through the backend (no
 *   engine) on fixed pseudo-random data, and the fastest kept. Which candidates
 *   (TORCHTRT_C_TUNE): fast (default) the heuristic's shortlist (gemm_shortlist: at most 6,
 *   none when it has one), for the TORCHTRT_C_TUNE_MAX (16) shapes of the engine with the most
 *   FLOPs; full every candidate of the device's families for every shape (the behaviour
 *   before; A/B runs); heuristic none. A shape is timed once per engine however many GEMMs
 *   have it. Choices are remembered in a persistent tuning cache (tuning-v1.txt in the program
 *   cache directory: "key<TAB>choice" lines, the key naming the device, driver, the GEMM
 *   kernels' code and the problem; "|fast" marks a shortlist's choice, which a full tuning
 *   does not read) and stored in the engine (serialised with it);
 * - otherwise a heuristic by device and shape (gemm_default).
 * Families by device: CPU devices the CPU kernel; GPUs the register-blocked SIMT kernel, and
 * on NVIDIA, for half x half GEMMs and every GEMM of fp16 engines, the tensor-core kernels
 * (mma.sync: the register-staged MMA family and the cp.async-pipelined TC family), and for
 * float x float GEMMs of fp32 engines built with the TF32 policy (tf32_matmul) the TF32
 * family. The pipelined families run anywhere through the PTX prelude's emulation when forced
 * (tests), but only NVIDIA targets choose them. */
#include "engine_impl.h"
#include "../backend/cpu/native.h"
#include "../kernels/kernels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char *tuning_path(const ttc_engine *e) {
    char *dir = ttc_cache_dir(e->cache_dir_opt);
    if (!dir) return NULL;
    for (char *s = dir + 1; *s; s++)
        if (*s == '/') { *s = 0; mkdir(dir, 0755); *s = '/'; }
    mkdir(dir, 0755);
    char *p = ttc_strfmt("%s/tuning-v1.txt", dir);
    free(dir);
    return p;
}

static int32_t cache_lookup(const char *path, const char *key) {
    FILE *f = path ? fopen(path, "r") : NULL;
    if (!f) return -1;
    char line[1024];
    int32_t found = -1;
    size_t kl = strlen(key);
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, key, kl) && line[kl] == '\t') {
            int v = atoi(line + kl + 1);
            if (v >= 0 && v < TTC_GEMM_TILES) found = v;   /* the last entry wins */
        }
    }
    fclose(f);
    return found;
}

static void cache_store(const char *path, const char *key, int32_t choice) {
    FILE *f = path ? fopen(path, "a") : NULL;
    if (!f) return;
    fprintf(f, "%s\t%d\n", key, choice);  /* one short append: whole lines between processes */
    fclose(f);
}

/* One timed candidate: op `oi` of e with tile `tile` as a one-GEMM kernel IR of its own,
 * generated, built and bound through the backend with its data. Preparing it (program build,
 * first launch: where the driver compiles) runs in a thread per candidate; the timing runs
 * afterwards, one candidate at a time. */
typedef struct cand {
    ttc_engine *e;            /* the engine being tuned (read only while preparing) */
    int32_t oi, tile;
    const int64_t *sv;
    ttc_kir *k;
    ttc_codegen cg;           /* zeroed until generated; freed either way */
    ttc_plan *p;
    ttc_program *prog;
    ttc_kernel *kern;
    ttc_queue *q;
    ttc_buf *bufs[3], *arena;  /* a, b, c */
    bool generated;           /* k and cg made ahead (build worker processes need the sources) */
    bool ready;
} cand;

/* The candidate's kernel IR: inputs a, b (the op's shapes at sv), output c, tile fixed. */
static ttc_status cand_kir(cand *c) {
    const ttc_kir *k = c->e->k;
    const ttc_kop *op = &k->ops[c->oi];
    ttc_kir *mk = c->k = ttc_kir_new();
    if (!mk) return TTC_ERR_NOMEM;
    mk->target = &c->e->tg;
    int32_t ids[2];
    for (int32_t j = 0; j < 2; j++) {
        const ttc_et *t = &k->ts[op->in[j]];
        ttc_dim d[TTC_MAX_RANK];
        for (int32_t x = 0; x < t->rank; x++) d[x] = ttc_dim_const(ttc_dim_eval(t->dims[x], c->sv));
        ids[j] = ttc_kir_tensor(mk, TTC_ET_INPUT, t->dtype, t->rank, d, j ? "b" : "a");
        if (ids[j] < 0) return TTC_ERR_NOMEM;
        mk->ts[ids[j]].binding = j;
    }
    const ttc_et *ot = &k->ts[ttc_kop_gemm_shape(op)];
    ttc_dim od[TTC_MAX_RANK];
    for (int32_t x = 0; x < ot->rank; x++) od[x] = ttc_dim_const(ttc_dim_eval(ot->dims[x], c->sv));
    int32_t mo = ttc_kir_op(mk, TTC_KOP_GEMM, ot->dtype, ot->rank, od, "gemm");
    if (mo < 0) return TTC_ERR_NOMEM;
    mk->ops[mo].in[0] = ids[0];
    mk->ops[mo].in[1] = ids[1];
    mk->ops[mo].p.gemm.trans_b = op->p.gemm.trans_b;
    mk->ops[mo].tile = c->tile;
    int32_t out = mk->ops[mo].out;
    mk->ts[out].binding = 0;
    mk->inputs = ttc_calloc(2, sizeof(int32_t));
    mk->outputs = ttc_calloc(1, sizeof(int32_t));
    if (!mk->inputs || !mk->outputs) return TTC_ERR_NOMEM;
    mk->inputs[0] = ids[0]; mk->inputs[1] = ids[1]; mk->n_inputs = 2;
    mk->outputs[0] = out; mk->n_outputs = 1;
    return TTC_OK;
}

/* Fixed pseudo-random operand bytes (floats in [-0.5, 0.5] for float32). */
static void *cand_data(const ttc_et *t, const ttc_res *r) {
    size_t n = (size_t)r->numel * ttc_dtype_size(t->dtype);
    unsigned char *buf = ttc_malloc(n + 16);
    if (!buf) return NULL;
    for (size_t b = 0; b < n; b++) buf[b] = (unsigned char)(b * 37 % 61);
    if (t->dtype == TTC_DTYPE_FLOAT32)
        for (size_t b = 0; b < n / 4; b++) ((float *)buf)[b] = (float)((b * 7919) % 17) * 0.0625f - 0.5f;
    return buf;
}

static ttc_status cand_launch(cand *c) {
    return ttc_exec_enqueue(c->q, &c->cg.kernels[0], c->p, 0, c->kern, NULL);
}

static ttc_status cand_generate(cand *c) {
    TTC_TRY(cand_kir(c));
    TTC_TRY(ttc_codegen_run(c->k, c->e->tg.is_gpu, &c->cg));
    if (c->cg.n_kernels != 1) return ttc_fail(TTC_ERR_INTERNAL, "tuning: %d kernels for one GEMM", c->cg.n_kernels);
    c->generated = true;
    return TTC_OK;
}

static ttc_status cand_build(cand *c) {
    ttc_engine *e = c->e;
    if (!c->generated) TTC_TRY(cand_generate(c));
    TTC_TRY(ttc_program_build(e->dev, c->cg.source, TTC_PROGRAM_OPTIONS, e->cache_dir_opt, &c->prog));
    TTC_TRY(ttc_plan_make(c->k, &c->cg, NULL, &c->p));
    TTC_TRY(ttc_queue_new(e->dev, false, &c->q));
    TTC_TRY(ttc_kernel_new(c->prog, c->cg.kernels[0].name, &c->kern));
    const int32_t ts[3] = {c->k->inputs[0], c->k->inputs[1], c->k->outputs[0]};
    for (int32_t j = 0; j < 3; j++) {
        const ttc_res *r = &c->p->res[ts[j]];
        size_t n = (size_t)r->numel * ttc_dtype_size(c->k->ts[ts[j]].dtype);
        void *data = j < 2 ? cand_data(&c->k->ts[ts[j]], r) : NULL;
        if (j < 2 && !data) return TTC_ERR_NOMEM;
        ttc_status s = ttc_buf_alloc(e->dev, n, data, j == 0 ? "a" : j == 1 ? "b" : "c", &c->bufs[j]);
        free(data);
        TTC_TRY(s);
    }
    TTC_TRY(ttc_buf_alloc(e->dev, c->p->arena_bytes, NULL, "arena", &c->arena));
    const ttc_exec_bufs b = {c->bufs, &c->bufs[2], NULL, c->arena, NULL};
    TTC_TRY(ttc_exec_bind(&c->cg.kernels[0], c->p, 0, c->kern, &b));
    /* the first launch (where drivers compile the specialised kernel) must run */
    TTC_TRY(cand_launch(c));
    return ttc_queue_finish(c->q);
}

static void cand_free(cand *c) {
    ttc_kernel_free(c->kern);
    ttc_queue_free(c->q);
    for (int j = 0; j < 3; j++) ttc_buf_free(c->bufs[j]);
    ttc_buf_free(c->arena);
    ttc_plan_free(c->p);
    ttc_program_free(c->prog);
    ttc_codegen_free(&c->cg);
    ttc_kir_free(c->k);
    /* the choice (e, oi, tile) stays: the caller reads the winner's tile after timing */
    *c = (cand){.e = c->e, .oi = c->oi, .tile = c->tile, .sv = c->sv};
}

static void *cand_prepare(void *arg) {
    cand *c = arg;
    c->ready = cand_build(c) == TTC_OK;
    ttc_clear_error();  /* a candidate that cannot run is simply not chosen */
    return NULL;
}

/* The candidate's best time in seconds over 5 runs after one warm-up (+inf when it failed);
 * frees it. Operands stay on the device: host transfers would drown the differences. */
static double cand_time(cand *c) {
    double best = 1e30;
    for (int r = 0; c->ready && r < 6; r++) {
        double t0 = ttc_now_s();
        if (cand_launch(c) != TTC_OK || ttc_queue_finish(c->q) != TTC_OK) { best = 1e30; break; }
        double t = ttc_now_s() - t0;
        if (r > 0 && t < best) best = t;
    }
    cand_free(c);
    ttc_clear_error();
    return best;
}

/* Prepares cs[0..n) with up to the target's tune_threads threads taking the next candidate as
 * they finish (no barrier per batch: one slow driver compile held up the batch before); in
 * the caller when threads fail. */
typedef struct cand_queue { cand *cs; int32_t n, next; pthread_mutex_t lock; } cand_queue;

static void *cand_worker(void *arg) {
    cand_queue *q = arg;
    for (;;) {
        pthread_mutex_lock(&q->lock);
        int32_t i = q->next < q->n ? q->next++ : -1;
        pthread_mutex_unlock(&q->lock);
        if (i < 0) return NULL;
        cand_prepare(&q->cs[i]);
    }
}

static void cands_prepare(const ttc_engine *e, cand *cs, int32_t n) {
    /* on drivers that compile one program at a time per process, the candidates' programs are
     * compiled by worker processes first (backend.h: ttc_program_prebuild); the threads below
     * then load them from the binary cache */
    const char **srcs = e->tg.build_procs > 1 && n > 1 ? ttc_calloc((size_t)n, sizeof(char *)) : NULL;
    if (srcs) {
        for (int32_t i = 0; i < n; i++) {
            if (cand_generate(&cs[i]) == TTC_OK) srcs[i] = cs[i].cg.source;
            else { cand_free(&cs[i]); ttc_clear_error(); }   /* cand_build tries again and fails */
        }
        ttc_program_prebuild(e->dev, srcs, n, TTC_PROGRAM_OPTIONS, e->cache_dir_opt, e->tg.build_procs, e->tg.build_proc_bytes);
        free(srcs);
    }
    int32_t nt = e->tg.tune_threads < 1 ? 1 : e->tg.tune_threads > 16 ? 16 : e->tg.tune_threads;
    if (nt > n) nt = n;
    cand_queue q = {cs, n, 0, PTHREAD_MUTEX_INITIALIZER};
    pthread_t th[16];
    int32_t started = 0;
    for (int32_t j = 1; j < nt; j++)
        if (pthread_create(&th[started], NULL, cand_worker, &q) == 0) started++;
    cand_worker(&q);
    for (int32_t j = 0; j < started; j++) pthread_join(th[j], NULL);
    pthread_mutex_destroy(&q.lock);
}

/* Whether candidate c can run op on e's device at all (forcing may pick any of these). */
static bool gemm_runnable(const ttc_engine *e, const ttc_kop *op, int32_t c) {
    if (c < 0 || c >= TTC_GEMM_TILES) return false;
    ttc_gemm_family f = ttc_gemm_tiles[c].family;
    if (f == TTC_GEMM_CPU || f == TTC_GEMM_SIMT) return true;
    /* tiles staging through a __local argument: two stages must fit OpenCL's local memory
     * (the CUDA launch path gives them more: exec_cuda.c) */
    if (!ttc_gemm_tile_fits(&e->tg, c)) return false;
    /* warpgroup MMA: both operands K-major (nn.Linear's x @ W^T) */
    if ((ttc_gemm_tiles[c].fl & 8) && !op->p.gemm.trans_b) return false;
    const ttc_kir *k = e->k;
    ttc_dtype a = k->ts[op->in[0]].dtype, b = k->ts[op->in[1]].dtype;
    /* tensor copies: half operands (the copy engine converts nothing), rows of K halves in
     * whole 16-byte units (a tensor map's row stride); a K known only at run time is checked
     * by the launch (exec_cuda.c) */
    if (ttc_gemm_tiles[c].fl & 16) {
        const ttc_et *ta = &k->ts[op->in[0]];
        ttc_dim kd = ta->dims[ta->rank - 1];
        if (a != TTC_DTYPE_FLOAT16 || b != TTC_DTYPE_FLOAT16) return false;
        if (ttc_dim_is_const(kd) && kd.add % 8) return false;
    }
    /* TF32: float x float GEMMs of fp32 engines whose policy allows it (on any device when
     * forced: the prelude's emulation runs it) */
    if (f == TTC_GEMM_TF32) return !k->fp16 && e->tf32_matmul && a == TTC_DTYPE_FLOAT32 && b == TTC_DTYPE_FLOAT32;
    /* half x half (torch's own half matmul accumulates in fp32 too), or any float operands of
     * an fp16 engine (which keeps fp32 inputs and weights as declared) */
    bool fa = a == TTC_DTYPE_FLOAT16 || (k->fp16 && a == TTC_DTYPE_FLOAT32);
    bool fb = b == TTC_DTYPE_FLOAT16 || (k->fp16 && b == TTC_DTYPE_FLOAT32);
    return (e->tg.nvidia || f == TTC_GEMM_TC) && fa && fb;
}

/* GPU kernel families: GPUs, and any device under TORCHTRT_C_KERNELS=gpu (CPU CI runs them). */
static bool gpu_family(const ttc_engine *e) { return ttc_engine_gpu_kernels(e); }

/* Whether candidate c is one of the device's own families (those tuning times). Not the tiles
 * staging through a __local argument (fl & 4): timed through OpenCL they run with the stages
 * OpenCL allows (2-3 on NVIDIA), not with the CUDA launch path's, and there (session 10,
 * bench/RESULTS.md) more stages were no faster than tile 42: forced only (sweeps, tests). */
static bool gemm_candidate(const ttc_engine *e, const ttc_kop *op, int32_t c) {
    if (!gemm_runnable(e, op, c)) return false;
    if (ttc_gemm_tiles[c].fl & 4) return false;
    ttc_gemm_family f = ttc_gemm_tiles[c].family;
    if (!gpu_family(e)) return f == TTC_GEMM_CPU;
    /* tensor cores only where they exist (elsewhere the emulation is a test vehicle) */
    if (f == TTC_GEMM_TC || f == TTC_GEMM_TF32) return f == TTC_GEMM_TC ? e->tg.nvidia : e->tg.tf32_matmul;
    return f != TTC_GEMM_CPU;
}

/* Indices of the pipelined tensor-core candidates (codegen.c's table). */
enum { TC_128x128 = 26, TC_64x64 = 30, TF32_128x128 = 34, TF32_128x64 = 35, TF32_64x64 = 36, TF32_32x64 = 38,
       TC_128x128_L1 = 39, TF32_128x128_4W = 41, TC_128x128_ST = 42, TC_128x128_4W_ST = 43, TF32_128x128_4W_ST = 45,
       TC_192x128_ST = 48 };

/* Untuned choice: on GPUs the biggest tile that still gives the compute units enough
 * work-groups (big tiles reuse more, but a 128x768 problem in 128x128 tiles leaves most SMs
 * idle). Orders and thresholds from sweeps of every tile on an H200 (bench/kernels.py
 * gemm_tiles, bench/gemm_small.py). SIMT: 128x128 from 4 work-groups per CU, 128x64 (8x8 per
 * work-item) from 2, else 32x64 tiles: from 2 work-groups per CU with k split in 2, from 1 as
 * 64x64 tiles (8x4) with k split in 2, from 1/2 with k split in 4, else 32x32 with k split in
 * 4 (also for M <= 16, where it beat the 16-row tile 2-2.6x): each BERT-base / ViT-B linear
 * and attention product at batch 1 and 32, and M = 1, 16, got its sweep winner or one within
 * 8% of it. Tensor cores: 128x64 from CU work-groups, else 64x64, else 16x64 with two k-split
 * warp pairs; M <= 16 the latter. */
static int32_t gemm_default_cu(const ttc_engine *e, const ttc_kop *op, int64_t B, int64_t M, int64_t N, int64_t cu) {
    if (!gpu_family(e)) return 0;
    bool tc = gemm_candidate(e, op, TC_128x128);
    bool tf32 = gemm_candidate(e, op, TF32_128x128);
    if (M <= 16) return tc ? 16 : 17;
    /* Pipelined tiles, from a sweep of every candidate on an H100 (bench/gemm_tc.py: 4096^3 and
     * the BERT/GPT-2/ViT-B linear layers at 32 x 128 tokens, 4096 x {768, 2304, 3072} x {768,
     * 3072}, and 128 x 768 x 768): 128x128 (8 warps, 3 stages) won or came within 4% of the
     * winner wherever it fills every compute unit once (4096 x 768 too: 192 tiles on 132 SMs);
     * at 128 x 768 x 768 the k-split MMA tile 16 and then the 64x64 tile; TF32 alike, the
     * 64x64 tile best at 128 x 768 x 768. Session 8's sweep (same shapes, M = 6304 too): the
     * 128x128 tile with its copies through L1 beat every other tile on every shape but one
     * (4096 x 2304 x 768: 2% behind 192x128), 1.05-1.36x the plain one; TF32 4-warp 128x128
     * tiles 1.33x on a 4096^3 mm (row-major B), even with 34 on linear layers. */
    /* Session 9 (bench/RESULTS.md): the staged epilogue (fl & 2) 1.18-1.38x on the transformer
     * shapes, 1.03x at 4096^3; the 4-warp 64x64-per-warp tile 1.08x more on a 4096^3 mm
     * (row-major B); the 192x128 tile (one work-group per SM) where it fills the waves much
     * better than 128x128 (4096 x 768 and 4096 x 2304: 132 and 396 tiles for 132 SMs, 1.14x
     * and 1.0x; 1.35x the fill or more), behind it elsewhere (6304 x 768: 1.32x the fill, 0.95x
     * the speed; its rate at full waves is ~0.73x). */
    if (tc && ttc_gemm_tile_wgs(TC_128x128_ST, B, M, N) >= cu) {
        if (!op->p.gemm.trans_b && ttc_gemm_tile_wgs(TC_128x128_4W_ST, B, M, N) >= 4 * cu) return TC_128x128_4W_ST;
        /* work-groups per compute unit: 1 for the 192x128 tile's 198 registers, 2 for the 8-warp
         * 128x128 tile's 126 (H100) */
        if (ttc_gemm_tile_fill(TC_192x128_ST, B, M, N, cu, 1) * 20 >= ttc_gemm_tile_fill(TC_128x128_ST, B, M, N, cu, 2) * 27)
            return TC_192x128_ST;
        return TC_128x128_ST;
    }
    if (tc) {
        if (ttc_gemm_tile_wgs(TC_64x64, B, M, N) >= cu) return TC_64x64;
        if (ttc_gemm_tile_wgs(10, B, M, N) >= cu) return 10;
        return ttc_gemm_tile_wgs(11, B, M, N) >= cu ? 11 : 16;
    }
    if (tf32) {
        /* the staged 4-warp tile: 1.02x (4096^3 linear, mm) to 1.11x (4096 x 3072 x 768) the
         * best of 34 and 41; not at 4096 x 768 (192 tiles: 0.96x tile 34) */
        if (ttc_gemm_tile_wgs(TF32_128x128_4W_ST, B, M, N) >= 2 * cu) return TF32_128x128_4W_ST;
        if (ttc_gemm_tile_wgs(TF32_128x128, B, M, N) >= cu) return TF32_128x128;
        if (ttc_gemm_tile_wgs(TF32_128x64, B, M, N) >= cu) return TF32_128x64;
        return ttc_gemm_tile_wgs(TF32_64x64, B, M, N) >= (cu + 7) / 8 ? TF32_64x64 : TF32_32x64;
    }
    if (ttc_gemm_tile_wgs(22, B, M, N) >= 4 * cu) return 22;
    if (ttc_gemm_tile_wgs(25, B, M, N) >= 2 * cu) return 25;
    int64_t w = ttc_gemm_tile_wgs(18, B, M, N);
    if (w >= 2 * cu) return 18;
    if (w >= cu) return 23;
    return w >= (cu + 1) / 2 ? 19 : 17;
}

static int32_t gemm_default(const ttc_engine *e, const ttc_kop *op, int64_t B, int64_t M, int64_t N) {
    return gemm_default_cu(e, op, B, M, N, e->tg.compute_units > 0 ? e->tg.compute_units : 1);
}

/* The candidates worth timing where the heuristic may be wrong (TORCHTRT_C_TUNE=fast, the
 * default), default first, at most TUNE_SHORTLIST: the default's rule is a ladder of
 * thresholds on work-groups per compute unit, and its sweeps put the winner at the rung it
 * picks or a neighbouring one; so the rungs it picks with a quarter, half, twice and four
 * times the compute units (and across the M <= 16 rule), then the default's same-size
 * variants (k depth, stages, warp layout). Tiles the ladder never reaches from this shape
 * (a 128x128 tile over a 128 x 768 problem, SIMT where tensor cores run) are those the sweeps
 * ranked far behind: not timed. CPU kernels: all (three, cheap). */
enum { TUNE_SHORTLIST = 6 };

static int32_t shortlist_add(const ttc_engine *e, const ttc_kop *op, int32_t *out, int32_t n, int32_t c) {
    if (n >= TUNE_SHORTLIST || !gemm_candidate(e, op, c)) return n;
    for (int32_t j = 0; j < n; j++)
        if (out[j] == c) return n;
    out[n] = c;
    return n + 1;
}

static int32_t gemm_shortlist(const ttc_engine *e, const ttc_kop *op, int64_t B, int64_t M, int64_t N, int32_t def,
                              int32_t out[TUNE_SHORTLIST]) {
    int32_t n = 0;
    out[n++] = def;
    if (!gpu_family(e)) {
        for (int32_t c = 0; c < TTC_GEMM_TILES; c++) n = shortlist_add(e, op, out, n, c);
        return n;
    }
    int64_t cu = e->tg.compute_units > 0 ? e->tg.compute_units : 1;
    static const int64_t scale[4][2] = {{1, 2}, {2, 1}, {1, 4}, {4, 1}};   /* cu * a / b */
    for (int32_t j = 0; j < 4; j++) {
        int64_t c2 = cu * scale[j][0] / scale[j][1];
        n = shortlist_add(e, op, out, n, gemm_default_cu(e, op, B, M, N, c2 < 1 ? 1 : c2));
    }
    if (M <= 32) n = shortlist_add(e, op, out, n, gemm_default_cu(e, op, B, M <= 16 ? 17 : 16, N, cu));
    const ttc_gemm_tile *d = &ttc_gemm_tiles[def];
    for (int32_t c = 0; c < TTC_GEMM_TILES; c++) {
        const ttc_gemm_tile *t = &ttc_gemm_tiles[c];
        if (t->family == d->family && t->bm == d->bm && t->bn == d->bn) n = shortlist_add(e, op, out, n, c);
    }
    return n;
}

/* The target's forced GEMM candidate (TORCHTRT_C_GEMM_TILE): -1 when none. */
static ttc_status forced_tile(const ttc_engine *e, int32_t *out) {
    *out = e->tg.gemm_tile;
    if (*out >= TTC_GEMM_TILES)
        return ttc_fail(TTC_ERR_INVALID_ARG, "TORCHTRT_C_GEMM_TILE=%d: expected a GEMM candidate index 0..%d", *out,
                        TTC_GEMM_TILES - 1);
    return TTC_OK;
}

/* What identifies the GEMM kernels' code in the tuning cache's keys: the candidate table and
 * the GEMM templates (gemm*.cl), so that a changed kernel or tile is timed again instead of a
 * choice made for the old code being read back. */
static uint64_t gemm_code_hash(void) {
    uint64_t h = ttc_hash64(ttc_gemm_tiles, sizeof ttc_gemm_tiles, 15);
    for (int i = 0; i < ttc_kernel_source_count; i++)
        if (!strncmp(ttc_kernel_sources[i].name, "gemm", 4))
            h = ttc_hash64(ttc_kernel_sources[i].source, strlen(ttc_kernel_sources[i].source), h);
    return h;
}

/* One GEMM shape that no tuning cache answered: timed once for every GEMM of the engine with
 * the same key (the first of them is `oi`). */
typedef struct tune_job {
    int32_t oi, def, choice;
    bool stored;              /* timed, and its choice written to the tuning cache */
    int64_t B, M, N;
    double flops;             /* over every GEMM of the engine with this key */
    char *key;
} tune_job;

static int job_by_flops(const void *a, const void *b) {
    double x = ((const tune_job *)a)->flops, y = ((const tune_job *)b)->flops;
    if (x != y) return x < y ? 1 : -1;
    return ((const tune_job *)a)->oi - ((const tune_job *)b)->oi;  /* stable across runs */
}

/* Times job j's candidates (mode fast: the shortlist; full: every candidate of the device's
 * families); the default first, kept unless another is clearly faster. The choice lands in
 * j->choice (the default when nothing could be timed); true when something was timed. */
static bool tune_time(ttc_engine *e, tune_job *j, const int64_t *sv, bool full) {
    const ttc_kop *op = &e->k->ops[j->oi];
    int32_t tiles[TTC_GEMM_TILES];
    int32_t nt = 0;
    if (full) {
        tiles[nt++] = j->def;
        for (int32_t c = 0; c < TTC_GEMM_TILES; c++)
            if (c != j->def && gemm_candidate(e, op, c)) tiles[nt++] = c;
    } else {
        nt = gemm_shortlist(e, op, j->B, j->M, j->N, j->def, tiles);
    }
    j->choice = j->def;
    if (nt < 2) return false;  /* the heuristic is sure: nothing to compare */
    cand cs[TTC_GEMM_TILES];
    for (int32_t c = 0; c < nt; c++) cs[c] = (cand){.e = e, .oi = j->oi, .tile = tiles[c], .sv = sv};
    e->prof.tune_timed++;
    e->prof.tune_candidates += nt;
    cands_prepare(e, cs, nt);
    double best = 1e30;
    for (int32_t c = 0; c < nt; c++) {
        double t = cand_time(&cs[c]);
        if (c == 0) best = t;
        else if (t < best * 0.97) { best = t; j->choice = cs[c].tile; }
    }
    return best < 1e30;
}

ttc_status ttc_engine_tune(ttc_engine *e) {
    ttc_kir *k = e->k;
    int64_t sv[64];
    int32_t forced;
    TTC_TRY(forced_tile(e, &forced));
    for (int32_t i = 0; i < k->n_syms && i < 64; i++) sv[i] = k->syms[i].opt;
    int32_t mode = e->tg.tune_mode;
    bool full = mode == TTC_TUNE_FULL;
    bool tuning = e->opt_level >= 3 && k->n_syms <= 64 && forced < 0 && mode != TTC_TUNE_HEURISTIC;
    char *path = NULL;
    bool have_path = false;
    uint64_t code = 0;
    tune_job *jobs = NULL;
    int32_t *job_of = NULL;   /* op -> its job (-1: none) */
    int32_t n_jobs = 0;
    ttc_status st = TTC_OK;
    /* 1. defaults, forced tiles and tuning-cache answers; the rest become jobs, one per key */
    for (int32_t i = 0; i < k->n_ops; i++) {
        ttc_kop *op = &k->ops[i];
        if (op->dead || op->kind != TTC_KOP_GEMM) continue;
        e->prof.gemms++;
        if (forced >= 0) {
            if (!gemm_runnable(e, op, forced)) {
                st = ttc_fail(TTC_ERR_INVALID_ARG, "TORCHTRT_C_GEMM_TILE=%d: %s (%s on %s)", forced,
                              ttc_gemm_tiles[forced].family == TTC_GEMM_TF32
                                  ? "the TF32 GEMM needs float32 inputs of an fp32 engine built with tf32_matmul"
                              : (ttc_gemm_tiles[forced].fl & 16)
                                  ? "the tensor-copy GEMM needs float16 operands, K a multiple of 8, B transposed "
                                    "(x @ W^T), and an NVIDIA device of compute capability 9.0 or the emulation's "
                                    "local memory"
                              : (ttc_gemm_tiles[forced].fl & 8)
                                  ? "the warpgroup-MMA GEMM needs float16 inputs or an fp16 engine, B transposed "
                                    "(x @ W^T), and an NVIDIA device of compute capability 9.0 or the emulation's "
                                    "local memory"
                                  : "the tensor-core GEMM needs float16 inputs or an fp16 engine (raw-PTX tiles: an NVIDIA device)",
                              op->name ? op->name : "gemm", e->tg.name);
                goto done;
            }
            op->tile = forced;
            continue;
        }
        const ttc_et *a = &k->ts[op->in[0]], *b = &k->ts[op->in[1]], *o = &k->ts[ttc_kop_gemm_shape(op)];
        int64_t M = ttc_dim_eval(o->dims[o->rank - 2], sv), N = ttc_dim_eval(o->dims[o->rank - 1], sv);
        int64_t K = ttc_dim_eval(a->dims[a->rank - 1], sv), B = 1;
        for (int32_t d = 0; d < o->rank - 2; d++) B *= ttc_dim_eval(o->dims[d], sv);
        int32_t def = gemm_default(e, op, B, M, N);
        op->tile = def;
        if (!tuning || (k->native && ttc_native_op_ok(k, op))) continue;  /* native: no tile to choose */
        if (!have_path) { path = tuning_path(e); have_path = true; code = gemm_code_hash(); }
        if (!job_of) {
            job_of = ttc_malloc((size_t)k->n_ops * sizeof(int32_t));
            jobs = ttc_calloc((size_t)k->n_ops, sizeof(tune_job));
            if (!job_of || !jobs) { st = TTC_ERR_NOMEM; goto done; }
            for (int32_t x = 0; x < k->n_ops; x++) job_of[x] = -1;
        }
        /* "gemm5": the fifth table, with the L1-copy and rasterised tiles; then the code's hash */
        /* "|tf32": the TF32 policy widens the candidates (and changes the answer's precision) */
        char *key = ttc_strfmt("%s|%s|%s|gemm5|%016llx|tb%d|%s|%s|%d,%d|%lld,%lld,%lld,%lld%s", e->tg.platform,
                               e->tg.name, e->tg.driver, (unsigned long long)code, op->p.gemm.trans_b,
                               ttc_dtype_name(a->dtype), ttc_dtype_name(b->dtype), a->rank, b->rank, (long long)B,
                               (long long)M, (long long)N, (long long)K, e->tg.tf32_matmul && !k->fp16 ? "|tf32" : "");
        if (!key) { st = TTC_ERR_NOMEM; goto done; }
        double flops = 2.0 * (double)B * (double)M * (double)N * (double)K;
        for (int32_t x = 0; x < n_jobs; x++)
            if (!strcmp(jobs[x].key, key)) { job_of[i] = x; jobs[x].flops += flops; break; }
        if (job_of[i] >= 0) { free(key); continue; }
        /* a choice among every candidate answers both modes; a shortlist's only fast ones */
        int32_t choice = cache_lookup(path, key);
        if (choice < 0 && !full) {
            char *fk = ttc_strfmt("%s|fast", key);
            if (!fk) { free(key); st = TTC_ERR_NOMEM; goto done; }
            choice = cache_lookup(path, fk);
            free(fk);
        }
        if (choice >= 0 && !gemm_candidate(e, op, choice)) choice = -1;
        if (choice >= 0) {
            e->prof.tune_cached++;
            op->tile = choice;
            e->n_tuned++;
            free(key);
            continue;
        }
        job_of[i] = n_jobs;
        jobs[n_jobs++] = (tune_job){.oi = i, .def = def, .choice = def, .B = B, .M = M, .N = N,
                                    .flops = flops, .key = key};
    }
    /* 2. the jobs, the biggest GEMMs first; fast mode times at most tune_max shapes per engine
     * (the rest keep the heuristic's choice: EfficientNet-B0 at b32 has dozens of shapes) */
    if (n_jobs > 0) {
        tune_job *sorted = ttc_malloc((size_t)n_jobs * sizeof(tune_job));
        if (!sorted) { st = TTC_ERR_NOMEM; goto done; }
        memcpy(sorted, jobs, (size_t)n_jobs * sizeof(tune_job));
        qsort(sorted, (size_t)n_jobs, sizeof(tune_job), job_by_flops);
        int32_t cap = full || e->tg.tune_max <= 0 ? n_jobs : e->tg.tune_max;
        for (int32_t x = 0; x < n_jobs; x++) {
            tune_job *j = &sorted[x];
            if (x >= cap) { e->prof.tune_capped++; continue; }
            if (tune_time(e, j, sv, full)) {
                char *sk = full ? ttc_strfmt("%s", j->key) : ttc_strfmt("%s|fast", j->key);
                if (sk) cache_store(path, sk, j->choice);
                free(sk);
                j->stored = true;
            }
            tune_job *orig = &jobs[job_of[j->oi]];
            orig->choice = j->choice;
            orig->stored = j->stored;
        }
        free(sorted);
    }
    /* 3. every GEMM of a timed job gets its choice; the first one counts as timed, the others
     * as answered by the tuning cache (as a second build of the engine reads them all) */
    for (int32_t i = 0; job_of && i < k->n_ops; i++) {
        if (job_of[i] < 0) continue;
        tune_job *j = &jobs[job_of[i]];
        k->ops[i].tile = j->choice;
        if (!j->stored) continue;
        e->n_tuned++;
        if (j->oi != i) e->prof.tune_cached++;
    }
done:
    for (int32_t x = 0; x < n_jobs; x++) free(jobs[x].key);
    free(jobs);
    free(job_of);
    free(path);
    return st;
}
