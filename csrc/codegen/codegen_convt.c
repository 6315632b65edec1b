/* Code generation for transposed convolution (TTC_KOP_CONV_TRANSPOSE): the gather-form
 * template csrc/kernels/conv_transpose2d.cl with the static parameters baked in. The same
 * kernel runs on CPU and GPU devices (one output element per work-item). */
#include "codegen_impl.h"

#include <stdio.h>

ttc_status ttc_gen_conv_transpose(const ttc_kgen *g) {
    TTC_KGEN_LOCALS(g);
    const ttc_et *x = &k->ts[op->in[0]], *w = &k->ts[op->in[1]], *out = &k->ts[op->out];
    int32_t G = op->p.conv.groups;
    if (x->rank != 4 || out->rank != 4 || G < 1 || x->dims[1].sym >= 0 || out->dims[1].sym >= 0 ||
        x->dims[1].add % G || out->dims[1].add % G)
        return ttc_fail(TTC_ERR_INTERNAL, "%s: transposed convolution needs 4-D tensors with static channels "
                        "divisible by groups", op->name);
    int64_t C = x->dims[1].add, OC = out->dims[1].add;
    int64_t vals[13] = {C, OC, C / G, OC / G, op->p.conv.k[0], op->p.conv.k[1], op->p.conv.stride[0],
                        op->p.conv.stride[1], op->p.conv.pad[0], op->p.conv.pad[1], op->p.conv.dil[0],
                        op->p.conv.dil[1], G};
    char v[13][24], store[32];
    for (int i = 0; i < 13; i++) snprintf(v[i], sizeof v[i], "%lld", (long long)vals[i]);
    snprintf(store, sizeof store, "%s_store", ks->name);
    ttc_codegen_loader(src, g->sp, "LDX", x->dtype, false);
    ttc_codegen_loader(src, g->sp, "LDW", w->dtype, false);
    const char *defs[] = {"KNAME", ks->name, "STORE_FN", store, "EPI_PARAMS", P, "EPI_ARGS", A_,
                          "TX", ttc_cl_storage_type(x->dtype), "TW", ttc_cl_storage_type(w->dtype),
                          "C", v[0], "OC", v[1], "ICG", v[2], "OCG", v[3], "KH", v[4], "KW", v[5], "SH", v[6],
                          "SW", v[7], "PH", v[8], "PW", v[9], "DH", v[10], "DW", v[11], "G", v[12], NULL};
    ttc_kparams p;
    ttc_kp_init(&p, k, ks, false);
    ttc_codegen_conv_params(&p, op, op->in[1]);
    ttc_status s = ttc_codegen_template_checked(src, "conv_transpose2d", defs, &p);
    ttc_kp_free(&p);
    TTC_TRY(s);
    ttc_sbuf_printf(src, "#undef LDX\n#undef LDW\n");
    ttc_codegen_gdim(ks, 0, op->out, 3, 4, 1, 0);
    ttc_codegen_gdim(ks, 1, op->out, 2, 3, 1, 0);
    ttc_codegen_gdim(ks, 2, op->out, 0, 2, 1, 0);
    return TTC_OK;
}
