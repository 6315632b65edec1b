/* The engine builder: convert -> fuse -> generate -> one program build -> constants. */
#include "engine_impl.h"

#include <stdlib.h>
#include <string.h>

#include "../convert/convert.h"
#include "../backend/cpu/native.h"

ttc_engine_options ttc_engine_options_default(void) {
    ttc_engine_options o = {"engine", NULL, false, 3, NULL, false, false, true};
    return o;
}

/* Whether constant data is memory the core allocated for this engine (transposed, folded or
 * converted weights: released with free) rather than a view of torch's parameters. On CPU
 * devices such a constant backs its buffer as it is (the kernel IR keeps it until the engine
 * is freed, after its buffers, and nothing writes it): copying GPT-2's 340 MB of transposed
 * Conv1D weights into fresh pages cost 0.2-0.6 s of its compile. Parameters are still copied:
 * the engine must not follow a later in-place edit of the model. */
static bool core_owned(const ttc_tensor_data *d, size_t n) {
    return ttc_tensor_data_core_owned(d) && d->nbytes >= n;
}

/* A parameter is copied whatever the device (see core_owned). PoCL's own copy
 * (CL_MEM_COPY_HOST_PTR) ran on one thread and most of it was page faults on the fresh
 * memory: Llama's 400 MB of weights took 0.2-0.5 s of its cold compile. On a CPU device the
 * copies are made here instead, into memory the core owns (which then backs the buffers as
 * it is), in 1 MB pieces that the step pool's threads take one at a time: on a loaded
 * machine a thread that is descheduled holds up the copy by one piece at most. */
enum { CONST_PIECE = 1 << 20 };

typedef struct {
    unsigned char **dst;
    const unsigned char **src;
    const size_t *bytes;
    const int64_t *first;   /* first piece of each copy; [n] = all pieces */
    int32_t n;
    int64_t next;           /* the next piece to take */
} const_copy_job;

static void copy_const_pieces(void *ctx, int64_t lo, int64_t hi) {
    (void)lo;
    (void)hi;
    const_copy_job *j = ctx;
    for (;;) {
        int64_t p = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED);
        if (p >= j->first[j->n]) return;
        int32_t a = 0, b = j->n - 1;   /* the copy holding piece p: first[a] <= p < first[a + 1] */
        while (a < b) {
            int32_t m = (a + b + 1) / 2;
            if (j->first[m] <= p) a = m; else b = m - 1;
        }
        size_t off = (size_t)(p - j->first[a]) * CONST_PIECE;
        size_t len = j->bytes[a] - off < CONST_PIECE ? j->bytes[a] - off : CONST_PIECE;
        memcpy(j->dst[a] + off, j->src[a] + off, len);
    }
}

static size_t const_bytes(const ttc_et *t) {
    int64_t numel = 1;
    for (int32_t d = 0; d < t->rank; d++) numel *= t->dims[d].add;
    return (size_t)numel * ttc_dtype_size(t->dtype);
}

static ttc_status copy_consts_parallel(ttc_engine *e, const bool *used) {
    ttc_kir *k = e->k;
    int32_t n = 0;
    for (int32_t t = 0; t < k->n_ts; t++) {
        size_t b = k->ts[t].kind == TTC_ET_CONST && used[t] ? const_bytes(&k->ts[t]) : 0;
        if (b && k->ts[t].data && k->ts[t].data->nbytes >= b && !core_owned(k->ts[t].data, b)) n++;
    }
    if (n == 0) return TTC_OK;
    ttc_status s = TTC_OK;
    int32_t *which = ttc_calloc((size_t)n, sizeof *which);
    unsigned char **dst = ttc_calloc((size_t)n, sizeof *dst);
    const unsigned char **src = ttc_calloc((size_t)n, sizeof *src);
    size_t *bytes = ttc_calloc((size_t)n, sizeof *bytes);
    int64_t *first = ttc_calloc((size_t)n + 1, sizeof *first);
    if (!which || !dst || !src || !bytes || !first) { s = TTC_ERR_NOMEM; goto fail; }
    int32_t i = 0;
    for (int32_t t = 0; t < k->n_ts && i < n; t++) {
        size_t b = k->ts[t].kind == TTC_ET_CONST && used[t] ? const_bytes(&k->ts[t]) : 0;
        if (!b || !k->ts[t].data || k->ts[t].data->nbytes < b || core_owned(k->ts[t].data, b)) continue;
        /* page-aligned like the driver's own allocations (oneDNN reads these weights) */
        void *buf = NULL;
        if (posix_memalign(&buf, b >= 65536 ? 4096 : 64, b) != 0) {
            s = ttc_fail(TTC_ERR_NOMEM, "constant %s: no memory for its copy (%zu bytes)", k->ts[t].name, b);
            goto fail;
        }
        which[i] = t;
        dst[i] = buf;
        src[i] = k->ts[t].data->data;
        bytes[i] = b;
        first[i + 1] = first[i] + (int64_t)((b + CONST_PIECE - 1) / CONST_PIECE);
        i++;
    }
    /* one item a thread: each takes pieces until none is left */
    const_copy_job job = {dst, src, bytes, first, n, 0};
    ttc_steps_for(e->tg.step_threads, e->tg.step_threads, 1, copy_const_pieces, &job);
    for (i = 0; i < n; i++) {
        ttc_tensor_data *d = ttc_tensor_data_wrap(dst[i], bytes[i], free, dst[i]);
        if (!d) { s = ttc_fail(TTC_ERR_NOMEM, "constant %s: no memory", k->ts[which[i]].name); goto fail; }
        dst[i] = NULL;  /* owned by d now */
        ttc_tensor_data_unref(k->ts[which[i]].data);
        k->ts[which[i]].data = d;
    }
fail:
    if (dst)
        for (i = 0; i < n; i++) free(dst[i]);
    free(which);
    free(dst);
    free(src);
    free(bytes);
    free(first);
    return s;
}

static ttc_status upload_consts(ttc_engine *e) {
    const ttc_kir *k = e->k;
    e->const_mem = ttc_calloc((size_t)k->n_ts + 1, sizeof(ttc_buf *));
    if (!e->const_mem) return TTC_ERR_NOMEM;
    /* only constants some kernel reads */
    bool *used = ttc_calloc((size_t)k->n_ts + 1, sizeof(bool));
    if (!used) return TTC_ERR_NOMEM;
    for (int32_t i = 0; i < e->cg.n_kernels; i++)
        for (int32_t a = 0; a < e->cg.kernels[i].n_args; a++)
            if (e->cg.kernels[i].args[a].kind == TTC_ARG_BUF) {
                int32_t t = e->cg.kernels[i].args[a].t;
                while (k->ts[t].kind == TTC_ET_VIEW) t = k->ts[t].base;
                used[t] = true;
            }
    ttc_status s = TTC_OK;
    if (e->tg.host_const_copy) s = copy_consts_parallel(e, used);
    for (int32_t t = 0; t < k->n_ts && s == TTC_OK; t++) {
        if (k->ts[t].kind != TTC_ET_CONST || !used[t]) continue;
        int64_t numel = 1;
        for (int32_t d = 0; d < k->ts[t].rank; d++) numel *= k->ts[t].dims[d].add;
        size_t n = (size_t)numel * ttc_dtype_size(k->ts[t].dtype);
        ttc_tensor_data *d = k->ts[t].data;
        if (n && e->tg.host_memory && core_owned(d, n))
            s = ttc_buf_wrap_host(e->dev, d->data, n, false, k->ts[t].name, &e->const_mem[t]);
        else
            s = ttc_buf_alloc(e->dev, n, n ? d->data : NULL, k->ts[t].name, &e->const_mem[t]);
        if (s != TTC_OK) ttc_fail_context(s, "constant %s", k->ts[t].name);
        e->const_bytes += n;
    }
    free(used);
    return s;
}

static ttc_status make_bindings(ttc_engine *e) {
    const ttc_kir *k = e->k;
    e->n_in = k->n_inputs;
    e->n_out = k->n_outputs;
    e->ins = ttc_calloc((size_t)e->n_in + 1, sizeof(ttc_binding));
    e->outs = ttc_calloc((size_t)e->n_out + 1, sizeof(ttc_binding));
    if (!e->ins || !e->outs) return TTC_ERR_NOMEM;
    for (int32_t i = 0; i < e->n_in; i++) {
        const ttc_et *t = &k->ts[k->inputs[i]];
        e->ins[i].name = ttc_strdup(k->in_names[i]);
        e->ins[i].dtype = t->dtype;
        e->ins[i].rank = t->rank;
        memcpy(e->ins[i].dims, t->dims, sizeof t->dims);
    }
    /* inputs a kernel writes (a KV cache): the caller's memory is updated in place */
    for (int32_t i = 0; i < k->n_ops; i++) {
        const ttc_et *t = &k->ts[k->ops[i].out];
        if (!k->ops[i].dead && t->kind == TTC_ET_INPUT) e->ins[t->binding].written = true;
        /* a slot write's second cache (kir.h) */
        int32_t t2 = k->ops[i].kind == TTC_KOP_SLOT_WRITE ? k->ops[i].in[3] : -1;
        if (!k->ops[i].dead && t2 >= 0 && k->ts[t2].kind == TTC_ET_INPUT) e->ins[k->ts[t2].binding].written = true;
    }
    for (int32_t i = 0; i < e->n_out; i++) {
        const ttc_et *t = &k->ts[k->outputs[i]];
        e->outs[i].name = ttc_strdup(k->out_names[i]);
        e->outs[i].dtype = t->dtype;
        e->outs[i].rank = t->rank;
        memcpy(e->outs[i].dims, t->dims, sizeof t->dims);
    }
    return TTC_OK;
}

/* The engine's program, in up to tg.build_threads parts built at once (backend.h:
 * ttc_program_build_parts): kernels go to parts largest first, each to the part with the
 * least source so far (the build time follows the source), and keep their order within a
 * part; every part starts with the common header. */
static ttc_status build_program(ttc_engine *e, ttc_device *dev) {
    const ttc_codegen *cg = &e->cg;
    int32_t np = e->tg.build_threads < cg->n_chunks ? e->tg.build_threads : cg->n_chunks;
    if (np <= 1)
        return ttc_program_build(dev, cg->source, e->options, e->cache_dir_opt, &e->prog);
    int32_t nc = cg->n_chunks;
    int32_t *part_of = ttc_calloc((size_t)nc, sizeof(int32_t)), *order = ttc_calloc((size_t)nc, sizeof(int32_t));
    size_t *load = ttc_calloc((size_t)np, sizeof(size_t));
    ttc_sbuf *src = ttc_calloc((size_t)np, sizeof(ttc_sbuf));
    const char **names = ttc_calloc((size_t)nc, sizeof(char *));
    ttc_program_part *parts = ttc_calloc((size_t)np, sizeof(ttc_program_part));
    ttc_status s = part_of && order && load && src && names && parts ? TTC_OK : TTC_ERR_NOMEM;
    if (s == TTC_OK) {
        for (int32_t i = 0; i < nc; i++) order[i] = i;
        /* chunks by size, largest first (insertion sort: tens of chunks) */
        for (int32_t i = 1; i < nc; i++) {
            int32_t c = order[i], j = i;
            size_t sz = cg->chunk_off[c + 1] - cg->chunk_off[c];
            while (j > 0 && cg->chunk_off[order[j - 1] + 1] - cg->chunk_off[order[j - 1]] < sz) { order[j] = order[j - 1]; j--; }
            order[j] = c;
        }
        for (int32_t i = 0; i < nc; i++) {
            int32_t c = order[i], best = 0;
            for (int32_t p = 1; p < np; p++)
                if (load[p] < load[best]) best = p;
            part_of[c] = best;
            load[best] += cg->chunk_off[c + 1] - cg->chunk_off[c];
        }
        /* names grouped by part, in source order within each */
        int32_t at = 0;
        for (int32_t p = 0; p < np; p++) {
            ttc_sbuf_append(&src[p], cg->source, cg->head_len);
            parts[p].kernels = &names[at];
            for (int32_t c = 0; c < nc; c++) {
                if (part_of[c] != p) continue;
                ttc_sbuf_append(&src[p], cg->source + cg->chunk_off[c], cg->chunk_off[c + 1] - cg->chunk_off[c]);
                names[at++] = cg->chunk_name[c];
                parts[p].n_kernels++;
            }
            if (src[p].oom) { s = ttc_fail(TTC_ERR_NOMEM, "splitting the program of engine %s", e->name); break; }
            parts[p].src = src[p].data;
        }
    }
    if (s == TTC_OK && e->tg.build_procs > 1) {
        /* the parts missing from the binary cache compiled by worker processes first (drivers
         * that compile one program at a time per process); the builds below then load them */
        const char *srcs[64];
        for (int32_t p = 0; p < np && p < 64; p++) srcs[p] = parts[p].src;
        ttc_program_prebuild(dev, srcs, np < 64 ? np : 64, e->options, e->cache_dir_opt, e->tg.build_procs, e->tg.build_proc_bytes);
    }
    if (s == TTC_OK) s = ttc_program_build_parts(dev, parts, np, e->options, e->cache_dir_opt, e->tg.build_threads, &e->prog);
    if (s == TTC_OK) e->prof.programs = np;
    for (int32_t p = 0; src && p < np; p++) ttc_sbuf_free(&src[p]);
    free(src);
    free(parts);
    free(names);
    free(load);
    free(order);
    free(part_of);
    return s;
}

ttc_status ttc_engine_finish(ttc_engine *e, const unsigned char *bin, size_t bin_len) {
    ttc_build_profile *pf = &e->prof;
    double t = ttc_now_s();
    /* the target before fusion: which kernel families read what fusion leaves (fuse.c) */
    e->k->target = &e->tg;
    TTC_TRY(ttc_fuse(e->k, &e->n_fused));
    /* fp16 engines read their weights in half (engine/const_half.c) */
    TTC_TRY(ttc_kir_consts_to_half(e->k, NULL));
    /* GEMM/convolution through the host BLAS where the target runs them (target.c; before
     * tuning: GEMMs that run natively are not timed) */
    e->k->native = e->tg.native;
    pf->fuse_s = ttc_now_s() - t;
    t = ttc_now_s();
    if (e->stored_tiles && e->n_stored_tiles == e->k->n_ops) {
        for (int32_t i = 0; i < e->k->n_ops; i++)
            e->k->ops[i].tile = e->stored_tiles[i] >= 0 && e->stored_tiles[i] < TTC_GEMM_TILES ? e->stored_tiles[i] : 0;
    } else {
        TTC_TRY(ttc_engine_tune(e));
    }
    pf->tune_s = ttc_now_s() - t;
    t = ttc_now_s();
    /* half arithmetic where the target allows it and the device computes in half: probed once
     * per device, and only for fp16 engines (the probe is a program build; see codegen_expr.c) */
    e->k->half_compute = e->k->fp16 && e->tg.half_compute && ttc_device_half_compute(e->dev);
    TTC_TRY(ttc_codegen_run_native(e->k, e->tg.is_gpu, NULL, &ttc_native_codegen_ops, &e->cg));
    pf->codegen_s = ttc_now_s() - t;
    pf->kernels = e->cg.n_kernels;
    pf->unique_kernels = e->cg.n_unique;
    pf->source_bytes = strlen(e->cg.source);
    t = ttc_now_s();
    e->options = ttc_strdup(TTC_PROGRAM_OPTIONS);
    ttc_status s = TTC_ERR_BUILD;
    pf->programs = 1;
    /* small engines run on the device's caller-thread companion: their program is its own */
    ttc_exec_choose_thread(e);
    ttc_device *pdev = e->cdev ? e->cdev : e->dev;
    /* a stored binary is only valid for exactly the source we generate now (and the device
     * it was built for: the other one rejects it, and the source is built) */
    if (bin && bin_len && (!e->stored_source || strcmp(e->stored_source, e->cg.source) == 0)) {
        s = ttc_program_from_binary(pdev, bin, bin_len, e->options, &e->prog);
        if (s != TTC_OK) ttc_clear_error();
    }
    if (s != TTC_OK && e->cdev) {
        /* the companion failing to build is no reason to fail: the device builds it */
        s = build_program(e, e->cdev);
        if (s != TTC_OK) { ttc_clear_error(); e->cdev = NULL; }
    }
    if (s != TTC_OK) TTC_TRY(build_program(e, e->dev));
    pf->program_origin = ttc_program_origin(e->prog);
    pf->program_s = ttc_now_s() - t;
    t = ttc_now_s();
    TTC_TRY(upload_consts(e));
    pf->consts_s = ttc_now_s() - t;
    TTC_TRY(make_bindings(e));
    ttc_engine_view_sync(e);
    TTC_TRY(ttc_native_layout_plan(&e->view));
    e->kdesc = ttc_calloc((size_t)e->cg.n_kernels + 1, sizeof(char *));
    if (!e->kdesc) return TTC_ERR_NOMEM;
    for (int32_t i = 0; i < e->cg.n_kernels; i++) {
        const ttc_kop *op = &e->k->ops[e->cg.kernels[i].op];
        /* "k<i> <kind>: <ops>" is parsed by the profile tools: the native marker goes last
         * ("+cl-epilogue": the epilogue runs as its own OpenCL kernel after the native call;
         * "+post": it starts with oneDNN post-ops) */
        const ttc_kspec *ks = &e->cg.kernels[i];
        /* "+nhwc-in" / "+nhwc-out": reads / writes a tensor kept channels-last (native_layout.h) */
        bool nin = ks->native && ttc_native_nhwc(&e->view, op->in[0]), nout = ks->native && ttc_native_nhwc(&e->view, op->out);
        e->kdesc[i] = ttc_strfmt("%s %s: %s%s%s%s%s%s", ks->name, ttc_codegen_kind_name(op->kind), op->name ? op->name : "",
                                 ks->native ? " (native)" : "", ks->native && ks->native_epi ? " +cl-epilogue" : "",
                                 ks->native && ks->native_post ? " +post" : "", nin ? " +nhwc-in" : "",
                                 nout ? " +nhwc-out" : "");
    }
    return TTC_OK;
}

static ttc_status view_plan_for(void *e, const int64_t (*in_shapes)[TTC_MAX_RANK], ttc_plan **out) {
    return ttc_engine_plan_for_shapes(e, in_shapes, out);
}
static void view_plan_release(void *e, ttc_plan *p) { ttc_plan_release(e, p); }

void ttc_engine_view_sync(ttc_engine *e) {
    ttc_engine_view *v = &e->view;
    v->name = e->name;
    v->dev = e->dev;
    v->tg = &e->tg;
    v->k = e->k;
    v->cg = &e->cg;
    v->prog = e->prog;
    v->const_mem = e->const_mem;
    v->n_in = e->n_in;
    v->n_out = e->n_out;
    v->ins = e->ins;
    v->outs = e->outs;
    v->check_indices = e->check_indices;
    v->plan_for = view_plan_for;
    v->plan_release = view_plan_release;
    v->engine = e;
}
const ttc_engine_view *ttc_engine_view_get(const ttc_engine *e) { return &e->view; }

bool ttc_engine_gpu_kernels(const ttc_engine *e) { return e->tg.gpu_kernels; }
const ttc_target *ttc_engine_target(const ttc_engine *e) { return &e->tg; }
void ttc_engine_tf32(const ttc_engine *e, bool *matmul, bool *conv) {
    *matmul = e->tf32_matmul;
    *conv = e->tf32_conv;
}

/* Engines made and not yet freed, process-wide (ttc_engine_live_count: leak checks). */
static int64_t n_live;

int64_t ttc_engine_live_count(void) { return __atomic_load_n(&n_live, __ATOMIC_RELAXED); }

static ttc_status engine_new(const ttc_engine_options *o, ttc_engine **out) {
    ttc_engine *e = ttc_calloc(1, sizeof *e);
    if (!e) return TTC_ERR_NOMEM;
    __atomic_add_fetch(&n_live, 1, __ATOMIC_RELAXED);
    pthread_mutex_init(&e->lock, NULL);
    e->name = ttc_strdup(o->name ? o->name : "engine");
    e->fp16 = o->fp16;
    e->opt_level = o->optimization_level;
    e->cache_dir_opt = o->cache_dir ? ttc_strdup(o->cache_dir) : NULL;
    *out = e;
    /* the target (device facts + knobs) is fixed here, for the whole life of the engine */
    ttc_status s = ttc_device_select(o->device, &e->dev);
    if (s == TTC_OK) s = ttc_target_make(e->dev, &e->tg);
    /* the request is kept (serialised, and forced TF32 tiles honour it on any device, as tests
     * force tensor-core tiles on the CPU); only NVIDIA targets choose TF32 by themselves */
    e->tf32_matmul = o->tf32_matmul;
    e->tf32_conv = o->tf32_conv;
    e->check_indices = o->check_indices;
    e->tg.tf32_matmul = o->tf32_matmul && e->tg.nvidia;
    e->tg.tf32_conv = o->tf32_conv && e->tg.nvidia;
    return s;
}

ttc_status ttc_engine_build(const ttc_graph *g, const ttc_engine_options *opts, ttc_engine **out) {
    *out = NULL;
    ttc_engine_options o = opts ? *opts : ttc_engine_options_default();
    ttc_engine *e = NULL;
    ttc_status s = engine_new(&o, &e);
    double t0 = ttc_now_s();
    if (s == TTC_OK) s = ttc_convert_graph_for(g, o.fp16, &e->tg, &e->k);
    if (e) e->prof.convert_s = ttc_now_s() - t0;
    if (s == TTC_OK) {
        s = ttc_graph_clone(g, &e->graph);
        if (s == TTC_OK) s = ttc_engine_finish(e, NULL, 0);
    }
    if (s != TTC_OK) {
        if (e && e->name && !strstr(ttc_last_error(), "engine ")) ttc_fail_context(s, "building engine %s", e->name);
        ttc_engine_free(e);
        return s;
    }
    *out = e;
    return TTC_OK;
}

ttc_status ttc_engine_new_for_load(const ttc_engine_options *o, ttc_engine **out) { return engine_new(o, out); }

void ttc_engine_free(ttc_engine *e) {
    if (!e) return;
    ttc_engine_pool_free(e);
    ttc_native_forget(&e->view);
    for (int32_t i = 0; i < e->n_plans; i++)
        if (--e->plans[i]->refs == 0) ttc_plan_free(e->plans[i]);
    if (e->const_mem && e->k)
        for (int32_t t = 0; t < e->k->n_ts; t++)
            ttc_buf_free(e->const_mem[t]);
    free(e->const_mem);
    ttc_program_free(e->prog);
    if (e->kdesc)
        for (int32_t i = 0; i < e->cg.n_kernels; i++) free(e->kdesc[i]);
    free(e->kdesc);
    free(e->view.nhwc);
    ttc_codegen_free(&e->cg);
    for (int32_t i = 0; e->ins && i < e->n_in; i++) free(e->ins[i].name);
    for (int32_t i = 0; e->outs && i < e->n_out; i++) free(e->outs[i].name);
    free(e->ins);
    free(e->outs);
    ttc_kir_free(e->k);
    ttc_graph_free(e->graph);
    free(e->stored_source);
    free(e->blob_platform);
    free(e->blob_device);
    free(e->blob_driver);
    free(e->stored_tiles);
    free(e->options);
    free(e->cache_dir_opt);
    free(e->name);
    pthread_mutex_destroy(&e->lock);
    free(e);
    __atomic_sub_fetch(&n_live, 1, __ATOMIC_RELAXED);
}

int32_t ttc_engine_n_inputs(const ttc_engine *e) { return e->n_in; }
int32_t ttc_engine_n_outputs(const ttc_engine *e) { return e->n_out; }
const ttc_binding *ttc_engine_input(const ttc_engine *e, int32_t i) { return i >= 0 && i < e->n_in ? &e->ins[i] : NULL; }
const ttc_binding *ttc_engine_output(const ttc_engine *e, int32_t i) { return i >= 0 && i < e->n_out ? &e->outs[i] : NULL; }
const ttc_symbol *ttc_engine_symbols(const ttc_engine *e, int32_t *n) { *n = e->k->n_syms; return e->k->syms; }
const char *ttc_engine_name(const ttc_engine *e) { return e->name; }
ttc_device *ttc_engine_device(const ttc_engine *e) { return e->dev; }
const char *ttc_engine_source(const ttc_engine *e) { return e->cg.source; }
int32_t ttc_engine_n_kernels(const ttc_engine *e) { return e->cg.n_kernels; }
const char *ttc_engine_kernel_desc(const ttc_engine *e, int32_t i) {
    return i >= 0 && i < e->cg.n_kernels ? e->kdesc[i] : NULL;
}
int32_t ttc_engine_n_fused(const ttc_engine *e) { return e->n_fused; }
int64_t ttc_engine_gemv_launches(const ttc_engine *e) { return __atomic_load_n(&e->gemv_launches, __ATOMIC_RELAXED); }
int32_t ttc_engine_n_tuned(const ttc_engine *e) { return e->n_tuned; }
int32_t ttc_engine_kernel_tile(const ttc_engine *e, int32_t i) {
    if (i < 0 || i >= e->cg.n_kernels) return -1;
    const ttc_kop *op = &e->k->ops[e->cg.kernels[i].op];
    return op->kind == TTC_KOP_GEMM ? op->tile : -1;
}
const char *ttc_engine_compute(const ttc_engine *e) {
    if (!e->k->fp16) return "float32";
    return e->k->half_compute ? "float16 (half arithmetic)" : "float16 (float arithmetic)";
}
const ttc_build_profile *ttc_engine_build_profile(const ttc_engine *e) { return &e->prof; }
bool ttc_engine_caller_thread(const ttc_engine *e, int64_t *items) {
    if (items) *items = e->launch_items;
    return e->cdev != NULL;
}
bool ttc_engine_program_from_cache(const ttc_engine *e) { return strcmp(ttc_program_origin(e->prog), "compiled") != 0; }

bool ttc_engine_built_for(const ttc_engine *e, const char **platform, const char **device, const char **driver) {
    if (!e->blob_device) return false;
    *platform = e->blob_platform;
    *device = e->blob_device;
    *driver = e->blob_driver;
    return true;
}

size_t ttc_engine_const_bytes(const ttc_engine *e) { return e->const_bytes; }

size_t ttc_engine_peak_memory(ttc_engine *e) {
    int64_t sv[64];
    for (int32_t i = 0; i < e->k->n_syms && i < 64; i++) sv[i] = e->k->syms[i].opt;
    ttc_plan *p;
    if (ttc_engine_get_plan(e, sv, &p) != TTC_OK) return e->const_bytes;
    size_t r = e->const_bytes + p->arena_bytes;
    ttc_plan_release(e, p);
    return r;
}
