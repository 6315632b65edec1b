/* oneDNN for the CPU native steps: the library, its entry points, scratchpads and the primitive
 * cache, once for the four users (backend/cpu/dnnl_api.h). */
#include "dnnl_api.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the primitive cache ---- */

struct ttc_dnnl_cached {
    ttc_dnnl_cached *next;
    const void *owner;
    void *entry;
    size_t key_len;
    unsigned char key[];
};

void *ttc_dnnl_cache_get(ttc_dnnl_cache *c, const void *owner, const void *key, size_t key_len, size_t group_len,
                         int32_t max_per_group, void *(*make)(void *arg), void *arg) {
    pthread_mutex_lock(&c->lock);
    ttc_dnnl_cached *e = c->head;
    int32_t in_group = 0;
    for (; e; e = e->next) {
        if (e->owner != owner || e->key_len != key_len) continue;
        if (!memcmp(e->key, key, key_len)) break;
        in_group += group_len && !memcmp(e->key, key, group_len);
    }
    void *entry = e ? e->entry : NULL;
    if (!e && (max_per_group <= 0 || in_group < max_per_group) && (e = malloc(sizeof *e + key_len)) != NULL) {
        if ((entry = make(arg)) != NULL) {
            e->owner = owner;
            e->entry = entry;
            e->key_len = key_len;
            memcpy(e->key, key, key_len);
            e->next = c->head;
            c->head = e;
        } else {
            free(e);
        }
    }
    pthread_mutex_unlock(&c->lock);
    return entry;
}

void ttc_dnnl_cache_forget(ttc_dnnl_cache *c, const void *owner) {
    pthread_mutex_lock(&c->lock);
    ttc_dnnl_cached **pp = &c->head;
    while (*pp) {
        ttc_dnnl_cached *e = *pp;
        if (e->owner == owner) {
            *pp = e->next;
            c->free_entry(e->entry);
            free(e);
        } else {
            pp = &e->next;
        }
    }
    pthread_mutex_unlock(&c->lock);
}

/* ---- scratchpads ----
 * In oneDNN's default (library) mode, the implementations that declare a global scratchpad (the
 * Winograd convolution, the im2col-GEMM one) size a thread_local buffer of the thread that
 * *creates* the primitive, and at execution take the thread_local buffer of the thread that
 * *runs* it: oneDNN requires both to be the same thread. Ours are not: a primitive is made on
 * the first call, on whichever PoCL worker runs that native kernel, and later calls run on any
 * worker. A worker that never made such a primitive hands oneDNN a NULL buffer (one that made
 * only smaller ones, a short one): the SIGSEGV of session 8 (the JIT Winograd kernel storing its
 * transformed input at address 0). So every primitive here runs in user mode, with a buffer of
 * the calling thread's own that grows to the largest scratchpad it has run. */
static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static bool scratch_key_ok;

typedef struct {
    void *p[TTC_SCRATCH_SLOTS];
    size_t n[TTC_SCRATCH_SLOTS];
} scratch_buf;

static void scratch_free(void *v) {
    scratch_buf *b = v;
    for (int i = 0; i < TTC_SCRATCH_SLOTS; i++) free(b->p[i]);
    free(b);
}

static void scratch_init(void) { scratch_key_ok = pthread_key_create(&scratch_key, scratch_free) == 0; }

/* The calling thread's buffer `slot` of at least n bytes, page-aligned; NULL when out of memory. */
void *ttc_dnnl_scratch_at(int32_t slot, size_t n) {
    pthread_once(&scratch_once, scratch_init);
    if (!scratch_key_ok || slot < 0 || slot >= TTC_SCRATCH_SLOTS) return NULL;
    scratch_buf *b = pthread_getspecific(scratch_key);
    if (!b) {
        if (!(b = calloc(1, sizeof *b))) return NULL;
        if (pthread_setspecific(scratch_key, b) != 0) {
            free(b);
            return NULL;
        }
    }
    if (b->n[slot] < n) {
        void *p = NULL;
        if (posix_memalign(&p, 4096, n) != 0) return NULL;
        free(b->p[slot]);
        b->p[slot] = p;
        b->n[slot] = n;
    }
    return b->p[slot];
}

void *ttc_dnnl_scratch(size_t n) { return ttc_dnnl_scratch_at(TTC_SCRATCH_DNNL, n); }

#ifndef TTC_HAVE_DNNL

const char *ttc_dnnl_library(void) { return "oneDNN headers were missing at build time (apt-get install libdnnl-dev)"; }
void *ttc_dnnl_cpu_engine(void) { return NULL; }
void *ttc_dnnl_sym(const char *name) { (void)name; return NULL; }

#else

/* ---- the library ---- */

ttc_dnnl_fns ttc_dnnl_fn;

static pthread_once_t dnnl_once = PTHREAD_ONCE_INIT;
static dnnl_engine_t dnnl_eng;
static void *dnnl_handle;
static char dnnl_desc[160];

static void dnnl_load(void) {
    void *h = dnnl_handle = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(dnnl_desc, sizeof dnnl_desc, "oneDNN not found (apt-get install libdnnl2)");
        return;
    }
    bool ok = true;
#define LOAD(f) ok = ok && (ttc_dnnl_fn.f = (__typeof__(&dnnl_##f))dlsym(h, "dnnl_" #f)) != NULL;
    TTC_DNNL_FNS(LOAD)
#undef LOAD
    if (!ok || ttc_dnnl_fn.engine_create(&dnnl_eng, dnnl_cpu, 0) != dnnl_success) {
        dnnl_eng = NULL;
        snprintf(dnnl_desc, sizeof dnnl_desc, "libdnnl.so.2 lacks an entry point of oneDNN 2.x or has no CPU engine");
        return;
    }
    const dnnl_version_t *v = ttc_dnnl_fn.version();
    snprintf(dnnl_desc, sizeof dnnl_desc, "oneDNN %d.%d.%d (cpu runtime %u)", v->major, v->minor, v->patch,
             v->cpu_runtime);
}

const char *ttc_dnnl_library(void) {
    pthread_once(&dnnl_once, dnnl_load);
    return dnnl_desc;
}

void *ttc_dnnl_cpu_engine(void) {
    pthread_once(&dnnl_once, dnnl_load);
    return dnnl_eng;
}

void *ttc_dnnl_sym(const char *name) {
    return ttc_dnnl_cpu_engine() ? dlsym(dnnl_handle, name) : NULL;
}

/* ---- helpers ---- */

dnnl_primitive_attr_t ttc_dnnl_scratch_attr(void) {
    dnnl_primitive_attr_t attr = NULL;
    if (ttc_dnnl_fn.primitive_attr_create(&attr) != dnnl_success) return NULL;
    if (ttc_dnnl_fn.primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) != dnnl_success) {
        ttc_dnnl_fn.primitive_attr_destroy(attr);
        return NULL;
    }
    return attr;
}

static dnnl_alg_kind_t act_alg(ttc_dnnl_act a) {
    switch (a) {
    case TTC_DNNL_RELU: return dnnl_eltwise_relu;
    case TTC_DNNL_CLIP: return dnnl_eltwise_clip;
    case TTC_DNNL_SWISH: return dnnl_eltwise_swish;
    case TTC_DNNL_LOGISTIC: return dnnl_eltwise_logistic;
    case TTC_DNNL_HARDSWISH: return dnnl_eltwise_hardswish;
    case TTC_DNNL_LINEAR: return dnnl_eltwise_linear;
    case TTC_DNNL_TANH: return dnnl_eltwise_tanh;
    case TTC_DNNL_GELU_ERF: return dnnl_eltwise_gelu_erf;
    case TTC_DNNL_GELU_TANH: return dnnl_eltwise_gelu_tanh;
    }
    return dnnl_alg_kind_undef;
}

/* The primitive attributes: a user scratchpad and post's activations (post NULL: none). */
static bool post_attr(const ttc_dnnl_post *post, dnnl_primitive_attr_t *attr) {
    if (!(*attr = ttc_dnnl_scratch_attr())) return false;
    if (!post || post->n_act == 0) return true;
    dnnl_post_ops_t po = NULL;
    if (ttc_dnnl_fn.post_ops_create(&po) != dnnl_success) {
        ttc_dnnl_fn.primitive_attr_destroy(*attr);
        *attr = NULL;
        return false;
    }
    bool ok = true;
    for (int32_t i = 0; i < post->n_act && ok; i++)
        ok = ttc_dnnl_fn.post_ops_append_eltwise(po, 1.0f, act_alg(post->act[i]), post->alpha[i], post->beta[i]) ==
             dnnl_success;
    ok = ok && ttc_dnnl_fn.primitive_attr_set_post_ops(*attr, po) == dnnl_success;
    ttc_dnnl_fn.post_ops_destroy(po);
    if (!ok && *attr) {
        ttc_dnnl_fn.primitive_attr_destroy(*attr);
        *attr = NULL;
    }
    return ok;
}

dnnl_primitive_desc_t ttc_dnnl_primitive_desc(const_dnnl_op_desc_t op, const ttc_dnnl_post *post) {
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t pd = NULL;
    if (!post_attr(post, &attr)) return NULL;
    if (ttc_dnnl_fn.primitive_desc_create(&pd, op, attr, ttc_dnnl_eng(), NULL) != dnnl_success) pd = NULL;
    ttc_dnnl_fn.primitive_attr_destroy(attr);
    return pd;
}

bool ttc_dnnl_scratch_mem(dnnl_primitive_desc_t pd, dnnl_memory_t *mem, size_t *size) {
    const dnnl_memory_desc_t *md = ttc_dnnl_fn.primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    size_t n = md ? ttc_dnnl_fn.memory_desc_get_size(md) : 0;
    if (n == 0) return true;
    *size = n > *size ? n : *size;
    return !mem || ttc_dnnl_fn.memory_create(mem, md, ttc_dnnl_eng(), DNNL_MEMORY_NONE) == dnnl_success;
}

bool ttc_dnnl_primitive(dnnl_primitive_desc_t pd, dnnl_primitive_t *p, dnnl_memory_t *sm, size_t *size) {
    return ttc_dnnl_fn.primitive_create(p, pd) == dnnl_success && ttc_dnnl_scratch_mem(pd, sm, size);
}

dnnl_primitive_desc_t ttc_dnnl_reorder_pd(const dnnl_memory_desc_t *from, const dnnl_memory_desc_t *to) {
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_attr_t attr = ttc_dnnl_scratch_attr();
    if (!attr) return NULL;
    dnnl_status_t st = ttc_dnnl_fn.reorder_primitive_desc_create(&pd, from, ttc_dnnl_eng(), to, ttc_dnnl_eng(), attr);
    ttc_dnnl_fn.primitive_attr_destroy(attr);
    return st == dnnl_success ? pd : NULL;
}

bool ttc_dnnl_reorder(const dnnl_memory_desc_t *user, const dnnl_memory_desc_t *want, bool to_user,
                      dnnl_primitive_t *p, dnnl_memory_t *mem, dnnl_memory_t *sm, size_t *size) {
    if (ttc_dnnl_fn.memory_desc_equal(user, want)) return true;
    dnnl_primitive_desc_t pd = to_user ? ttc_dnnl_reorder_pd(want, user) : ttc_dnnl_reorder_pd(user, want);
    if (!pd) return false;
    bool ok = ttc_dnnl_primitive(pd, p, sm, size) &&
              ttc_dnnl_fn.memory_create(mem, want, ttc_dnnl_eng(), DNNL_MEMORY_ALLOCATE) == dnnl_success;
    ttc_dnnl_fn.primitive_desc_destroy(pd);
    return ok;
}

bool ttc_dnnl_bind(size_t scratch, void **scr, int n, const dnnl_memory_t *ms, const void *const *ps) {
    *scr = scratch ? ttc_dnnl_scratch(scratch) : NULL;
    if (scratch && !*scr) return false;
    for (int i = 0; i < n; i++)
        if (ms[i] && ttc_dnnl_fn.memory_set_data_handle(ms[i], (void *)ps[i]) != dnnl_success) return false;
    return true;
}

bool ttc_dnnl_exec(dnnl_primitive_t p, dnnl_stream_t stream, dnnl_exec_arg_t *args, int n, dnnl_memory_t sm,
                   void *scr) {
    if (sm) {
        if (ttc_dnnl_fn.memory_set_data_handle(sm, scr) != dnnl_success) return false;
        args[n++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, sm};
    }
    return ttc_dnnl_fn.primitive_execute(p, stream, n, args) == dnnl_success;
}

bool ttc_dnnl_reorder_exec(dnnl_primitive_t p, dnnl_stream_t stream, dnnl_memory_t from, dnnl_memory_t to,
                           dnnl_memory_t sm, void *scr) {
    dnnl_exec_arg_t args[3] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
    return ttc_dnnl_exec(p, stream, args, 2, sm, scr);
}

void ttc_dnnl_destroy(const dnnl_primitive_t *ps, size_t np, const dnnl_memory_t *ms, size_t nm,
                      dnnl_stream_t stream) {
    for (size_t i = 0; i < np; i++)
        if (ps[i]) ttc_dnnl_fn.primitive_destroy(ps[i]);
    for (size_t i = 0; i < nm; i++)
        if (ms[i]) ttc_dnnl_fn.memory_destroy(ms[i]);
    if (stream) ttc_dnnl_fn.stream_destroy(stream);
}

#endif
