/*
 * The primitive cache the oneDNN native steps share (backend/cpu/dnnl_api.h), with plain
 * allocations for entries (no oneDNN needed): an entry is made once per (owner, key) and found
 * again, other owners and keys get their own, a group's cap refuses new keys but still finds
 * the kept ones, a failed make caches nothing, and forget frees exactly the owner's entries
 * (ASan's leak check under `make ctest SAN=1` sees the rest freed at the end).
 */
#include <stdint.h>

#include "ctest.h"
#include "backend/cpu/dnnl_api.h"

static int made, freed;

static void *make(void *arg) {
    int *e = malloc(sizeof *e);
    if (e) *e = *(const int *)arg;
    made += e != NULL;
    return e;
}

static void *make_fail(void *arg) { (void)arg; return NULL; }

static void free_entry(void *e) {
    freed++;
    free(e);
}

typedef struct {
    int64_t group, shape;
} key_t2;

static void *get(ttc_dnnl_cache *c, const void *owner, int64_t group, int64_t shape, int32_t cap, int value) {
    key_t2 k = {group, shape};
    return ttc_dnnl_cache_get(c, owner, &k, sizeof k, sizeof(int64_t), cap, make, &value);
}

static void test_find_make_forget(void) {
    static ttc_dnnl_cache c = TTC_DNNL_CACHE_INIT(free_entry);
    int o1 = 0, o2 = 0;
    made = freed = 0;
    int *a = get(&c, &o1, 0, 5, 0, 1);
    CHECK(a && *a == 1 && made == 1, "first lookup makes the entry");
    CHECK(get(&c, &o1, 0, 5, 0, 2) == a && made == 1, "the same key finds it, make not called");
    int *b = get(&c, &o1, 0, 6, 0, 3), *d = get(&c, &o2, 0, 5, 0, 4);
    CHECK(b && b != a && *b == 3, "another key: another entry");
    CHECK(d && d != a && *d == 4, "another owner: another entry");
    ttc_dnnl_cache_forget(&c, &o1);
    CHECK(freed == 2, "forget frees the owner's two entries, freed %d", freed);
    CHECK(get(&c, &o2, 0, 5, 0, 9) == d, "the other owner's entry stays");
    int *a2 = get(&c, &o1, 0, 5, 0, 7);
    CHECK(a2 && *a2 == 7 && made == 4, "a forgotten key is made again");
    ttc_dnnl_cache_forget(&c, &o1);
    ttc_dnnl_cache_forget(&c, &o2);
    CHECK(freed == made, "everything freed: made %d freed %d", made, freed);
}

static void test_group_cap(void) {
    static ttc_dnnl_cache c = TTC_DNNL_CACHE_INIT(free_entry);
    int o = 0;
    made = freed = 0;
    void *first = get(&c, &o, 3, 0, 2, 0);
    CHECK(first && get(&c, &o, 3, 1, 2, 0), "two shapes fit a group of 2");
    CHECK(!get(&c, &o, 3, 2, 2, 0), "a third shape of the group is refused");
    CHECK(get(&c, &o, 3, 0, 2, 0) == first, "a kept shape is still found at the cap");
    CHECK(get(&c, &o, 4, 2, 2, 0), "another group has its own room");
    int o2 = 0;
    CHECK(get(&c, &o2, 3, 2, 2, 0), "another owner's group has its own room");
    CHECK(made == 4, "made %d", made);
    ttc_dnnl_cache_forget(&c, &o);
    ttc_dnnl_cache_forget(&c, &o2);
    CHECK(freed == 4, "freed %d", freed);
}

static void test_failed_make_not_kept(void) {
    static ttc_dnnl_cache c = TTC_DNNL_CACHE_INIT(free_entry);
    int o = 0, v = 5;
    made = freed = 0;
    key_t2 k = {1, 1};
    CHECK(!ttc_dnnl_cache_get(&c, &o, &k, sizeof k, 0, 0, make_fail, &v), "make failed: NULL");
    int *e = ttc_dnnl_cache_get(&c, &o, &k, sizeof k, 0, 0, make, &v);
    CHECK(e && *e == 5 && made == 1, "the next lookup makes it");
    ttc_dnnl_cache_forget(&c, &o);
    CHECK(freed == 1, "freed %d", freed);
}

TEST_MAIN(test_find_make_forget, test_group_cap, test_failed_make_not_kept)
