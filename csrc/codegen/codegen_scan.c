/* The scan kernel (TTC_KOP_SCAN): out = cumsum(in[0], p.scan.dim), out dense, same dims.
 *
 * One work-item per row along the scanned dim accumulates sequentially, in float for
 * floating outputs and in the output's integer type otherwise (torch promotes bool and
 * integer cumsum to int64, so masks count exactly). The launch covers every output element
 * and work-items off the row starts return at once: simple, and rows are short where
 * models use cumsum (position ids from an attention mask). */
#include "codegen.h"

#include <stdio.h>

static bool is_fl(ttc_dtype d) { return d == TTC_DTYPE_FLOAT32 || d == TTC_DTYPE_FLOAT16; }

ttc_status ttc_codegen_scan(ttc_sbuf *src, const ttc_kir *k, const ttc_kop *op, ttc_kspec *ks, const char *P,
                            const char *A_) {
    const ttc_et *out = &k->ts[op->out];
    const ttc_et *x = op->in[0] >= 0 ? &k->ts[op->in[0]] : NULL;
    int32_t R = out->rank, D = op->p.scan.dim;
    if (!x || R < 1 || D < 0 || D >= R || x->rank != R)
        return ttc_fail(TTC_ERR_INTERNAL, "scan %s: rank %d, dim %d", op->name, R, D);
    ttc_sbuf sig = {0};
    ttc_status s = TTC_OK;
#define TRY(x) do { if ((s = (x)) != TTC_OK) goto fail; } while (0)
    ttc_sbuf_printf(&sig, "int n");
    TRY(ttc_codegen_add_arg(ks, TTC_ARG_PROD, op->out, 0, R, 0));
    for (int32_t d = 0; d < R; d++) {
        ttc_sbuf_printf(&sig, ", int sz%d", d);
        TRY(ttc_codegen_add_arg(ks, TTC_ARG_DIM, op->out, d, 0, 0));
    }
    ttc_sbuf_printf(&sig, ", int inner");   /* the output's stride along D */
    TRY(ttc_codegen_add_arg(ks, TTC_ARG_PROD, op->out, D + 1, R, 0));
    ttc_sbuf_printf(&sig, ", __global const %s *x, int x_off", ttc_cl_storage_type(x->dtype));
    TRY(ttc_codegen_add_arg(ks, TTC_ARG_BUF, op->in[0], 0, 0, 0));
    TRY(ttc_codegen_add_arg(ks, TTC_ARG_OFF, op->in[0], 0, 0, 0));
    for (int32_t d = 0; d < R; d++) {
        ttc_sbuf_printf(&sig, ", int x_s%d", d);
        TRY(ttc_codegen_add_arg(ks, TTC_ARG_STRIDE, op->in[0], d, R, 0));
    }
    ttc_codegen_gdim(ks, 0, op->out, 0, R, 1, 0);
    ks->work_dims = 1;

    const char *acc_t = is_fl(out->dtype) ? "float" : out->dtype == TTC_DTYPE_INT64 ? "long" : "int";
    ttc_sbuf_printf(src, "__kernel void %s(%s%s) {\n    int lin = get_global_id(0);\n    if (lin >= n) return;\n",
                    ks->name, sig.data ? sig.data : "", P);
    ttc_sbuf_printf(src, "    int rem = lin;\n");
    for (int32_t d = R - 1; d >= 0; d--) ttc_sbuf_printf(src, "    int i%d = rem %% sz%d; rem /= sz%d;\n", d, d, d);
    ttc_sbuf_printf(src, "    if (i%d != 0) return;\n    int xb = x_off", D);
    for (int32_t d = 0; d < R; d++)
        if (d != D) ttc_sbuf_printf(src, " + i%d * x_s%d", d, d);
    ttc_sbuf_printf(src, ";\n    %s acc = 0;\n    for (int c = 0; c < sz%d; c++) {\n", acc_t, D);
    if (x->dtype == TTC_DTYPE_FLOAT16 && !k->half_compute)
        ttc_sbuf_printf(src, "        acc += (%s)vload_half(xb + c * x_s%d, x);\n", acc_t, D);
    else
        ttc_sbuf_printf(src, "        acc += (%s)x[xb + c * x_s%d];\n", acc_t, D);
    const char *at = "lin + c * inner";
    if (op->epi.n > 0) ttc_sbuf_printf(src, "        %s_store((float)acc, %s%s);\n", ks->name, at, A_);
    else if (out->dtype == TTC_DTYPE_FLOAT16 && k->half_compute) ttc_sbuf_printf(src, "        o_[o_off + %s] = (half)acc;\n", at);
    else if (out->dtype == TTC_DTYPE_FLOAT16) ttc_sbuf_printf(src, "        vstore_half(acc, o_off + %s, o_);\n", at);
    else ttc_sbuf_printf(src, "        o_[o_off + %s] = (%s)acc;\n", at, ttc_cl_storage_type(out->dtype));
    ttc_sbuf_printf(src, "    }\n}\n");
    if (sig.oom || src->oom) s = ttc_fail(TTC_ERR_NOMEM, "generating kernel %s", op->name);
fail:
#undef TRY
    ttc_sbuf_free(&sig);
    return s;
}
