/* Convolution for CPU devices: the pixel-vector kernel conv2d_cpu.cl (see there), for every
 * convolution that is not depthwise, split-K partials included (slices sum input channels).
 * 1x1 stride-1 unpadded convolutions run as a GEMM over the flattened H*W plane (PW1).
 * TORCHTRT_C_CONV_CPU=ocb8 selects the older 8-channel blocked kernel instead (A/B runs). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen_impl.h"

bool ttc_conv_cpu_enabled(const ttc_kir *k) { return !ttc_kir_target(k)->conv_cpu_ocb8; }

ttc_status ttc_gen_conv_cpu(const ttc_kgen *g) {
    TTC_KGEN_LOCALS(g);
    const ttc_et *x = &k->ts[op->in[0]], *w = &k->ts[op->in[1]], *out = &k->ts[op->out];
    int32_t G = op->p.conv.groups;
    int64_t C = x->dims[1].add, OC = out->dims[1].add, ICG = C / G, OCG = OC / G;
    /* Split-K (chosen at conversion to fill a big GPU) only adds work-group overhead and
     * partial traffic on a CPU: slice 0 sums every input channel, the other slices write
     * zeros (the REDUCE op after the convolution still adds the S partials). */
    int64_t S = op->p.conv.ksplit > 1 ? op->p.conv.ksplit : 1, ICS = ICG;
    bool pw1 = op->p.conv.k[0] == 1 && op->p.conv.k[1] == 1 && op->p.conv.stride[0] == 1 &&
               op->p.conv.stride[1] == 1 && op->p.conv.pad[0] == 0 && op->p.conv.pad[1] == 0;
    int64_t vals[20] = {C, OC, ICG, OCG, G, (OCG + 3) / 4, op->p.conv.k[0], op->p.conv.k[1], op->p.conv.stride[0],
                        op->p.conv.stride[1], op->p.conv.pad[0], op->p.conv.pad[1], op->p.conv.dil[0],
                        op->p.conv.dil[1], pw1, S, ICS};
    char v[17][24];
    for (int i = 0; i < 17; i++) snprintf(v[i], sizeof v[i], "%lld", (long long)vals[i]);
    char store[32];
    snprintf(store, sizeof store, "%s_store", ks->name);
    ttc_codegen_loader(src, g->sp, "LDX", x->dtype, false);
    ttc_codegen_loader(src, g->sp, "LDX8", x->dtype, true);
    ttc_codegen_loader(src, g->sp, "LDW", w->dtype, false);
    const char *defs[] = {"KNAME", ks->name, "STORE_FN", store, "EPI_PARAMS", P, "EPI_ARGS", A_,
                          "TX", ttc_cl_storage_type(x->dtype), "TW", ttc_cl_storage_type(w->dtype),
                          "C", v[0], "OC", v[1], "ICG", v[2], "OCG", v[3], "G", v[4], "NOB", v[5], "KH", v[6],
                          "KW", v[7], "SH", v[8], "SW", v[9], "PH", v[10], "PW", v[11], "DH", v[12], "DW", v[13],
                          "PW1", v[14], "KSPLIT", v[15], "ICS", v[16], NULL};
    ttc_kparams p;
    ttc_kp_init(&p, k, ks, false);
    ttc_codegen_conv_params(&p, op, op->in[1]);
    ttc_kp_int(&p, TTC_ARG_PROD, op->out, 0, 1, -S, "NB");   /* images per slice */
    ttc_status s = ttc_codegen_template_checked(src, "conv2d_cpu", defs, &p);
    ttc_kp_free(&p);
    TTC_TRY(s);
    ttc_sbuf_printf(src, "#undef LDX\n#undef LDX8\n#undef LDW\n");
    if (pw1) {
        ttc_codegen_gdim(ks, 0, op->out, 2, 4, 16, 0);
        ttc_codegen_gdim(ks, 1, op->out, 0, 0, 1, 0);
    } else {
        ttc_codegen_gdim(ks, 0, op->out, 3, 4, 8, 0);
        ttc_codegen_gdim(ks, 1, op->out, 2, 3, 2, 0);
    }
    ttc_codegen_gdim(ks, 2, op->out, 0, 1, 1, 0);   /* KSPLIT * N */
    ks->g[2].mul = (int32_t)(G * ((OCG + 3) / 4));
    return TTC_OK;
}
