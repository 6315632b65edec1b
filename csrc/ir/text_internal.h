/*
 * Helpers shared by the IR printer and parser (print.c, parse.c): 16-bit float
 * conversions for inline tensor literals and the character classes of bare tokens.
 * Internal to csrc/ir; the text format itself is described in print.c.
 *
 *   float f = ttc_half_to_float(0x3c00);   // 1.0f
 */
#ifndef TTC_TEXT_INTERNAL_H
#define TTC_TEXT_INTERNAL_H

#include <stdint.h>
#include <string.h>
#include <stdbool.h>

static inline uint32_t ttc_f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float ttc_bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

static inline float ttc_half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    if (exp == 0x1f) return ttc_bits_f32(sign | 0x7f800000u | (man << 13));
    if (exp == 0) {
        if (!man) return ttc_bits_f32(sign);
        /* subnormal: man * 2^-24, exact in float */
        float f = (float)man * (1.0f / 16777216.0f);
        return sign ? -f : f;
    }
    return ttc_bits_f32(sign | ((exp + 112) << 23) | (man << 13));
}

static inline uint16_t ttc_float_to_half(float f) {
    uint32_t x = ttc_f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) return (uint16_t)(sign | 0x7c00 | (ax > 0x7f800000u ? 0x200 : 0));
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00); /* rounds to >= 65520: inf */
    if (ax < 0x38800000u) {
        /* subnormal half (or zero): round man * 2^-24 to nearest even integer */
        float a = ttc_bits_f32(ax) * 16777216.0f;
        uint32_t m = (uint32_t)a;
        float rem = a - (float)m;
        if (rem > 0.5f || (rem == 0.5f && (m & 1))) m++;
        return (uint16_t)(sign | m);
    }
    uint32_t e = ((ax >> 23) - 112) << 10, man = ax & 0x7fffff;
    uint32_t h = e | (man >> 13), rest = man & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) h++;
    return (uint16_t)(sign | h);
}

static inline float ttc_bf16_to_float(uint16_t b) { return ttc_bits_f32((uint32_t)b << 16); }

static inline uint16_t ttc_float_to_bf16(float f) {
    uint32_t x = ttc_f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40);
    x += 0x7fff + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

/* Value names print bare when made of these characters, quoted otherwise. */
static inline bool ttc_text_is_name_char(int c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
}
static inline bool ttc_text_is_word_start(int c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
/* Bare values in the trailing "# name=... module=..." comment. */
static inline bool ttc_text_is_bare_char(int c) {
    return ttc_text_is_name_char(c) || c == ':' || c == '/' || c == ',' || c == '-' || c == '[' || c == ']';
}

#endif
