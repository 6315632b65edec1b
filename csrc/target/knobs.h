/*
 * The settings table (knobs.def): every TORCHTRT_C_* setting, read here and nowhere else.
 * A value comes from code (ttc_knob_set: torchtrt_c.settings.override) where code set one,
 * else from the environment.
 *
 *   const char *v = ttc_knob_str(TTC_KNOB_DEVICE);     // NULL: unset (or empty)
 *   if (ttc_knob_is(TTC_KNOB_NATIVE_CONV, "blas")) ...
 *   ttc_knob_vals kv;
 *   TTC_TRY(ttc_knobs_read(&kv));                      // every row parsed by its TYPE
 *   if (kv.set[TTC_KNOB_TUNE]) mode = kv.val[TTC_KNOB_TUNE];
 */
#ifndef TTC_TARGET_KNOBS_H
#define TTC_TARGET_KNOBS_H

#include "../common/status.h"

typedef enum ttc_knob_id {
#define KNOB(name, type, values, dflt, doc, level) TTC_KNOB_##name,
#include "knobs.def"
#undef KNOB
    TTC_KNOB_COUNT
} ttc_knob_id;

typedef enum ttc_knob_type {
    TTC_KNOB_T_FLAG, TTC_KNOB_T_CHOICE, TTC_KNOB_T_WORD, TTC_KNOB_T_INT, TTC_KNOB_T_COUNT,
    TTC_KNOB_T_TILE, TTC_KNOB_T_TEXT
} ttc_knob_type;

typedef struct ttc_knob_info {
    const char *name;       /* without the TORCHTRT_C_ prefix */
    ttc_knob_type type;
    const char *type_name;  /* "FLAG", ... */
    const char *values;     /* CHOICE/WORD: "a|b|c"; INT: "lo..hi" */
    const char *dflt;       /* as the docs state it */
    const char *doc;
    bool debug;             /* LEVEL DEBUG (else USER) */
} ttc_knob_info;

extern const ttc_knob_info ttc_knobs[TTC_KNOB_COUNT];

/* The knob of a full name (TORCHTRT_C_<NAME>) or a bare one; TTC_KNOB_COUNT if none. */
ttc_knob_id ttc_knob_find(const char *name);
/* The value as set (code's, else the environment's), "" included; NULL: unset. */
const char *ttc_knob_raw(ttc_knob_id k);
/* ... with "" as unset. */
const char *ttc_knob_str(ttc_knob_id k);
bool ttc_knob_is(ttc_knob_id k, const char *word);
/* FLAG: on unless the value is 0, off or false; dflt when unset. */
bool ttc_knob_flag(ttc_knob_id k, bool dflt);
/* Sets a knob from code for this process, over the environment's value (value NULL: unset,
 * whatever the environment says). The value is kept for the process's life (readers on other
 * threads may hold it). Fails with TTC_ERR_INVALID_ARG on an unknown name. */
ttc_status ttc_knob_set(const char *name, const char *value);
/* Back to the environment's value. */
ttc_status ttc_knob_clear(const char *name);
/* Whether code set k (ttc_knob_set, not cleared since). */
bool ttc_knob_overridden(ttc_knob_id k);

/* Every row parsed by its TYPE: set[k] says whether a value was given (a WORD that matches
 * none of its values counts as unset), val[k] the parsed value (CHOICE/WORD: the index into
 * VALUES; FLAG: 0/1; INT/COUNT: the integer). Fails on a malformed CHOICE/INT value with
 * TTC_ERR_INVALID_ARG naming the setting and what it expects. */
typedef struct ttc_knob_vals {
    bool set[TTC_KNOB_COUNT];
    int64_t val[TTC_KNOB_COUNT];
} ttc_knob_vals;
ttc_status ttc_knobs_read(ttc_knob_vals *out);

/* The process's environment with code's values on top (TORCHTRT_C_<NAME>=value), for the
 * child processes the core starts (backend/build_procs.c); NULL on no memory. Free with
 * ttc_knob_environ_free. */
char **ttc_knob_environ(void);
void ttc_knob_environ_free(char **env);

/* An environment variable that is not a TORCHTRT_C_ setting (HOME, POCL_DEVICES): the one
 * getenv of the core outside the table lives beside it. */
const char *ttc_env_other(const char *name);

#endif
