/* Thread-local error state and small allocation helpers for the C core. */
#include "status.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TTC_MSG_CAP 65536

static _Thread_local char ttc_msg[TTC_MSG_CAP];
static _Thread_local int32_t ttc_dev_code;
static _Thread_local char ttc_dev_name[160];

const char *ttc_last_error(void) { return ttc_msg; }
int32_t ttc_last_device_code(void) { return ttc_dev_code; }
const char *ttc_last_device_error(void) { return ttc_dev_name; }

static void clear_device(void) { ttc_dev_code = 0; ttc_dev_name[0] = 0; }
void ttc_clear_error(void) { ttc_msg[0] = 0; clear_device(); }

const char *ttc_status_name(ttc_status s) {
    static const char *names[TTC_STATUS_COUNT] = {
        "ok", "invalid argument", "out of memory", "parse error", "verification failed",
        "unsupported", "device error", "build error", "serialization error",
        "input error", "partition error", "internal error", "no such device",
    };
    return (unsigned)s < TTC_STATUS_COUNT ? names[s] : "unknown status";
}

static void vset(const char *fmt, va_list ap) { vsnprintf(ttc_msg, TTC_MSG_CAP, fmt, ap); }

ttc_status ttc_fail(ttc_status s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vset(fmt, ap);
    va_end(ap);
    clear_device();
    return s;
}

ttc_status ttc_fail_device(const char *backend, int32_t code, const char *code_name, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vset(fmt, ap);
    va_end(ap);
    ttc_dev_code = code;
    snprintf(ttc_dev_name, sizeof ttc_dev_name, "%s %s (%d)", backend ? backend : "device",
             code_name ? code_name : "error", (int)code);
    return TTC_ERR_DEVICE;
}

ttc_status ttc_fail_context(ttc_status s, const char *fmt, ...) {
    static _Thread_local char old[TTC_MSG_CAP];
    memcpy(old, ttc_msg, TTC_MSG_CAP);
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(ttc_msg, TTC_MSG_CAP, fmt, ap);
    va_end(ap);
    if (n >= 0 && n < TTC_MSG_CAP - 3) {
        size_t room = (size_t)(TTC_MSG_CAP - n - 3);
        size_t ol = strnlen(old, room);
        ttc_msg[n] = ':'; ttc_msg[n + 1] = ' ';
        memcpy(ttc_msg + n + 2, old, ol);
        ttc_msg[n + 2 + ol] = 0;
    }
    return s;
}

ttc_status ttc_fail_long(ttc_status s, const char *prefix, const char *body) {
    snprintf(ttc_msg, TTC_MSG_CAP, "%s%s", prefix ? prefix : "", body ? body : "");
    clear_device();
    return s;
}

void *ttc_malloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) ttc_fail(TTC_ERR_NOMEM, "out of memory allocating %zu bytes", n);
    return p;
}

void *ttc_calloc(size_t n, size_t sz) {
    void *p = calloc(n ? n : 1, sz ? sz : 1);
    if (!p) ttc_fail(TTC_ERR_NOMEM, "out of memory allocating %zu x %zu bytes", n, sz);
    return p;
}

void *ttc_realloc(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    if (!q) ttc_fail(TTC_ERR_NOMEM, "out of memory reallocating %zu bytes", n);
    return q;
}

char *ttc_strdup(const char *s) {
    if (!s) return NULL;
    size_t n = strlen(s) + 1;
    char *d = ttc_malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

char *ttc_strfmt(const char *fmt, ...) {
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = n >= 0 ? ttc_malloc((size_t)n + 1) : NULL;
    if (s) vsnprintf(s, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    return s;
}

ttc_status ttc_grow(void **arr, int32_t *cap, int32_t need, size_t esz) {
    if (need <= *cap) return TTC_OK;
    int64_t nc = *cap ? (int64_t)*cap * 2 : 8;
    while (nc < need) nc *= 2;
    if (nc > INT32_MAX) return ttc_fail(TTC_ERR_NOMEM, "array too large (%lld)", (long long)nc);
    void *p = ttc_realloc(*arr, (size_t)nc * esz);
    if (!p) return TTC_ERR_NOMEM;
    *arr = p;
    *cap = (int32_t)nc;
    return TTC_OK;
}

void ttc_sbuf_append(ttc_sbuf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->len + n + 1 > b->cap) {
        size_t nc = b->cap ? b->cap * 2 : 256;
        while (nc < b->len + n + 1) nc *= 2;
        char *p = realloc(b->data, nc);
        if (!p) { b->oom = true; return; }
        b->data = p;
        b->cap = nc;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = 0;
}

void ttc_sbuf_printf(ttc_sbuf *b, const char *fmt, ...) {
    char tmp[512];
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) { va_end(ap2); return; }
    if ((size_t)n < sizeof tmp) {
        ttc_sbuf_append(b, tmp, (size_t)n);
    } else {
        char *big = malloc((size_t)n + 1);
        if (!big) { b->oom = true; va_end(ap2); return; }
        vsnprintf(big, (size_t)n + 1, fmt, ap2);
        ttc_sbuf_append(b, big, (size_t)n);
        free(big);
    }
    va_end(ap2);
}

char *ttc_sbuf_take(ttc_sbuf *b) {
    bool oom = b->oom;
    char *d = oom ? NULL : b->data;
    if (oom) free(b->data);
    b->data = NULL; b->len = b->cap = 0; b->oom = false;
    if (oom) { ttc_fail(TTC_ERR_NOMEM, "out of memory building a string"); return NULL; }
    return d ? d : ttc_strdup("");
}

void ttc_sbuf_free(ttc_sbuf *b) { free(b->data); b->data = NULL; b->len = b->cap = 0; b->oom = false; }

double ttc_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Four independent multiply-rotate lanes over 32-byte blocks: the lanes' multiplies overlap,
 * so a 440 MB engine blob hashes at memory speed (the byte-wise FNV-1a used before spent about
 * a second per such blob, and was paid at every save and every load). Words are read
 * little-endian whatever the host, so checksums agree between machines. */
#define TTC_H_K1 0x9e3779b185ebca87ull
#define TTC_H_K2 0xc2b2ae3d27d4eb4full
#define TTC_H_K3 0x165667b19e3779f9ull

static inline uint64_t h_rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
static inline uint64_t h_word(const unsigned char *p) {
    uint64_t v;
    memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}
static inline uint64_t h_lane(uint64_t v, uint64_t w) { return h_rotl(v + w * TTC_H_K2, 31) * TTC_H_K1; }

uint64_t ttc_hash64(const void *data, size_t len, uint64_t seed) {
    const unsigned char *p = data;
    size_t i = 0;
    uint64_t h;
    if (len >= 32) {
        uint64_t v0 = seed + TTC_H_K1 + TTC_H_K2, v1 = seed + TTC_H_K2, v2 = seed, v3 = seed - TTC_H_K1;
        for (; i + 32 <= len; i += 32) {
            v0 = h_lane(v0, h_word(p + i));
            v1 = h_lane(v1, h_word(p + i + 8));
            v2 = h_lane(v2, h_word(p + i + 16));
            v3 = h_lane(v3, h_word(p + i + 24));
        }
        h = h_rotl(v0, 1) + h_rotl(v1, 7) + h_rotl(v2, 12) + h_rotl(v3, 18);
        h = (h ^ h_lane(0, v0)) * TTC_H_K1 + TTC_H_K3;
        h = (h ^ h_lane(0, v1)) * TTC_H_K1 + TTC_H_K3;
        h = (h ^ h_lane(0, v2)) * TTC_H_K1 + TTC_H_K3;
        h = (h ^ h_lane(0, v3)) * TTC_H_K1 + TTC_H_K3;
    } else {
        h = seed + TTC_H_K3;
    }
    h += (uint64_t)len;
    for (; i + 8 <= len; i += 8) h = h_rotl(h ^ h_lane(0, h_word(p + i)), 27) * TTC_H_K1 + TTC_H_K3;
    for (; i < len; i++) h = h_rotl(h ^ ((uint64_t)p[i] * TTC_H_K3), 11) * TTC_H_K1;
    h ^= h >> 33;
    h *= TTC_H_K2;
    h ^= h >> 29;
    h *= TTC_H_K3;
    h ^= h >> 32;
    return h;
}
