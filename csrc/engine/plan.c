/* The engine's plans: symbol values from input shapes and a small cache of plans (codegen/plan.h
 * makes them). */
#include "engine_impl.h"

#include <stdlib.h>
#include <string.h>

ttc_status ttc_engine_symbols_from_shapes(ttc_engine *e, const int64_t (*in_shapes)[TTC_MAX_RANK], int64_t *sv) {
    const ttc_kir *k = e->k;
    bool *set = ttc_calloc((size_t)k->n_syms + 1, sizeof(bool));
    if (!set) return TTC_ERR_NOMEM;
    ttc_status s = TTC_OK;
    /* pass 1: dims that are exactly a symbol fix it; pass 2: check everything */
    for (int pass = 0; pass < 2 && s == TTC_OK; pass++)
        for (int32_t i = 0; i < e->n_in && s == TTC_OK; i++) {
            const ttc_binding *b = &e->ins[i];
            for (int32_t d = 0; d < b->rank; d++) {
                ttc_dim dm = b->dims[d];
                int64_t got = in_shapes[i][d];
                if (dm.sym < 0) {
                    if (pass == 1 && got != dm.add) {
                        s = ttc_fail(TTC_ERR_INPUT, "input %s: dim %d is %lld, the engine was built for %lld",
                                     b->name, d, (long long)got, (long long)dm.add);
                        break;
                    }
                    continue;
                }
                const ttc_symbol *sy = &k->syms[dm.sym];
                if (pass == 0) {
                    if (set[dm.sym] || dm.mul == 0) continue;
                    int64_t num = got - dm.add;
                    if (num % dm.mul != 0) continue;
                    sv[dm.sym] = num / dm.mul;
                    set[dm.sym] = true;
                    if (sv[dm.sym] < sy->min || sv[dm.sym] > sy->max) {
                        s = ttc_fail(TTC_ERR_INPUT, "input %s: dim %d is %lld, so %s = %lld is outside its range [%lld, %lld]",
                                     b->name, d, (long long)got, sy->name, (long long)sv[dm.sym], (long long)sy->min,
                                     (long long)sy->max);
                        break;
                    }
                } else {
                    if (!set[dm.sym] || ttc_dim_eval(dm, sv) != got) {
                        s = ttc_fail(TTC_ERR_INPUT, "input %s: dim %d is %lld, which does not match %s (range [%lld, %lld]%s)",
                                     b->name, d, (long long)got, sy->name, (long long)sy->min, (long long)sy->max,
                                     set[dm.sym] ? ", fixed by another dim" : "");
                        break;
                    }
                }
            }
        }
    for (int32_t i = 0; i < k->n_syms && s == TTC_OK; i++)
        if (!set[i]) sv[i] = k->syms[i].opt;  /* symbols only outputs depend on: not inferable */
    free(set);
    return s;
}

ttc_status ttc_engine_get_plan(ttc_engine *e, const int64_t *sv, ttc_plan **out) {
    pthread_mutex_lock(&e->lock);
    for (int32_t i = 0; i < e->n_plans; i++) {
        ttc_plan *p = e->plans[i];
        if (!e->k->n_syms || !memcmp(p->sv, sv, sizeof(int64_t) * (size_t)e->k->n_syms)) {
            p->refs++;
            *out = p;
            pthread_mutex_unlock(&e->lock);
            return TTC_OK;
        }
    }
    pthread_mutex_unlock(&e->lock);
    ttc_plan *p;
    TTC_TRY(ttc_plan_make(e->k, &e->cg, sv, &p));
    pthread_mutex_lock(&e->lock);
    p->refs = 2;  /* the cache + the caller */
    if (e->n_plans < TTC_PLAN_CACHE) e->plans[e->n_plans++] = p;
    else {
        ttc_plan *old = e->plans[e->plan_next];
        e->plans[e->plan_next] = p;
        e->plan_next = (e->plan_next + 1) % TTC_PLAN_CACHE;
        if (--old->refs == 0) ttc_plan_free(old);
    }
    pthread_mutex_unlock(&e->lock);
    *out = p;
    return TTC_OK;
}

void ttc_plan_release(ttc_engine *e, ttc_plan *p) {
    pthread_mutex_lock(&e->lock);
    bool last = --p->refs == 0;
    pthread_mutex_unlock(&e->lock);
    if (last) ttc_plan_free(p);
}

ttc_status ttc_engine_plan_for_shapes(ttc_engine *e, const int64_t (*in_shapes)[TTC_MAX_RANK], ttc_plan **out) {
    int64_t sv[64] = {0};
    if (e->k->n_syms > 64) return ttc_fail(TTC_ERR_UNSUPPORTED, "more than 64 symbols");
    TTC_TRY(ttc_engine_symbols_from_shapes(e, in_shapes, sv));
    return ttc_engine_get_plan(e, sv, out);
}
