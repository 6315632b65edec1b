/*
 * oneDNN for the CPU native steps (native_conv_dnnl.c, native_gemm_dnnl.c, native_qmm.c,
 * native_qconv.c), each concern once (backend/cpu/dnnl_api.c):
 *   - the library: libdnnl.so.2 dlopen'ed once per process, its CPU engine, and one table of the
 *     entry points the four call (ttc_dnnl_fn, filled by the same load; the public loader calls,
 *     ttc_dnnl_cpu_engine / ttc_dnnl_sym / ttc_dnnl_library, are declared in native_conv_dnnl.h);
 *   - the calling thread's scratchpad buffer and the small helpers around user scratchpads;
 *   - the steps all four repeat: a primitive descriptor with eltwise post-ops, the primitive with
 *     its scratchpad memory, a reorder between layouts, pointing a call's memories at its
 *     buffers, running, freeing an entry;
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
#include <string.h>

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

/* A memory of md over no buffer yet (a call's operand; ttc_dnnl_bind points it), and the stream an
 * entry runs its primitives on. */
static inline bool ttc_dnnl_mem(dnnl_memory_t *m, const dnnl_memory_desc_t *md) {
    return ttc_dnnl_fn.memory_create(m, md, ttc_dnnl_eng(), DNNL_MEMORY_NONE) == dnnl_success;
}
static inline bool ttc_dnnl_stream(dnnl_stream_t *s) {
    return ttc_dnnl_fn.stream_create(s, ttc_dnnl_eng(), dnnl_stream_default_flags) == dnnl_success;
}

/* A convolution's bottom/right padding that yields torch's output size o from input size i
 * (stride st, kernel k, dilation d, top/left padding p). Negative where floor division drops
 * input rows (a 1x1 stride-2 convolution of an even image: ResNet's downsampling); oneDNN's size
 * check divides with floor too, so 0 gives the same output size there (the shortfall is below
 * one stride), where a negative one left those convolutions to im2col + sgemm at a sixth of the
 * speed. Still negative: a shape oneDNN cannot take. */
static inline int64_t ttc_dnnl_pad_end(int64_t o, int64_t st, int64_t k, int64_t d, int64_t i, int64_t p) {
    int64_t r = (o - 1) * st + (k - 1) * d + 1 - i - p;
    return r < 0 && r > -st ? 0 : r;
}
/* A convolution's weights dims, [oc, c, kh, kw] for g 1, else [g, oc/g, c/g, kh, kw]; answers
 * their count (4 or 5). */
static inline int ttc_dnnl_weight_dims(dnnl_dims_t wd, int64_t g, int64_t oc, int64_t c, int64_t kh, int64_t kw) {
    dnnl_dims_t g5 = {g, oc / g, c / g, kh, kw}, w4 = {oc, c, kh, kw};
    memcpy(wd, g == 1 ? w4 : g5, sizeof(dnnl_dims_t));
    return g == 1 ? 4 : 5;
}

/* Primitive attributes asking for a user scratchpad (and nothing else); NULL when oneDNN refuses.
 * Every primitive here runs with the buffer of the thread that runs it (ttc_dnnl_scratch). */
dnnl_primitive_attr_t ttc_dnnl_scratch_attr(void);
/* The primitive descriptor of op (an operation descriptor: dnnl_convolution_desc_t,
 * dnnl_matmul_desc_t) with a user scratchpad and post's activations as eltwise post-ops (post
 * NULL: none; a bias is op's); NULL where oneDNN refuses the post-ops or the operation. */
dnnl_primitive_desc_t ttc_dnnl_primitive_desc(const_dnnl_op_desc_t op, const ttc_dnnl_post *post);
/* pd's scratchpad memory over no buffer yet (*mem stays NULL where it needs none); *size grows to
 * its size in bytes. mem NULL: the size only (a caller with one scratchpad memory of its own). */
bool ttc_dnnl_scratch_mem(dnnl_primitive_desc_t pd, dnnl_memory_t *mem, size_t *size);
/* pd's primitive and its scratchpad memory (ttc_dnnl_scratch_mem). */
bool ttc_dnnl_primitive(dnnl_primitive_desc_t pd, dnnl_primitive_t *p, dnnl_memory_t *sm, size_t *size);
/* A reorder's primitive descriptor from -> to, with a user scratchpad; NULL where oneDNN refuses. */
dnnl_primitive_desc_t ttc_dnnl_reorder_pd(const dnnl_memory_desc_t *from, const dnnl_memory_desc_t *to);
/* The reorder between a stored layout (user) and the one a primitive takes (want): user -> want,
 * or back when to_user; its primitive (*p, with its scratchpad memory *sm as ttc_dnnl_primitive)
 * and a library-allocated memory *mem of want. Nothing where the layouts agree. */
bool ttc_dnnl_reorder(const dnnl_memory_desc_t *user, const dnnl_memory_desc_t *want, bool to_user,
                      dnnl_primitive_t *p, dnnl_memory_t *mem, dnnl_memory_t *sm, size_t *size);
/* A call's buffers: *scr the calling thread's scratchpad of `scratch` bytes (NULL where 0), then
 * each ms[i] pointed at ps[i] in order (a NULL ms[i] skipped); false when out of memory or
 * oneDNN refuses. */
bool ttc_dnnl_bind(size_t scratch, void **scr, int n, const dnnl_memory_t *ms, const void *const *ps);
/* p on stream with its n arguments and, where sm is not NULL, its scratchpad memory sm over
 * buffer scr (args has room for one more). */
bool ttc_dnnl_exec(dnnl_primitive_t p, dnnl_stream_t stream, dnnl_exec_arg_t *args, int n, dnnl_memory_t sm,
                   void *scr);
/* Reorder p from -> to on stream (ttc_dnnl_exec). */
bool ttc_dnnl_reorder_exec(dnnl_primitive_t p, dnnl_stream_t stream, dnnl_memory_t from, dnnl_memory_t to,
                           dnnl_memory_t sm, void *scr);
/* Destroys the primitives ps[0..np), then the memories ms[0..nm) (NULL ones skipped), then
 * stream (NULL: none): an entry's free. */
void ttc_dnnl_destroy(const dnnl_primitive_t *ps, size_t np, const dnnl_memory_t *ms, size_t nm,
                      dnnl_stream_t stream);

#endif
#endif
