/*
 * Error recording for the C core: every fallible function returns a ttc_status and, on
 * failure, records a message here (thread-local) naming what failed and where.
 *
 *   if (!p) return TTC_FAIL(TTC_ERR_NOMEM, "allocating %zu bytes for %s", n, what);
 */
#ifndef TTC_STATUS_H
#define TTC_STATUS_H

#include "../include/torchtrt_c.h"

#if defined(__GNUC__)
#define TTC_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define TTC_PRINTF(a, b)
#endif

/* Records the message and returns s, so that `return ttc_fail(...)` reads naturally. */
ttc_status ttc_fail(ttc_status s, const char *fmt, ...) TTC_PRINTF(2, 3);
/* A failed device call (TTC_ERR_DEVICE): records the backend's name ("OpenCL"), its own error
 * code and the code's name (NULL: none known) besides the message. */
ttc_status ttc_fail_device(const char *backend, int32_t code, const char *code_name, const char *fmt, ...)
    TTC_PRINTF(4, 5);
/* Seconds on a monotonic clock (for compile profiles). */
double ttc_now_s(void);
/* A fast 64-bit hash (four lanes of 8-byte words; status.c), for cache keys and blob
 * checksums; not cryptographic. Chain pieces by passing one hash as the next seed. */
uint64_t ttc_hash64(const void *data, size_t len, uint64_t seed);
/* Prepends context to the current message ("while converting %node: <old message>"). */
ttc_status ttc_fail_context(ttc_status s, const char *fmt, ...) TTC_PRINTF(2, 3);
void ttc_clear_error(void);
/* Build logs can be long: this one takes ownership of nothing and copies up to 64 KiB. */
ttc_status ttc_fail_long(ttc_status s, const char *prefix, const char *body);

#define TTC_FAIL(s, ...) ttc_fail((s), __VA_ARGS__)
#define TTC_TRY(expr) do { ttc_status _st = (expr); if (_st != TTC_OK) return _st; } while (0)

/* Small helpers shared by everyone. */
void *ttc_malloc(size_t n);              /* records TTC_ERR_NOMEM on failure */
void *ttc_calloc(size_t n, size_t sz);
void *ttc_realloc(void *p, size_t n);
char *ttc_strdup(const char *s);         /* NULL in -> NULL out */
char *ttc_strfmt(const char *fmt, ...) TTC_PRINTF(1, 2);  /* malloc'd */
/* Grows *arr (element size esz) so that it holds at least need elements. */
ttc_status ttc_grow(void **arr, int32_t *cap, int32_t need, size_t esz);

/* A growable string buffer. */
typedef struct ttc_sbuf { char *data; size_t len, cap; bool oom; } ttc_sbuf;
void ttc_sbuf_printf(ttc_sbuf *b, const char *fmt, ...) TTC_PRINTF(2, 3);
void ttc_sbuf_append(ttc_sbuf *b, const char *s, size_t n);
char *ttc_sbuf_take(ttc_sbuf *b);        /* returns data (NULL if oom) and resets */
void ttc_sbuf_free(ttc_sbuf *b);

#endif
