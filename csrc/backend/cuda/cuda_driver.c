/* The CUDA driver through dlopen (cuda_driver.h): module loading, launches and device memory
 * in torch's context, and the PTX rewrite that makes NVIDIA OpenCL's kernels launchable. The
 * driver types are handles (pointers) and integers here: the ABI the driver API documents. */
#include "cuda_driver.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *ttc_cuda_dlopen_first(const char *const *names, size_t n) {
    void *h = NULL;
    for (int pass = 0; pass < 2 && !h; pass++)
        for (size_t i = 0; i < n && !h; i++) h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL | (pass ? 0 : RTLD_NOLOAD));
    return h;
}

typedef int cu_result;

#define CU_FUNCS(X)                                                                                        \
    X(cuInit, cu_result (*)(unsigned))                                                                     \
    X(cuDeviceGetCount, cu_result (*)(int *))                                                              \
    X(cuDeviceGet, cu_result (*)(int *, int))                                                              \
    X(cuDevicePrimaryCtxRetain, cu_result (*)(void **, int))                                               \
    X(cuCtxGetCurrent, cu_result (*)(void **))                                                             \
    X(cuCtxPushCurrent_v2, cu_result (*)(void *))                                                          \
    X(cuCtxPopCurrent_v2, cu_result (*)(void **))                                                          \
    X(cuCtxSynchronize, cu_result (*)(void))                                                               \
    X(cuModuleLoadDataEx, cu_result (*)(void **, const void *, unsigned, int *, void **))                  \
    X(cuModuleUnload, cu_result (*)(void *))                                                               \
    X(cuModuleGetFunction, cu_result (*)(void **, void *, const char *))                                   \
    X(cuFuncGetAttribute, cu_result (*)(int *, int, void *))                                               \
    X(cuFuncSetAttribute, cu_result (*)(void *, int, int))                                                 \
    X(cuDeviceGetAttribute, cu_result (*)(int *, int, int))                                                \
    X(cuLaunchKernel, cu_result (*)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,    \
                                    unsigned, void *, void **, void **))                                   \
    X(cuMemAlloc_v2, cu_result (*)(uint64_t *, size_t))                                                    \
    X(cuMemFree_v2, cu_result (*)(uint64_t))                                                               \
    X(cuMemGetAddressRange_v2, cu_result (*)(uint64_t *, size_t *, uint64_t))                              \
    X(cuMemcpyHtoD_v2, cu_result (*)(uint64_t, const void *, size_t))                                      \
    X(cuMemcpyDtoHAsync_v2, cu_result (*)(void *, uint64_t, size_t, void *))                               \
    X(cuMemsetD32Async, cu_result (*)(uint64_t, unsigned, size_t, void *))                                 \
    X(cuStreamSynchronize, cu_result (*)(void *))                                                          \
    X(cuGetErrorName, cu_result (*)(cu_result, const char **))

static struct {
#define X(name, type) __typeof__(type) name;
    CU_FUNCS(X)
#undef X
    cu_result (*uuid)(unsigned char *, int);    /* cuDeviceGetUuid(_v2) */
    /* graphs (optional: without them every call launches its kernels one by one) */
    cu_result (*cuStreamCreate)(void **, unsigned);
    cu_result (*cuStreamDestroy_v2)(void *);
    cu_result (*cuStreamBeginCapture_v2)(void *, int);
    cu_result (*cuStreamEndCapture)(void *, void **);
    cu_result (*cuStreamIsCapturing)(void *, int *);
    cu_result (*cuGraphInstantiateWithFlags)(void **, void *, unsigned long long);
    cu_result (*cuGraphLaunch)(void *, void *);
    cu_result (*cuGraphExecDestroy)(void *);
    cu_result (*cuGraphDestroy)(void *);
    bool graphs;
    /* events (optional: timing a library call against a kernel, backend/cuda/exec_cuda_lib.c) */
    cu_result (*cuEventCreate)(void **, unsigned);
    cu_result (*cuEventRecord)(void *, void *);
    cu_result (*cuEventSynchronize)(void *);
    cu_result (*cuEventElapsedTime)(float *, void *, void *);
    cu_result (*cuEventDestroy_v2)(void *);
    bool events;
    /* tensor maps (optional: CUDA 12's; the tensor-copy GEMM tiles need it) */
    cu_result (*cuTensorMapEncodeTiled)(void *, int, unsigned, void *, const uint64_t *, const uint64_t *,
                                        const unsigned *, const unsigned *, int, int, int, int);
} cu;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char load_msg[256];        /* empty when the driver loaded and initialised */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
#define MAX_CUDA 64
static void *primary[MAX_CUDA];   /* retained once per ordinal, for the process */
/* What the library holds in CUDA memory now (ttc_cuda_stats): allocations and their bytes,
 * loaded modules, instantiated graphs. Engines free theirs with their CUDA state. */
static int64_t n_allocs, n_bytes, n_modules, n_graphs;

static void load(void) {
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) { snprintf(load_msg, sizeof load_msg, "libcuda.so.1 could not be loaded (no NVIDIA CUDA driver)"); return; }
#define X(name, type)                                                                                      \
    cu.name = (type)dlsym(h, #name);                                                                       \
    if (!cu.name) { snprintf(load_msg, sizeof load_msg, "libcuda.so.1 has no %s (driver too old)", #name); return; }
    CU_FUNCS(X)
#undef X
    cu.uuid = (cu_result(*)(unsigned char *, int))dlsym(h, "cuDeviceGetUuid_v2");
    if (!cu.uuid) cu.uuid = (cu_result(*)(unsigned char *, int))dlsym(h, "cuDeviceGetUuid");
    if (!cu.uuid) { snprintf(load_msg, sizeof load_msg, "libcuda.so.1 has no cuDeviceGetUuid"); return; }
    cu.graphs = true;
#define G(name)                                                                                            \
    *(void **)&cu.name = dlsym(h, #name);                                                                  \
    if (!cu.name) cu.graphs = false;
    G(cuStreamCreate) G(cuStreamDestroy_v2) G(cuStreamBeginCapture_v2) G(cuStreamEndCapture)
    G(cuStreamIsCapturing) G(cuGraphInstantiateWithFlags) G(cuGraphLaunch) G(cuGraphExecDestroy)
    G(cuGraphDestroy)
#undef G
    cu.events = true;
#define E(name)                                                                                            \
    *(void **)&cu.name = dlsym(h, #name);                                                                  \
    if (!cu.name) cu.events = false;
    E(cuEventCreate) E(cuEventRecord) E(cuEventSynchronize) E(cuEventElapsedTime) E(cuEventDestroy_v2)
#undef E
    *(void **)&cu.cuTensorMapEncodeTiled = dlsym(h, "cuTensorMapEncodeTiled");
    cu_result r = cu.cuInit(0);
    if (r) snprintf(load_msg, sizeof load_msg, "cuInit failed (CUDA error %d)", r);
}

bool ttc_cuda_available(char *why, size_t why_len) {
    pthread_once(&once, load);
    if (why && why_len) snprintf(why, why_len, "%s", load_msg);
    return !load_msg[0];
}

static ttc_status cu_fail(cu_result r, const char *what) {
    const char *nm = NULL;
    if (cu.cuGetErrorName) cu.cuGetErrorName(r, &nm);
    return ttc_fail_device("CUDA", (int32_t)r, nm, "%s failed: %s (CUDA error %d)", what, nm ? nm : "unknown", r);
}

static ttc_status need_driver(void) {
    char why[256];
    if (!ttc_cuda_available(why, sizeof why)) return ttc_fail(TTC_ERR_UNSUPPORTED, "CUDA driver unavailable: %s", why);
    return TTC_OK;
}

ttc_status ttc_cuda_device_uuid(int32_t ordinal, unsigned char uuid[16]) {
    TTC_TRY(need_driver());
    int n = 0, dev = 0;
    cu_result r = cu.cuDeviceGetCount(&n);
    if (r) return cu_fail(r, "cuDeviceGetCount");
    if (ordinal < 0 || ordinal >= n) return ttc_fail(TTC_ERR_INVALID_ARG, "CUDA device %d does not exist (%d devices)", (int)ordinal, n);
    if ((r = cu.cuDeviceGet(&dev, ordinal)) || (r = cu.uuid(uuid, dev))) return cu_fail(r, "cuDeviceGetUuid");
    return TTC_OK;
}

ttc_status ttc_cuda_enter(int32_t ordinal, ttc_cuda_scope *sc) {
    sc->pushed = false;
    TTC_TRY(need_driver());
    if (ordinal < 0 || ordinal >= MAX_CUDA) return ttc_fail(TTC_ERR_INVALID_ARG, "CUDA device %d out of range", (int)ordinal);
    pthread_mutex_lock(&lock);
    cu_result r = 0;
    if (!primary[ordinal]) {
        int dev = 0;
        r = cu.cuDeviceGet(&dev, ordinal);
        if (!r) r = cu.cuDevicePrimaryCtxRetain(&primary[ordinal], dev);
    }
    void *want = primary[ordinal];
    pthread_mutex_unlock(&lock);
    if (r) return cu_fail(r, "cuDevicePrimaryCtxRetain");
    void *cur = NULL;
    if ((r = cu.cuCtxGetCurrent(&cur))) return cu_fail(r, "cuCtxGetCurrent");
    if (cur == want) return TTC_OK;   /* the usual case: torch made it current on this thread */
    if ((r = cu.cuCtxPushCurrent_v2(want))) return cu_fail(r, "cuCtxPushCurrent");
    sc->pushed = true;
    return TTC_OK;
}

void ttc_cuda_leave(ttc_cuda_scope *sc) {
    void *c;
    if (sc->pushed) cu.cuCtxPopCurrent_v2(&c);
    sc->pushed = false;
}

/* ---- PTX ---- */

/* The statement around position at: [*from, *to) from the previous ';', '{', '}' or newline
 * to the next ';'. */
static void statement(const char *ptx, size_t len, size_t at, size_t *from, size_t *to) {
    size_t a = at, b = at;
    while (a > 0 && !strchr(";{}\n", ptx[a - 1])) a--;
    while (b < len && ptx[b] != ';') b++;
    *from = a;
    *to = b;
}

static bool space(char c) { return c == ' ' || c == '\t'; }

static bool ident_char(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '$'; }

#define LOCAL_DECL ".param .u64 .ptr .shared"
#define TMAP_DECL ".param .u64 .ptr .global .align 128"
#define LOCAL_BASE "ttc_dsmem"

/* Two kinds of kernel parameter are rewritten (a parameter's kind by its declaration):
 * - __local kernel arguments: NVIDIA's OpenCL declares each as a ".param .u64 .ptr .shared
 *   .align N name" that its own launch fills with a .shared address. Here each becomes a plain
 *   .u64 parameter holding a byte offset into the block's dynamic shared memory (the
 *   ".extern .shared" array LOCAL_BASE, placed after any static arrays and 1024-byte aligned:
 *   what the warpgroup MMA's 128-byte swizzle needs of its operands), and every
 *   "ld.param.u64 %rdN, [name];" (or .u32) adds that array's address to what it loaded: the
 *   launch passes the offsets and sizes the dynamic shared memory (exec_cuda.c), whatever value
 *   OpenCL's own launch would have put there.
 * - tensor maps: a `__global const ulong16 *` argument (declared ".param .u64 .ptr .global
 *   .align 128 name"; no other kernel takes 128-byte-aligned pointers) becomes a 128-byte
 *   parameter that the launch fills with a CUtensorMap (exec_cuda.c), and
 *   "ld.param.u64 %rdN, [name];" becomes its generic address (cvta.param), what the tensor
 *   copies (kernels/ptx.cl, ttc_tma_load2) take.
 * Any other use of such a parameter is refused. *n_maps: the tensor-map parameters rewritten. */
static ttc_status collect(const char *s, const char *decl, char kind, ttc_sbuf *names, int32_t *n) {
    size_t dl = strlen(decl);
    for (const char *q = s; (q = strstr(q, decl)); q += dl) {
        const char *r = q + dl;
        if (!space(*r)) continue;   /* a longer alignment (".align 1024") is another declaration */
        while (space(*r)) r++;
        if (kind == 'L' && !strncmp(r, ".align", 6)) {
            r += 6;
            while (space(*r)) r++;
            while (*r >= '0' && *r <= '9') r++;
            while (space(*r)) r++;
        }
        const char *e = r;
        while (ident_char(*e)) e++;
        if (e == r) return ttc_fail(TTC_ERR_UNSUPPORTED, "a %s parameter without a name", kind == 'L' ? ".shared pointer" : "tensor-map");
        ttc_sbuf_append(names, &kind, 1);
        ttc_sbuf_append(names, r, (size_t)(e - r));
        ttc_sbuf_append(names, "", 1);
        (*n)++;
    }
    return TTC_OK;
}

static ttc_status special_params(const char *s, char **out, int32_t *n_maps) {
    *out = NULL;
    *n_maps = 0;
    ttc_sbuf b = {0};
    const char *p = s, *q;
    size_t dl = strlen(LOCAL_DECL), tl = strlen(TMAP_DECL);
    /* the parameter names, each after its kind ('L' or 'T') and followed by a NUL, in one buffer */
    ttc_sbuf names = {0};
    int32_t n_names = 0;
    for (q = s; (q = strstr(q, ".ptr .shared")); q += 12)
        if (q - s < (ptrdiff_t)(dl - 12) || strncmp(q - (dl - 12), LOCAL_DECL, dl)) {
            ttc_sbuf_free(&names);
            return ttc_fail(TTC_ERR_UNSUPPORTED, "a .shared pointer parameter in an unexpected form");
        }
    ttc_status st = collect(s, LOCAL_DECL, 'L', &names, &n_names);
    int32_t n_local = n_names;
    if (st == TTC_OK) st = collect(s, TMAP_DECL, 'T', &names, &n_names);
    if (st != TTC_OK || names.oom) {
        ttc_sbuf_free(&names);
        return st != TTC_OK ? st : TTC_ERR_NOMEM;
    }
    /* one pass: declarations rewritten, loads rewritten, any other mention refused */
    const char *ad = strstr(s, ".address_size");
    const char *decl_at = ad ? strchr(ad, '\n') : NULL;
    if (!decl_at) { ttc_sbuf_free(&names); return ttc_fail(TTC_ERR_UNSUPPORTED, "PTX without .address_size"); }
    decl_at++;
    ttc_sbuf_append(&b, s, (size_t)(decl_at - s));
    if (n_local) ttc_sbuf_printf(&b, ".extern .shared .align 1024 .b8 " LOCAL_BASE "[];\n");
    p = decl_at;
    while (*p && st == TTC_OK) {
        /* the next mention of any name, at an identifier boundary */
        const char *best = NULL;
        size_t best_len = 0;
        char best_kind = 0;
        const char *nm = names.data;
        for (int32_t i = 0; i < n_names; i++, nm += strlen(nm) + 1) {
            size_t l = strlen(nm + 1);
            for (const char *f = p; (f = strstr(f, nm + 1)); f += l)
                if ((f == s || !ident_char(f[-1])) && !ident_char(f[l])) {
                    if (!best || f < best) { best = f; best_len = l; best_kind = nm[0]; }
                    break;
                }
        }
        if (!best) { ttc_sbuf_append(&b, p, strlen(p)); break; }
        size_t from, to;
        statement(s, strlen(s), (size_t)(best - s), &from, &to);
        const char *stm = s + from;
        while (stm < best && (space(*stm) || *stm == '\n')) stm++;
        if (best_kind == 'L' && !strncmp(stm, LOCAL_DECL, dl)) {
            /* the declaration: ".param .u64 name" */
            ttc_sbuf_append(&b, p, (size_t)(stm - p));
            ttc_sbuf_printf(&b, ".param .u64 %.*s", (int)best_len, best);
            p = best + best_len;
            continue;
        }
        if (best_kind == 'T' && !strncmp(stm, TMAP_DECL, tl)) {
            ttc_sbuf_append(&b, p, (size_t)(stm - p));
            ttc_sbuf_printf(&b, ".param .align 64 .b8 %.*s[128]", (int)best_len, best);
            p = best + best_len;
            (*n_maps)++;
            continue;
        }
        /* "ld.param.u64 %rdN, [name];", or ".u32" where the kernel only keeps a local
         * address's low word (a shared address fits in it) */
        const char *r = stm;
        bool w32 = best_kind == 'L' && !strncmp(r, "ld.param.u32", 12);
        bool ok = s[to] == ';' && (w32 || !strncmp(r, "ld.param.u64", 12)) && space(r[12]);
        const char *reg = NULL, *reg_end = NULL;
        if (ok) {
            r += 12;
            while (space(*r)) r++;
            reg = r;
            while (*r == '%' || ident_char(*r)) r++;
            reg_end = r;
            while (space(*r)) r++;
            ok = reg_end > reg + 1 && *r == ',';
            if (ok) {
                r++;
                while (space(*r)) r++;
                ok = *r == '[' && r + 1 == best && best[best_len] == ']';
                const char *t = best + best_len + 1;
                while (ok && t < s + to && space(*t)) t++;
                ok = ok && t == s + to;
            }
        }
        if (!ok) {
            st = ttc_fail(TTC_ERR_UNSUPPORTED, "a %s parameter used in an unexpected form: %.*s",
                          best_kind == 'L' ? ".shared pointer" : "tensor-map", (int)(to - from > 80 ? 80 : to - from), s + from);
            break;
        }
        int rl = (int)(reg_end - reg);
        if (best_kind == 'T') {
            ttc_sbuf_append(&b, p, (size_t)(stm - p));
            ttc_sbuf_printf(&b, "mov.u64 %.*s, %.*s; cvta.param.u64 %.*s, %.*s;", rl, reg, (int)best_len, best, rl, reg, rl, reg);
            p = s + to + 1;
            continue;
        }
        ttc_sbuf_append(&b, p, (size_t)(s + to + 1 - p));   /* through the ';' */
        if (w32)
            ttc_sbuf_printf(&b, " { .reg .u32 %%ttc_dw; mov.u32 %%ttc_dw, " LOCAL_BASE "; add.u32 %.*s, %.*s, %%ttc_dw; }",
                            rl, reg, rl, reg);
        else
            ttc_sbuf_printf(&b, " { .reg .u64 %%ttc_db; mov.u64 %%ttc_db, " LOCAL_BASE "; add.u64 %.*s, %.*s, %%ttc_db; }",
                            rl, reg, rl, reg);
        p = s + to + 1;
    }
    ttc_sbuf_free(&names);
    if (st != TTC_OK) { ttc_sbuf_free(&b); return st; }
    char *r = ttc_sbuf_take(&b);
    if (!r) return TTC_ERR_NOMEM;
    *out = r;
    return TTC_OK;
}

/* sm_90a statements that travelled through NVIDIA's OpenCL build (which targets sm_90) as PTX
 * comments (kernels/ptx.cl, TTC_90A): the marker removed wherever it stands, and the module
 * retargeted to sm_90a. In place; the text only shrinks. */
#define CARRIED_90A "//@ttc90a "
static ttc_status uncomment_90a(char *s) {
    if (!strstr(s, CARRIED_90A)) return TTC_OK;
    char *t = strstr(s, ".target");
    if (!t) return ttc_fail(TTC_ERR_UNSUPPORTED, "PTX with sm_90a statements and no .target");
    const char *a = t + 7;
    while (space(*a)) a++;
    if (strncmp(a, "sm_90", 5) || ident_char(a[5]))
        return ttc_fail(TTC_ERR_UNSUPPORTED, "the PTX carries sm_90a statements but targets %.12s: they need an sm_90 "
                        "device", a);
    size_t ml = strlen(CARRIED_90A);
    char *w = s;
    for (const char *r = s; *r;) {
        if (*r == '/' && !strncmp(r, CARRIED_90A, ml)) { r += ml; continue; }
        *w++ = *r++;
    }
    *w = 0;
    /* ".target sm_90" -> ".target sm_90a": one more byte; the text shrank by at least ml */
    t = strstr(s, ".target");
    char *v = t + 7;
    while (space(*v)) v++;
    v += 5;
    memmove(v + 1, v, strlen(v) + 1);
    *v = 'a';
    return TTC_OK;
}

ttc_status ttc_cuda_ptx_prepare(const char *ptx, size_t len, char **out) {
    *out = NULL;
    while (len && !ptx[len - 1]) len--;
    if (len < 16 || !memmem(ptx, len, ".entry", 6) || !memmem(ptx, len, ".version", 8))
        return ttc_fail(TTC_ERR_UNSUPPORTED, "the program binary is not PTX text");
    ttc_sbuf b = {0};
    size_t done = 0;
    for (const char *p = ptx; (p = memmem(p, len - (size_t)(p - ptx), "%envreg", 7)); ) {
        size_t at = (size_t)(p - ptx), from, to;
        const char *q = p + 7;
        int reg = 0, digits = 0;
        while (q < ptx + len && *q >= '0' && *q <= '9' && digits < 3) reg = reg * 10 + (*q++ - '0'), digits++;
        statement(ptx, len, at, &from, &to);
        /* only "mov.b32|mov.u32 %rN, %envregM;" is understood */
        size_t s = from;
        while (s < at && (space(ptx[s]) || ptx[s] == '\n')) s++;
        bool mov = at - s > 8 && (!strncmp(ptx + s, "mov.b32", 7) || !strncmp(ptx + s, "mov.u32", 7)) && space(ptx[s + 7]);
        const char *tail = q;
        while (tail < ptx + to && space(*tail)) tail++;
        if (!digits || !mov || tail != ptx + to) {
            ttc_sbuf_free(&b);
            return ttc_fail(TTC_ERR_UNSUPPORTED, "the PTX reads %%envreg in an unexpected form: %.*s", (int)(to - from > 80 ? 80 : to - from), ptx + from);
        }
        if (reg > 8) {
            ttc_sbuf_free(&b);
            return ttc_fail(TTC_ERR_UNSUPPORTED, "a kernel reads %%envreg%d (%s), which a CUDA launch does not set", reg,
                            reg == 9 ? "get_work_dim" : "unknown launch state");
        }
        ttc_sbuf_append(&b, ptx + done, s - done);
        ttc_sbuf_append(&b, reg >= 6 ? "mov.u32" : "mov.b32", 7);
        ttc_sbuf_append(&b, ptx + s + 7, at - (s + 7));
        if (reg >= 6) ttc_sbuf_printf(&b, "%%nctaid.%c", "xyz"[reg - 6]);
        else ttc_sbuf_append(&b, "0", 1);  /* group and global offsets: launches are never split or offset */
        done = (size_t)(q - ptx);
        p = q;
    }
    ttc_sbuf_append(&b, ptx + done, len - done);
    char *s = ttc_sbuf_take(&b);
    if (!s) return TTC_ERR_NOMEM;
    ttc_status u = uncomment_90a(s);
    if (u != TTC_OK) { free(s); return u; }
    if (strstr(s, ".ptr .shared") || strstr(s, TMAP_DECL)) {
        char *r = NULL;
        int32_t n_maps = 0;
        ttc_status st = special_params(s, &r, &n_maps);
        free(s);
        if (st != TTC_OK) return st;
        s = r;
    }
    *out = s;
    return TTC_OK;
}

void ttc_cuda_ptx_reqntid(const char *ptx, const char *name, uint32_t req[3]) {
    req[0] = req[1] = req[2] = 0;
    size_t n = strlen(name);
    for (const char *p = ptx; (p = strstr(p, ".entry ")); p += 7) {
        const char *q = p + 7;
        while (space(*q)) q++;
        if (strncmp(q, name, n) || (q[n] != '(' && !space(q[n]))) continue;
        const char *body = strchr(q, '{'), *r = strstr(q, ".reqntid");
        if (!body || !r || r > body) return;
        r += 8;
        for (int d = 0; d < 3; d++) {
            while (space(*r) || *r == '\n') r++;
            char *end;
            unsigned long v = strtoul(r, &end, 10);
            if (end == r) break;
            req[d] = (uint32_t)v;
            r = end;
            while (space(*r)) r++;
            if (*r != ',') break;
            r++;
        }
        for (int d = 0; d < 3; d++) if (!req[d]) req[d] = 1;
        return;
    }
}

int32_t ttc_cuda_ptx_maps(const char *ptx, const char *name) {
    size_t n = strlen(name);
    for (const char *p = ptx; (p = strstr(p, ".entry ")); p += 7) {
        const char *q = p + 7;
        while (space(*q)) q++;
        if (strncmp(q, name, n) || (q[n] != '(' && !space(q[n]) && q[n] != '\n')) continue;
        const char *end = strchr(q, ')');
        int32_t c = 0;
        for (const char *r = q; end && (r = strstr(r, ".param .align 64 .b8 ")) && r < end; r += 21) c++;
        return c;
    }
    return 0;
}

ttc_status ttc_cuda_tensor_map(void *map, uint64_t base, uint64_t inner, uint64_t rows, uint32_t box_inner,
                               uint32_t box_rows) {
    TTC_TRY(need_driver());
    if (!cu.cuTensorMapEncodeTiled)
        return ttc_fail(TTC_ERR_UNSUPPORTED, "the CUDA driver has no cuTensorMapEncodeTiled (tensor maps need CUDA 12)");
    if (base % 16 || (inner * 2) % 16 || !inner || !rows || inner > 0xffffffffu || rows > 0xffffffffu)
        return ttc_fail(TTC_ERR_UNSUPPORTED, "a tensor map needs a 16-byte aligned start and rows of a multiple of 8 "
                        "halves (start %% 16 = %d, %llu halves by %llu rows)", (int)(base % 16),
                        (unsigned long long)inner, (unsigned long long)rows);
    uint64_t dims[2] = {inner, rows}, strides[1] = {inner * 2};
    unsigned box[2] = {box_inner, box_rows}, estr[2] = {1, 1};
    /* CU_TENSOR_MAP_DATA_TYPE_FLOAT16 (6), INTERLEAVE_NONE (0), SWIZZLE_128B (3),
     * L2_PROMOTION_L2_256B (3), FLOAT_OOB_FILL_NONE (0: out-of-bounds elements read as zeros) */
    cu_result r = cu.cuTensorMapEncodeTiled(map, 6, 2, (void *)(uintptr_t)base, dims, strides, box, estr, 0, 3, 3, 0);
    if (r) return cu_fail(r, "cuTensorMapEncodeTiled");
    return TTC_OK;
}

/* ---- modules, launches, memory ---- */

ttc_status ttc_cuda_module_load(const char *ptx, void **mod) {
    *mod = NULL;
    TTC_TRY(need_driver());
    char log[4096] = {0};
    /* CU_JIT_ERROR_LOG_BUFFER (5), CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES (6) */
    int opts[2] = {5, 6};
    void *vals[2] = {log, (void *)(uintptr_t)sizeof log};
    cu_result r = cu.cuModuleLoadDataEx(mod, ptx, 2, opts, vals);
    if (r) {
        *mod = NULL;
        ttc_status s = cu_fail(r, "cuModuleLoadDataEx(the engine's PTX)");
        return log[0] ? ttc_fail_context(s, "JIT log: %.400s", log) : s;
    }
    __atomic_add_fetch(&n_modules, 1, __ATOMIC_RELAXED);
    return TTC_OK;
}

void ttc_cuda_module_unload(void *mod) {
    if (mod && ttc_cuda_available(NULL, 0) && !cu.cuModuleUnload(mod)) __atomic_sub_fetch(&n_modules, 1, __ATOMIC_RELAXED);
}

ttc_status ttc_cuda_function(void *mod, const char *name, void **fn, int32_t *max_threads) {
    cu_result r = cu.cuModuleGetFunction(fn, mod, name);
    if (r) return ttc_fail_context(cu_fail(r, "cuModuleGetFunction"), "kernel %s", name);
    int v = 0;
    /* CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK (0): registers may allow fewer than 1024 */
    r = cu.cuFuncGetAttribute(&v, 0, *fn);
    if (r) return cu_fail(r, "cuFuncGetAttribute");
    *max_threads = v;
    return TTC_OK;
}

ttc_status ttc_cuda_shared_limits(int32_t ordinal, void *fn, size_t *static_bytes, size_t *max_block) {
    int v = 0, dev = 0;
    /* CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES (1) */
    cu_result r = cu.cuFuncGetAttribute(&v, 1, fn);
    if (r) return cu_fail(r, "cuFuncGetAttribute(SHARED_SIZE_BYTES)");
    *static_bytes = (size_t)v;
    /* CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN (97) */
    if ((r = cu.cuDeviceGet(&dev, ordinal)) || (r = cu.cuDeviceGetAttribute(&v, 97, dev)))
        return cu_fail(r, "cuDeviceGetAttribute(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)");
    *max_block = (size_t)v;
    return TTC_OK;
}

ttc_status ttc_cuda_set_dynamic_shared(void *fn, size_t bytes) {
    /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES (8): launches above 48 KiB need it */
    cu_result r = cu.cuFuncSetAttribute(fn, 8, (int)bytes);
    return r ? ttc_fail_context(cu_fail(r, "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)"), "%zu bytes", bytes) : TTC_OK;
}

ttc_status ttc_cuda_launch(void *fn, const uint32_t grid[3], const uint32_t block[3], size_t shared_bytes,
                           uint64_t stream, void **params) {
    cu_result r = cu.cuLaunchKernel(fn, grid[0], grid[1], grid[2], block[0], block[1], block[2], (unsigned)shared_bytes,
                                    (void *)(uintptr_t)stream, params, NULL);
    return r ? cu_fail(r, "cuLaunchKernel") : TTC_OK;
}

ttc_status ttc_cuda_alloc(size_t n, uint64_t *ptr) {
    *ptr = 0;
    TTC_TRY(need_driver());
    cu_result r = cu.cuMemAlloc_v2(ptr, n ? n : 16);
    if (r) { *ptr = 0; return ttc_fail_context(cu_fail(r, "cuMemAlloc"), "%zu bytes", n); }
    /* counted as the driver sizes it, so that the free (which asks the driver) takes it back */
    uint64_t base = 0;
    size_t size = n ? n : 16;
    if (cu.cuMemGetAddressRange_v2(&base, &size, *ptr) || base != *ptr) size = n ? n : 16;
    __atomic_add_fetch(&n_allocs, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&n_bytes, (int64_t)size, __ATOMIC_RELAXED);
    return TTC_OK;
}

void ttc_cuda_free(uint64_t ptr) {
    if (!ptr || !ttc_cuda_available(NULL, 0)) return;
    /* work queued on any stream may still read it: freed rarely (engine teardown) */
    cu.cuCtxSynchronize();
    uint64_t base = 0;
    size_t size = 0;
    bool known = !cu.cuMemGetAddressRange_v2(&base, &size, ptr) && base == ptr;
    if (!cu.cuMemFree_v2(ptr)) {
        __atomic_sub_fetch(&n_allocs, 1, __ATOMIC_RELAXED);
        if (known) __atomic_sub_fetch(&n_bytes, (int64_t)size, __ATOMIC_RELAXED);
    }
}

ttc_cuda_stats ttc_cuda_stats_get(void) {
    ttc_cuda_stats s = {__atomic_load_n(&n_allocs, __ATOMIC_RELAXED), __atomic_load_n(&n_bytes, __ATOMIC_RELAXED),
                        __atomic_load_n(&n_modules, __ATOMIC_RELAXED), __atomic_load_n(&n_graphs, __ATOMIC_RELAXED)};
    return s;
}

ttc_status ttc_cuda_upload(uint64_t dst, const void *src, size_t n) {
    cu_result r = n ? cu.cuMemcpyHtoD_v2(dst, src, n) : 0;
    return r ? cu_fail(r, "cuMemcpyHtoD") : TTC_OK;
}

ttc_status ttc_cuda_memset32(uint64_t dst, uint32_t v, size_t count, uint64_t stream) {
    cu_result r = cu.cuMemsetD32Async(dst, v, count, (void *)(uintptr_t)stream);
    return r ? cu_fail(r, "cuMemsetD32Async") : TTC_OK;
}

ttc_status ttc_cuda_download(void *dst, uint64_t src, size_t n, uint64_t stream) {
    cu_result r = cu.cuMemcpyDtoHAsync_v2(dst, src, n, (void *)(uintptr_t)stream);
    if (r) return cu_fail(r, "cuMemcpyDtoHAsync");
    r = cu.cuStreamSynchronize((void *)(uintptr_t)stream);
    return r ? cu_fail(r, "cuStreamSynchronize") : TTC_OK;
}

/* Graphs. The driver's enums by value: CU_STREAM_NON_BLOCKING 1, CU_STREAM_CAPTURE_MODE_RELAXED
 * 2 (other threads' calls are not policed while we record), CU_STREAM_CAPTURE_STATUS_NONE 0. */
bool ttc_cuda_graphs_available(void) { return ttc_cuda_available(NULL, 0) && cu.graphs; }

ttc_status ttc_cuda_stream_new(uint64_t *stream) {
    void *st = NULL;
    *stream = 0;
    if (!ttc_cuda_graphs_available()) return ttc_fail(TTC_ERR_UNSUPPORTED, "the CUDA driver has no graph API");
    cu_result r = cu.cuStreamCreate(&st, 1);
    if (r) return cu_fail(r, "cuStreamCreate");
    *stream = (uint64_t)(uintptr_t)st;
    return TTC_OK;
}

void ttc_cuda_stream_free(uint64_t stream) {
    if (stream && ttc_cuda_graphs_available()) cu.cuStreamDestroy_v2((void *)(uintptr_t)stream);
}

bool ttc_cuda_stream_capturing(uint64_t stream) {
    int st = 0;
    if (!ttc_cuda_graphs_available()) return false;
    /* an error (e.g. the legacy stream while another thread records in global mode) counts as
     * capturing: the caller then launches plainly, which is always right */
    if (cu.cuStreamIsCapturing((void *)(uintptr_t)stream, &st)) return true;
    return st != 0;
}

ttc_status ttc_cuda_record_begin(uint64_t stream) {
    if (!ttc_cuda_graphs_available()) return ttc_fail(TTC_ERR_UNSUPPORTED, "the CUDA driver has no graph API");
    cu_result r = cu.cuStreamBeginCapture_v2((void *)(uintptr_t)stream, 2);
    return r ? cu_fail(r, "cuStreamBeginCapture") : TTC_OK;
}

ttc_status ttc_cuda_record_end(uint64_t stream, bool keep, void **exec) {
    void *g = NULL;
    *exec = NULL;
    cu_result r = cu.cuStreamEndCapture((void *)(uintptr_t)stream, &g);
    if (r || !keep) {
        if (g) cu.cuGraphDestroy(g);
        return r ? cu_fail(r, "cuStreamEndCapture") : TTC_OK;
    }
    r = cu.cuGraphInstantiateWithFlags(exec, g, 0);
    cu.cuGraphDestroy(g);
    if (r) { *exec = NULL; return cu_fail(r, "cuGraphInstantiate"); }
    __atomic_add_fetch(&n_graphs, 1, __ATOMIC_RELAXED);
    return TTC_OK;
}

ttc_status ttc_cuda_graph_launch(void *exec, uint64_t stream) {
    cu_result r = cu.cuGraphLaunch(exec, (void *)(uintptr_t)stream);
    return r ? cu_fail(r, "cuGraphLaunch") : TTC_OK;
}

void ttc_cuda_graph_free(void *exec) {
    if (exec && ttc_cuda_graphs_available() && !cu.cuGraphExecDestroy(exec)) __atomic_sub_fetch(&n_graphs, 1, __ATOMIC_RELAXED);
}

bool ttc_cuda_events_available(void) { return ttc_cuda_available(NULL, 0) && cu.events; }

ttc_status ttc_cuda_event_new(void **ev) {
    *ev = NULL;
    if (!ttc_cuda_events_available()) return ttc_fail(TTC_ERR_UNSUPPORTED, "the CUDA driver has no event API");
    cu_result r = cu.cuEventCreate(ev, 0);
    return r ? cu_fail(r, "cuEventCreate") : TTC_OK;
}

void ttc_cuda_event_free(void *ev) {
    if (ev && ttc_cuda_events_available()) cu.cuEventDestroy_v2(ev);
}

ttc_status ttc_cuda_event_record(void *ev, uint64_t stream) {
    cu_result r = cu.cuEventRecord(ev, (void *)(uintptr_t)stream);
    return r ? cu_fail(r, "cuEventRecord") : TTC_OK;
}

ttc_status ttc_cuda_event_ms(void *from, void *to, float *ms) {
    cu_result r = cu.cuEventSynchronize(to);
    if (!r) r = cu.cuEventElapsedTime(ms, from, to);
    return r ? cu_fail(r, "cuEventElapsedTime") : TTC_OK;
}
