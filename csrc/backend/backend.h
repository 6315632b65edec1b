/*
 * The device backend interface: what the engine (csrc/engine/) uses to run on a device,
 * without naming the API underneath. Handles are opaque; each call dispatches through the
 * function table of the backend that made the handle (backend_impl.h). One backend exists
 * today, OpenCL (csrc/backend/opencl/); README.md says what a second one implements.
 *
 *   ttc_device *d;
 *   TTC_TRY(ttc_device_select(NULL, &d));                 // TORCHTRT_C_DEVICE, else GPU, else CPU
 *   ttc_program *p;
 *   TTC_TRY(ttc_program_build(d, src, "-cl-std=CL1.2", NULL, &p));   // binary cache inside
 *   ttc_kernel *k;  ttc_queue *q;  ttc_buf *b;
 *   TTC_TRY(ttc_kernel_new(p, "k0", &k));
 *   TTC_TRY(ttc_queue_new(d, false, &q));
 *   TTC_TRY(ttc_buf_alloc(d, 64, NULL, "x", &b));
 *   TTC_TRY(ttc_kernel_set_buf(k, 0, b));
 *   size_t gws[1] = {16};
 *   TTC_TRY(ttc_queue_launch(q, k, 1, gws, NULL, NULL));
 *   TTC_TRY(ttc_queue_finish(q));
 *
 * Roles: a device (facts in its target, ttc_target_make), buffers (device memory, host-backed
 * memory, imported external memory), programs (compiled source, cached binaries), kernels (an
 * entry point with its arguments), queues (in-order: launches, host tasks, copies, events,
 * record/replay). Devices live for the process; every other handle has a create/free pair.
 * A queue and the kernels set on it belong to one thread at a time; devices, programs and
 * buffers may be shared between threads.
 */
#ifndef TTC_BACKEND_H
#define TTC_BACKEND_H

#include "../target/target.h"

typedef struct ttc_buf ttc_buf;
typedef struct ttc_queue ttc_queue;
typedef struct ttc_program ttc_program;
typedef struct ttc_kernel ttc_kernel;
typedef struct ttc_event ttc_event;
typedef struct ttc_recording ttc_recording;

/* ---- devices ---- */
/* All devices of all backends (discovered once; pointers stay valid for the process). */
ttc_status ttc_device_list(ttc_device *const **devs, int32_t *n);
/* spec: NULL/"" (TORCHTRT_C_DEVICE, else the first GPU, else the first device), an index
 * ("0"), "cpu"/"gpu", or a substring of the device or platform name. */
ttc_status ttc_device_select(const char *spec, ttc_device **out);
int32_t ttc_device_default_index(void);       /* -1 when there is no device (error set) */
/* The device's facts (probes and knobs not applied: see ttc_target_make). */
const ttc_target *ttc_device_facts(const ttc_device *d);
/* The target of device d (never NULL): its facts with the probes and the environment's knobs
 * applied (target/target.h, ttc_target_decide). Fails only on a malformed knob
 * (TTC_ERR_INVALID_ARG naming it). */
ttc_status ttc_target_make(ttc_device *d, ttc_target *out);
/* Whether generated code may compute in half on d (probed once; never fails: no is no). */
bool ttc_device_half_compute(ttc_device *d);
/* Whether d's queues run host tasks that see buffers as host pointers (probed once). */
bool ttc_device_host_tasks(ttc_device *d);
/* Whether d's host-backed buffers (ttc_buf_wrap_host) are the host memory itself: kernels'
 * writes are there after a finish and host writes are seen by the next launch, with no
 * ttc_buf_sync_host (probed once; never fails, a failed probe is "no"). */
bool ttc_device_host_in_place(ttc_device *d);
/* The device's UUID where the backend and driver report one (cl_khr_device_uuid): matches the
 * device with the same GPU under another API (CUDA). Never fails: false is "unknown". */
bool ttc_device_uuid(ttc_device *d, unsigned char uuid[16]);
/* The device's PCI address where the driver reports one (cl_khr_pci_bus_info, or NVIDIA's
 * cl_nv_device_attribute_query): the other way to find the same GPU under CUDA. Never fails:
 * false is "unknown". */
typedef struct ttc_pci_address { uint32_t domain, bus, device, function; } ttc_pci_address;
bool ttc_device_pci(ttc_device *d, ttc_pci_address *pci);

/* A companion of d whose queues run each launch to completion on the thread that enqueues it,
 * with no hand-over to the device's worker threads, or NULL where there is none (d itself
 * when d is one). It shares d's buffers (and the context programs are made in) but builds
 * programs of its own. On PoCL: the basic device beside the pthread one (backend/opencl/
 * device.c). Small engines run there (engine/exec.c); ttc_queue_hold is a no-op on it. */
ttc_device *ttc_device_caller_thread(ttc_device *d);

/* ---- buffers ---- */
/* n bytes of device memory (n == 0: 16 bytes, so that empty tensors have a buffer);
 * init: n bytes copied in, or NULL. what names the buffer in error messages. */
ttc_status ttc_buf_alloc(ttc_device *d, size_t n, const void *init, const char *what, ttc_buf **out);
/* A buffer over the caller's host memory (devices with target.host_memory; no copy). The
 * memory must outlive the buffer; after kernels wrote it, ttc_buf_sync_host makes it current. */
ttc_status ttc_buf_wrap_host(ttc_device *d, void *host, size_t n, bool read_only, const char *what, ttc_buf **out);
/* External memory (a CUDA allocation exported as a file descriptor, ...): backend specific,
 * TTC_ERR_UNSUPPORTED where the backend or device cannot import. */
typedef struct ttc_external_mem {
    int32_t kind;             /* TTC_EXTERNAL_* */
    int64_t handle;           /* e.g. an opaque file descriptor */
    size_t size, offset;
} ttc_external_mem;
enum { TTC_EXTERNAL_OPAQUE_FD = 1 };
ttc_status ttc_buf_import(ttc_device *d, const ttc_external_mem *m, const char *what, ttc_buf **out);
void ttc_buf_free(ttc_buf *b);                 /* NULL: nothing */
size_t ttc_buf_size(const ttc_buf *b);
/* Transfers on q (ordered with the queue's other work); blocking waits for completion. */
ttc_status ttc_buf_write(ttc_queue *q, ttc_buf *b, size_t off, size_t n, const void *src, bool blocking);
ttc_status ttc_buf_read(ttc_queue *q, ttc_buf *b, size_t off, size_t n, void *dst, bool blocking);
ttc_status ttc_buf_copy(ttc_queue *q, ttc_buf *src, ttc_buf *dst, size_t n);
/* A host-wrapped buffer's memory holds what the queue's kernels wrote (waits). */
ttc_status ttc_buf_sync_host(ttc_queue *q, ttc_buf *b, void *host, size_t n);

/* ---- programs ---- */
/* Builds src for d; cache_dir NULL: ttc_cache_dir's default, "": no cache. A failed build is
 * TTC_ERR_BUILD with the log. */
ttc_status ttc_program_build(ttc_device *d, const char *src, const char *options, const char *cache_dir,
                             ttc_program **out);
/* From a stored binary; fails (no error kept) when the device rejects it. */
ttc_status ttc_program_from_binary(ttc_device *d, const unsigned char *bin, size_t len, const char *options,
                                   ttc_program **out);
void ttc_program_free(ttc_program *p);
/* The device binary (for engine blobs; NULL when the target keeps none). */
const unsigned char *ttc_program_binary(const ttc_program *p, size_t *len);
/* "compiled", "cache" (on-disk binary) or "blob" (a given binary). */
const char *ttc_program_origin(const ttc_program *p);
/* One program from several sources built in parallel by up to `threads` threads
 * (program_parts.c): part i is a complete program source defining the kernels named
 * kernels[0..n_kernels); ttc_kernel_new finds a kernel in its part. Its binary (when the
 * target keeps binaries) is a container of the parts' binaries that ttc_program_from_binary
 * reads back. One part is an ordinary ttc_program_build. */
typedef struct ttc_program_part {
    const char *src;
    const char *const *kernels;
    int32_t n_kernels;
} ttc_program_part;
ttc_status ttc_program_build_parts(ttc_device *d, const ttc_program_part *parts, int32_t n, const char *options,
                                   const char *cache_dir, int32_t threads, ttc_program **out);
/* Compiles those of srcs[0..n) that are not yet in the binary cache in up to `procs` worker
 * processes (build_procs.c), so that the caller's own ttc_program_build calls then load them
 * from the cache. For drivers that compile one program at a time per process (NVIDIA's
 * OpenCL). Best effort: it never fails the caller (a source a worker could not build is simply
 * built, and its error reported, by the caller's build); a no-op where the device keeps no
 * binaries, there is no cache directory, procs < 2, or no worker command was set. At most one
 * worker per bytes_per_proc bytes of uncached source (0: no limit), none below two: small
 * programs build faster in process than a worker starts. */
void ttc_program_prebuild(ttc_device *d, const char *const *srcs, int32_t n, const char *options,
                          const char *cache_dir, int32_t procs, int64_t bytes_per_proc);
/* The worker command: a Python interpreter and the path of this extension module (set by the
 * binding at import; until then ttc_program_prebuild does nothing). */
void ttc_build_procs_set_worker(const char *python, const char *module_path);
/* The start of the last failed worker's output ("" when none failed). */
const char *ttc_build_procs_last_error(void);
/* The worker's side (the binding's _build_worker): builds every source of a job file written by
 * ttc_program_prebuild into the cache. 0 when every build succeeded. */
int ttc_build_procs_worker(const char *job_path);

/* Parts of a program built in parts (0 for any other program), and part i's own program. */
int32_t ttc_program_n_parts(const ttc_program *p);
const ttc_program *ttc_program_part_program(const ttc_program *p, int32_t i);
/* The part defining kernel `name` (-1: none, or p is not built in parts). */
int32_t ttc_program_part_of(const ttc_program *p, const char *name);

/* ---- kernels ---- */
ttc_status ttc_kernel_new(ttc_program *p, const char *name, ttc_kernel **out);
void ttc_kernel_free(ttc_kernel *k);
const char *ttc_kernel_name(const ttc_kernel *k);
ttc_status ttc_kernel_set_buf(ttc_kernel *k, uint32_t i, ttc_buf *b);
ttc_status ttc_kernel_set_i32(ttc_kernel *k, uint32_t i, int32_t v);
/* A __local pointer argument: bytes of local memory per work-group for it. */
ttc_status ttc_kernel_set_local(ttc_kernel *k, uint32_t i, size_t bytes);

/* ---- queues ---- */
/* An in-order queue; profiling: its events carry start/end times. */
ttc_status ttc_queue_new(ttc_device *d, bool profiling, ttc_queue **out);
void ttc_queue_free(ttc_queue *q);             /* waits for its work first */
ttc_status ttc_queue_finish(ttc_queue *q);
/* Batched submission: the launches (kernels, host tasks) enqueued after a hold start only at
 * the queue's next submission point: ttc_queue_finish, or any other operation on q (transfers,
 * signals, external acquire/release, freeing it), which submits them first. Where the thread
 * enqueuing shares the cores with the device's workers (PoCL: target.batch_launch), enqueuing
 * a whole engine before its first kernel wakes them is cheaper (10 launches: 37 us with the
 * workers running, 5-6 us held). A no-op on backends without it (launches start as they come). */
ttc_status ttc_queue_hold(ttc_queue *q);
/* dims 1..3; lws NULL: the driver's choice. ev (may be NULL): the launch's event. */
ttc_status ttc_queue_launch(ttc_queue *q, ttc_kernel *k, int32_t dims, const size_t *gws, const size_t *lws,
                            ttc_event **ev);
/* A host function run in queue order, fn(args, ptrs): args is a copy of args_size bytes
 * (at most TTC_HOST_TASK_ARGS), ptrs[i] the host address of bufs[i] (the same buffer may
 * appear twice). Only where ttc_device_host_tasks. */
#define TTC_HOST_TASK_ARGS 4096
#define TTC_HOST_TASK_BUFS 20
typedef void (*ttc_host_fn)(void *args, void *const *ptrs);
ttc_status ttc_queue_host_task(ttc_queue *q, ttc_host_fn fn, const void *args, size_t args_size,
                               ttc_buf *const *bufs, int32_t n_bufs, const char *what, ttc_event **ev);
/* External buffers (memory shared with another API, e.g. ttc_xmem of backend/opencl) are
 * acquired before, and released after, the launches that use them, where the API asks for it
 * (a no-op elsewhere). */
ttc_status ttc_queue_acquire_external(ttc_queue *q, ttc_buf *const *bufs, int32_t n, bool release);
/* Enqueues a write of the 32-bit value v at the start of flag after everything before it,
 * and submits the queue: another API (a CUDA stream) can wait for the value on the device
 * while the host goes on. TTC_ERR_UNSUPPORTED where the backend has no such write. */
ttc_status ttc_queue_signal(ttc_queue *q, ttc_buf *flag, uint32_t v);
/* Record/replay (target.can_record): launches on q between begin and end are recorded with
 * the arguments they had, and replayed as one submission. TTC_ERR_UNSUPPORTED elsewhere. */
ttc_status ttc_queue_record_begin(ttc_queue *q);
ttc_status ttc_queue_record_end(ttc_queue *q, ttc_recording **out);
ttc_status ttc_queue_replay(ttc_queue *q, ttc_recording *r);
void ttc_recording_free(ttc_recording *r);

/* ---- events ---- */
/* Start and end of the command in ns (profiling queues only). */
ttc_status ttc_event_times(ttc_event *ev, uint64_t *start_ns, uint64_t *end_ns);
void ttc_event_free(ttc_event *ev);

/* ---- process-wide ---- */
/* The cache directory in effect (malloc'd) or NULL when disabled: cache_dir itself, else
 * $TORCHTRT_C_CACHE_DIR, else ~/.cache/torchtrt_c ("" disables). */
char *ttc_cache_dir(const char *cache_dir);
/* Live device buffers, for leak checks (every backend's buffers). */
typedef struct ttc_memstats {
    int64_t live_buffers, live_bytes, peak_bytes;
    int64_t host_ptr_bytes;    /* of live_bytes: buffers over host memory */
    int64_t created, released;
} ttc_memstats;
ttc_memstats ttc_memstats_get(void);
/* Program builds: from source, on-disk cache hits, from a given binary, failures, seconds. */
typedef struct ttc_program_stats {
    int64_t compiled, cache_hits, from_binary, failed;
    double compile_s, cache_s, binary_s;
    int64_t prebuilt;          /* compiled by build worker processes (ttc_program_prebuild) */
    double prebuild_s;         /* wall seconds spent waiting for them */
    int64_t prebuild_failed;   /* workers that failed, crashed or were killed */
} ttc_program_stats;
void ttc_program_stats_get(ttc_program_stats *out);

#endif
