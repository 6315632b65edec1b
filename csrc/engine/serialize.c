/* Engine blobs.
 *
 *   "TTCENGN1" | u32 abi | u32 n_sections | sections | u64 checksum (ttc_hash64 of all before)
 *   section: u32 tag | u64 length | payload
 *
 * Sections: NAME, DEVICE (platform, device name, driver as length-prefixed strings),
 * OPTIONS (u32 fp16, u32 optimization level, u32 TF32 policy: bit 0 GEMMs, bit 1 convolutions;
 * blobs written before it have none: no TF32), IR (text; weights by name), WEIGHTS (u32
 * count, then name, u64 nbytes, bytes each), SOURCE, BINARY (u64 seal, bytes), BINDINGS (names of inputs
 * and outputs, checked after the rebuild), TUNING (u32 count, u32 tile choice per kernel op). Loading checks every length against what is
 * left before reading; anything off is TTC_ERR_SERIALIZATION saying what. The engine is
 * always rebuilt from the IR (conversion is cheap); the stored program binary is used when
 * the device identity and the regenerated source both match, else the program is built
 * for this device (and GEMM tiles are chosen again: stored ones were timed elsewhere). */
#include "engine_impl.h"

#include <stdlib.h>
#include <string.h>

#include "../convert/convert.h"

/* 2: the checksum became ttc_hash64's word-wise hash (1: byte-wise FNV-1a) */
#define TTC_ENGINE_ABI 2
enum { SEC_NAME = 1, SEC_DEVICE, SEC_OPTIONS, SEC_IR, SEC_WEIGHTS, SEC_SOURCE, SEC_BINARY, SEC_BINDINGS, SEC_TUNING,
       SEC_COUNT };

static void put_u32(ttc_sbuf *b, uint32_t v) {
    unsigned char x[4];
    for (int i = 0; i < 4; i++) x[i] = (unsigned char)(v >> (8 * i));
    ttc_sbuf_append(b, (const char *)x, 4);
}
static void put_u64(ttc_sbuf *b, uint64_t v) {
    unsigned char x[8];
    for (int i = 0; i < 8; i++) x[i] = (unsigned char)(v >> (8 * i));
    ttc_sbuf_append(b, (const char *)x, 8);
}
static void put_str(ttc_sbuf *b, const char *s) {
    size_t n = s ? strlen(s) : 0;
    put_u32(b, (uint32_t)n);
    ttc_sbuf_append(b, s ? s : "", n);
}
static void put_section(ttc_sbuf *b, uint32_t tag, const ttc_sbuf *payload) {
    put_u32(b, tag);
    put_u64(b, payload->len);
    if (payload->len) ttc_sbuf_append(b, payload->data, payload->len);
}

/* Drivers may abort on malformed binaries (PoCL asserts), so a stored binary is handed to
 * the driver only when this seal over (binary, source, device identity) still matches. */
static uint64_t binary_seal(const unsigned char *bin, size_t len, const char *src, const ttc_target *d) {
    uint64_t h = ttc_hash64(src, strlen(src), 0x9e3779b97f4a7c15ull);
    h = ttc_hash64(d->platform, strlen(d->platform), h);
    h = ttc_hash64(d->name, strlen(d->name), h);
    h = ttc_hash64(d->driver, strlen(d->driver), h);
    return ttc_hash64(bin, len, h);
}

/* The weights go straight into the blob (no staging copies, one allocation of the exact size,
 * made by the caller's allocator when given: Python's bytes object itself, so nothing is
 * copied again): for a BERT-base engine's 440 MB every extra copy cost about a second. The
 * sections before and after the weights are small and staged. */
ttc_status ttc_engine_serialize_with(ttc_engine *e, ttc_blob_alloc_fn alloc, void *ctx, unsigned char **blob,
                                     size_t *len) {
    *blob = NULL;
    *len = 0;
    if (!e->graph) return ttc_fail(TTC_ERR_SERIALIZATION, "engine %s has no IR to serialise", e->name);
    ttc_graph *g = NULL;
    TTC_TRY(ttc_graph_clone(e->graph, &g));
    /* give every tensor constant a unique name, so the IR refers to the WEIGHTS section */
    ttc_attr **wa = NULL;
    int32_t n_w = 0, cap_w = 0;
    size_t wbytes = 4;
    ttc_status s = TTC_OK;
    for (int32_t i = 0; i < g->n_nodes && s == TTC_OK; i++) {
        ttc_node *n = g->nodes[i];
        if (n->op != TTC_OP_CONSTANT) continue;
        for (int32_t a = 0; a < n->n_attrs; a++) {
            ttc_attr *at = &n->attrs[a];
            if (at->kind != TTC_ATTR_TENSOR || !at->tensor) continue;
            char *nm = ttc_strfmt("w%d", n_w);
            if (!nm || (s = ttc_grow((void **)&wa, &cap_w, n_w + 1, sizeof *wa)) != TTC_OK) {
                free(nm);
                s = TTC_ERR_NOMEM;
                break;
            }
            free(at->s);
            at->s = nm;
            wa[n_w++] = at;
            wbytes += 4 + strlen(nm) + 8 + at->tensor->nbytes;
        }
    }
    char *ir = s == TTC_OK ? ttc_graph_print(g) : NULL;
    if (!ir) {
        free(wa);
        ttc_graph_free(g);
        return s != TTC_OK ? s : ttc_fail(TTC_ERR_NOMEM, "printing the engine IR");
    }
    ttc_sbuf pre = {0}, post = {0}, sec = {0};
    size_t bin_len = 0;
    const unsigned char *bin = ttc_program_binary(e->prog, &bin_len);
    ttc_sbuf_append(&pre, "TTCENGN1", 8);
    put_u32(&pre, TTC_ENGINE_ABI);
    put_u32(&pre, SEC_COUNT - 1);
    put_str(&sec, e->name); put_section(&pre, SEC_NAME, &sec); sec.len = 0;
    put_str(&sec, e->tg.platform); put_str(&sec, e->tg.name); put_str(&sec, e->tg.driver);
    put_section(&pre, SEC_DEVICE, &sec); sec.len = 0;
    put_u32(&sec, e->fp16); put_u32(&sec, (uint32_t)e->opt_level);
    put_u32(&sec, (e->tf32_matmul ? 1u : 0u) | (e->tf32_conv ? 2u : 0u) | (e->check_indices ? 0u : 4u));
    put_section(&pre, SEC_OPTIONS, &sec); sec.len = 0;
    put_u32(&pre, SEC_IR);
    put_u64(&pre, strlen(ir));
    ttc_sbuf_append(&pre, ir, strlen(ir));
    put_u32(&pre, SEC_WEIGHTS);
    put_u64(&pre, wbytes);
    put_u32(&pre, (uint32_t)n_w);
    free(ir);
    put_u32(&post, SEC_SOURCE);
    put_u64(&post, strlen(e->cg.source));
    ttc_sbuf_append(&post, e->cg.source, strlen(e->cg.source));
    put_u64(&sec, binary_seal(bin, bin_len, e->cg.source, &e->tg));
    if (bin_len) ttc_sbuf_append(&sec, (const char *)bin, bin_len);
    put_section(&post, SEC_BINARY, &sec); sec.len = 0;
    put_u32(&sec, (uint32_t)e->n_in);
    for (int32_t i = 0; i < e->n_in; i++) put_str(&sec, e->ins[i].name);
    put_u32(&sec, (uint32_t)e->n_out);
    for (int32_t i = 0; i < e->n_out; i++) put_str(&sec, e->outs[i].name);
    put_section(&post, SEC_BINDINGS, &sec); sec.len = 0;
    put_u32(&sec, (uint32_t)e->k->n_ops);
    for (int32_t i = 0; i < e->k->n_ops; i++) put_u32(&sec, (uint32_t)e->k->ops[i].tile);
    put_section(&post, SEC_TUNING, &sec);
    bool oom = pre.oom || post.oom || sec.oom;
    ttc_sbuf_free(&sec);
    size_t total = pre.len + (wbytes - 4) + post.len + 8;
    unsigned char *out = oom ? NULL : alloc ? alloc(ctx, total) : malloc(total);
    if (!out) {
        free(wa);
        ttc_graph_free(g);
        ttc_sbuf_free(&pre);
        ttc_sbuf_free(&post);
        return ttc_fail(TTC_ERR_NOMEM, "serialising engine %s (%zu bytes)", e->name, total);
    }
    unsigned char *o = out;
    memcpy(o, pre.data, pre.len);
    o += pre.len;
    for (int32_t i = 0; i < n_w; i++) {
        size_t nl = strlen(wa[i]->s), nb = wa[i]->tensor->nbytes;
        for (int k = 0; k < 4; k++) *o++ = (unsigned char)((uint32_t)nl >> (8 * k));
        memcpy(o, wa[i]->s, nl);
        o += nl;
        for (int k = 0; k < 8; k++) *o++ = (unsigned char)((uint64_t)nb >> (8 * k));
        if (nb) memcpy(o, wa[i]->tensor->data, nb);
        o += nb;
    }
    memcpy(o, post.data, post.len);
    o += post.len;
    uint64_t sum = ttc_hash64(out, (size_t)(o - out), 0);
    for (int k = 0; k < 8; k++) *o++ = (unsigned char)(sum >> (8 * k));
    free(wa);
    ttc_graph_free(g);
    ttc_sbuf_free(&pre);
    ttc_sbuf_free(&post);
    *len = total;
    *blob = out;
    return TTC_OK;
}

ttc_status ttc_engine_serialize(ttc_engine *e, unsigned char **blob, size_t *len) {
    return ttc_engine_serialize_with(e, NULL, NULL, blob, len);
}

/* ---- bounded reading ---- */
typedef struct rd { const unsigned char *p; size_t left; const char *what; } rd;

static ttc_status need(rd *r, size_t n, const char *field) {
    if (r->left < n)
        return ttc_fail(TTC_ERR_SERIALIZATION, "engine blob truncated: %s needs %zu bytes, %zu left in %s", field, n,
                        r->left, r->what);
    return TTC_OK;
}
static ttc_status get_u32(rd *r, uint32_t *v, const char *field) {
    TTC_TRY(need(r, 4, field));
    *v = 0;
    for (int i = 0; i < 4; i++) *v |= (uint32_t)r->p[i] << (8 * i);
    r->p += 4; r->left -= 4;
    return TTC_OK;
}
static ttc_status get_u64(rd *r, uint64_t *v, const char *field) {
    TTC_TRY(need(r, 8, field));
    *v = 0;
    for (int i = 0; i < 8; i++) *v |= (uint64_t)r->p[i] << (8 * i);
    r->p += 8; r->left -= 8;
    return TTC_OK;
}
/* A length-prefixed string, copied and NUL-terminated; embedded NULs are rejected. */
static ttc_status get_str(rd *r, char **out, const char *field) {
    uint32_t n;
    TTC_TRY(get_u32(r, &n, field));
    TTC_TRY(need(r, n, field));
    if (memchr(r->p, 0, n)) return ttc_fail(TTC_ERR_SERIALIZATION, "engine blob: %s contains a NUL byte", field);
    char *s = ttc_malloc((size_t)n + 1);
    if (!s) return TTC_ERR_NOMEM;
    memcpy(s, r->p, n);
    s[n] = 0;
    r->p += n; r->left -= n;
    *out = s;
    return TTC_OK;
}

typedef struct weights { char **names; ttc_tensor_data **data; uint32_t n; } weights;

static ttc_tensor_data *lookup_weight(void *ctx, const char *name, const ttc_type *type) {
    weights *w = ctx;
    for (uint32_t i = 0; i < w->n; i++)
        if (!strcmp(w->names[i], name)) return ttc_tensor_data_ref(w->data[i]);
    return NULL;
}

static void weights_free(weights *w) {
    for (uint32_t i = 0; i < w->n; i++) { free(w->names[i]); ttc_tensor_data_unref(w->data[i]); }
    free(w->names);
    free(w->data);
}

static ttc_status read_weights(rd *r, weights *w) {
    uint32_t n;
    TTC_TRY(get_u32(r, &n, "weight count"));
    if (n > r->left / 12 + 1) return ttc_fail(TTC_ERR_SERIALIZATION, "engine blob: %u weights cannot fit in %zu bytes", n, r->left);
    w->names = ttc_calloc((size_t)n + 1, sizeof(char *));
    w->data = ttc_calloc((size_t)n + 1, sizeof(ttc_tensor_data *));
    if (!w->names || !w->data) return TTC_ERR_NOMEM;
    for (uint32_t i = 0; i < n; i++) {
        TTC_TRY(get_str(r, &w->names[i], "weight name"));
        w->n = i + 1;
        uint64_t nb;
        TTC_TRY(get_u64(r, &nb, "weight size"));
        TTC_TRY(need(r, (size_t)nb, "weight data"));
        w->data[i] = ttc_tensor_data_copy(r->p, (size_t)nb);
        if (!w->data[i]) return TTC_ERR_NOMEM;
        r->p += nb; r->left -= (size_t)nb;
    }
    if (r->left) return ttc_fail(TTC_ERR_SERIALIZATION, "engine blob: %zu stray bytes after the weights", r->left);
    return TTC_OK;
}

ttc_status ttc_engine_deserialize(const unsigned char *blob, size_t len, const char *device,
                                  const char *cache_dir, ttc_engine **out) {
    *out = NULL;
    if (!blob || len < 8 + 4 + 4 + 8) return ttc_fail(TTC_ERR_SERIALIZATION, "engine blob too short (%zu bytes)", len);
    if (memcmp(blob, "TTCENGN1", 8))
        return ttc_fail(TTC_ERR_SERIALIZATION, "not a torchtrt_c engine (bad magic)");
    uint64_t sum = 0;
    for (int i = 0; i < 8; i++) sum |= (uint64_t)blob[len - 8 + i] << (8 * i);
    if (ttc_hash64(blob, len - 8, 0) != sum)
        return ttc_fail(TTC_ERR_SERIALIZATION, "engine blob is corrupt (checksum mismatch)");
    rd r = {blob + 8, len - 16, "the blob header"};
    uint32_t abi, nsec;
    TTC_TRY(get_u32(&r, &abi, "ABI version"));
    if (abi != TTC_ENGINE_ABI)
        return ttc_fail(TTC_ERR_SERIALIZATION, "engine blob has ABI version %u, this build reads %d", abi, TTC_ENGINE_ABI);
    TTC_TRY(get_u32(&r, &nsec, "section count"));
    rd secs[SEC_COUNT] = {{0}};
    bool have[SEC_COUNT] = {0};
    for (uint32_t i = 0; i < nsec; i++) {
        uint32_t tag;
        uint64_t n;
        TTC_TRY(get_u32(&r, &tag, "section tag"));
        TTC_TRY(get_u64(&r, &n, "section length"));
        TTC_TRY(need(&r, (size_t)n, "section payload"));
        if (n > r.left) return ttc_fail(TTC_ERR_SERIALIZATION, "engine blob: section %u overruns", tag);
        if (tag > 0 && tag < SEC_COUNT) {
            if (have[tag]) return ttc_fail(TTC_ERR_SERIALIZATION, "engine blob: section %u repeated", tag);
            static const char *names[SEC_COUNT] = {"?", "NAME", "DEVICE", "OPTIONS", "IR", "WEIGHTS", "SOURCE", "BINARY",
                                                   "BINDINGS", "TUNING"};
            rd s = {r.p, (size_t)n, names[tag]};
            secs[tag] = s;
            have[tag] = true;
        }
        r.p += n; r.left -= (size_t)n;
    }
    if (r.left) return ttc_fail(TTC_ERR_SERIALIZATION, "engine blob: %zu stray bytes after the sections", r.left);
    for (int t = 1; t < SEC_COUNT; t++)
        if (!have[t]) return ttc_fail(TTC_ERR_SERIALIZATION, "engine blob lacks section %d", t);

    char *name = NULL, *plat = NULL, *dname = NULL, *driver = NULL, *ir = NULL, *src = NULL;
    weights w = {0};
    ttc_graph *g = NULL;
    ttc_engine *e = NULL;
    uint32_t fp16 = 0, opt = 0, tf32 = 0;
    ttc_status s = get_str(&secs[SEC_NAME], &name, "engine name");
    if (s == TTC_OK) s = get_str(&secs[SEC_DEVICE], &plat, "platform name");
    if (s == TTC_OK) s = get_str(&secs[SEC_DEVICE], &dname, "device name");
    if (s == TTC_OK) s = get_str(&secs[SEC_DEVICE], &driver, "driver version");
    if (s == TTC_OK) s = get_u32(&secs[SEC_OPTIONS], &fp16, "precision");
    if (s == TTC_OK) s = get_u32(&secs[SEC_OPTIONS], &opt, "optimization level");
    if (s == TTC_OK && secs[SEC_OPTIONS].left) s = get_u32(&secs[SEC_OPTIONS], &tf32, "TF32 policy");
    if (s == TTC_OK && (fp16 > 1 || opt > 5 || tf32 > 7 || secs[SEC_OPTIONS].left))
        s = ttc_fail(TTC_ERR_SERIALIZATION, "engine blob: bad options (fp16=%u, level=%u, tf32=%u, %zu bytes more)", fp16,
                     opt, tf32, secs[SEC_OPTIONS].left);
    if (s == TTC_OK) {
        rd *x = &secs[SEC_IR];
        if (memchr(x->p, 0, x->left)) s = ttc_fail(TTC_ERR_SERIALIZATION, "engine blob: IR text contains a NUL byte");
        else if (!(ir = ttc_malloc(x->left + 1))) s = TTC_ERR_NOMEM;
        else { memcpy(ir, x->p, x->left); ir[x->left] = 0; }
    }
    if (s == TTC_OK) {
        rd *x = &secs[SEC_SOURCE];
        if (memchr(x->p, 0, x->left)) s = ttc_fail(TTC_ERR_SERIALIZATION, "engine blob: kernel source contains a NUL byte");
        else if (!(src = ttc_malloc(x->left + 1))) s = TTC_ERR_NOMEM;
        else { memcpy(src, x->p, x->left); src[x->left] = 0; }
    }
    if (s == TTC_OK) s = read_weights(&secs[SEC_WEIGHTS], &w);
    if (s == TTC_OK) {
        s = ttc_graph_parse_ex(ir, lookup_weight, &w, &g);
        if (s != TTC_OK) s = ttc_fail_context(TTC_ERR_SERIALIZATION, "engine blob: its IR does not parse");
    }
    if (s == TTC_OK) {
        s = ttc_graph_verify(g);
        if (s != TTC_OK) s = ttc_fail_context(TTC_ERR_SERIALIZATION, "engine blob: its IR does not verify");
    }
    if (s == TTC_OK) {
        ttc_engine_options o = ttc_engine_options_default();
        o.name = name;
        o.device = device;
        o.fp16 = fp16 != 0;
        o.optimization_level = (int32_t)opt;
        o.tf32_matmul = (tf32 & 1) != 0;
        o.tf32_conv = (tf32 & 2) != 0;
        o.check_indices = (tf32 & 4) == 0;
        o.cache_dir = cache_dir;
        s = ttc_engine_new_for_load(&o, &e);
    }
    if (s == TTC_OK) {
        rd *t = &secs[SEC_TUNING];
        uint32_t nt = 0;
        s = get_u32(t, &nt, "tuning count");
        if (s == TTC_OK && (size_t)nt * 4 != t->left)
            s = ttc_fail(TTC_ERR_SERIALIZATION, "engine blob: tuning section has %zu bytes for %u choices", t->left, nt);
        if (s == TTC_OK && !(e->stored_tiles = ttc_calloc((size_t)nt + 1, sizeof(int32_t)))) s = TTC_ERR_NOMEM;
        for (uint32_t i = 0; i < nt && s == TTC_OK; i++) {
            uint32_t v;
            s = get_u32(t, &v, "tuning choice");
            if (s == TTC_OK && v >= TTC_GEMM_TILES)
                s = ttc_fail(TTC_ERR_SERIALIZATION, "engine blob: tuning choice %u out of range", v);
            if (s == TTC_OK) e->stored_tiles[i] = (int32_t)v;
        }
        if (s == TTC_OK) e->n_stored_tiles = (int32_t)nt;
    }
    if (s == TTC_OK) s = ttc_convert_graph_for(g, fp16 != 0, &e->tg, &e->k);
    if (s == TTC_OK) {
        e->graph = g;
        g = NULL;
        bool same_dev = !strcmp(plat, e->tg.platform) && !strcmp(dname, e->tg.name) && !strcmp(driver, e->tg.driver);
        e->stored_source = src;
        src = NULL;
        e->blob_platform = plat;   /* kept for ttc_engine_built_for */
        e->blob_device = dname;
        e->blob_driver = driver;
        plat = dname = driver = NULL;
        rd *b = &secs[SEC_BINARY];
        uint64_t seal = 0;
        s = get_u64(b, &seal, "binary seal");
        bool use = s == TTC_OK && same_dev && b->left > 0 && binary_seal(b->p, b->left, e->stored_source, &e->tg) == seal;
        if (!same_dev) {
            /* tile choices were timed on (and may only run on) the other device: choose anew */
            free(e->stored_tiles);
            e->stored_tiles = NULL;
            e->n_stored_tiles = 0;
        }
        if (s == TTC_OK) s = ttc_engine_finish(e, use ? b->p : NULL, use ? b->left : 0);
    }
    if (s == TTC_OK) {
        rd *b = &secs[SEC_BINDINGS];
        uint32_t ni = 0, no = 0;
        s = get_u32(b, &ni, "input count");
        if (s == TTC_OK && ni != (uint32_t)e->n_in)
            s = ttc_fail(TTC_ERR_SERIALIZATION, "engine blob: %u inputs recorded, the IR has %d", ni, e->n_in);
        for (uint32_t i = 0; i < ni && s == TTC_OK; i++) {
            char *nm = NULL;
            s = get_str(b, &nm, "input name");
            if (s == TTC_OK && strcmp(nm, e->ins[i].name))
                s = ttc_fail(TTC_ERR_SERIALIZATION, "engine blob: input %u is %s, the IR says %s", i, nm, e->ins[i].name);
            free(nm);
        }
        if (s == TTC_OK) s = get_u32(b, &no, "output count");
        if (s == TTC_OK && no != (uint32_t)e->n_out)
            s = ttc_fail(TTC_ERR_SERIALIZATION, "engine blob: %u outputs recorded, the IR has %d", no, e->n_out);
        for (uint32_t i = 0; i < no && s == TTC_OK; i++) {
            char *nm = NULL;
            s = get_str(b, &nm, "output name");
            if (s == TTC_OK && strcmp(nm, e->outs[i].name))
                s = ttc_fail(TTC_ERR_SERIALIZATION, "engine blob: output %u is %s, the IR says %s", i, nm, e->outs[i].name);
            free(nm);
        }
    }
    free(name); free(plat); free(dname); free(driver); free(ir); free(src);
    weights_free(&w);
    ttc_graph_free(g);
    if (s != TTC_OK) { ttc_engine_free(e); return s; }
    *out = e;
    return TTC_OK;
}
