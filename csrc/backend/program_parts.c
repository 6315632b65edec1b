/* Programs built in parts, in parallel threads (backend.h: ttc_program_build_parts).
 *
 * One engine program took 9-18 s to build on NVIDIA's OpenCL (one clBuildProgram over every
 * kernel of a ResNet-50 or EfficientNet: much of a cold compile). So an engine's source can be
 * split into parts, each a complete program (the
 * shared header plus some kernels), built by up to `threads` threads, each part through
 * ttc_program_build (its own binary-cache entry: a part that another engine or model also
 * has is compiled once). Kernels are created from the part that defines them. Measured on the
 * H100 (ResNet-50 fp16): 12.6 s as one program, 10.1 s as 16 parts; the parts' build times
 * summed to ~10x the wall time, so the driver apparently compiles about one program at a time
 * per process: worker processes would be the way to more (not done).
 *
 * The binary of a program in parts (engine blobs) is a container the loader recognises:
 *   "TTCPMUL1" | u32 n | per part: u32 n_kernels | (u32 len | name)* | u64 len | binary
 * and ttc_program_binary returns it; ttc_program_part_program gives each part's own program (a
 * consumer that loads binaries itself, e.g. a CUDA-driver launcher, takes them one by one). */
#include "backend_impl.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct multi {
    ttc_program base;         /* base.n_parts > 0 marks a program in parts */
    ttc_program **parts;
    char ***names;            /* per part: its kernels' names */
    int32_t *n_names;
} multi;

static const char MAGIC[8] = {'T', 'T', 'C', 'P', 'M', 'U', 'L', '1'};

static void multi_free(multi *m) {
    for (int32_t i = 0; i < m->base.n_parts; i++) {
        ttc_program_free(m->parts ? m->parts[i] : NULL);
        for (int32_t j = 0; m->names && m->names[i] && j < m->n_names[i]; j++) free(m->names[i][j]);
        if (m->names) free(m->names[i]);
    }
    free(m->parts);
    free(m->names);
    free(m->n_names);
    free(m->base.binary);
    free(m);
}

static multi *multi_new(ttc_device *d, int32_t n) {
    multi *m = ttc_calloc(1, sizeof *m);
    if (!m) return NULL;
    m->base.dev = d;
    m->base.n_parts = n;
    m->parts = ttc_calloc((size_t)n, sizeof *m->parts);
    m->names = ttc_calloc((size_t)n, sizeof *m->names);
    m->n_names = ttc_calloc((size_t)n, sizeof *m->n_names);
    if (!m->parts || !m->names || !m->n_names) { multi_free(m); return NULL; }
    return m;
}

static ttc_status set_names(multi *m, int32_t i, const char *const *names, int32_t n) {
    m->names[i] = ttc_calloc((size_t)n + 1, sizeof(char *));
    if (!m->names[i]) return TTC_ERR_NOMEM;
    for (int32_t j = 0; j < n; j++) {
        if (!(m->names[i][j] = ttc_strdup(names[j]))) return TTC_ERR_NOMEM;
        m->n_names[i] = j + 1;
    }
    return TTC_OK;
}

static void put(unsigned char **o, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; i++) *(*o)++ = (unsigned char)(v >> (8 * i));
}

/* The container, when every part kept a binary (else none: the target keeps no binaries). */
static ttc_status make_container(multi *m) {
    size_t total = 12;
    for (int32_t i = 0; i < m->base.n_parts; i++) {
        if (!m->parts[i]->binary || !m->parts[i]->binary_len) return TTC_OK;
        total += 4 + 8 + m->parts[i]->binary_len;
        for (int32_t j = 0; j < m->n_names[i]; j++) total += 4 + strlen(m->names[i][j]);
    }
    unsigned char *b = ttc_malloc(total), *o = b;
    if (!b) return TTC_ERR_NOMEM;
    memcpy(o, MAGIC, 8);
    o += 8;
    put(&o, (uint64_t)m->base.n_parts, 4);
    for (int32_t i = 0; i < m->base.n_parts; i++) {
        put(&o, (uint64_t)m->n_names[i], 4);
        for (int32_t j = 0; j < m->n_names[i]; j++) {
            size_t l = strlen(m->names[i][j]);
            put(&o, l, 4);
            memcpy(o, m->names[i][j], l);
            o += l;
        }
        put(&o, m->parts[i]->binary_len, 8);
        memcpy(o, m->parts[i]->binary, m->parts[i]->binary_len);
        o += m->parts[i]->binary_len;
    }
    m->base.binary = b;
    m->base.binary_len = total;
    return TTC_OK;
}

/* ---- parallel build ---- */
typedef struct job {
    ttc_device *d;
    const ttc_program_part *parts;
    const char *options, *cache_dir;
    multi *m;
    pthread_mutex_t lock;
    int32_t next, n;
    ttc_status *st;           /* per part */
    char **err;               /* per part: the failing part's message (errors are thread-local) */
} job;

static void *worker(void *arg) {
    job *j = arg;
    for (;;) {
        pthread_mutex_lock(&j->lock);
        int32_t i = j->next < j->n ? j->next++ : -1;
        pthread_mutex_unlock(&j->lock);
        if (i < 0) return NULL;
        j->st[i] = ttc_program_build(j->d, j->parts[i].src, j->options, j->cache_dir, &j->m->parts[i]);
        if (j->st[i] != TTC_OK) j->err[i] = ttc_strdup(ttc_last_error());
    }
}

ttc_status ttc_program_build_parts(ttc_device *d, const ttc_program_part *parts, int32_t n, const char *options,
                                   const char *cache_dir, int32_t threads, ttc_program **out) {
    *out = NULL;
    if (n < 1) return ttc_fail(TTC_ERR_INVALID_ARG, "ttc_program_build_parts: no parts");
    if (n == 1) return ttc_program_build(d, parts[0].src, options, cache_dir, out);
    multi *m = multi_new(d, n);
    if (!m) return TTC_ERR_NOMEM;
    job j = {d, parts, options, cache_dir, m, PTHREAD_MUTEX_INITIALIZER, 0, n, NULL, NULL};
    j.st = ttc_calloc((size_t)n, sizeof *j.st);
    j.err = ttc_calloc((size_t)n, sizeof *j.err);
    ttc_status s = j.st && j.err ? TTC_OK : TTC_ERR_NOMEM;
    for (int32_t i = 0; i < n && s == TTC_OK; i++) s = set_names(m, i, parts[i].kernels, parts[i].n_kernels);
    if (s == TTC_OK) {
        int32_t nt = threads < 1 ? 1 : threads > n ? n : threads;
        pthread_t th[64];
        int32_t started = 0;
        for (int32_t t = 1; t < nt && t < 64; t++)   /* this thread is worker 0 */
            if (pthread_create(&th[started], NULL, worker, &j) == 0) started++;
        worker(&j);
        for (int32_t t = 0; t < started; t++) pthread_join(th[t], NULL);
        for (int32_t i = 0; i < n && s == TTC_OK; i++) {
            if (j.st[i] == TTC_OK) continue;
            s = j.st[i];
            if (s == TTC_ERR_NOMEM && !j.err[i]) ttc_fail(s, "building program part %d of %d", i, n);
            else ttc_fail_long(s, "", j.err[i] ? j.err[i] : "(no message)");
        }
    }
    if (s == TTC_OK) {
        bool all_cached = true;
        for (int32_t i = 0; i < n; i++) all_cached = all_cached && m->parts[i]->from_cache;
        m->base.from_cache = all_cached;
        s = make_container(m);
    }
    for (int32_t i = 0; j.err && i < n; i++) free(j.err[i]);
    free(j.err);
    free(j.st);
    pthread_mutex_destroy(&j.lock);
    if (s != TTC_OK) { multi_free(m); return s; }
    *out = &m->base;
    return TTC_OK;
}

/* ---- loading the container ---- */
bool ttc_program_parts_binary(const unsigned char *bin, size_t len) { return len >= 12 && !memcmp(bin, MAGIC, 8); }

static bool get(const unsigned char **p, size_t *left, int bytes, uint64_t *v) {
    if (*left < (size_t)bytes) return false;
    *v = 0;
    for (int i = 0; i < bytes; i++) *v |= (uint64_t)(*p)[i] << (8 * i);
    *p += bytes;
    *left -= (size_t)bytes;
    return true;
}

ttc_status ttc_program_parts_from_binary(ttc_device *d, const unsigned char *bin, size_t len, const char *options,
                                         ttc_program **out) {
    const unsigned char *p = bin + 8;
    size_t left = len - 8;
    uint64_t n = 0;
    if (!get(&p, &left, 4, &n) || n < 2 || n > 4096)
        return ttc_fail(TTC_ERR_SERIALIZATION, "program container: bad part count");
    multi *m = multi_new(d, (int32_t)n);
    if (!m) return TTC_ERR_NOMEM;
    ttc_status s = TTC_OK;
    for (int32_t i = 0; i < (int32_t)n && s == TTC_OK; i++) {
        uint64_t nk = 0, bl = 0;
        if (!get(&p, &left, 4, &nk) || nk > left / 4) { s = ttc_fail(TTC_ERR_SERIALIZATION, "program container: part %d truncated", i); break; }
        m->names[i] = ttc_calloc((size_t)nk + 1, sizeof(char *));
        if (!m->names[i]) { s = TTC_ERR_NOMEM; break; }
        for (uint64_t k = 0; k < nk && s == TTC_OK; k++) {
            uint64_t l = 0;
            if (!get(&p, &left, 4, &l) || l > left || l > 255) { s = ttc_fail(TTC_ERR_SERIALIZATION, "program container: part %d kernel names truncated", i); break; }
            char *nm = ttc_malloc((size_t)l + 1);
            if (!nm) { s = TTC_ERR_NOMEM; break; }
            memcpy(nm, p, (size_t)l);
            nm[l] = 0;
            p += l;
            left -= (size_t)l;
            m->names[i][k] = nm;
            m->n_names[i] = (int32_t)k + 1;
        }
        if (s != TTC_OK) break;
        if (!get(&p, &left, 8, &bl) || bl == 0 || bl > left) { s = ttc_fail(TTC_ERR_SERIALIZATION, "program container: part %d binary truncated", i); break; }
        s = ttc_program_from_binary(d, p, (size_t)bl, options, &m->parts[i]);
        p += bl;
        left -= (size_t)bl;
    }
    if (s == TTC_OK && left) s = ttc_fail(TTC_ERR_SERIALIZATION, "program container: %zu bytes after the last part", left);
    if (s == TTC_OK) {
        m->base.binary = ttc_malloc(len);
        if (!m->base.binary) s = TTC_ERR_NOMEM;
        else {
            memcpy(m->base.binary, bin, len);
            m->base.binary_len = len;
            m->base.from_binary = true;
        }
    }
    if (s != TTC_OK) { multi_free(m); return s; }
    *out = &m->base;
    return TTC_OK;
}

/* ---- what backend.c dispatches here ---- */
void ttc_program_parts_free(ttc_program *p) { multi_free((multi *)p); }

ttc_status ttc_program_parts_kernel(ttc_program *p, const char *name, ttc_program **part) {
    multi *m = (multi *)p;
    for (int32_t i = 0; i < p->n_parts; i++)
        for (int32_t j = 0; j < m->n_names[i]; j++)
            if (!strcmp(m->names[i][j], name)) { *part = m->parts[i]; return TTC_OK; }
    return ttc_fail(TTC_ERR_INVALID_ARG, "no part of the program defines kernel %s", name);
}

int32_t ttc_program_n_parts(const ttc_program *p) { return p ? p->n_parts : 0; }

const ttc_program *ttc_program_part_program(const ttc_program *p, int32_t i) {
    if (!p || i < 0 || i >= p->n_parts) return NULL;
    return ((const multi *)p)->parts[i];
}

int32_t ttc_program_part_of(const ttc_program *p, const char *name) {
    if (!p || !p->n_parts) return -1;
    const multi *m = (const multi *)p;
    for (int32_t i = 0; i < p->n_parts; i++)
        for (int32_t j = 0; j < m->n_names[i]; j++)
            if (!strcmp(m->names[i][j], name)) return i;
    return -1;
}
