/* Code generation for convolution, reductions, softmax, normalisation and pooling: each
 * is a template from csrc/kernels/ specialised with #defines (static parameters baked
 * in, sizes as kernel arguments). */
#include "codegen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

ttc_status ttc_codegen_kind(ttc_sbuf *src, const ttc_kir *k, const ttc_kop *op, ttc_kspec *ks, bool gpu,
                            const char *P, const char *A_) {
    return ttc_fail(TTC_ERR_UNSUPPORTED, "no code generator for kernel kind %d (%s)", op->kind, op->name);
}
