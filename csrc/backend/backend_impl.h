/*
 * What a backend implements (see README.md): a function table, and its own structs that
 * begin with the generic ones below (a backend's buffer is `struct { ttc_buf base; ... }`, so
 * a ttc_buf * is its first member). backend.c dispatches every call of backend.h through
 * handle->dev->be and keeps what all backends share (device list, probe caching, stats).
 *
 *   static const ttc_backend_iface cl_iface = {.name = "OpenCL", .buf_alloc = cl_buf_alloc, ...};
 *   dev->be = &cl_iface;
 *
 * Entries marked "may be NULL" are optional: the generic call answers TTC_ERR_UNSUPPORTED.
 */
#ifndef TTC_BACKEND_IMPL_H
#define TTC_BACKEND_IMPL_H

#include <pthread.h>

#include "backend.h"

typedef struct ttc_backend_iface ttc_backend_iface;

struct ttc_device {
    const ttc_backend_iface *be;
    ttc_target facts;             /* filled at discovery; decisions left at their defaults */
    pthread_mutex_t lock;         /* guards the probe results and backend state below it */
    bool half_probed, half_ok;
    bool host_probed, host_ok;
    bool in_place_probed, in_place_ok;
};

struct ttc_buf { ttc_device *dev; size_t size; bool host; };
struct ttc_queue { ttc_device *dev; bool profiling; };
struct ttc_program {
    ttc_device *dev;
    unsigned char *binary;        /* malloc'd, owned */
    size_t binary_len;
    bool from_cache, from_binary;
    int32_t n_parts;              /* > 0: built in parts (program_parts.c); backends leave it 0 */
};
/* program_parts.c, for backend.c's dispatch */
bool ttc_program_parts_binary(const unsigned char *bin, size_t len);
ttc_status ttc_program_parts_from_binary(ttc_device *d, const unsigned char *bin, size_t len, const char *options,
                                         ttc_program **out);
void ttc_program_parts_free(ttc_program *p);
ttc_status ttc_program_parts_kernel(ttc_program *p, const char *name, ttc_program **part);
/* build_procs.c, for ttc_program_stats_get */
void ttc_build_procs_stats_add(ttc_program_stats *acc);
struct ttc_kernel { ttc_device *dev; char name[64]; };
struct ttc_event { ttc_device *dev; };
struct ttc_recording { ttc_device *dev; };

struct ttc_backend_iface {
    const char *name;
    const char *(*error_name)(int32_t code);           /* the name of one of its error codes */
    /* devices: discovered once (the backend's own once-guard); *devs points at n devices */
    ttc_status (*devices)(ttc_device *const **devs, int32_t *n);
    bool (*probe_half)(ttc_device *d);                 /* half arithmetic works (may be NULL) */
    bool (*probe_host_tasks)(ttc_device *d);           /* host tasks work (may be NULL) */
    bool (*probe_host_in_place)(ttc_device *d);        /* host-backed buffers are that memory (may be NULL) */
    bool (*device_uuid)(ttc_device *d, unsigned char uuid[16]);   /* the device's UUID (may be NULL) */
    bool (*device_pci)(ttc_device *d, ttc_pci_address *pci);      /* its PCI address (may be NULL) */
    ttc_device *(*caller_thread)(ttc_device *d);       /* caller-thread companion (may be NULL) */
    /* buffers */
    ttc_status (*buf_alloc)(ttc_device *d, size_t n, const void *init, const char *what, ttc_buf **out);
    ttc_status (*buf_wrap_host)(ttc_device *d, void *host, size_t n, bool read_only, const char *what, ttc_buf **out);
    ttc_status (*buf_import)(ttc_device *d, const ttc_external_mem *m, const char *what, ttc_buf **out); /* may be NULL */
    void (*buf_free)(ttc_buf *b);
    ttc_status (*buf_write)(ttc_queue *q, ttc_buf *b, size_t off, size_t n, const void *src, bool blocking);
    ttc_status (*buf_read)(ttc_queue *q, ttc_buf *b, size_t off, size_t n, void *dst, bool blocking);
    ttc_status (*buf_copy)(ttc_queue *q, ttc_buf *src, ttc_buf *dst, size_t n);
    ttc_status (*buf_sync_host)(ttc_queue *q, ttc_buf *b, void *host, size_t n);
    /* programs and kernels */
    ttc_status (*program_build)(ttc_device *d, const char *src, const char *options, const char *cache_dir,
                                ttc_program **out);
    ttc_status (*program_from_binary)(ttc_device *d, const unsigned char *bin, size_t len, const char *options,
                                      ttc_program **out);
    void (*program_free)(ttc_program *p);
    /* whether (src, options) has an entry in the binary cache under cache_dir (may be NULL) */
    bool (*program_cached)(ttc_device *d, const char *src, const char *options, const char *cache_dir);
    ttc_status (*kernel_new)(ttc_program *p, const char *name, ttc_kernel **out);
    void (*kernel_free)(ttc_kernel *k);
    ttc_status (*kernel_set_buf)(ttc_kernel *k, uint32_t i, ttc_buf *b);
    ttc_status (*kernel_set_i32)(ttc_kernel *k, uint32_t i, int32_t v);
    ttc_status (*kernel_set_local)(ttc_kernel *k, uint32_t i, size_t bytes);
    /* queues and events */
    ttc_status (*queue_new)(ttc_device *d, bool profiling, ttc_queue **out);
    void (*queue_free)(ttc_queue *q);
    ttc_status (*queue_finish)(ttc_queue *q);
    ttc_status (*hold)(ttc_queue *q);                                                  /* may be NULL */
    ttc_status (*launch)(ttc_queue *q, ttc_kernel *k, int32_t dims, const size_t *gws, const size_t *lws,
                         ttc_event **ev);
    ttc_status (*host_task)(ttc_queue *q, ttc_host_fn fn, const void *args, size_t args_size, ttc_buf *const *bufs,
                            int32_t n_bufs, const char *what, ttc_event **ev);          /* may be NULL */
    ttc_status (*acquire_external)(ttc_queue *q, ttc_buf *const *bufs, int32_t n, bool release); /* may be NULL */
    ttc_status (*signal)(ttc_queue *q, ttc_buf *flag, uint32_t v);                     /* may be NULL */
    ttc_status (*record_begin)(ttc_queue *q);                                          /* may be NULL */
    ttc_status (*record_end)(ttc_queue *q, ttc_recording **out);                       /* may be NULL */
    ttc_status (*replay)(ttc_queue *q, ttc_recording *r);                              /* may be NULL */
    void (*recording_free)(ttc_recording *r);                                          /* may be NULL */
    ttc_status (*event_times)(ttc_event *ev, uint64_t *start_ns, uint64_t *end_ns);
    void (*event_free)(ttc_event *ev);
    /* process-wide counters of this backend */
    void (*memstats)(ttc_memstats *acc);               /* adds its own */
    void (*program_stats)(ttc_program_stats *acc);     /* adds its own */
};

/* The backends compiled in (backend.c's registry). */
extern const ttc_backend_iface ttc_opencl_backend;

#endif
