/* The settings table (knobs.def) and its readers: the only getenv of the core. */
#include "knobs.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const ttc_knob_info ttc_knobs[TTC_KNOB_COUNT] = {
#define KNOB(name, type, values, dflt, doc, level) \
    {#name, TTC_KNOB_T_##type, #type, values, dflt, doc, TTC_KNOB_LEVEL_##level},
#define TTC_KNOB_LEVEL_USER false
#define TTC_KNOB_LEVEL_DEBUG true
#include "knobs.def"
#undef KNOB
};

#define PREFIX "TORCHTRT_C_"

ttc_knob_id ttc_knob_find(const char *name) {
    if (!name) return TTC_KNOB_COUNT;
    if (!strncmp(name, PREFIX, strlen(PREFIX))) name += strlen(PREFIX);
    for (int k = 0; k < TTC_KNOB_COUNT; k++)
        if (!strcmp(ttc_knobs[k].name, name)) return (ttc_knob_id)k;
    return TTC_KNOB_COUNT;
}

/* Code's values: pointers to strings kept for the process's life (a reader on another thread
 * may still hold an older one), read without a lock. */
static const char *overrides[TTC_KNOB_COUNT];
static bool overridden[TTC_KNOB_COUNT];
static pthread_mutex_t set_lock = PTHREAD_MUTEX_INITIALIZER;

static ttc_status knob_store(const char *name, bool set, const char *value) {
    ttc_knob_id k = ttc_knob_find(name);
    if (k == TTC_KNOB_COUNT)
        return ttc_fail(TTC_ERR_INVALID_ARG, "%s: not a torchtrt_c setting (docs/settings.md lists them)", name ? name : "(null)");
    char *copy = NULL;
    if (value && !(copy = ttc_strdup(value))) return TTC_ERR_NOMEM;
    pthread_mutex_lock(&set_lock);
    if (set) {  /* the value before the mark, so that a reader never sees a mark without it */
        __atomic_store_n(&overrides[k], copy, __ATOMIC_RELEASE);
        __atomic_store_n(&overridden[k], true, __ATOMIC_RELEASE);
    } else {
        __atomic_store_n(&overridden[k], false, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&set_lock);
    return TTC_OK;
}

ttc_status ttc_knob_set(const char *name, const char *value) { return knob_store(name, true, value); }
ttc_status ttc_knob_clear(const char *name) { return knob_store(name, false, NULL); }

bool ttc_knob_overridden(ttc_knob_id k) { return __atomic_load_n(&overridden[k], __ATOMIC_ACQUIRE); }

const char *ttc_knob_raw(ttc_knob_id k) {
    if (k < 0 || k >= TTC_KNOB_COUNT) return NULL;
    if (__atomic_load_n(&overridden[k], __ATOMIC_ACQUIRE)) return __atomic_load_n(&overrides[k], __ATOMIC_ACQUIRE);
    char name[96];
    snprintf(name, sizeof name, PREFIX "%s", ttc_knobs[k].name);
    return getenv(name);
}

const char *ttc_knob_str(ttc_knob_id k) {
    const char *v = ttc_knob_raw(k);
    return v && *v ? v : NULL;
}

bool ttc_knob_is(ttc_knob_id k, const char *word) {
    const char *v = ttc_knob_str(k);
    return v && !strcmp(v, word);
}

static bool flag_off(const char *v) { return !strcmp(v, "0") || !strcmp(v, "off") || !strcmp(v, "false"); }

bool ttc_knob_flag(ttc_knob_id k, bool dflt) {
    const char *v = ttc_knob_str(k);
    return v ? !flag_off(v) : dflt;
}

/* The index of v among "a|b|c", -1 if none. */
static int word_index(const char *values, const char *v) {
    size_t n = strlen(v);
    int i = 0;
    for (const char *p = values;; i++) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && !strncmp(p, v, n)) return i;
        if (!bar) return -1;
        p = bar + 1;
    }
}

/* "a|b|c" as "a, b or c" */
static void expected_words(const char *values, char *buf, size_t cap) {
    size_t o = 0;
    int count = 1;
    for (const char *p = values; *p; p++) count += *p == '|';
    int i = 0;
    buf[0] = 0;
    for (const char *p = values; *p && o + 8 < cap; p++) {
        if (*p == '|') {
            i++;
            o += (size_t)snprintf(buf + o, cap - o, i == count - 1 ? " or " : ", ");
        } else {
            buf[o++] = *p;
            buf[o] = 0;
        }
    }
}

ttc_status ttc_knobs_read(ttc_knob_vals *out) {
    memset(out, 0, sizeof *out);
    for (int k = 0; k < TTC_KNOB_COUNT; k++) {
        const ttc_knob_info *ki = &ttc_knobs[k];
        const char *v = ttc_knob_str((ttc_knob_id)k);
        if (!v) continue;
        switch (ki->type) {
        case TTC_KNOB_T_FLAG:
            out->set[k] = true;
            out->val[k] = !flag_off(v);
            break;
        case TTC_KNOB_T_CHOICE:
        case TTC_KNOB_T_WORD: {
            int i = word_index(ki->values, v);
            if (i < 0 && ki->type == TTC_KNOB_T_CHOICE) {
                char exp[256];
                expected_words(ki->values, exp, sizeof exp);
                return ttc_fail(TTC_ERR_INVALID_ARG, PREFIX "%s=%s: expected %s", ki->name, v, exp);
            }
            out->set[k] = i >= 0;
            out->val[k] = i;
            break;
        }
        case TTC_KNOB_T_INT: {
            char *end = NULL;
            long long x = strtoll(v, &end, 10);
            long long lo = strtoll(ki->values, NULL, 10);
            const char *dots = strstr(ki->values, "..");
            bool has_hi = dots && dots[2];
            long long hi = has_hi ? strtoll(dots + 2, NULL, 10) : 0;
            if (end == v || *end || x < lo || (has_hi && x > hi))
                return ttc_fail(TTC_ERR_INVALID_ARG, PREFIX "%s=%s: expected an integer in %s", ki->name, v, ki->values);
            out->set[k] = true;
            out->val[k] = x;
            break;
        }
        case TTC_KNOB_T_COUNT:
            out->set[k] = true;
            out->val[k] = strtoll(v, NULL, 10);
            break;
        case TTC_KNOB_T_TILE:
        case TTC_KNOB_T_TEXT:
            out->set[k] = true;
            break;
        }
    }
    return TTC_OK;
}

extern char **environ;

char **ttc_knob_environ(void) {
    size_t n = 0;
    while (environ[n]) n++;
    char **out = calloc(n + TTC_KNOB_COUNT + 1, sizeof *out);
    if (!out) return NULL;
    size_t o = 0;
    bool ok = true;
    for (size_t i = 0; ok && i < n; i++) {
        const char *eq = strchr(environ[i], '=');
        char name[96];
        size_t len = eq ? (size_t)(eq - environ[i]) : 0;
        if (eq && len < sizeof name) {
            memcpy(name, environ[i], len);
            name[len] = 0;
            ttc_knob_id k = ttc_knob_find(name);
            if (k != TTC_KNOB_COUNT && !strncmp(name, PREFIX, strlen(PREFIX)) && ttc_knob_overridden(k)) continue;
        }
        ok = (out[o++] = ttc_strdup(environ[i])) != NULL;
    }
    for (int k = 0; ok && k < TTC_KNOB_COUNT; k++) {
        if (!ttc_knob_overridden((ttc_knob_id)k)) continue;
        const char *v = ttc_knob_raw((ttc_knob_id)k);
        if (v) ok = (out[o++] = ttc_strfmt(PREFIX "%s=%s", ttc_knobs[k].name, v)) != NULL;
    }
    if (!ok) {
        ttc_knob_environ_free(out);
        return NULL;
    }
    return out;
}

void ttc_knob_environ_free(char **env) {
    if (!env) return;
    for (char **p = env; *p; p++) free(*p);
    free(env);
}

const char *ttc_env_other(const char *name) {
    if (!strncmp(name, PREFIX, strlen(PREFIX))) return NULL;  /* settings go through the table */
    return getenv(name);
}
