/*
 * KV-cache attention as a native CPU step (backend/cpu/native_kv.c; kir.h TTC_KOP_KV_ATTENTION,
 * the OpenCL kernel's semantics: codegen/codegen_kv.c): each query row (b, h, s) attends over
 * its k/v head's cache slots j <= slots[s] (and j > slots[s] - window) where key_mask[b, j],
 * scores scaled (and soft-capped), an online softmax over chunks of keys, float32 throughout.
 * A row whose keys are all masked is 0; a NaN score turns the row NaN. Rows are split among
 * `threads` threads (backend/cpu/step_threads.h).
 *
 * Why: the OpenCL kernel (a work-group of 64 work-items per row, barriers per chunk) took
 * ~0.16 ms per layer of a small Llama's decode step on PoCL, for 8 rows of ~200 keys.
 *
 *   ttc_native_kv_attention(&shape, q, k_cache, v_cache, slots, key_mask, out);
 */
#ifndef TTC_BACKEND_CPU_NATIVE_KV_H
#define TTC_BACKEND_CPU_NATIVE_KV_H

#include <stdbool.h>
#include <stdint.h>

/* value head dims the step takes (an accumulator row on the stack) */
enum { TTC_NATIVE_KV_MAX_EV = 512 };

typedef struct ttc_native_kv_shape {
    int64_t b, hq, s, l;           /* batch, query heads, new tokens (query rows), cache length */
    int64_t e, ev, group;          /* head dims of q/k and of v; query heads per k/v head */
    int64_t qs[4], ks[4], vs[4];   /* element strides of q [B, Hq, S, E] and the caches [B, Hkv, L, D] */
    int64_t sls, kms[2];           /* strides of slots [S] and key_mask [B, L] */
    bool slots64;                  /* slots are int64 (else int32) */
    float scale, softcap;          /* softcap <= 0: none */
    int32_t window;                /* <= 0: none */
    int32_t threads;
} ttc_native_kv_shape;

/* out: dense [B, Hq, S, EV]; key_mask: bool bytes. */
void ttc_native_kv_attention(const ttc_native_kv_shape *s, const float *q, const float *kc, const float *vc,
                             const void *slots, const uint8_t *key_mask, float *out);

/* slot_write (kir.h TTC_KOP_SLOT_WRITE, codegen_kv.c's kernel): the new keys or values x
 * [d0, d1, S, d3] (any strides, right-aligned to rank 4; the slot dim is dim 2 of the four)
 * into the dense cache [d0, d1, L, d3] at slots[s]; a slot outside [0, L) writes nothing and
 * sets *errf to err_code (when it is 0). */
typedef struct ttc_native_slot_shape {
    int64_t dims[4], xs[4];   /* x's dims and element strides */
    int64_t l, sls;           /* cache length, slots' stride */
    bool slots64;
    int32_t err_code;
} ttc_native_slot_shape;

void ttc_native_slot_write(const ttc_native_slot_shape *s, const float *x, const void *slots, float *cache,
                           int32_t *errf);

#endif
