/*
 * oneDNN for the CPU native steps (native_conv_dnnl.c, native_gemm_dnnl.c, native_qmm.c,
 * native_qconv.c), each concern once (backend/cpu/dnnl_api.c):
 *   - the library: libdnnl.so.2 dlopen'ed once per process, its CPU engine, and one table of the
 *     entry points the four call (ttc_dnnl_fn, filled by the same load; the public loader calls,
 *     ttc_dnnl_cpu_engine / ttc_dnnl_sym / ttc_dnnl_library, are declared in native_conv_dnnl.h);
 *   - the calling thread's scratchpad buffer and the small helpers around user scratchpads;
 *   - a primitive cache: entries made on first use under a key blob, dropped per owner.
 *
 * The table and helpers exist only where oneDNN's header was there at build time (TTC_HAVE_DNNL);
 * without it each user builds its "unavailable" stubs.
 *
 *   if (!ttc_dnnl_cpu_engine()) return false;        // loads; NULL: no library
 *   ttc_dnnl_fn.memory_create(&m, &md, ttc_dnnl_eng(), DNNL_MEMORY_NONE);
 */
#ifndef TTC_BACKEND_CPU_DNNL_API_H
#define TTC_BACKEND_CPU_DNNL_API_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "native_conv_dnnl.h"

/* ---- the primitive cache ----
 * A list of entries under one lock, each the (owner, key blob) it was made for. The key is
 * compared bytewise, so callers build it from zeroed memory (no stray padding). Its first
 * group_len bytes name a group (an engine kernel, say): a group holds at most max_per_group
 * entries (0: no limit); past that, lookups of new keys answer NULL. */
typedef struct ttc_dnnl_cached ttc_dnnl_cached;
typedef struct ttc_dnnl_cache {
    pthread_mutex_t lock;
    ttc_dnnl_cached *head;
    void (*free_entry)(void *entry);   /* frees what make returned */
} ttc_dnnl_cache;
#define TTC_DNNL_CACHE_INIT(free_entry) {PTHREAD_MUTEX_INITIALIZER, NULL, (free_entry)}

/* The entry of (owner, key), made by make(arg) on first use (under the cache's lock: one make at
 * a time); NULL when out of memory, when make returns NULL, or when the group is full. */
void *ttc_dnnl_cache_get(ttc_dnnl_cache *c, const void *owner, const void *key, size_t key_len, size_t group_len,
                         int32_t max_per_group, void *(*make)(void *arg), void *arg);
/* Frees every entry of owner (free_entry). */
void ttc_dnnl_cache_forget(ttc_dnnl_cache *c, const void *owner);

#if defined(__has_include)
#if __has_include(<oneapi/dnnl/dnnl.h>)
#include <oneapi/dnnl/dnnl.h>
#define TTC_HAVE_DNNL 1
#endif
#endif

#ifdef TTC_HAVE_DNNL

/* Every entry point the four users call, typed from the header's own prototypes; the load
 * needs all of them (oneDNN 2.x has them all). */
#define TTC_DNNL_FNS(X)                                                                                              \
    X(engine_create) X(version) X(stream_create) X(stream_wait) X(stream_destroy)                                    \
    X(memory_desc_init_by_tag) X(memory_desc_init_by_strides) X(memory_desc_equal) X(memory_desc_get_size)           \
    X(memory_create) X(memory_destroy) X(memory_set_data_handle)                                                     \
    X(dilated_convolution_forward_desc_init) X(matmul_desc_init) X(reorder_primitive_desc_create)                    \
    X(primitive_desc_create) X(primitive_desc_query) X(primitive_desc_query_md) X(primitive_desc_destroy)           \
    X(primitive_create) X(primitive_execute) X(primitive_destroy)                                                    \
    X(primitive_attr_create) X(primitive_attr_destroy) X(primitive_attr_set_scratchpad_mode)                         \
    X(primitive_attr_set_post_ops) X(primitive_attr_set_output_scales) X(primitive_attr_set_zero_points)             \
    X(post_ops_create) X(post_ops_destroy) X(post_ops_append_eltwise) X(post_ops_append_binary)

typedef struct ttc_dnnl_fns {
#define TTC_DNNL_FIELD(f) __typeof__(&dnnl_##f) f;
    TTC_DNNL_FNS(TTC_DNNL_FIELD)
#undef TTC_DNNL_FIELD
} ttc_dnnl_fns;

/* Filled once ttc_dnnl_cpu_engine() answered non-NULL (read it only after that). */
extern ttc_dnnl_fns ttc_dnnl_fn;

/* The CPU engine (ttc_dnnl_cpu_engine(), typed). */
static inline dnnl_engine_t ttc_dnnl_eng(void) { return (dnnl_engine_t)ttc_dnnl_cpu_engine(); }

/* Primitive attributes asking for a user scratchpad (and nothing else); NULL when oneDNN refuses.
 * Every primitive here runs with the buffer of the thread that runs it (ttc_dnnl_scratch). */
dnnl_primitive_attr_t ttc_dnnl_scratch_attr(void);
/* pd's scratchpad memory over no buffer yet (*mem stays NULL where it needs none); *size grows to
 * its size in bytes. */
bool ttc_dnnl_scratch_mem(dnnl_primitive_desc_t pd, dnnl_memory_t *mem, size_t *size);
/* p on stream with its n arguments and, where sm is not NULL, its scratchpad memory sm over
 * buffer scr (args has room for one more). */
bool ttc_dnnl_exec(dnnl_primitive_t p, dnnl_stream_t stream, dnnl_exec_arg_t *args, int n, dnnl_memory_t sm,
                   void *scr);

#endif
#endif
