/* Arithmetic on affine dims (mul * sym + add, see ir.h). Each returns false when the
 * result is not affine in one symbol or an int64 overflows; callers then treat the shape
 * as unsupported rather than guess. */
#include "ir.h"

bool ttc_dim_add(ttc_dim a, ttc_dim b, ttc_dim *r) {
    if (a.sym >= 0 && b.sym >= 0 && a.sym != b.sym) return false;
    ttc_dim o = a.sym >= 0 ? a : b;
    int64_t add, mul = 0;
    if (__builtin_add_overflow(a.add, b.add, &add)) return false;
    if (a.sym >= 0 && b.sym >= 0) {
        if (__builtin_add_overflow(a.mul, b.mul, &mul)) return false;
    } else {
        mul = o.sym >= 0 ? o.mul : 0;
    }
    if (o.sym < 0 || mul == 0) { *r = ttc_dim_const(add); return true; }
    r->sym = o.sym;
    r->mul = mul;
    r->add = add;
    return true;
}

bool ttc_dim_add_const(ttc_dim a, int64_t c, ttc_dim *r) { return ttc_dim_add(a, ttc_dim_const(c), r); }

bool ttc_dim_mul_const(ttc_dim a, int64_t k, ttc_dim *r) {
    int64_t add, mul = 0;
    if (__builtin_mul_overflow(a.add, k, &add)) return false;
    if (a.sym >= 0 && __builtin_mul_overflow(a.mul, k, &mul)) return false;
    if (a.sym < 0 || mul == 0) { *r = ttc_dim_const(add); return true; }
    r->sym = a.sym;
    r->mul = mul;
    r->add = add;
    return true;
}

bool ttc_dim_mul(ttc_dim a, ttc_dim b, ttc_dim *r) {
    if (a.sym >= 0 && b.sym >= 0) return false;
    return a.sym < 0 ? ttc_dim_mul_const(b, a.add, r) : ttc_dim_mul_const(a, b.add, r);
}

/* floor(a / k), k > 0: affine when k divides the coefficient. */
bool ttc_dim_floordiv(ttc_dim a, int64_t k, ttc_dim *r) {
    if (k <= 0) return false;
    if (a.sym < 0) { *r = ttc_dim_const(ttc_i64_floordiv(a.add, k)); return true; }
    if (a.mul % k) return false;
    r->sym = a.sym;
    r->mul = a.mul / k;
    r->add = ttc_i64_floordiv(a.add, k);
    return true;
}

bool ttc_dim_divexact(ttc_dim a, ttc_dim b, ttc_dim *r) {
    if (b.sym >= 0) {
        if (a.sym == b.sym && b.add == 0 && a.add == 0 && a.mul % b.mul == 0) { *r = ttc_dim_const(a.mul / b.mul); return true; }
        return false;
    }
    if (b.add <= 0) return false;
    if (a.add % b.add || (a.sym >= 0 && a.mul % b.add)) return false;
    return ttc_dim_floordiv(a, b.add, r);
}
