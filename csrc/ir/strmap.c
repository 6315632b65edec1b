/* Open-addressing string hash map (linear probing, FNV-1a), load factor <= 1/2. */
#include "strmap.h"

#include <stdlib.h>
#include <string.h>

static size_t hash_str(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return (size_t)h;
}

static ttc_strmap_slot *find_slot(ttc_strmap_slot *slots, size_t cap, const char *key) {
    size_t i = hash_str(key) & (cap - 1);
    while (slots[i].key && strcmp(slots[i].key, key)) i = (i + 1) & (cap - 1);
    return &slots[i];
}

ttc_status ttc_strmap_put(ttc_strmap *m, const char *key, void *val) {
    if (!key) return ttc_fail(TTC_ERR_INVALID_ARG, "strmap: NULL key");
    if ((m->n + 1) * 2 > m->cap) {
        size_t nc = m->cap ? m->cap * 2 : 64;
        ttc_strmap_slot *ns = ttc_calloc(nc, sizeof *ns);
        if (!ns) return TTC_ERR_NOMEM;
        for (size_t i = 0; i < m->cap; i++)
            if (m->slots[i].key) *find_slot(ns, nc, m->slots[i].key) = m->slots[i];
        free(m->slots);
        m->slots = ns;
        m->cap = nc;
    }
    ttc_strmap_slot *s = find_slot(m->slots, m->cap, key);
    if (!s->key) {
        m->n++;
        s->key = key;
    }
    s->val = val;
    return TTC_OK;
}

void *ttc_strmap_get(const ttc_strmap *m, const char *key) {
    if (!m->cap || !key) return NULL;
    return find_slot(m->slots, m->cap, key)->val;
}

void ttc_strmap_free(ttc_strmap *m) {
    free(m->slots);
    m->slots = NULL;
    m->cap = m->n = 0;
}
