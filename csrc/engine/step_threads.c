/* The pool behind ttc_steps_for (engine/step_threads.h). */
#include "step_threads.h"

#include <pthread.h>
#include <stdbool.h>

static struct {
    pthread_mutex_t submit;   /* held by the one caller whose job the pool runs */
    pthread_mutex_t m;
    pthread_cond_t go, done;
    int32_t started;          /* workers running (each waits for jobs) */
    uint64_t gen;             /* job number: a worker runs each job once */
    ttc_step_fn fn;
    void *ctx;
    int64_t n;
    int32_t parts, pending;   /* parts of the job; parts 1.. not finished yet */
    uint64_t born[TTC_STEP_MAX_THREADS];   /* gen when worker i started (its first job is the next) */
} pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER,
          0, 0, NULL, NULL, 0, 0, 0, {0}};

static int64_t parallel_jobs;   /* written under pool.m */

int64_t ttc_steps_parallel_jobs(void) {
    pthread_mutex_lock(&pool.m);
    int64_t n = parallel_jobs;
    pthread_mutex_unlock(&pool.m);
    return n;
}

static void part_range(int64_t n, int32_t parts, int32_t i, int64_t *lo, int64_t *hi) {
    *lo = n * i / parts;
    *hi = n * (i + 1) / parts;
}

static void *worker(void *arg) {
    int32_t me = (int32_t)(intptr_t)arg;   /* part index this worker takes (1..) */
    pthread_mutex_lock(&pool.m);
    uint64_t seen = pool.born[me];
    for (;;) {
        while (pool.gen == seen) pthread_cond_wait(&pool.go, &pool.m);
        seen = pool.gen;
        if (me >= pool.parts) continue;
        ttc_step_fn fn = pool.fn;
        void *ctx = pool.ctx;
        int64_t lo, hi;
        part_range(pool.n, pool.parts, me, &lo, &hi);
        pthread_mutex_unlock(&pool.m);
        fn(ctx, lo, hi);
        pthread_mutex_lock(&pool.m);
        if (--pool.pending == 0) pthread_cond_signal(&pool.done);
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
    pool.pending = 0;
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
        if (rc) break;   /* no more threads: the job takes fewer parts */
        pool.started++;
    }
    return pool.started;
}

void ttc_steps_for(int32_t threads, int64_t n, int64_t grain, ttc_step_fn fn, void *ctx) {
    if (grain < 1) grain = 1;
    int64_t parts = n / grain;
    if (threads > TTC_STEP_MAX_THREADS) threads = TTC_STEP_MAX_THREADS;   /* born[] has room for it */
    if (parts > threads) parts = threads;
    if (parts < 2 || pthread_mutex_trylock(&pool.submit)) {
        if (n > 0) fn(ctx, 0, n);
        return;
    }
    pthread_once(&fork_once, fork_hook);
    pthread_mutex_lock(&pool.m);
    int32_t workers = start_workers((int32_t)parts - 1);
    if (workers + 1 < parts) parts = workers + 1;
    if (parts < 2) {
        pthread_mutex_unlock(&pool.m);
        pthread_mutex_unlock(&pool.submit);
        fn(ctx, 0, n);
        return;
    }
    pool.fn = fn;
    pool.ctx = ctx;
    pool.n = n;
    pool.parts = (int32_t)parts;
    pool.pending = (int32_t)parts - 1;
    pool.gen++;
    parallel_jobs++;
    pthread_cond_broadcast(&pool.go);
    pthread_mutex_unlock(&pool.m);
    int64_t lo, hi;
    part_range(n, (int32_t)parts, 0, &lo, &hi);
    fn(ctx, lo, hi);
    pthread_mutex_lock(&pool.m);
    while (pool.pending > 0) pthread_cond_wait(&pool.done, &pool.m);
    pthread_mutex_unlock(&pool.m);
    pthread_mutex_unlock(&pool.submit);
}
