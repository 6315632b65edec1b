/* The generic side of the backend interface: the registry (devices of every backend in one
 * list), device selection, probe caching, and dispatch through each handle's function table. */
#include "backend_impl.h"
#include "blas.h"
#include "../target/knobs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const ttc_backend_iface *const backends[] = {&ttc_opencl_backend};
#define N_BACKENDS ((int32_t)(sizeof backends / sizeof backends[0]))

static pthread_once_t list_once = PTHREAD_ONCE_INIT;
static ttc_device **all;
static int32_t n_all;
static ttc_status list_status;
static char list_msg[1024];
static int32_t list_code;
static const ttc_backend_iface *list_be;   /* whose error list_code is */

/* Devices of every backend; the first backend's error is kept for when none has a device. */
static void list_build(void) {
    for (int32_t b = 0; b < N_BACKENDS; b++) {
        ttc_device *const *ds;
        int32_t n;
        ttc_status s = backends[b]->devices(&ds, &n);
        if (s != TTC_OK) {
            if (list_status == TTC_OK) {
                list_status = s;
                list_code = ttc_last_device_code();
                list_be = backends[b];
                snprintf(list_msg, sizeof list_msg, "%s", ttc_last_error());
            }
            ttc_clear_error();
            continue;
        }
        ttc_device **grown = realloc(all, sizeof *all * (size_t)(n_all + n));
        if (!grown) { list_status = TTC_ERR_NOMEM; snprintf(list_msg, sizeof list_msg, "out of memory"); return; }
        all = grown;
        for (int32_t i = 0; i < n; i++) {
            all[n_all] = ds[i];
            ds[i]->facts.index = n_all++;
        }
    }
    if (n_all > 0) list_status = TTC_OK;
}

ttc_status ttc_device_list(ttc_device *const **devs, int32_t *n) {
    pthread_once(&list_once, list_build);
    if (n_all == 0) {
        *devs = NULL;
        *n = 0;
        if (list_status == TTC_ERR_DEVICE && list_be)
            return ttc_fail_device(list_be->name, list_code, list_be->error_name(list_code), "%s", list_msg);
        return ttc_fail(list_status ? list_status : TTC_ERR_DEVICE, "%s", list_msg[0] ? list_msg : "no device");
    }
    *devs = all;
    *n = n_all;
    return TTC_OK;
}

static bool contains_ci(const char *hay, const char *needle) {
    size_t nl = strlen(needle);
    for (const char *p = hay; *p; p++)
        if (strncasecmp(p, needle, nl) == 0) return true;
    return nl == 0;
}

ttc_status ttc_device_select(const char *spec, ttc_device **out) {
    ttc_device *const *ds;
    int32_t n;
    TTC_TRY(ttc_device_list(&ds, &n));
    const char *from = "device";
    if (!spec || !*spec) {
        spec = ttc_knob_raw(TTC_KNOB_DEVICE);
        from = "TORCHTRT_C_DEVICE";
    }
    if (!spec || !*spec) {
        for (int32_t i = 0; i < n; i++)
            if (ds[i]->facts.is_gpu) { *out = ds[i]; return TTC_OK; }
        *out = ds[0];
        return TTC_OK;
    }
    char *end = NULL;
    long idx = strtol(spec, &end, 10);
    bool is_index = end != spec && *end == 0;
    if (is_index && idx >= 0 && idx < n) {
        *out = ds[idx];
        return TTC_OK;
    }
    bool want_gpu = !strcasecmp(spec, "gpu"), want_cpu = !strcasecmp(spec, "cpu");
    for (int32_t i = 0; !is_index && i < n; i++) {
        const ttc_target *f = &ds[i]->facts;
        if ((want_gpu && f->is_gpu) || (want_cpu && f->is_cpu) ||
            (!want_gpu && !want_cpu && (contains_ci(f->name, spec) || contains_ci(f->platform, spec)))) {
            *out = ds[i];
            return TTC_OK;
        }
    }
    /* never a silent choice: the setting names no device, so say which there are */
    ttc_sbuf b = {0};
    for (int32_t i = 0; i < n; i++)
        ttc_sbuf_printf(&b, "%s[%d] %s (%s)", i ? ", " : "", i, ds[i]->facts.name, ds[i]->facts.platform);
    ttc_status s = is_index ? ttc_fail(TTC_ERR_NO_DEVICE, "%s=%s: device index out of range (%d devices): %s", from,
                                       spec, n, b.data ? b.data : "")
                            : ttc_fail(TTC_ERR_NO_DEVICE, "%s=%s matches no %s device; devices: %s", from, spec,
                                       ds[0]->be->name, b.data ? b.data : "");
    ttc_sbuf_free(&b);
    return s;
}

int32_t ttc_device_default_index(void) {
    ttc_device *d;
    if (ttc_device_select(NULL, &d) != TTC_OK) return -1;
    return d->facts.index;
}

const ttc_target *ttc_device_facts(const ttc_device *d) { return &d->facts; }

/* A probe runs outside the lock (it may build programs, which take the device's lock); two
 * threads may both probe once, with the same answer. */
static bool probed(ttc_device *d, bool *done, bool *ok, bool (*probe)(ttc_device *)) {
    pthread_mutex_lock(&d->lock);
    bool have = *done, v = *ok;
    pthread_mutex_unlock(&d->lock);
    if (have) return v;
    v = probe && probe(d);
    ttc_clear_error();
    pthread_mutex_lock(&d->lock);
    *ok = v;
    *done = true;
    pthread_mutex_unlock(&d->lock);
    return v;
}

bool ttc_device_half_compute(ttc_device *d) { return probed(d, &d->half_probed, &d->half_ok, d->be->probe_half); }
bool ttc_device_host_in_place(ttc_device *d) {
    return probed(d, &d->in_place_probed, &d->in_place_ok, d->be->probe_host_in_place);
}
ttc_device *ttc_device_caller_thread(ttc_device *d) {
    return d && d->be->caller_thread ? d->be->caller_thread(d) : NULL;
}

bool ttc_device_uuid(ttc_device *d, unsigned char uuid[16]) {
    memset(uuid, 0, 16);
    return d->be->device_uuid && d->be->device_uuid(d, uuid);
}

bool ttc_device_pci(ttc_device *d, ttc_pci_address *pci) {
    memset(pci, 0, sizeof *pci);
    return d->be->device_pci && d->be->device_pci(d, pci);
}
bool ttc_device_host_tasks(ttc_device *d) {
    return d->be->host_task && probed(d, &d->host_probed, &d->host_ok, d->be->probe_host_tasks);
}

/* The target: the device's facts, with the decisions target/target.c makes from the knobs
 * and from these probes (asked only where a decision needs them). */
static bool probe_host_tasks(void *d) { return ttc_device_host_tasks(d); }
static bool probe_host_in_place(void *d) { return ttc_device_host_in_place(d); }
static bool probe_caller_thread(void *d) { return ttc_device_caller_thread(d) != NULL; }
ttc_status ttc_target_make(ttc_device *d, ttc_target *out) {
    const ttc_target_probes pr = {d, probe_host_tasks, probe_host_in_place, probe_caller_thread, ttc_blas_available};
    return ttc_target_decide(&d->facts, &pr, out);
}

/* ---- dispatch ---- */
static ttc_status unsupported(const ttc_device *d, const char *what) {
    return ttc_fail(TTC_ERR_UNSUPPORTED, "%s: not supported by the %s backend on %s", what, d->be->name,
                    d->facts.name);
}

ttc_status ttc_buf_alloc(ttc_device *d, size_t n, const void *init, const char *what, ttc_buf **out) {
    *out = NULL;
    return d->be->buf_alloc(d, n, init, what, out);
}
ttc_status ttc_buf_wrap_host(ttc_device *d, void *host, size_t n, bool read_only, const char *what, ttc_buf **out) {
    *out = NULL;
    return d->be->buf_wrap_host(d, host, n, read_only, what, out);
}
ttc_status ttc_buf_import(ttc_device *d, const ttc_external_mem *m, const char *what, ttc_buf **out) {
    *out = NULL;
    if (!d->be->buf_import) return unsupported(d, "importing external memory");
    return d->be->buf_import(d, m, what, out);
}
void ttc_buf_free(ttc_buf *b) { if (b) b->dev->be->buf_free(b); }
size_t ttc_buf_size(const ttc_buf *b) { return b ? b->size : 0; }
ttc_status ttc_buf_write(ttc_queue *q, ttc_buf *b, size_t off, size_t n, const void *src, bool blocking) {
    return q->dev->be->buf_write(q, b, off, n, src, blocking);
}
ttc_status ttc_buf_read(ttc_queue *q, ttc_buf *b, size_t off, size_t n, void *dst, bool blocking) {
    return q->dev->be->buf_read(q, b, off, n, dst, blocking);
}
ttc_status ttc_buf_copy(ttc_queue *q, ttc_buf *src, ttc_buf *dst, size_t n) { return q->dev->be->buf_copy(q, src, dst, n); }
ttc_status ttc_buf_sync_host(ttc_queue *q, ttc_buf *b, void *host, size_t n) {
    return q->dev->be->buf_sync_host(q, b, host, n);
}

ttc_status ttc_program_build(ttc_device *d, const char *src, const char *options, const char *cache_dir,
                             ttc_program **out) {
    *out = NULL;
    return d->be->program_build(d, src, options, cache_dir, out);
}
ttc_status ttc_program_from_binary(ttc_device *d, const unsigned char *bin, size_t len, const char *options,
                                   ttc_program **out) {
    *out = NULL;
    if (ttc_program_parts_binary(bin, len)) return ttc_program_parts_from_binary(d, bin, len, options, out);
    return d->be->program_from_binary(d, bin, len, options, out);
}
void ttc_program_free(ttc_program *p) {
    if (p && p->n_parts) ttc_program_parts_free(p);
    else if (p) p->dev->be->program_free(p);
}
const unsigned char *ttc_program_binary(const ttc_program *p, size_t *len) {
    *len = p ? p->binary_len : 0;
    return p ? p->binary : NULL;
}
const char *ttc_program_origin(const ttc_program *p) {
    return !p ? "none" : p->from_binary ? "blob" : p->from_cache ? "cache" : "compiled";
}

ttc_status ttc_kernel_new(ttc_program *p, const char *name, ttc_kernel **out) {
    *out = NULL;
    if (p->n_parts) TTC_TRY(ttc_program_parts_kernel(p, name, &p));
    return p->dev->be->kernel_new(p, name, out);
}
void ttc_kernel_free(ttc_kernel *k) { if (k) k->dev->be->kernel_free(k); }
const char *ttc_kernel_name(const ttc_kernel *k) { return k->name; }
ttc_status ttc_kernel_set_buf(ttc_kernel *k, uint32_t i, ttc_buf *b) { return k->dev->be->kernel_set_buf(k, i, b); }
ttc_status ttc_kernel_set_i32(ttc_kernel *k, uint32_t i, int32_t v) { return k->dev->be->kernel_set_i32(k, i, v); }
ttc_status ttc_kernel_set_local(ttc_kernel *k, uint32_t i, size_t bytes) {
    /* kernels sized for the CUDA launch path's dynamic shared memory (the warpgroup-MMA GEMM
     * tiles on NVIDIA) must not reach OpenCL's launch, which would fail with a bare error code */
    uint64_t lm = k->dev->facts.local_mem;
    if (lm && bytes > lm)
        return ttc_fail(TTC_ERR_UNSUPPORTED, "kernel %s (argument %u) needs %zu bytes of local memory and device %s "
                        "allows %llu per work-group: the engine holds a kernel that only the CUDA launch path runs "
                        "(call it with CUDA tensors, or build it with another GEMM tile)", k->name, (unsigned)i, bytes,
                        k->dev->facts.name, (unsigned long long)lm);
    return k->dev->be->kernel_set_local(k, i, bytes);
}

ttc_status ttc_queue_new(ttc_device *d, bool profiling, ttc_queue **out) {
    *out = NULL;
    return d->be->queue_new(d, profiling, out);
}
void ttc_queue_free(ttc_queue *q) { if (q) q->dev->be->queue_free(q); }
ttc_status ttc_queue_finish(ttc_queue *q) { return q->dev->be->queue_finish(q); }
ttc_status ttc_queue_hold(ttc_queue *q) { return q->dev->be->hold ? q->dev->be->hold(q) : TTC_OK; }
ttc_status ttc_queue_launch(ttc_queue *q, ttc_kernel *k, int32_t dims, const size_t *gws, const size_t *lws,
                            ttc_event **ev) {
    if (ev) *ev = NULL;
    return q->dev->be->launch(q, k, dims, gws, lws, ev);
}
ttc_status ttc_queue_host_task(ttc_queue *q, ttc_host_fn fn, const void *args, size_t args_size,
                               ttc_buf *const *bufs, int32_t n_bufs, const char *what, ttc_event **ev) {
    if (ev) *ev = NULL;
    if (!q->dev->be->host_task) return unsupported(q->dev, "host tasks");
    if (args_size > TTC_HOST_TASK_ARGS || n_bufs < 0 || n_bufs > TTC_HOST_TASK_BUFS)
        return ttc_fail(TTC_ERR_INTERNAL, "host task %s: %zu argument bytes and %d buffers (at most %d and %d)", what,
                        args_size, (int)n_bufs, TTC_HOST_TASK_ARGS, TTC_HOST_TASK_BUFS);
    return q->dev->be->host_task(q, fn, args, args_size, bufs, n_bufs, what, ev);
}
ttc_status ttc_queue_acquire_external(ttc_queue *q, ttc_buf *const *bufs, int32_t n, bool release) {
    if (!q->dev->be->acquire_external || n <= 0) return TTC_OK;
    return q->dev->be->acquire_external(q, bufs, n, release);
}
ttc_status ttc_queue_signal(ttc_queue *q, ttc_buf *flag, uint32_t v) {
    if (!q->dev->be->signal) return unsupported(q->dev, "signalling another API");
    return q->dev->be->signal(q, flag, v);
}
ttc_status ttc_queue_record_begin(ttc_queue *q) {
    if (!q->dev->be->record_begin) return unsupported(q->dev, "recording launches");
    return q->dev->be->record_begin(q);
}
ttc_status ttc_queue_record_end(ttc_queue *q, ttc_recording **out) {
    *out = NULL;
    if (!q->dev->be->record_end) return unsupported(q->dev, "recording launches");
    return q->dev->be->record_end(q, out);
}
ttc_status ttc_queue_replay(ttc_queue *q, ttc_recording *r) {
    if (!q->dev->be->replay) return unsupported(q->dev, "replaying recorded launches");
    return q->dev->be->replay(q, r);
}
void ttc_recording_free(ttc_recording *r) {
    if (r && r->dev->be->recording_free) r->dev->be->recording_free(r);
}

ttc_status ttc_event_times(ttc_event *ev, uint64_t *start_ns, uint64_t *end_ns) {
    return ev->dev->be->event_times(ev, start_ns, end_ns);
}
void ttc_event_free(ttc_event *ev) { if (ev) ev->dev->be->event_free(ev); }

char *ttc_cache_dir(const char *cache_dir) {
    if (cache_dir) return *cache_dir ? ttc_strdup(cache_dir) : NULL;
    const char *env = ttc_knob_raw(TTC_KNOB_CACHE_DIR);
    if (env) return *env ? ttc_strdup(env) : NULL;
    const char *home = ttc_env_other("HOME");
    if (!home || !*home) return NULL;
    return ttc_strfmt("%s/.cache/torchtrt_c", home);
}

ttc_memstats ttc_memstats_get(void) {
    ttc_memstats s;
    memset(&s, 0, sizeof s);
    for (int32_t b = 0; b < N_BACKENDS; b++)
        if (backends[b]->memstats) backends[b]->memstats(&s);
    return s;
}

void ttc_program_stats_get(ttc_program_stats *out) {
    memset(out, 0, sizeof *out);
    for (int32_t b = 0; b < N_BACKENDS; b++)
        if (backends[b]->program_stats) backends[b]->program_stats(out);
    ttc_build_procs_stats_add(out);
}
