/* Engine execution: execution contexts (queue, kernels, arena) taken from a pool so that
 * threads can execute one engine concurrently; enqueue everything, synchronise once. Every
 * device call goes through the backend interface (backend/backend.h). */
#include "engine_impl.h"
#include "../backend/cpu/native.h"

#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void ttc_exec_ctx_free(ttc_exec_ctx *x) {
    if (!x) return;
    if (x->q) ttc_queue_finish(x->q);
    for (int32_t i = 0; x->kernels && x->kernels[i]; i++) ttc_kernel_free(x->kernels[i]);
    free(x->kernels);
    for (int32_t i = 0; x->vkernels && i < x->n_kernels; i++) ttc_kernel_free(x->vkernels[i]);
    free(x->vkernels);
    for (int32_t i = 0; x->dev_in && i < x->n_in; i++) ttc_buf_free(x->dev_in[i]);
    for (int32_t i = 0; x->dev_out && i < x->n_out; i++) ttc_buf_free(x->dev_out[i]);
    free(x->dev_in);
    free(x->dev_out);
    ttc_buf_free(x->arena);
    ttc_buf_free(x->errf);
    ttc_buf_free(x->scratch);
    ttc_queue_free(x->q);
    free(x);
}

/* GEMM kernel name's "<name>_v", from the program part that holds name. */
static ttc_status gemv_kernel_new(ttc_program *prog, const char *name, ttc_kernel **out) {
    char vn[40];
    snprintf(vn, sizeof vn, "%s_v", name);
    if (ttc_program_n_parts(prog)) {
        int32_t m = ttc_program_part_of(prog, name);
        if (m < 0) return ttc_fail(TTC_ERR_INTERNAL, "kernel %s: in no program part", name);
        prog = (ttc_program *)ttc_program_part_program(prog, m);
    }
    return ttc_kernel_new(prog, vn, out);
}

ttc_status ttc_exec_ctx_new(ttc_engine *e, bool profiling, ttc_exec_ctx **out) {
    ttc_exec_ctx *x = ttc_calloc(1, sizeof *x);
    if (!x) return TTC_ERR_NOMEM;
    x->n_in = e->n_in;
    x->n_out = e->n_out;
    x->n_kernels = e->cg.n_kernels;
    x->kernels = ttc_calloc((size_t)e->cg.n_kernels + 1, sizeof(ttc_kernel *));
    x->vkernels = ttc_calloc((size_t)e->cg.n_kernels + 1, sizeof(ttc_kernel *));
    x->dev_in = ttc_calloc((size_t)e->n_in + 1, sizeof(ttc_buf *));
    x->dev_out = ttc_calloc((size_t)e->n_out + 1, sizeof(ttc_buf *));
    if (!x->kernels || !x->vkernels || !x->dev_in || !x->dev_out) {
        ttc_exec_ctx_free(x);
        return TTC_ERR_NOMEM;
    }
    ttc_status s = ttc_queue_new(e->cdev ? e->cdev : e->dev, profiling, &x->q);
    bool flag = false;
    for (int32_t i = 0; i < e->cg.n_kernels; i++) flag = flag || ttc_kspec_has_errflag(&e->cg.kernels[i]);
    x->in_place = e->tg.host_in_place;
    if (s == TTC_OK && flag && x->in_place)
        s = ttc_buf_wrap_host(e->dev, &x->errv, sizeof x->errv, false, "index error flag", &x->errf);
    else if (s == TTC_OK && flag)
        s = ttc_buf_alloc(e->dev, sizeof(int32_t), NULL, "index error flag", &x->errf);
    for (int32_t i = 0; i < e->cg.n_kernels && s == TTC_OK; i++) {
        s = ttc_kernel_new(e->prog, e->cg.kernels[i].name, &x->kernels[i]);
        if (s == TTC_OK && e->cg.kernels[i].gemm_v) s = gemv_kernel_new(e->prog, e->cg.kernels[i].name, &x->vkernels[i]);
    }
    if (s != TTC_OK) { ttc_exec_ctx_free(x); return s; }
    *out = x;
    return TTC_OK;
}

/* The size of all of e's launches at shapes sv: per launch the larger of its work-items and
 * the elements of the tensors it takes (a row kernel does a row's work per item), summed
 * (-1: a plan for sv could not be made). */
static int64_t launch_size(const ttc_engine *e, const int64_t *sv) {
    ttc_plan *p;
    if (ttc_plan_make(e->k, &e->cg, sv, &p) != TTC_OK) { ttc_clear_error(); return -1; }
    int64_t n = 0;
    for (int32_t i = 0; i < e->cg.n_kernels; i++) {
        if (p->skip[i]) continue;
        const ttc_kspec *ks = &e->cg.kernels[i];
        int64_t w = 1, elems = 0;
        for (int32_t d = 0; d < ks->work_dims; d++) w *= (int64_t)p->gws[i][d];
        for (int32_t a = ks->n_native_args; a < ks->n_args; a++)
            if (ks->args[a].kind == TTC_ARG_BUF) elems += p->res[p->argv[i][a]].numel;
        n += w > elems ? w : elems;
    }
    ttc_plan_free(p);
    return n;
}

/* PoCL's pthread device hands every command to its worker threads: a 10-kernel engine of tiny
 * kernels pays 40-90 us a call in hand-overs and wake-ups for 15 us of kernels. On the
 * caller-thread companion the same launches run one after the other inside the enqueue calls
 * (no hand-over, no wake-up), but on one core: only engines whose launches are small at their
 * largest shapes (launch_size: bench/caller_thread_ab.py measured where the worker threads
 * start to pay) go there, and none with native steps (library calls that thread on their own
 * and that the companion's queue would run one core short). */
void ttc_exec_choose_thread(ttc_engine *e) {
    ttc_device *cdev = e->tg.caller_thread ? ttc_device_caller_thread(e->dev) : NULL;
    e->launch_items = -1;
    if (!cdev || cdev == e->dev || e->cg.n_kernels == 0) return;
    for (int32_t i = 0; i < e->cg.n_kernels; i++)
        if (e->cg.kernels[i].native) return;
    int64_t sv[64];
    bool bounded = e->k->n_syms <= 64;
    for (int32_t i = 0; bounded && i < e->k->n_syms; i++) {
        /* an unbounded (or absurd) range is not small */
        bounded = e->k->syms[i].max <= ((int64_t)1 << 31);
        sv[i] = e->k->syms[i].max;
    }
    if (bounded) e->launch_items = launch_size(e, sv);
    if (e->tg.caller_thread == 1 && (e->launch_items < 0 || e->launch_items > e->tg.caller_thread_items))
        return;
    e->cdev = cdev;
}

static ttc_status ctx_take(ttc_engine *e, ttc_exec_ctx **out) {
    pthread_mutex_lock(&e->lock);
    if (e->n_pool > 0) {
        *out = e->pool[--e->n_pool];
        pthread_mutex_unlock(&e->lock);
        return TTC_OK;
    }
    pthread_mutex_unlock(&e->lock);
    return ttc_exec_ctx_new(e, false, out);
}

static void ctx_give(ttc_engine *e, ttc_exec_ctx *x) {
    pthread_mutex_lock(&e->lock);
    if (ttc_grow((void **)&e->pool, &e->cap_pool, e->n_pool + 1, sizeof(ttc_exec_ctx *)) == TTC_OK) {
        e->pool[e->n_pool++] = x;
        x = NULL;
    }
    pthread_mutex_unlock(&e->lock);
    if (x) ttc_exec_ctx_free(x);
}

void ttc_engine_pool_free(ttc_engine *e) {
    for (int32_t i = 0; i < e->n_pool; i++) ttc_exec_ctx_free(e->pool[i]);
    free(e->pool);
    e->pool = NULL;
    e->n_pool = e->cap_pool = 0;
}

/* *b holds at least need bytes (grown by replacing it; contents are not kept). */
static ttc_status ensure_buf(ttc_engine *e, ttc_buf **b, size_t need, const char *what) {
    if (*b && ttc_buf_size(*b) >= need) return TTC_OK;
    ttc_buf_free(*b);
    *b = NULL;
    return ttc_buf_alloc(e->dev, need, NULL, what, b);
}

ttc_status ttc_exec_prepare(ttc_engine *e, const ttc_plan *p, ttc_exec_ctx *x) {
    TTC_TRY(ensure_buf(e, &x->arena, p->arena_bytes, "arena"));
    size_t scratch = ttc_native_scratch_bytes(&e->view, p);
    if (scratch) TTC_TRY(ensure_buf(e, &x->scratch, scratch, "native scratch"));
    return TTC_OK;
}

ttc_status ttc_engine_output_shapes(ttc_engine *e, const int64_t (*in_shapes)[TTC_MAX_RANK],
                                    int64_t (*out_shapes)[TTC_MAX_RANK]) {
    int64_t sv[64] = {0};
    if (e->k->n_syms > 64) return ttc_fail(TTC_ERR_UNSUPPORTED, "more than 64 symbols");
    TTC_TRY(ttc_engine_symbols_from_shapes(e, in_shapes, sv));
    for (int32_t i = 0; i < e->n_out; i++)
        for (int32_t d = 0; d < e->outs[i].rank; d++) out_shapes[i][d] = ttc_dim_eval(e->outs[i].dims[d], sv);
    return TTC_OK;
}

/* Kernel ki's arguments onto kern; gemv: onto its "<name>_v" (the arguments ttc_kspec_gemv_arg
 * keeps, M as rows). */
static ttc_status bind_args(const ttc_kspec *ks, const ttc_plan *p, int32_t ki, ttc_kernel *kern,
                            const ttc_exec_bufs *b, bool gemv, int32_t rows) {
    /* a native op's own arguments come first; its kernel takes the rest */
    uint32_t ka = 0;
    for (int32_t a = ks->n_native_args; a < ks->n_args; a++) {
        if (gemv && !ttc_kspec_gemv_arg(&ks->args[a])) continue;
        int64_t v = gemv && a == 4 ? rows : p->argv[ki][a];
        if (ks->args[a].kind == TTC_ARG_BUF) TTC_TRY(ttc_kernel_set_buf(kern, ka, ttc_exec_buf(p, (int32_t)v, b)));
        else if (ks->args[a].kind == TTC_ARG_ERRFLAG) TTC_TRY(ttc_kernel_set_buf(kern, ka, b->errf));
        else if (ks->args[a].kind == TTC_ARG_LOCAL) TTC_TRY(ttc_kernel_set_local(kern, ka, (size_t)v));
        else TTC_TRY(ttc_kernel_set_i32(kern, ka, (int32_t)v));
        ka++;
    }
    return TTC_OK;
}

ttc_status ttc_exec_bind(const ttc_kspec *ks, const ttc_plan *p, int32_t ki, ttc_kernel *kern, const ttc_exec_bufs *b) {
    return bind_args(ks, p, ki, kern, b, false, 0);
}

ttc_status ttc_exec_enqueue(ttc_queue *q, const ttc_kspec *ks, const ttc_plan *p, int32_t ki, ttc_kernel *kern,
                            ttc_event **ev) {
    return ttc_queue_launch(q, kern, ks->work_dims, p->gws[ki], ks->use_local ? p->lws[ki] : NULL, ev);
}

/* GEMM kernel ki as its "<name>_v" kern (plan p chose it: p->gemv): the kernel's arguments
 * without a tile's local stages and tensor maps (ttc_kspec_gemv_arg), the GEMV grid. */
static ttc_status gemv_launch(ttc_queue *q, const ttc_kspec *ks, const ttc_plan *p, int32_t ki, ttc_kernel *kern,
                              const ttc_exec_bufs *b, ttc_event **ev) {
    size_t gws[3], lws[3];
    int32_t rows = ttc_plan_gemv_dims(p, ki, gws, lws);
    TTC_TRY(bind_args(ks, p, ki, kern, b, true, rows));
    return ttc_queue_launch(q, kern, 3, gws, lws, ev);
}

ttc_status ttc_exec_launch(const ttc_engine *e, const ttc_plan *p, ttc_exec_ctx *x, ttc_buf *const *in_mem,
                           ttc_buf *const *out_mem, ttc_event **ev) {
    const ttc_exec_bufs b = {in_mem, out_mem, e->const_mem, x->arena, x->errf};
    /* held until the caller's wait where the enqueuing thread shares the cores with the
     * device's workers (backend.h, ttc_queue_hold); one launch has nothing to hold back */
    if (e->tg.batch_launch && e->cg.n_kernels > 1 && !e->cdev) TTC_TRY(ttc_queue_hold(x->q));
    for (int32_t ki = 0; ki < e->cg.n_kernels; ki++) {
        if (ev) ev[ki] = NULL;
        if (p->skip[ki]) continue;
        const ttc_kspec *ks = &e->cg.kernels[ki];
        /* native ops: the library call's event stands for the kernel (the epilogue is small) */
        if (ks->native) TTC_TRY(ttc_native_launch(&e->view, p, ki, x->q, &b, x->scratch, ev ? &ev[ki] : NULL));
        if (ks->native && !ks->native_epi) continue;
        if (p->gemv[ki] && x->vkernels[ki]) {
            ttc_status s = gemv_launch(x->q, ks, p, ki, x->vkernels[ki], &b, ev ? &ev[ki] : NULL);
            __atomic_fetch_add(&((ttc_engine *)e)->gemv_launches, 1, __ATOMIC_RELAXED);
            if (s != TTC_OK) return ttc_fail_context(s, "launching %s_v (%s)", ks->name, e->k->ops[ks->op].name);
            continue;
        }
        TTC_TRY(ttc_exec_bind(ks, p, ki, x->kernels[ki], &b));
        ttc_status s = ttc_exec_enqueue(x->q, ks, p, ki, x->kernels[ki], ev && !ks->native ? &ev[ki] : NULL);
        if (s != TTC_OK) return ttc_fail_context(s, "launching %s (%s)", ks->name, e->k->ops[ks->op].name);
    }
    return TTC_OK;
}

ttc_status ttc_exec_resident(ttc_engine *e, const ttc_plan *p, ttc_exec_ctx *x, const void *const *inputs,
                             const size_t *in_bytes, ttc_buf **in_mem, ttc_buf **out_mem) {
    for (int32_t i = 0; i < e->n_in; i++) {
        TTC_TRY(ensure_buf(e, &x->dev_in[i], in_bytes[i], e->ins[i].name));
        in_mem[i] = x->dev_in[i];
        if (in_bytes[i]) TTC_TRY(ttc_buf_write(x->q, in_mem[i], 0, in_bytes[i], inputs[i], true));
    }
    for (int32_t i = 0; i < e->n_out; i++) {
        size_t n = (size_t)p->res[e->k->outputs[i]].numel * ttc_dtype_size(e->outs[i].dtype);
        TTC_TRY(ensure_buf(e, &x->dev_out[i], n, e->outs[i].name));
        out_mem[i] = x->dev_out[i];
    }
    return TTC_OK;
}

ttc_status ttc_exec_plan_for(ttc_engine *e, const void *const *inputs, const size_t *in_bytes,
                             const int64_t (*in_shapes)[TTC_MAX_RANK], ttc_plan **out) {
    int64_t sv[64] = {0};
    if (e->k->n_syms > 64) return ttc_fail(TTC_ERR_UNSUPPORTED, "more than 64 symbols");
    TTC_TRY(ttc_engine_symbols_from_shapes(e, in_shapes, sv));
    ttc_plan *p;
    TTC_TRY(ttc_engine_get_plan(e, sv, &p));
    ttc_status s = TTC_OK;
    for (int32_t i = 0; i < e->n_in && s == TTC_OK; i++) {
        size_t need = (size_t)p->res[e->k->inputs[i]].numel * ttc_dtype_size(e->ins[i].dtype);
        if (in_bytes[i] != need)
            s = ttc_fail(TTC_ERR_INPUT, "input %s: %zu bytes given, %zu expected for its shape", e->ins[i].name,
                         in_bytes[i], need);
        else if (!inputs[i] && need)
            s = ttc_fail(TTC_ERR_INPUT, "input %s: no data", e->ins[i].name);
    }
    if (s != TTC_OK) { ttc_plan_release(e, p); return s; }
    *out = p;
    return TTC_OK;
}

static bool overlap(const void *a, size_t na, const void *b, size_t nb) {
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return na && nb && x < y + nb && y < x + na;
}

/* Whether output o's memory [p, p + n) overlaps an input's or an earlier output's. In place it
 * would be written while kernels still read the input (a caller passing the same array as
 * input and output): such an output gets the context's own buffer and is read back after the
 * last kernel. */
static bool aliases(const void *p, size_t n, const void *const *in, const size_t *in_bytes, int32_t n_in,
                    const void *const *out, const size_t *out_bytes, int32_t o) {
    for (int32_t i = 0; i < n_in; i++)
        if (overlap(p, n, in[i], in_bytes[i])) return true;
    for (int32_t i = 0; i < o; i++)
        if (overlap(p, n, out[i], out_bytes[i])) return true;
    return false;
}

ttc_status ttc_engine_execute(ttc_engine *e, const void *const *inputs, const size_t *in_bytes,
                              const int64_t (*in_shapes)[TTC_MAX_RANK], void *const *outputs,
                              const size_t *out_bytes) {
    ttc_plan *p;
    TTC_TRY(ttc_exec_plan_for(e, inputs, in_bytes, in_shapes, &p));
    ttc_status s = TTC_OK;
    const ttc_kir *k = e->k;
    for (int32_t i = 0; i < e->n_out && s == TTC_OK; i++) {
        size_t need = (size_t)p->res[k->outputs[i]].numel * ttc_dtype_size(e->outs[i].dtype);
        if (out_bytes[i] != need)
            s = ttc_fail(TTC_ERR_INPUT, "output %s: buffer has %zu bytes, %zu needed", e->outs[i].name, out_bytes[i], need);
    }
    if (s != TTC_OK) { ttc_plan_release(e, p); return s; }
    ttc_exec_ctx *x = NULL;
    s = ctx_take(e, &x);
    if (s != TTC_OK) { ttc_plan_release(e, p); return s; }
    ttc_buf **in_mem = ttc_calloc((size_t)e->n_in + 1, sizeof(ttc_buf *));
    ttc_buf **out_mem = ttc_calloc((size_t)e->n_out + 1, sizeof(ttc_buf *));
    /* host memory directly where the device computes in it, device copies elsewhere and for
     * memory not aligned to its element size (kernels may load whole elements from it) */
    bool host_ptr = e->tg.host_memory;
    if (!in_mem || !out_mem) s = TTC_ERR_NOMEM;
    if (s == TTC_OK) s = ttc_exec_prepare(e, p, x);
    for (int32_t i = 0; i < e->n_in && s == TTC_OK; i++) {
        size_t n = in_bytes[i];
        if (host_ptr && n && (uintptr_t)inputs[i] % ttc_dtype_size(e->ins[i].dtype) == 0) {
            s = ttc_buf_wrap_host(e->dev, (void *)inputs[i], n, !e->ins[i].written, e->ins[i].name, &in_mem[i]);
        } else {
            s = ensure_buf(e, &x->dev_in[i], n, e->ins[i].name);
            if (s == TTC_OK) in_mem[i] = x->dev_in[i];
            if (s == TTC_OK && n) s = ttc_buf_write(x->q, in_mem[i], 0, n, inputs[i], false);
        }
        if (s != TTC_OK) ttc_fail_context(s, "input %s", e->ins[i].name);
    }
    for (int32_t i = 0; i < e->n_out && s == TTC_OK; i++) {
        size_t n = out_bytes[i];
        if (host_ptr && n && (uintptr_t)outputs[i] % ttc_dtype_size(e->outs[i].dtype) == 0 &&
            !aliases(outputs[i], n, inputs, in_bytes, e->n_in, (const void *const *)outputs, out_bytes, i)) {
            s = ttc_buf_wrap_host(e->dev, outputs[i], n, false, e->outs[i].name, &out_mem[i]);
        } else {
            s = ensure_buf(e, &x->dev_out[i], n, e->outs[i].name);
            if (s == TTC_OK) out_mem[i] = x->dev_out[i];
        }
        if (s != TTC_OK) ttc_fail_context(s, "output %s", e->outs[i].name);
    }
    /* the index-error flag starts at 0 on every call (same queue: ordered before the kernels) */
    static const int32_t zero = 0;
    int32_t flag = 0;
    if (s == TTC_OK && x->errf && x->in_place) x->errv = 0;
    else if (s == TTC_OK && x->errf) s = ttc_buf_write(x->q, x->errf, 0, sizeof zero, &zero, false);
    if (s == TTC_OK) s = ttc_exec_launch(e, p, x, in_mem, out_mem, NULL);
    /* results back to the host (nothing to do where the outputs' buffers are their memory) */
    for (int32_t i = 0; i < e->n_out && s == TTC_OK; i++) {
        bool wrapped = out_mem[i] != x->dev_out[i];
        if (!out_bytes[i] || (x->in_place && wrapped)) continue;
        if (wrapped) s = ttc_buf_sync_host(x->q, out_mem[i], outputs[i], out_bytes[i]);
        else s = ttc_buf_read(x->q, out_mem[i], 0, out_bytes[i], outputs[i], false);
        if (s != TTC_OK) ttc_fail_context(s, "output %s", e->outs[i].name);
    }
    /* inputs the engine wrote (KV caches) back to the caller's memory, like outputs (the
     * caller handed them over writable: ttc_binding.written) */
    for (int32_t i = 0; i < e->n_in && s == TTC_OK; i++) {
        bool wrapped = in_mem[i] != x->dev_in[i];
        if (!e->ins[i].written || !in_bytes[i] || (x->in_place && wrapped)) continue;
        if (wrapped) s = ttc_buf_sync_host(x->q, in_mem[i], (void *)inputs[i], in_bytes[i]);
        else s = ttc_buf_read(x->q, in_mem[i], 0, in_bytes[i], (void *)inputs[i], false);
        if (s != TTC_OK) ttc_fail_context(s, "input %s (written in place)", e->ins[i].name);
    }
    if (s == TTC_OK && x->errf && !x->in_place && e->check_indices)
        s = ttc_buf_read(x->q, x->errf, 0, sizeof flag, &flag, false);
    ttc_status fin = ttc_queue_finish(x->q);
    if (x->errf && x->in_place && e->check_indices) flag = x->errv;
    bool failed_queue = fin != TTC_OK || s == TTC_ERR_DEVICE;
    if (fin != TTC_OK && s == TTC_OK) s = ttc_fail_context(fin, "engine %s", e->name);
    if (s == TTC_OK && flag > 0 && flag <= k->n_ops)
        s = ttc_fail(TTC_ERR_INPUT, "node %s: index out of range (an index tensor holds a value outside the dim "
                     "it indexes); the outputs of this call are not valid", k->ops[flag - 1].name);
    else if (s == TTC_OK && flag)
        s = ttc_fail(TTC_ERR_INTERNAL, "engine %s: index error flag holds %d", e->name, (int)flag);
    if (host_ptr) {
        /* empty bindings use the context's own buffers (released with the context) */
        for (int32_t i = 0; in_mem && i < e->n_in; i++)
            if (in_mem[i] && in_mem[i] != x->dev_in[i]) ttc_buf_free(in_mem[i]);
        for (int32_t i = 0; out_mem && i < e->n_out; i++)
            if (out_mem[i] && out_mem[i] != x->dev_out[i]) ttc_buf_free(out_mem[i]);
    }
    free(in_mem);
    free(out_mem);
    if (failed_queue) ttc_exec_ctx_free(x);  /* a failed queue is not reused */
    else ctx_give(e, x);
    ttc_plan_release(e, p);
    return s;
}

/* ---- execution on given device buffers (CUDA-shared memory): no upload, no download ---- */

static ttc_status check_out_bytes(const ttc_engine *e, const ttc_plan *p, const size_t *out_bytes,
                                  ttc_buf *const *out_mem) {
    for (int32_t i = 0; i < e->n_out; i++) {
        size_t need = (size_t)p->res[e->k->outputs[i]].numel * ttc_dtype_size(e->outs[i].dtype);
        if (out_bytes[i] != need)
            return ttc_fail(TTC_ERR_INPUT, "output %s: buffer has %zu bytes, %zu needed", e->outs[i].name, out_bytes[i], need);
        if (need && !out_mem[i]) return ttc_fail(TTC_ERR_INPUT, "output %s: no buffer", e->outs[i].name);
    }
    return TTC_OK;
}

ttc_status ttc_engine_execute_buffers(ttc_engine *e, ttc_buf *const *in_mem, const size_t *in_bytes,
                                      const int64_t (*in_shapes)[TTC_MAX_RANK], ttc_buf *const *out_mem,
                                      const size_t *out_bytes, ttc_buf *signal, uint32_t signal_value,
                                      bool *finished) {
    *finished = true;
    ttc_plan *p;
    /* in_mem stands for the inputs' data here: only whether each is there is checked */
    TTC_TRY(ttc_exec_plan_for(e, (const void *const *)in_mem, in_bytes, in_shapes, &p));
    ttc_status s = check_out_bytes(e, p, out_bytes, out_mem);
    ttc_exec_ctx *x = NULL;
    if (s == TTC_OK) s = ctx_take(e, &x);
    if (s != TTC_OK) { ttc_plan_release(e, p); return s; }
    ttc_buf *ext[64];
    int32_t n_ext = 0;
    for (int32_t i = 0; i < e->n_in && n_ext < 64; i++) if (in_mem[i]) ext[n_ext++] = in_mem[i];
    for (int32_t i = 0; i < e->n_out && n_ext < 64; i++) if (out_mem[i]) ext[n_ext++] = out_mem[i];
    s = ttc_exec_prepare(e, p, x);
    static const int32_t zero = 0;
    int32_t flag = 0;
    if (s == TTC_OK && x->errf) s = ttc_buf_write(x->q, x->errf, 0, sizeof zero, &zero, false);
    if (s == TTC_OK) s = ttc_queue_acquire_external(x->q, ext, n_ext, false);
    if (s == TTC_OK) s = ttc_exec_launch(e, p, x, in_mem, out_mem, NULL);
    if (s == TTC_OK) s = ttc_queue_acquire_external(x->q, ext, n_ext, true);
    bool check = x->errf && e->check_indices;
    bool wait = !signal || check || s != TTC_OK;
    if (s == TTC_OK && check) s = ttc_buf_read(x->q, x->errf, 0, sizeof flag, &flag, false);
    /* signalled even after a wait: the caller's CUDA stream waits for the value either way */
    if (s == TTC_OK && signal) s = ttc_queue_signal(x->q, signal, signal_value);
    ttc_status fin = wait ? ttc_queue_finish(x->q) : TTC_OK;
    bool failed_queue = fin != TTC_OK || s == TTC_ERR_DEVICE;
    if (fin != TTC_OK && s == TTC_OK) s = ttc_fail_context(fin, "engine %s", e->name);
    *finished = wait;
    if (s == TTC_OK && flag > 0 && flag <= e->k->n_ops)
        s = ttc_fail(TTC_ERR_INPUT, "node %s: index out of range (an index tensor holds a value outside the dim "
                     "it indexes); the outputs of this call are not valid", e->k->ops[flag - 1].name);
    else if (s == TTC_OK && flag)
        s = ttc_fail(TTC_ERR_INTERNAL, "engine %s: index error flag holds %d", e->name, (int)flag);
    if (failed_queue) ttc_exec_ctx_free(x);  /* a failed queue is not reused */
    else ctx_give(e, x);
    ttc_plan_release(e, p);
    return s;
}
