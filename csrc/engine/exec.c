/* Engine execution: execution contexts (queue, kernels, arena) taken from a pool so that
 * threads can execute one engine concurrently; enqueue everything, synchronise once. */
#include "engine_impl.h"
#include "native_ops.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void ttc_exec_ctx_free(ttc_exec_ctx *x) {
    if (!x) return;
    if (x->q) TTC_CL(Finish)(x->q);
    if (x->kernels) {
        for (int32_t i = 0; x->kernels[i]; i++) TTC_CL(ReleaseKernel)(x->kernels[i]);
    }
    free(x->kernels);
    if (x->arena) TTC_CL(ReleaseMemObject)(x->arena);
    if (x->errf) TTC_CL(ReleaseMemObject)(x->errf);
    if (x->scratch) TTC_CL(ReleaseMemObject)(x->scratch);
    free(x->dev_in_cap);
    free(x->dev_out_cap);
    free(x->dev_in);
    free(x->dev_out);
    if (x->q) TTC_CL(ReleaseCommandQueue)(x->q);
    free(x);
}

static void ctx_release_dev_bufs(ttc_engine *e, ttc_exec_ctx *x) {
    for (int32_t i = 0; x->dev_in && i < e->n_in; i++)
        if (x->dev_in[i]) TTC_CL(ReleaseMemObject)(x->dev_in[i]);
    for (int32_t i = 0; x->dev_out && i < e->n_out; i++)
        if (x->dev_out[i]) TTC_CL(ReleaseMemObject)(x->dev_out[i]);
}

static void ctx_destroy(ttc_engine *e, ttc_exec_ctx *x) {
    ctx_release_dev_bufs(e, x);
    ttc_exec_ctx_free(x);
}

static ttc_status ctx_new(ttc_engine *e, ttc_exec_ctx **out) {
    ttc_exec_ctx *x = ttc_calloc(1, sizeof *x);
    if (!x) return TTC_ERR_NOMEM;
    x->kernels = ttc_calloc((size_t)e->cg.n_kernels + 1, sizeof(cl_kernel));
    x->dev_in = ttc_calloc((size_t)e->n_in + 1, sizeof(cl_mem));
    x->dev_out = ttc_calloc((size_t)e->n_out + 1, sizeof(cl_mem));
    x->dev_in_cap = ttc_calloc((size_t)e->n_in + 1, sizeof(size_t));
    x->dev_out_cap = ttc_calloc((size_t)e->n_out + 1, sizeof(size_t));
    if (!x->kernels || !x->dev_in || !x->dev_out || !x->dev_in_cap || !x->dev_out_cap) {
        ctx_destroy(e, x);
        return TTC_ERR_NOMEM;
    }
    ttc_status s = ttc_cl_queue_new(e->dev, false, &x->q);
    bool flag = false;
    for (int32_t i = 0; i < e->cg.n_kernels; i++) flag = flag || ttc_kspec_has_errflag(&e->cg.kernels[i]);
    if (s == TTC_OK) x->in_place = e->dev->is_cpu && ttc_cl_device_host_in_place(e->dev);
    if (s == TTC_OK && flag) {
        cl_int err = CL_SUCCESS;
        if (x->in_place)
            x->errf = TTC_CL(CreateBuffer)(e->ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, sizeof x->errv, &x->errv, &err);
        else
            x->errf = TTC_CL(CreateBuffer)(e->ctx, CL_MEM_READ_WRITE, sizeof(cl_int), NULL, &err);
        if (!x->errf || err != CL_SUCCESS) {
            x->errf = NULL;
            s = ttc_fail_cl(err, "clCreateBuffer(index error flag) failed: %s", ttc_cl_error_name(err));
        }
    }
    for (int32_t i = 0; i < e->cg.n_kernels && s == TTC_OK; i++) {
        cl_int err = CL_SUCCESS;
        x->kernels[i] = TTC_CL(CreateKernel)(e->prog.program, e->cg.kernels[i].name, &err);
        if (!x->kernels[i] || err != CL_SUCCESS) {
            x->kernels[i] = NULL;
            s = ttc_fail_cl(err, "clCreateKernel(%s) failed: %s", e->cg.kernels[i].name, ttc_cl_error_name(err));
        }
    }
    if (s != TTC_OK) { ctx_destroy(e, x); return s; }
    *out = x;
    return TTC_OK;
}

static ttc_status ctx_take(ttc_engine *e, ttc_exec_ctx **out) {
    pthread_mutex_lock(&e->lock);
    if (e->n_pool > 0) {
        *out = e->pool[--e->n_pool];
        pthread_mutex_unlock(&e->lock);
        return TTC_OK;
    }
    pthread_mutex_unlock(&e->lock);
    return ctx_new(e, out);
}

static void ctx_give(ttc_engine *e, ttc_exec_ctx *x) {
    pthread_mutex_lock(&e->lock);
    if (ttc_grow((void **)&e->pool, &e->cap_pool, e->n_pool + 1, sizeof(ttc_exec_ctx *)) == TTC_OK) {
        e->pool[e->n_pool++] = x;
        x = NULL;
    }
    pthread_mutex_unlock(&e->lock);
    if (x) ctx_destroy(e, x);
}

void ttc_engine_pool_free(ttc_engine *e) {
    for (int32_t i = 0; i < e->n_pool; i++) ctx_destroy(e, e->pool[i]);
    free(e->pool);
    e->pool = NULL;
    e->n_pool = e->cap_pool = 0;
}

static ttc_status ensure_buf(ttc_engine *e, cl_mem *m, size_t *cap, size_t need, const char *what) {
    if (*m && *cap >= need) return TTC_OK;
    if (*m) TTC_CL(ReleaseMemObject)(*m);
    *m = NULL;
    *cap = 0;
    cl_int err = CL_SUCCESS;
    *m = TTC_CL(CreateBuffer)(e->ctx, CL_MEM_READ_WRITE, need ? need : 16, NULL, &err);
    if (!*m || err != CL_SUCCESS) {
        *m = NULL;
        return ttc_fail_cl(err, "clCreateBuffer(%s, %zu bytes) failed: %s", what, need, ttc_cl_error_name(err));
    }
    *cap = need;
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

cl_mem ttc_exec_buf(const ttc_engine *e, const ttc_plan *p, int32_t t, const cl_mem *in_mem, const cl_mem *out_mem,
                    cl_mem arena) {
    const ttc_res *r = &p->res[t];
    cl_mem m = NULL;
    switch (r->root) {
    case TTC_ROOT_INPUT: m = in_mem[r->idx]; break;
    case TTC_ROOT_OUTPUT: m = out_mem[r->idx]; break;
    case TTC_ROOT_CONST: m = e->const_mem[r->idx]; break;
    case TTC_ROOT_ARENA: m = arena; break;
    default: break;
    }
    return m ? m : arena;  /* empty tensors: any valid buffer, never read */
}

ttc_status ttc_exec_set_args(const ttc_engine *e, const ttc_plan *p, int32_t ki, cl_kernel kern, const cl_mem *in_mem,
                             const cl_mem *out_mem, cl_mem arena, cl_mem errf) {
    const ttc_kspec *ks = &e->cg.kernels[ki];
    /* a native op's own arguments come first; its OpenCL kernel takes the rest */
    for (int32_t a = ks->n_native_args; a < ks->n_args; a++) {
        int64_t v = p->argv[ki][a];
        cl_uint ka = (cl_uint)(a - ks->n_native_args);
        cl_int err;
        if (ks->args[a].kind == TTC_ARG_BUF) {
            cl_mem m = ttc_exec_buf(e, p, (int32_t)v, in_mem, out_mem, arena);
            err = TTC_CL(SetKernelArg)(kern, ka, sizeof(cl_mem), &m);
        } else if (ks->args[a].kind == TTC_ARG_ERRFLAG) {
            err = TTC_CL(SetKernelArg)(kern, ka, sizeof(cl_mem), &errf);
        } else {
            cl_int iv = (cl_int)v;
            err = TTC_CL(SetKernelArg)(kern, ka, sizeof(cl_int), &iv);
        }
        if (err != CL_SUCCESS)
            return ttc_fail_cl(err, "clSetKernelArg(%s, arg %d) failed: %s", ks->name, (int)ka, ttc_cl_error_name(err));
    }
    return TTC_OK;
}

ttc_status ttc_exec_enqueue(const ttc_engine *e, const ttc_plan *p, int32_t ki, cl_command_queue q, cl_kernel kern) {
    return ttc_exec_enqueue_ev(e, p, ki, q, kern, NULL);
}

ttc_status ttc_exec_enqueue_ev(const ttc_engine *e, const ttc_plan *p, int32_t ki, cl_command_queue q, cl_kernel kern,
                               cl_event *ev) {
    const ttc_kspec *ks = &e->cg.kernels[ki];
    cl_int err = TTC_CL(EnqueueNDRangeKernel)(q, kern, (cl_uint)ks->work_dims, NULL, p->gws[ki],
                                              ks->use_local ? p->lws[ki] : NULL, 0, NULL, ev);
    if (err != CL_SUCCESS)
        return ttc_fail_cl(err, "clEnqueueNDRangeKernel(%s: %s) failed: %s", ks->name, e->k->ops[ks->op].name,
                           ttc_cl_error_name(err));
    return TTC_OK;
}

ttc_status ttc_engine_execute(ttc_engine *e, const void *const *inputs, const size_t *in_bytes,
                              const int64_t (*in_shapes)[TTC_MAX_RANK], void *const *outputs,
                              const size_t *out_bytes) {
    int64_t sv[64] = {0};
    if (e->k->n_syms > 64) return ttc_fail(TTC_ERR_UNSUPPORTED, "more than 64 symbols");
    TTC_TRY(ttc_engine_symbols_from_shapes(e, in_shapes, sv));
    ttc_plan *p;
    TTC_TRY(ttc_engine_get_plan(e, sv, &p));
    ttc_status s = TTC_OK;
    const ttc_kir *k = e->k;
    for (int32_t i = 0; i < e->n_in && s == TTC_OK; i++) {
        size_t need = (size_t)p->res[k->inputs[i]].numel * ttc_dtype_size(e->ins[i].dtype);
        if (in_bytes[i] != need)
            s = ttc_fail(TTC_ERR_INPUT, "input %s: %zu bytes given, %zu expected for its shape", e->ins[i].name,
                         in_bytes[i], need);
        else if (!inputs[i] && need)
            s = ttc_fail(TTC_ERR_INPUT, "input %s: no data", e->ins[i].name);
    }
    for (int32_t i = 0; i < e->n_out && s == TTC_OK; i++) {
        size_t need = (size_t)p->res[k->outputs[i]].numel * ttc_dtype_size(e->outs[i].dtype);
        if (out_bytes[i] != need)
            s = ttc_fail(TTC_ERR_INPUT, "output %s: buffer has %zu bytes, %zu needed", e->outs[i].name, out_bytes[i], need);
    }
    if (s != TTC_OK) { ttc_plan_release(e, p); return s; }
    ttc_exec_ctx *x = NULL;
    s = ctx_take(e, &x);
    if (s != TTC_OK) { ttc_plan_release(e, p); return s; }
    cl_mem *in_mem = ttc_calloc((size_t)e->n_in + 1, sizeof(cl_mem));
    cl_mem *out_mem = ttc_calloc((size_t)e->n_out + 1, sizeof(cl_mem));
    bool host_ptr = e->dev->is_cpu;
    cl_int err = CL_SUCCESS;
    if (!in_mem || !out_mem) s = TTC_ERR_NOMEM;
    if (s == TTC_OK) s = ensure_buf(e, &x->arena, &x->arena_cap, p->arena_bytes, "arena");
    size_t scratch = ttc_native_scratch_bytes(e, p);
    if (s == TTC_OK && scratch) s = ensure_buf(e, &x->scratch, &x->scratch_cap, scratch, "native scratch");
    /* bind inputs and outputs: host memory directly on CPU devices, device copies elsewhere and
     * for memory not aligned to its element size (kernels may load whole elements from it) */
    for (int32_t i = 0; i < e->n_in && s == TTC_OK; i++) {
        size_t n = in_bytes[i];
        if (host_ptr && n && (uintptr_t)inputs[i] % ttc_dtype_size(e->ins[i].dtype) == 0) {
            in_mem[i] = TTC_CL(CreateBuffer)(e->ctx, CL_MEM_READ_ONLY | CL_MEM_USE_HOST_PTR, n, (void *)inputs[i], &err);
            if (!in_mem[i] || err != CL_SUCCESS)
                s = ttc_fail_cl(err, "clCreateBuffer(input %s, USE_HOST_PTR) failed: %s", e->ins[i].name, ttc_cl_error_name(err));
        } else {
            s = ensure_buf(e, &x->dev_in[i], &x->dev_in_cap[i], n, e->ins[i].name);
            if (s == TTC_OK) in_mem[i] = x->dev_in[i];
            if (s == TTC_OK && n) {
                err = TTC_CL(EnqueueWriteBuffer)(x->q, in_mem[i], CL_FALSE, 0, n, inputs[i], 0, NULL, NULL);
                if (err != CL_SUCCESS)
                    s = ttc_fail_cl(err, "clEnqueueWriteBuffer(input %s) failed: %s", e->ins[i].name, ttc_cl_error_name(err));
            }
        }
    }
    for (int32_t i = 0; i < e->n_out && s == TTC_OK; i++) {
        size_t n = out_bytes[i];
        if (host_ptr && n && (uintptr_t)outputs[i] % ttc_dtype_size(e->outs[i].dtype) == 0) {
            out_mem[i] = TTC_CL(CreateBuffer)(e->ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, n, outputs[i], &err);
            if (!out_mem[i] || err != CL_SUCCESS)
                s = ttc_fail_cl(err, "clCreateBuffer(output %s, USE_HOST_PTR) failed: %s", e->outs[i].name, ttc_cl_error_name(err));
        } else {
            s = ensure_buf(e, &x->dev_out[i], &x->dev_out_cap[i], n, e->outs[i].name);
            if (s == TTC_OK) out_mem[i] = x->dev_out[i];
        }
    }
    /* the index-error flag starts at 0 on every call (same queue: ordered before the kernels) */
    static const cl_int zero = 0;
    cl_int flag = 0;
    if (s == TTC_OK && x->errf && x->in_place) {
        x->errv = 0;
    } else if (s == TTC_OK && x->errf) {
        err = TTC_CL(EnqueueWriteBuffer)(x->q, x->errf, CL_FALSE, 0, sizeof zero, &zero, 0, NULL, NULL);
        if (err != CL_SUCCESS)
            s = ttc_fail_cl(err, "clEnqueueWriteBuffer(index error flag) failed: %s", ttc_cl_error_name(err));
    }
    /* launch every kernel */
    for (int32_t ki = 0; ki < e->cg.n_kernels && s == TTC_OK; ki++) {
        if (p->skip[ki]) continue;
        const ttc_kspec *ks = &e->cg.kernels[ki];
        if (ks->native) s = ttc_native_launch(e, p, ki, x->q, in_mem, out_mem, x->arena, x->scratch, NULL);
        if (ks->native && !ks->native_epi) continue;
        if (s == TTC_OK) s = ttc_exec_set_args(e, p, ki, x->kernels[ki], in_mem, out_mem, x->arena, x->errf);
        if (s == TTC_OK) s = ttc_exec_enqueue(e, p, ki, x->q, x->kernels[ki]);
    }
    /* results back to the host (nothing to do where the outputs' buffers are their memory) */
    for (int32_t i = 0; i < e->n_out && s == TTC_OK; i++) {
        if (!out_bytes[i] || (x->in_place && out_mem[i] != x->dev_out[i])) continue;
        if (out_mem[i] != x->dev_out[i]) {
            void *mp = TTC_CL(EnqueueMapBuffer)(x->q, out_mem[i], CL_TRUE, CL_MAP_READ, 0, out_bytes[i], 0, NULL, NULL, &err);
            if (!mp || err != CL_SUCCESS)
                s = ttc_fail_cl(err, "clEnqueueMapBuffer(output %s) failed: %s", e->outs[i].name, ttc_cl_error_name(err));
            else {
                if (mp != outputs[i]) memcpy(outputs[i], mp, out_bytes[i]);
                TTC_CL(EnqueueUnmapMemObject)(x->q, out_mem[i], mp, 0, NULL, NULL);
            }
        } else {
            err = TTC_CL(EnqueueReadBuffer)(x->q, out_mem[i], CL_FALSE, 0, out_bytes[i], outputs[i], 0, NULL, NULL);
            if (err != CL_SUCCESS)
                s = ttc_fail_cl(err, "clEnqueueReadBuffer(output %s) failed: %s", e->outs[i].name, ttc_cl_error_name(err));
        }
    }
    if (s == TTC_OK && x->errf && !x->in_place) {
        err = TTC_CL(EnqueueReadBuffer)(x->q, x->errf, CL_FALSE, 0, sizeof flag, &flag, 0, NULL, NULL);
        if (err != CL_SUCCESS)
            s = ttc_fail_cl(err, "clEnqueueReadBuffer(index error flag) failed: %s", ttc_cl_error_name(err));
    }
    err = TTC_CL(Finish)(x->q);
    if (err != CL_SUCCESS && s == TTC_OK)
        s = ttc_fail_cl(err, "clFinish(%s) failed: %s", e->name, ttc_cl_error_name(err));
    if (x->errf && x->in_place) flag = x->errv;
    if (s == TTC_OK && flag > 0 && flag <= k->n_ops)
        s = ttc_fail(TTC_ERR_INPUT, "node %s: index out of range (an index tensor holds a value outside the dim "
                     "it indexes); the outputs of this call are not valid", k->ops[flag - 1].name);
    else if (s == TTC_OK && flag)
        s = ttc_fail(TTC_ERR_INTERNAL, "engine %s: index error flag holds %d", e->name, (int)flag);
    if (host_ptr) {
        /* empty bindings use the context's own buffers (released with the context) */
        for (int32_t i = 0; in_mem && i < e->n_in; i++)
            if (in_mem[i] && in_mem[i] != x->dev_in[i]) TTC_CL(ReleaseMemObject)(in_mem[i]);
        for (int32_t i = 0; out_mem && i < e->n_out; i++)
            if (out_mem[i] && out_mem[i] != x->dev_out[i]) TTC_CL(ReleaseMemObject)(out_mem[i]);
    }
    free(in_mem);
    free(out_mem);
    if (err != CL_SUCCESS) ctx_destroy(e, x);  /* a failed queue is not reused */
    else ctx_give(e, x);
    ttc_plan_release(e, p);
    return s;
}

/* ---- execution on given device buffers (CUDA-shared memory): no upload, no download ---- */
#include "../backend/opencl/external_memory.h"

static ttc_status check_bytes(const ttc_engine *e, const ttc_plan *p, const size_t *in_bytes, const size_t *out_bytes,
                              const cl_mem *in_mem, const cl_mem *out_mem) {
    for (int32_t i = 0; i < e->n_in; i++) {
        size_t need = (size_t)p->res[e->k->inputs[i]].numel * ttc_dtype_size(e->ins[i].dtype);
        if (in_bytes[i] != need)
            return ttc_fail(TTC_ERR_INPUT, "input %s: %zu bytes given, %zu expected for its shape", e->ins[i].name,
                            in_bytes[i], need);
        if (need && !in_mem[i]) return ttc_fail(TTC_ERR_INPUT, "input %s: no buffer", e->ins[i].name);
    }
    for (int32_t i = 0; i < e->n_out; i++) {
        size_t need = (size_t)p->res[e->k->outputs[i]].numel * ttc_dtype_size(e->outs[i].dtype);
        if (out_bytes[i] != need)
            return ttc_fail(TTC_ERR_INPUT, "output %s: buffer has %zu bytes, %zu needed", e->outs[i].name, out_bytes[i], need);
        if (need && !out_mem[i]) return ttc_fail(TTC_ERR_INPUT, "output %s: no buffer", e->outs[i].name);
    }
    return TTC_OK;
}

ttc_status ttc_engine_execute_buffers(ttc_engine *e, const cl_mem *in_mem, const size_t *in_bytes,
                                      const int64_t (*in_shapes)[TTC_MAX_RANK], const cl_mem *out_mem,
                                      const size_t *out_bytes, const ttc_xmem *signal, uint32_t signal_value,
                                      bool *finished) {
    int64_t sv[64] = {0};
    *finished = true;
    if (e->k->n_syms > 64) return ttc_fail(TTC_ERR_UNSUPPORTED, "more than 64 symbols");
    TTC_TRY(ttc_engine_symbols_from_shapes(e, in_shapes, sv));
    ttc_plan *p;
    TTC_TRY(ttc_engine_get_plan(e, sv, &p));
    ttc_status s = check_bytes(e, p, in_bytes, out_bytes, in_mem, out_mem);
    ttc_exec_ctx *x = NULL;
    if (s == TTC_OK) s = ctx_take(e, &x);
    if (s != TTC_OK) { ttc_plan_release(e, p); return s; }
    cl_mem ext[64];
    uint32_t n_ext = 0;
    for (int32_t i = 0; i < e->n_in && n_ext < 64; i++) if (in_mem[i]) ext[n_ext++] = in_mem[i];
    for (int32_t i = 0; i < e->n_out && n_ext < 64; i++) if (out_mem[i]) ext[n_ext++] = out_mem[i];
    cl_int err = CL_SUCCESS;
    s = ensure_buf(e, &x->arena, &x->arena_cap, p->arena_bytes, "arena");
    size_t scratch = ttc_native_scratch_bytes(e, p);
    if (s == TTC_OK && scratch) s = ensure_buf(e, &x->scratch, &x->scratch_cap, scratch, "native scratch");
    static const cl_int zero = 0;
    cl_int flag = 0;
    if (s == TTC_OK && x->errf) {
        err = TTC_CL(EnqueueWriteBuffer)(x->q, x->errf, CL_FALSE, 0, sizeof zero, &zero, 0, NULL, NULL);
        if (err != CL_SUCCESS)
            s = ttc_fail_cl(err, "clEnqueueWriteBuffer(index error flag) failed: %s", ttc_cl_error_name(err));
    }
    if (s == TTC_OK) s = ttc_xmem_acquire(x->q, ext, n_ext, false);
    for (int32_t ki = 0; ki < e->cg.n_kernels && s == TTC_OK; ki++) {
        if (p->skip[ki]) continue;
        const ttc_kspec *ks = &e->cg.kernels[ki];
        if (ks->native) s = ttc_native_launch(e, p, ki, x->q, in_mem, out_mem, x->arena, x->scratch, NULL);
        if (ks->native && !ks->native_epi) continue;
        if (s == TTC_OK) s = ttc_exec_set_args(e, p, ki, x->kernels[ki], in_mem, out_mem, x->arena, x->errf);
        if (s == TTC_OK) s = ttc_exec_enqueue(e, p, ki, x->q, x->kernels[ki]);
    }
    if (s == TTC_OK) s = ttc_xmem_acquire(x->q, ext, n_ext, true);
    bool wait = !signal || x->errf || s != TTC_OK;
    if (s == TTC_OK && x->errf) {
        err = TTC_CL(EnqueueReadBuffer)(x->q, x->errf, CL_FALSE, 0, sizeof flag, &flag, 0, NULL, NULL);
        if (err != CL_SUCCESS)
            s = ttc_fail_cl(err, "clEnqueueReadBuffer(index error flag) failed: %s", ttc_cl_error_name(err));
    }
    /* signalled even after a wait: the caller's CUDA stream waits for the value either way */
    if (s == TTC_OK && signal) s = ttc_xmem_signal(x->q, signal, signal_value);
    if (wait) {
        err = TTC_CL(Finish)(x->q);
        if (err != CL_SUCCESS && s == TTC_OK)
            s = ttc_fail_cl(err, "clFinish(%s) failed: %s", e->name, ttc_cl_error_name(err));
    }
    *finished = wait;
    if (s == TTC_OK && flag > 0 && flag <= e->k->n_ops)
        s = ttc_fail(TTC_ERR_INPUT, "node %s: index out of range (an index tensor holds a value outside the dim "
                     "it indexes); the outputs of this call are not valid", e->k->ops[flag - 1].name);
    else if (s == TTC_OK && flag)
        s = ttc_fail(TTC_ERR_INTERNAL, "engine %s: index error flag holds %d", e->name, (int)flag);
    if (err != CL_SUCCESS) ctx_destroy(e, x);
    else ctx_give(e, x);
    ttc_plan_release(e, p);
    return s;
}
