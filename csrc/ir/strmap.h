/*
 * A string-keyed hash map for the IR's name lookups (parser, verifier), so that graphs
 * with many thousands of values stay linear. Keys are borrowed: they must outlive the map
 * (value names owned by the graph do).
 *
 *   ttc_strmap m = {0};
 *   if (ttc_strmap_put(&m, v->name, v)) ...;       // TTC_ERR_NOMEM on failure
 *   ttc_value *w = ttc_strmap_get(&m, "x");        // NULL when absent
 *   ttc_strmap_free(&m);
 */
#ifndef TTC_STRMAP_H
#define TTC_STRMAP_H

#include "../common/status.h"

typedef struct ttc_strmap_slot { const char *key; void *val; } ttc_strmap_slot;
typedef struct ttc_strmap { ttc_strmap_slot *slots; size_t cap, n; } ttc_strmap;

/* Inserts key -> val; for a key already present only the value is replaced (the stored
 * key pointer stays, so owners of copied keys free the new copy). */
ttc_status ttc_strmap_put(ttc_strmap *m, const char *key, void *val);
void *ttc_strmap_get(const ttc_strmap *m, const char *key);
void ttc_strmap_free(ttc_strmap *m);

#endif
