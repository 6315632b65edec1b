/* Live OpenCL buffer counters, for leak checks: every clCreateBuffer / clReleaseMemObject
 * made through TTC_CL goes through the wrappers below (installed into the dispatch table
 * when libOpenCL is loaded), so buffers made anywhere in the library are counted without
 * each call site doing it. The library never calls clRetainMemObject, so each buffer it
 * creates is released exactly once: live = created - released, and the bytes of a buffer
 * (CL_MEM_SIZE, read just before its release) leave the total at its release. Buffers
 * wrapping host memory (CL_MEM_USE_HOST_PTR: zero-copy inputs/outputs on CPU devices) are
 * counted too; host_ptr_bytes says how much of live_bytes they are. */
#include "cl.h"

#include <stdlib.h>

static __typeof__(&clCreateBuffer) real_create;
static __typeof__(&clReleaseMemObject) real_release;

static int64_t n_live, n_created, n_released, bytes_live, bytes_peak, bytes_host;

/* Creation order of live buffers (cl_mem -> sequence number), for native kernels: PoCL 3
 * hands a native kernel its buffers sorted by creation (host_task.c). Open addressing,
 * linear probing, backward-shift deletion; grown at half load. */
typedef struct seq_slot { cl_mem m; uint64_t seq; } seq_slot;
static pthread_mutex_t seq_lock = PTHREAD_MUTEX_INITIALIZER;
static seq_slot *seq_tab;
static size_t seq_cap, seq_n;
static uint64_t seq_next;

static size_t seq_hash(cl_mem m, size_t cap) {
    uint64_t h = (uint64_t)(uintptr_t)m * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 17) & (cap - 1);
}

static void seq_put(seq_slot *tab, size_t cap, cl_mem m, uint64_t seq) {
    size_t i = seq_hash(m, cap);
    while (tab[i].m && tab[i].m != m) i = (i + 1) & (cap - 1);
    tab[i].m = m;
    tab[i].seq = seq;
}

static void seq_add(cl_mem m) {
    pthread_mutex_lock(&seq_lock);
    uint64_t seq = ++seq_next;
    if (2 * (seq_n + 1) > seq_cap) {
        size_t cap = seq_cap ? 2 * seq_cap : 256;
        seq_slot *tab = calloc(cap, sizeof *tab);
        if (tab) {
            for (size_t i = 0; i < seq_cap; i++)
                if (seq_tab[i].m) seq_put(tab, cap, seq_tab[i].m, seq_tab[i].seq);
            free(seq_tab);
            seq_tab = tab;
            seq_cap = cap;
        }
    }
    if (seq_tab && 2 * (seq_n + 1) <= seq_cap) {  /* no memory: the buffer stays unknown (seq 0) */
        seq_put(seq_tab, seq_cap, m, seq);
        seq_n++;
    }
    pthread_mutex_unlock(&seq_lock);
}

static void seq_remove(cl_mem m) {
    pthread_mutex_lock(&seq_lock);
    size_t i = seq_cap ? seq_hash(m, seq_cap) : 0;
    while (seq_cap && seq_tab[i].m && seq_tab[i].m != m) i = (i + 1) & (seq_cap - 1);
    if (seq_cap && seq_tab[i].m == m) {
        /* backward shift: move later entries of the probe run into the hole */
        size_t j = i;
        for (;;) {
            j = (j + 1) & (seq_cap - 1);
            if (!seq_tab[j].m) break;
            size_t h = seq_hash(seq_tab[j].m, seq_cap);
            if (((j - h) & (seq_cap - 1)) >= ((j - i) & (seq_cap - 1))) {
                seq_tab[i] = seq_tab[j];
                i = j;
            }
        }
        seq_tab[i].m = NULL;
        seq_n--;
    }
    pthread_mutex_unlock(&seq_lock);
}

uint64_t ttc_cl_mem_seq(cl_mem m) {
    uint64_t r = 0;
    pthread_mutex_lock(&seq_lock);
    size_t i = seq_cap ? seq_hash(m, seq_cap) : 0;
    while (seq_cap && seq_tab[i].m && seq_tab[i].m != m) i = (i + 1) & (seq_cap - 1);
    if (seq_cap && seq_tab[i].m == m) r = seq_tab[i].seq;
    pthread_mutex_unlock(&seq_lock);
    return r;
}

static cl_mem CL_API_CALL counted_create(cl_context ctx, cl_mem_flags flags, size_t size, void *host, cl_int *err) {
    cl_int e = CL_SUCCESS;
    cl_mem m = real_create(ctx, flags, size, host, &e);
    if (err) *err = e;
    if (m && e == CL_SUCCESS) {
        seq_add(m);
        __atomic_add_fetch(&n_live, 1, __ATOMIC_RELAXED);
        __atomic_add_fetch(&n_created, 1, __ATOMIC_RELAXED);
        if (flags & CL_MEM_USE_HOST_PTR) __atomic_add_fetch(&bytes_host, (int64_t)size, __ATOMIC_RELAXED);
        int64_t now = __atomic_add_fetch(&bytes_live, (int64_t)size, __ATOMIC_RELAXED);
        int64_t peak = __atomic_load_n(&bytes_peak, __ATOMIC_RELAXED);
        while (now > peak && !__atomic_compare_exchange_n(&bytes_peak, &peak, now, true, __ATOMIC_RELAXED,
                                                          __ATOMIC_RELAXED)) {
        }
    }
    return m;
}

static cl_int CL_API_CALL counted_release(cl_mem m) {
    size_t size = 0;
    cl_mem_flags flags = 0;
    bool known = m && TTC_CL(GetMemObjectInfo)(m, CL_MEM_SIZE, sizeof size, &size, NULL) == CL_SUCCESS &&
                 TTC_CL(GetMemObjectInfo)(m, CL_MEM_FLAGS, sizeof flags, &flags, NULL) == CL_SUCCESS;
    cl_int e = real_release(m);
    if (e == CL_SUCCESS && known) {
        seq_remove(m);
        __atomic_sub_fetch(&n_live, 1, __ATOMIC_RELAXED);
        __atomic_add_fetch(&n_released, 1, __ATOMIC_RELAXED);
        __atomic_sub_fetch(&bytes_live, (int64_t)size, __ATOMIC_RELAXED);
        if (flags & CL_MEM_USE_HOST_PTR) __atomic_sub_fetch(&bytes_host, (int64_t)size, __ATOMIC_RELAXED);
    }
    return e;
}

void ttc_cl_memstats_install(ttc_cl_api *api) {
    real_create = api->CreateBuffer;
    real_release = api->ReleaseMemObject;
    api->CreateBuffer = counted_create;
    api->ReleaseMemObject = counted_release;
}

void ttc_cl_memstats_add(ttc_memstats *acc) {
    acc->live_buffers += __atomic_load_n(&n_live, __ATOMIC_RELAXED);
    acc->live_bytes += __atomic_load_n(&bytes_live, __ATOMIC_RELAXED);
    acc->peak_bytes += __atomic_load_n(&bytes_peak, __ATOMIC_RELAXED);
    acc->host_ptr_bytes += __atomic_load_n(&bytes_host, __ATOMIC_RELAXED);
    acc->created += __atomic_load_n(&n_created, __ATOMIC_RELAXED);
    acc->released += __atomic_load_n(&n_released, __ATOMIC_RELAXED);
}
