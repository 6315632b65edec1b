/* Program builds with the full build log on failure, and the on-disk binary cache.
 *
 * Cache entry: "TTCPBIN1" | u64 key hash | u64 key check | u64 binary length | u64 binary
 * hash | binary. The file name is the key hash; the key covers platform, device, driver,
 * device version, options and source. Entries that fail any check are ignored (and
 * overwritten by the rebuild); writes go to a temporary file renamed into place. */
#include "cl.h"

#include <errno.h>
#include <pthread.h>
#include <time.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static ttc_program_stats stats;

/* kind: 0 compiled from source, 1 binary cache hit, 2 given binary, 3 failed */
static void stats_add(int kind, double s) {
    pthread_mutex_lock(&stats_lock);
    if (kind == 0) { stats.compiled++; stats.compile_s += s; }
    else if (kind == 1) { stats.cache_hits++; stats.cache_s += s; }
    else if (kind == 2) { stats.from_binary++; stats.binary_s += s; }
    else stats.failed++;
    pthread_mutex_unlock(&stats_lock);
}

void ttc_cl_program_stats_add(ttc_program_stats *acc) {
    pthread_mutex_lock(&stats_lock);
    acc->compiled += stats.compiled;
    acc->cache_hits += stats.cache_hits;
    acc->from_binary += stats.from_binary;
    acc->failed += stats.failed;
    acc->compile_s += stats.compile_s;
    acc->cache_s += stats.cache_s;
    acc->binary_s += stats.binary_s;
    pthread_mutex_unlock(&stats_lock);
}

static uint64_t key_hash(const ttc_target *d, const char *src, const char *opts, uint64_t seed) {
    uint64_t h = seed;
    const char *parts[] = {d->platform, d->name, d->driver, d->version, opts ? opts : "", src};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        h = ttc_hash64(parts[i], strlen(parts[i]) + 1, h);
    }
    return h;
}

static void mkdirs(const char *path) {
    char *p = ttc_strdup(path);
    if (!p) return;
    for (char *s = p + 1; *s; s++)
        if (*s == '/') { *s = 0; mkdir(p, 0755); *s = '/'; }
    mkdir(p, 0755);
    free(p);
}

static void put64(unsigned char *b, uint64_t v) { for (int i = 0; i < 8; i++) b[i] = (unsigned char)(v >> (8 * i)); }
static uint64_t get64(const unsigned char *b) { uint64_t v = 0; for (int i = 0; i < 8; i++) v |= (uint64_t)b[i] << (8 * i); return v; }

static unsigned char *cache_read(const char *dir, uint64_t key, uint64_t check, size_t *len) {
    char *path = ttc_strfmt("%s/prog-%016llx.bin", dir, (unsigned long long)key);
    if (!path) return NULL;
    FILE *f = fopen(path, "rb");
    free(path);
    if (!f) return NULL;
    unsigned char hdr[40];
    unsigned char *bin = NULL;
    if (fread(hdr, 1, 40, f) != 40 || memcmp(hdr, "TTCPBIN1", 8) || get64(hdr + 8) != key ||
        get64(hdr + 16) != check)
        goto bad;
    uint64_t n = get64(hdr + 24);
    if (n == 0 || n > ((uint64_t)1 << 31)) goto bad;
    bin = malloc((size_t)n);
    if (!bin || fread(bin, 1, (size_t)n, f) != n || ttc_hash64(bin, (size_t)n, 7) != get64(hdr + 32)) goto bad;
    fclose(f);
    *len = (size_t)n;
    return bin;
bad:
    free(bin);
    fclose(f);
    return NULL;
}

static void cache_write(const char *dir, uint64_t key, uint64_t check, const unsigned char *bin, size_t len) {
    mkdirs(dir);
    char *path = ttc_strfmt("%s/prog-%016llx.bin", dir, (unsigned long long)key);
    char *tmp = ttc_strfmt("%s/.prog-%016llx.%ld.%lx.tmp", dir, (unsigned long long)key, (long)getpid(),
                           (unsigned long)(uintptr_t)&key);
    if (path && tmp) {
        FILE *f = fopen(tmp, "wb");
        if (f) {
            unsigned char hdr[40];
            memcpy(hdr, "TTCPBIN1", 8);
            put64(hdr + 8, key); put64(hdr + 16, check); put64(hdr + 24, len);
            put64(hdr + 32, ttc_hash64(bin, len, 7));
            bool ok = fwrite(hdr, 1, 40, f) == 40 && fwrite(bin, 1, len, f) == len;
            ok = (fclose(f) == 0) && ok;
            if (!ok || rename(tmp, path) != 0) unlink(tmp);
        }
    }
    free(path);
    free(tmp);
}

/* The binary of p for device id. A program made from source has one binary slot per device
 * of its context (two where PoCL's caller-thread companion shares it: device.c), built or not. */
static ttc_status fetch_binary(cl_program p, cl_device_id id, unsigned char **bin, size_t *len) {
    *bin = NULL; *len = 0;
    cl_uint nd = 0;
    cl_int err = TTC_CL(GetProgramInfo)(p, CL_PROGRAM_NUM_DEVICES, sizeof nd, &nd, NULL);
    if (err != CL_SUCCESS || nd == 0 || nd > 16)
        return ttc_fail_cl(err != CL_SUCCESS ? err : CL_INVALID_VALUE, "clGetProgramInfo(CL_PROGRAM_NUM_DEVICES) failed: %s",
                           ttc_cl_error_name(err != CL_SUCCESS ? err : CL_INVALID_VALUE));
    cl_device_id ids[16];
    size_t sz[16] = {0};
    unsigned char *bins[16] = {0};
    err = TTC_CL(GetProgramInfo)(p, CL_PROGRAM_DEVICES, nd * sizeof ids[0], ids, NULL);
    if (err == CL_SUCCESS) err = TTC_CL(GetProgramInfo)(p, CL_PROGRAM_BINARY_SIZES, nd * sizeof sz[0], sz, NULL);
    if (err != CL_SUCCESS)
        return ttc_fail_cl(err, "clGetProgramInfo(CL_PROGRAM_BINARY_SIZES) failed: %s", ttc_cl_error_name(err));
    cl_uint at = 0, filled = 0, last = 0;
    while (at < nd && ids[at] != id) at++;
    for (cl_uint i = 0; i < nd; i++)
        if (sz[i]) { filled++; last = i; }
    /* our programs are built for one device; PoCL 3.1 reports that binary in the first slot
     * whichever device of the context it was built for */
    if ((at == nd || sz[at] == 0) && filled == 1) at = last;
    if (at == nd || sz[at] == 0) return TTC_OK;
    unsigned char *b = ttc_malloc(sz[at]);
    if (!b) return TTC_ERR_NOMEM;
    bins[at] = b;   /* NULL slots: binaries not wanted */
    err = TTC_CL(GetProgramInfo)(p, CL_PROGRAM_BINARIES, nd * sizeof bins[0], bins, NULL);
    if (err != CL_SUCCESS) {
        free(b);
        return ttc_fail_cl(err, "clGetProgramInfo(CL_PROGRAM_BINARIES) failed: %s", ttc_cl_error_name(err));
    }
    *bin = b; *len = sz[at];
    return TTC_OK;
}

static ttc_status build(ttc_cl_device *d, cl_program p, const char *opts, bool report) {
    const char *dname = d->base.facts.name;
    cl_int err = TTC_CL(BuildProgram)(p, 1, &d->id, opts ? opts : "", NULL, NULL);
    if (err == CL_SUCCESS) return TTC_OK;
    if (!report) return TTC_ERR_BUILD;
    size_t n = 0;
    TTC_CL(GetProgramBuildInfo)(p, d->id, CL_PROGRAM_BUILD_LOG, 0, NULL, &n);
    char *log = calloc(n + 1, 1);
    if (log) TTC_CL(GetProgramBuildInfo)(p, d->id, CL_PROGRAM_BUILD_LOG, n, log, NULL);
    char *prefix = ttc_strfmt("building the OpenCL program for %s failed (clBuildProgram: %s); build log:\n",
                              dname, ttc_cl_error_name(err));
    ttc_status s = ttc_fail_long(TTC_ERR_BUILD, prefix ? prefix : "build failed:\n", log ? log : "(no log)");
    free(prefix);
    free(log);
    return s;
}

/* A program object wrapping p (taken over); NULL and p released when out of memory. */
static ttc_cl_program *wrap(ttc_cl_device *d, cl_program p) {
    ttc_cl_program *w = ttc_calloc(1, sizeof *w);
    if (!w) { TTC_CL(ReleaseProgram)(p); return NULL; }
    w->base.dev = &d->base;
    w->p = p;
    return w;
}

static ttc_status from_binary(ttc_cl_device *d, const unsigned char *bin, size_t len, const char *options,
                              ttc_program **out) {
    const char *dname = d->base.facts.name;
    cl_context ctx;
    TTC_TRY(ttc_cl_device_context(d, &ctx));
    cl_int err = CL_SUCCESS, bstatus = CL_SUCCESS;
    cl_program p = TTC_CL(CreateProgramWithBinary)(ctx, 1, &d->id, &len, &bin, &bstatus, &err);
    if (!p || err != CL_SUCCESS || bstatus != CL_SUCCESS) {
        if (p) TTC_CL(ReleaseProgram)(p);
        return ttc_fail_cl(err != CL_SUCCESS ? err : bstatus, "clCreateProgramWithBinary(%s) failed: %s", dname,
                           ttc_cl_error_name(err != CL_SUCCESS ? err : bstatus));
    }
    if (build(d, p, options, false) != TTC_OK) {
        TTC_CL(ReleaseProgram)(p);
        return ttc_fail(TTC_ERR_BUILD, "the stored program binary does not build on %s", dname);
    }
    ttc_cl_program *w = wrap(d, p);
    if (!w) return TTC_ERR_NOMEM;
    w->base.binary = ttc_malloc(len);
    if (!w->base.binary) { ttc_cl_program_free(&w->base); return TTC_ERR_NOMEM; }
    memcpy(w->base.binary, bin, len);
    w->base.binary_len = len;
    w->base.from_binary = true;
    *out = &w->base;
    return TTC_OK;
}

ttc_status ttc_cl_program_from_binary(ttc_device *dev, const unsigned char *bin, size_t len, const char *options,
                                      ttc_program **out) {
    double t0 = ttc_now_s();
    ttc_status s = from_binary(ttc_cl_dev(dev), bin, len, options, out);
    if (s == TTC_OK) stats_add(2, ttc_now_s() - t0);
    return s;
}

ttc_status ttc_cl_program_build(ttc_device *dev, const char *src, const char *options, const char *cache_dir,
                                ttc_program **out) {
    ttc_cl_device *d = ttc_cl_dev(dev);
    double t0 = ttc_now_s();
    char *dir = ttc_cache_dir(cache_dir);
    uint64_t key = key_hash(&dev->facts, src, options, 0), check = key_hash(&dev->facts, src, options, 0x5bd1e995);
    if (dir) {
        size_t len = 0;
        unsigned char *bin = cache_read(dir, key, check, &len);
        if (bin) {
            ttc_status s = from_binary(d, bin, len, options, out);
            free(bin);
            if (s == TTC_OK) {
                (*out)->from_cache = true;
                (*out)->from_binary = false;
                free(dir);
                stats_add(1, ttc_now_s() - t0);
                return TTC_OK;
            }
            ttc_clear_error();   /* a stale or corrupt entry: rebuild and overwrite it */
        }
    }
    cl_context ctx;
    ttc_status s = ttc_cl_device_context(d, &ctx);
    if (s != TTC_OK) { free(dir); return s; }
    cl_int err = CL_SUCCESS;
    size_t slen = strlen(src);
    cl_program p = TTC_CL(CreateProgramWithSource)(ctx, 1, &src, &slen, &err);
    if (!p || err != CL_SUCCESS) {
        free(dir);
        return ttc_fail_cl(err, "clCreateProgramWithSource(%s) failed: %s", dev->facts.name, ttc_cl_error_name(err));
    }
    s = build(d, p, options, true);
    if (s != TTC_OK) { TTC_CL(ReleaseProgram)(p); free(dir); stats_add(3, 0); return s; }
    stats_add(0, ttc_now_s() - t0);
    ttc_cl_program *w = wrap(d, p);
    if (!w) { free(dir); return TTC_ERR_NOMEM; }
    if (!ttc_target_keep_binaries(&dev->facts)) { free(dir); *out = &w->base; return TTC_OK; }
    s = fetch_binary(p, d->id, &w->base.binary, &w->base.binary_len);
    if (s != TTC_OK) { ttc_cl_program_free(&w->base); free(dir); return s; }
    if (dir && w->base.binary) cache_write(dir, key, check, w->base.binary, w->base.binary_len);
    free(dir);
    *out = &w->base;
    return TTC_OK;
}

bool ttc_cl_program_cached(ttc_device *dev, const char *src, const char *options, const char *cache_dir) {
    char *dir = ttc_cache_dir(cache_dir);
    if (!dir) return false;
    uint64_t key = key_hash(&dev->facts, src, options, 0);
    char *path = ttc_strfmt("%s/prog-%016llx.bin", dir, (unsigned long long)key);
    free(dir);
    struct stat st;
    bool yes = path && stat(path, &st) == 0 && st.st_size > 40;
    free(path);
    return yes;
}

void ttc_cl_program_free(ttc_program *p) {
    if (!p) return;
    ttc_cl_program *w = (ttc_cl_program *)p;
    if (w->p) TTC_CL(ReleaseProgram)(w->p);
    free(p->binary);
    free(w);
}
