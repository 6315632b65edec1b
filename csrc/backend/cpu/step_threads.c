/* The pool behind ttc_steps_for (backend/cpu/step_threads.h). */
#include "step_threads.h"

#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "../../target/target.h"
#include "native_conv_dnnl.h"

/* oneDNN's OpenMP runtime (libgomp), when oneDNN is loaded: its parallel entry point as GCC
 * calls it for `#pragma omp parallel`, and the thread number. */
typedef void (*gomp_parallel_fn)(void (*fn)(void *), void *data, unsigned num_threads, unsigned flags);
typedef int (*omp_int_fn)(void);
static pthread_once_t omp_once = PTHREAD_ONCE_INIT;
static gomp_parallel_fn omp_parallel;
static omp_int_fn omp_thread_num;

static void omp_load(void) {
    if (!ttc_dnnl_cpu_engine()) return;
    /* the copy libdnnl loaded (RTLD_NOLOAD: never a second runtime) */
    void *h = dlopen("libgomp.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (!h) return;
    gomp_parallel_fn par = (gomp_parallel_fn)dlsym(h, "GOMP_parallel");
    omp_int_fn num = (omp_int_fn)dlsym(h, "omp_get_thread_num");
    if (par && num) {
        omp_thread_num = num;
        omp_parallel = par;
    }
}

typedef struct omp_job {
    ttc_step_fn fn;
    void *ctx;
    int64_t n, chunk, next;   /* next: first item not taken (atomic) */
} omp_job;

static void omp_body(void *arg) {
    omp_job *j = arg;
    for (;;) {
        int64_t lo = __atomic_fetch_add(&j->next, j->chunk, __ATOMIC_RELAXED);
        if (lo >= j->n) return;
        j->fn(j->ctx, lo, lo + j->chunk < j->n ? lo + j->chunk : j->n);
    }
}

/* A job is cut into chunks that the caller and the workers take in turn (an atomic counter):
 * a worker that wakes late (the machine is shared, or the BLAS's threads still spin) finds
 * the chunks taken and the caller has done them, instead of the caller waiting for it. */
static struct {
    pthread_mutex_t submit;   /* held by the one caller whose job the pool runs */
    pthread_mutex_t m;
    pthread_cond_t go, done;
    int32_t started;          /* workers running (each waits for jobs) */
    uint64_t gen;             /* job number: a worker joins each job at most once */
    bool open;                /* the job takes workers still */
    int32_t busy;             /* workers inside the job */
    ttc_step_fn fn;
    void *ctx;
    int64_t n, chunk, next;   /* items, items a chunk, first item not taken (atomic) */
    int64_t parallel_jobs;
    uint64_t born[TTC_STEP_MAX_THREADS];   /* gen when worker i started (its first job is the next) */
} pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER};

int64_t ttc_steps_parallel_jobs(void) { return __atomic_load_n(&pool.parallel_jobs, __ATOMIC_RELAXED); }

/* Takes chunks until none is left. */
static void take_chunks(ttc_step_fn fn, void *ctx, int64_t n, int64_t chunk) {
    for (;;) {
        int64_t lo = __atomic_fetch_add(&pool.next, chunk, __ATOMIC_RELAXED);
        if (lo >= n) return;
        fn(ctx, lo, lo + chunk < n ? lo + chunk : n);
    }
}

static int64_t now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Polls pool.gen for up to us microseconds; true when a job came (pool.m not held). Between
 * polls the thread yields: on a machine whose cores are busy with other work the poll costs
 * them little, on an idle one it is a spin. */
static bool poll_for_job(uint64_t seen, int64_t us) {
    int64_t end = now_us() + us;
    for (int i = 1;; i++) {
        if (__atomic_load_n(&pool.gen, __ATOMIC_ACQUIRE) != seen) return true;
        if (i % 16 == 0) {
            if (now_us() >= end) return false;
            sched_yield();
        } else {
#if defined(__x86_64__) || defined(__i386__)
            _mm_pause();
#endif
        }
    }
}

static void *worker(void *arg) {
    int32_t me = (int32_t)(intptr_t)arg;
    pthread_mutex_lock(&pool.m);
    uint64_t seen = pool.born[me];
    for (;;) {
        /* a while awake first: a decode step's native calls come back to back, tens of
         * microseconds apart, and a sleeping thread woke too late to share them (on a busy
         * machine, a wake-up waits for a time slice) */
        int64_t spin = pool.gen == seen ? ttc_target_step_spin_us() : 0;
        if (spin > 0) {
            pthread_mutex_unlock(&pool.m);
            poll_for_job(seen, spin);
            pthread_mutex_lock(&pool.m);
        }
        while (pool.gen == seen) pthread_cond_wait(&pool.go, &pool.m);
        seen = pool.gen;
        if (!pool.open) continue;
        pool.busy++;
        ttc_step_fn fn = pool.fn;
        void *ctx = pool.ctx;
        int64_t n = pool.n, chunk = pool.chunk;
        pthread_mutex_unlock(&pool.m);
        take_chunks(fn, ctx, n, chunk);
        pthread_mutex_lock(&pool.m);
        if (--pool.busy == 0) pthread_cond_signal(&pool.done);
    }
    return NULL;
}

/* A forked child has none of the parent's workers (and maybe a lock held by a thread that is
 * gone): start over. */
static void after_fork_child(void) {
    pthread_mutex_init(&pool.submit, NULL);
    pthread_mutex_init(&pool.m, NULL);
    pthread_cond_init(&pool.go, NULL);
    pthread_cond_init(&pool.done, NULL);
    pool.started = 0;
    pool.busy = 0;
    pool.open = false;
}

static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
static void fork_hook(void) { pthread_atfork(NULL, NULL, after_fork_child); }

/* Starts workers up to `want` (pool.m held); returns how many run. */
static int32_t start_workers(int32_t want) {
    while (pool.started < want) {
        pthread_t t;
        pthread_attr_t at;
        if (pthread_attr_init(&at)) break;
        pool.born[pool.started + 1] = pool.gen;
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        int rc = pthread_create(&t, &at, worker, (void *)(intptr_t)(pool.started + 1));
        pthread_attr_destroy(&at);
        if (rc) break;   /* no more threads: the job takes fewer */
        pool.started++;
    }
    return pool.started;
}

void ttc_steps_for(int32_t threads, int64_t n, int64_t grain, ttc_step_fn fn, void *ctx) {
    if (grain < 1) grain = 1;
    int64_t parts = n / grain;
    if (threads > TTC_STEP_MAX_THREADS) threads = TTC_STEP_MAX_THREADS;   /* born[] has room for them */
    if (parts > threads) parts = threads;
    if (parts >= 2 && ttc_target_step_pool_omp()) {
        pthread_once(&omp_once, omp_load);
        if (omp_parallel) {
            /* four chunks a thread, as below; the team is the calling thread's, which its
             * oneDNN calls just used (its threads still spin: they start at once) */
            int64_t chunk = n / (parts * 4);
            omp_job j = {fn, ctx, n, chunk > grain / 2 ? chunk : (grain + 1) / 2, 0};
            omp_parallel(omp_body, &j, (unsigned)parts, 0);
            __atomic_add_fetch(&pool.parallel_jobs, 1, __ATOMIC_RELAXED);
            return;
        }
    }
    if (parts < 2 || pthread_mutex_trylock(&pool.submit)) {
        if (n > 0) fn(ctx, 0, n);
        return;
    }
    pthread_once(&fork_once, fork_hook);
    pthread_mutex_lock(&pool.m);
    if (start_workers((int32_t)parts - 1) < 1) {
        pthread_mutex_unlock(&pool.m);
        pthread_mutex_unlock(&pool.submit);
        fn(ctx, 0, n);
        return;
    }
    /* four chunks a thread: a late thread costs at most about a quarter of its share */
    int64_t chunk = n / (parts * 4);
    pool.fn = fn;
    pool.ctx = ctx;
    pool.n = n;
    pool.chunk = chunk > grain / 2 ? chunk : (grain + 1) / 2;
    __atomic_store_n(&pool.next, 0, __ATOMIC_RELAXED);
    pool.open = true;
    pool.busy = 0;
    __atomic_add_fetch(&pool.gen, 1, __ATOMIC_RELEASE);   /* polling workers read it unlocked */
    __atomic_add_fetch(&pool.parallel_jobs, 1, __ATOMIC_RELAXED);
    pthread_cond_broadcast(&pool.go);
    pthread_mutex_unlock(&pool.m);
    take_chunks(fn, ctx, n, pool.chunk);
    pthread_mutex_lock(&pool.m);
    pool.open = false;
    while (pool.busy > 0) pthread_cond_wait(&pool.done, &pool.m);
    pthread_mutex_unlock(&pool.m);
    pthread_mutex_unlock(&pool.submit);
}
