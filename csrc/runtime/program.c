/* Program builds with the full build log on failure, and the on-disk binary cache.
 *
 * Cache entry: "TTCPBIN1" | u64 key hash | u64 key check | u64 binary length | u64 binary
 * hash | binary. The file name is the key hash; the key covers platform, device, driver,
 * device version, options and source. Entries that fail any check are ignored (and
 * overwritten by the rebuild); writes go to a temporary file renamed into place. */
#include "runtime.h"

#include <errno.h>
#include <pthread.h>
#include <time.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

uint64_t ttc_hash64(const void *data, size_t len, uint64_t seed) {
    const unsigned char *p = data;
    uint64_t h = 1469598103934665603ull ^ seed;
    for (size_t i = 0; i < len; i++) { h ^= p[i]; h *= 1099511628211ull; }
    return h;
}

static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static ttc_cl_program_stats stats;

double ttc_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* kind: 0 compiled from source, 1 binary cache hit, 2 given binary, 3 failed */
static void stats_add(int kind, double s) {
    pthread_mutex_lock(&stats_lock);
    if (kind == 0) { stats.compiled++; stats.compile_s += s; }
    else if (kind == 1) { stats.cache_hits++; stats.cache_s += s; }
    else if (kind == 2) { stats.from_binary++; stats.binary_s += s; }
    else stats.failed++;
    pthread_mutex_unlock(&stats_lock);
}

void ttc_cl_program_stats_get(ttc_cl_program_stats *out) {
    pthread_mutex_lock(&stats_lock);
    *out = stats;
    pthread_mutex_unlock(&stats_lock);
}

/* PoCL makes its binary by compiling every kernel's work-group function then and there (for
 * no particular local size: at launch it compiles the specialised one again), which took
 * 18 s of a 34 s ResNet compile; its own kernel cache (POCL_CACHE_DIR) already keeps builds
 * between processes. So PoCL programs keep no binary (engines store only their source) unless
 * TORCHTRT_C_PROGRAM_BINARIES=1; =0 turns binaries off on any device. */
bool ttc_cl_keep_binaries(const ttc_cl_device *d) {
    const char *v = getenv("TORCHTRT_C_PROGRAM_BINARIES");
    if (v && *v) return strcmp(v, "0") != 0;
    return !strstr(d->platform, "Portable Computing Language");
}

static uint64_t key_hash(ttc_cl_device *d, const char *src, const char *opts, uint64_t seed) {
    uint64_t h = seed;
    const char *parts[] = {d->platform, d->name, d->driver, d->version, opts ? opts : "", src};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        h = ttc_hash64(parts[i], strlen(parts[i]) + 1, h);
    }
    return h;
}

char *ttc_cl_cache_dir(const char *cache_dir) {
    if (cache_dir) return *cache_dir ? ttc_strdup(cache_dir) : NULL;
    const char *env = getenv("TORCHTRT_C_CACHE_DIR");
    if (env) return *env ? ttc_strdup(env) : NULL;
    const char *home = getenv("HOME");
    if (!home || !*home) return NULL;
    return ttc_strfmt("%s/.cache/torchtrt_c", home);
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

static ttc_status fetch_binary(ttc_cl_device *d, cl_program p, unsigned char **bin, size_t *len) {
    size_t sz = 0;
    cl_int err = TTC_CL(GetProgramInfo)(p, CL_PROGRAM_BINARY_SIZES, sizeof sz, &sz, NULL);
    if (err != CL_SUCCESS)
        return ttc_fail_cl(err, "clGetProgramInfo(CL_PROGRAM_BINARY_SIZES) failed: %s", ttc_cl_error_name(err));
    *bin = NULL; *len = 0;
    if (sz == 0) return TTC_OK;
    unsigned char *b = ttc_malloc(sz);
    if (!b) return TTC_ERR_NOMEM;
    err = TTC_CL(GetProgramInfo)(p, CL_PROGRAM_BINARIES, sizeof b, &b, NULL);
    if (err != CL_SUCCESS) {
        free(b);
        return ttc_fail_cl(err, "clGetProgramInfo(CL_PROGRAM_BINARIES) failed: %s", ttc_cl_error_name(err));
    }
    *bin = b; *len = sz;
    return TTC_OK;
}

static ttc_status build(ttc_cl_device *d, cl_program p, const char *opts, bool report) {
    cl_int err = TTC_CL(BuildProgram)(p, 1, &d->id, opts ? opts : "", NULL, NULL);
    if (err == CL_SUCCESS) return TTC_OK;
    if (!report) return TTC_ERR_BUILD;
    size_t n = 0;
    TTC_CL(GetProgramBuildInfo)(p, d->id, CL_PROGRAM_BUILD_LOG, 0, NULL, &n);
    char *log = calloc(n + 1, 1);
    if (log) TTC_CL(GetProgramBuildInfo)(p, d->id, CL_PROGRAM_BUILD_LOG, n, log, NULL);
    char *prefix = ttc_strfmt("building the OpenCL program for %s failed (clBuildProgram: %s); build log:\n",
                              d->name, ttc_cl_error_name(err));
    ttc_status s = ttc_fail_long(TTC_ERR_BUILD, prefix ? prefix : "build failed:\n", log ? log : "(no log)");
    free(prefix);
    free(log);
    return s;
}

static ttc_status from_binary(ttc_cl_device *d, const unsigned char *bin, size_t len, const char *options,
                              ttc_cl_program *out) {
    memset(out, 0, sizeof *out);
    cl_context ctx;
    TTC_TRY(ttc_cl_device_context(d, &ctx));
    cl_int err = CL_SUCCESS, bstatus = CL_SUCCESS;
    cl_program p = TTC_CL(CreateProgramWithBinary)(ctx, 1, &d->id, &len, &bin, &bstatus, &err);
    if (!p || err != CL_SUCCESS || bstatus != CL_SUCCESS) {
        if (p) TTC_CL(ReleaseProgram)(p);
        return ttc_fail_cl(err != CL_SUCCESS ? err : bstatus, "clCreateProgramWithBinary(%s) failed: %s", d->name,
                           ttc_cl_error_name(err != CL_SUCCESS ? err : bstatus));
    }
    if (build(d, p, options, false) != TTC_OK) {
        TTC_CL(ReleaseProgram)(p);
        return ttc_fail(TTC_ERR_BUILD, "the stored program binary does not build on %s", d->name);
    }
    out->program = p;
    out->binary = ttc_malloc(len);
    if (!out->binary) { ttc_cl_program_release(out); return TTC_ERR_NOMEM; }
    memcpy(out->binary, bin, len);
    out->binary_len = len;
    out->from_binary = true;
    return TTC_OK;
}

ttc_status ttc_cl_program_from_binary(ttc_cl_device *d, const unsigned char *bin, size_t len,
                                      const char *options, ttc_cl_program *out) {
    double t0 = ttc_now_s();
    ttc_status s = from_binary(d, bin, len, options, out);
    if (s == TTC_OK) stats_add(2, ttc_now_s() - t0);
    return s;
}

ttc_status ttc_cl_program_build(ttc_cl_device *d, const char *src, const char *options,
                                const char *cache_dir, ttc_cl_program *out) {
    memset(out, 0, sizeof *out);
    double t0 = ttc_now_s();
    char *dir = ttc_cl_cache_dir(cache_dir);
    uint64_t key = key_hash(d, src, options, 0), check = key_hash(d, src, options, 0x5bd1e995);
    if (dir) {
        size_t len = 0;
        unsigned char *bin = cache_read(dir, key, check, &len);
        if (bin) {
            ttc_status s = from_binary(d, bin, len, options, out);
            free(bin);
            if (s == TTC_OK) {
                out->from_cache = true;
                out->from_binary = false;
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
        return ttc_fail_cl(err, "clCreateProgramWithSource(%s) failed: %s", d->name, ttc_cl_error_name(err));
    }
    s = build(d, p, options, true);
    if (s != TTC_OK) { TTC_CL(ReleaseProgram)(p); free(dir); stats_add(3, 0); return s; }
    stats_add(0, ttc_now_s() - t0);
    out->program = p;
    if (!ttc_cl_keep_binaries(d)) { free(dir); return TTC_OK; }
    s = fetch_binary(d, p, &out->binary, &out->binary_len);
    if (s != TTC_OK) { ttc_cl_program_release(out); free(dir); return s; }
    if (dir && out->binary) cache_write(dir, key, check, out->binary, out->binary_len);
    free(dir);
    return TTC_OK;
}

void ttc_cl_program_release(ttc_cl_program *p) {
    if (p->program) TTC_CL(ReleaseProgram)(p->program);
    free(p->binary);
    memset(p, 0, sizeof *p);
}
