/* Host tasks as OpenCL native kernels (clEnqueueNativeKernel, CL_EXEC_NATIVE_KERNEL: PoCL).
 *
 * The implementation copies the argument block and, before the function runs, replaces the
 * cl_mem handles at the given places in the copy (args_mem_loc) by host pointers. PoCL 3 fills
 * args_mem_loc[i] from its own list of the command's buffers, deduplicated and sorted by
 * creation, rather than from mem_list[i]; PoCL 5 deduplicates keeping the order. So mem_list
 * is made so that all of them agree: each buffer once, oldest first (ttc_cl_mem_seq), and
 * the task's own buffer order is restored through slot[] when the trampoline runs. */
#include "cl.h"

#include <string.h>

typedef struct trampoline {
    ttc_host_fn fn;
    void *mem[TTC_HOST_TASK_BUFS];       /* distinct buffers, oldest first */
    int8_t slot[TTC_HOST_TASK_BUFS];     /* the task's buffer i is mem[slot[i]] */
    int32_t n_bufs;
    size_t args_size;
    _Alignas(16) unsigned char args[TTC_HOST_TASK_ARGS];
} trampoline;

static void CL_CALLBACK trampoline_run(void *arg) {
    trampoline *t = arg;
    void *ptrs[TTC_HOST_TASK_BUFS];
    for (int32_t i = 0; i < t->n_bufs; i++) ptrs[i] = t->mem[t->slot[i]];
    t->fn(t->args, ptrs);
}

/* Distinct buffers of slots[0..n), oldest first, into mems; slot[i] indexes mems. */
static cl_uint mem_list(const cl_mem *slots, int32_t n, cl_mem *mems, int8_t *slot) {
    cl_uint m = 0;
    for (int32_t i = 0; i < n; i++) {
        bool seen = false;
        for (cl_uint j = 0; j < m; j++) seen = seen || mems[j] == slots[i];
        if (!seen) mems[m++] = slots[i];
    }
    uint64_t seq[TTC_HOST_TASK_BUFS];
    for (cl_uint i = 0; i < m; i++) seq[i] = ttc_cl_mem_seq(mems[i]);
    for (cl_uint i = 1; i < m; i++)  /* insertion sort by creation */
        for (cl_uint j = i; j > 0 && seq[j - 1] > seq[j]; j--) {
            uint64_t ts = seq[j];
            seq[j] = seq[j - 1];
            seq[j - 1] = ts;
            cl_mem t = mems[j];
            mems[j] = mems[j - 1];
            mems[j - 1] = t;
        }
    for (int32_t i = 0; i < n; i++)
        for (cl_uint j = 0; j < m; j++)
            if (mems[j] == slots[i]) slot[i] = (int8_t)j;
    return m;
}

ttc_status ttc_cl_host_task(ttc_queue *q, ttc_host_fn fn, const void *args, size_t args_size, ttc_buf *const *bufs,
                            int32_t n_bufs, const char *what, ttc_event **ev) {
    trampoline *t = ttc_calloc(1, sizeof *t);  /* the implementation copies it: freed below */
    if (!t) return TTC_ERR_NOMEM;
    t->fn = fn;
    t->n_bufs = n_bufs;
    t->args_size = args_size;
    if (args_size) memcpy(t->args, args, args_size);
    cl_mem slots[TTC_HOST_TASK_BUFS], mems[TTC_HOST_TASK_BUFS];
    const void *locs[TTC_HOST_TASK_BUFS];
    for (int32_t i = 0; i < n_bufs; i++) slots[i] = ttc_cl_mem(bufs[i]);
    cl_uint n_mem = mem_list(slots, n_bufs, mems, t->slot);
    for (cl_uint j = 0; j < n_mem; j++) {
        t->mem[j] = mems[j];
        locs[j] = &t->mem[j];
    }
    cl_event e = NULL;
    /* only the used prefix of the argument block is copied */
    size_t size = offsetof(trampoline, args) + args_size;
    const cl_event *wait;
    cl_uint n_wait = ttc_cl_queue_gate(q, &wait);
    cl_int err = TTC_CL(EnqueueNativeKernel)(ttc_cl_q(q), trampoline_run, t, size, n_mem, n_mem ? mems : NULL,
                                             n_mem ? locs : NULL, n_wait, wait, ev ? &e : NULL);
    if (err == CL_SUCCESS) ttc_cl_queue_gate_used(q, n_wait);
    free(t);
    if (err != CL_SUCCESS)
        return ttc_fail_cl(err, "clEnqueueNativeKernel(%s) failed: %s", what, ttc_cl_error_name(err));
    return ev ? ttc_cl_event_wrap(q->dev, e, ev) : TTC_OK;
}

/* The probe's task: reads one int from each of its three buffers. */
typedef struct probe_args { int *seen; } probe_args;

static void probe_run(void *arg, void *const *ptrs) {
    const probe_args *a = arg;
    for (int i = 0; i < 3; i++) a->seen[i] = ptrs[i] ? *(const int *)ptrs[i] : -1;
}

/* Whether a host task given three buffers (the last made first) sees each at its place;
 * any failure is a "no". */
bool ttc_cl_probe_host_tasks(ttc_device *d) {
    if (!d->facts.host_tasks) return false;
    ttc_queue *q = NULL;
    ttc_buf *bufs[3] = {NULL, NULL, NULL};
    int vals[3] = {11, 22, 33}, seen[3] = {0, 0, 0};
    bool ok = ttc_queue_new(d, false, &q) == TTC_OK;
    for (int i = 2; i >= 0 && ok; i--) ok = ttc_buf_alloc(d, sizeof(int), &vals[i], "host task probe", &bufs[i]) == TTC_OK;
    if (ok) {
        probe_args a = {seen};
        ok = ttc_cl_host_task(q, probe_run, &a, sizeof a, bufs, 3, "host task probe", NULL) == TTC_OK &&
             ttc_queue_finish(q) == TTC_OK && seen[0] == 11 && seen[1] == 22 && seen[2] == 33;
    }
    for (int i = 0; i < 3; i++) ttc_buf_free(bufs[i]);
    ttc_queue_free(q);
    ttc_clear_error();
    return ok;
}
