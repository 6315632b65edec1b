/* Identical kernels in one program: the second and later copies are dropped from the source
 * and launch the first copy's kernel (with their own arguments). BERT's twelve layers, a
 * ResNet's repeated blocks generate the same kernel text up to the kernel's name; compiling
 * each once cuts the OpenCL build (and PoCL's per-kernel work-group compile at first launch).
 *
 * Two kernels are the same when their text is equal after each one's own name ("k12" as a
 * whole token, also as the prefix of "k12_store") is replaced by a placeholder: equal up to
 * renaming, so one compiled kernel serves both. A text mentioning another kernel's name keeps
 * that name, so such texts only match when they mention the same one. */
#include "codegen.h"
#include "../common/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool ident_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* text with each token-start occurrence of name not followed by a digit replaced by "k#". */
static char *canonical(const char *text, size_t len, const char *name) {
    size_t nl = strlen(name);
    char *out = malloc(len + 1);
    if (!out) return NULL;
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        if (i + nl <= len && !memcmp(text + i, name, nl) && (i == 0 || !ident_char(text[i - 1])) &&
            (i + nl == len || !(text[i + nl] >= '0' && text[i + nl] <= '9'))) {
            out[o++] = 'k';
            out[o++] = '#';   /* "k#" is never longer than a name "k<digits>" */
            i += nl;
        } else {
            out[o++] = text[i++];
        }
    }
    out[o] = 0;
    return out;
}

bool ttc_codegen_dedupe_enabled(const ttc_kir *k) { return ttc_kir_target(k)->dedupe_kernels; }

void ttc_codegen_dedupe_free(ttc_codegen_dedupe *d) {
    for (int32_t i = 0; i < d->n; i++) free(d->canon[i]);
    free(d->canon);
    free(d->hash);
    free(d->owner);
    memset(d, 0, sizeof *d);
}

ttc_status ttc_codegen_dedupe_add(ttc_codegen_dedupe *d, ttc_sbuf *src, size_t start, ttc_kspec *ks, size_t *cut) {
    *cut = 0;
    if (src->oom || src->len < start) return TTC_OK;
    char *c = canonical(src->data + start, src->len - start, ks->name);
    if (!c) return TTC_ERR_NOMEM;
    uint64_t h = ttc_hash64(c, strlen(c), 0);
    for (int32_t i = 0; i < d->n; i++) {
        if (d->hash[i] == h && !strcmp(d->canon[i], c)) {
            free(c);
            snprintf(ks->name, sizeof ks->name, "%s", d->owner[i]);
            *cut = start;
            return TTC_OK;
        }
    }
    if (ttc_grow((void **)&d->canon, &d->cap_c, d->n + 1, sizeof(char *)) != TTC_OK ||
        ttc_grow((void **)&d->hash, &d->cap_h, d->n + 1, sizeof(uint64_t)) != TTC_OK ||
        ttc_grow((void **)&d->owner, &d->cap_o, d->n + 1, sizeof d->owner[0]) != TTC_OK) {
        free(c);
        return TTC_ERR_NOMEM;
    }
    d->canon[d->n] = c;
    d->hash[d->n] = h;
    snprintf(d->owner[d->n], sizeof d->owner[0], "%s", ks->name);
    d->n++;
    return TTC_OK;
}
