/* The scan kernel (TTC_KOP_SCAN): out = cumsum(in[0], p.scan.dim) (cumprod, logcumsumexp by
 * p.scan.kind), out dense, same dims.
 *
 * One work-item per row along the scanned dim accumulates sequentially, in float for
 * floating outputs and in the output's integer type otherwise (torch promotes bool and
 * integer cumsum to int64, so masks count exactly). The launch covers every output element
 * and work-items off the row starts return at once: simple, and rows are short where
 * models use cumsum (position ids from an attention mask). */
#include "codegen_impl.h"

#include <stdio.h>

ttc_status ttc_gen_scan(const ttc_kgen *g) {
    TTC_KGEN_LOCALS(g);
    const ttc_et *out = &k->ts[op->out];
    const ttc_et *x = op->in[0] >= 0 ? &k->ts[op->in[0]] : NULL;
    int32_t R = out->rank, D = op->p.scan.dim;
    if (!x || R < 1 || D < 0 || D >= R || x->rank != R)
        return ttc_fail(TTC_ERR_INTERNAL, "scan %s: rank %d, dim %d", op->name, R, D);
    ttc_kparams p;
    ttc_kp_init(&p, k, ks, false);
    ttc_kp_int(&p, TTC_ARG_PROD, op->out, 0, R, 0, "n");
    for (int32_t d = 0; d < R; d++) ttc_kp_int(&p, TTC_ARG_DIM, op->out, d, 0, 0, "sz%d", d);
    ttc_kp_int(&p, TTC_ARG_PROD, op->out, D + 1, R, 0, "inner");   /* the output's stride along D */
    ttc_kp_tensor(&p, op->in[0], "x", R);
    ttc_status s = ttc_kp_done(&p);
    if (s != TTC_OK) goto fail;

    const char *acc_t = ttc_codegen_floatish(out->dtype) ? "float" : out->dtype == TTC_DTYPE_INT64 ? "long" : "int";
    ttc_sbuf_printf(src, "__kernel void %s(%s%s) {\n    int lin = get_global_id(0);\n    if (lin >= n) return;\n",
                    ks->name, ttc_kp_sig(&p), P);
    ttc_sbuf_printf(src, "    int rem = lin;\n");
    for (int32_t d = R - 1; d >= 0; d--) ttc_sbuf_printf(src, "    int i%d = rem %% sz%d; rem /= sz%d;\n", d, d, d);
    ttc_sbuf_printf(src, "    if (i%d != 0) return;\n    int xb = x_off", D);
    for (int32_t d = 0; d < R; d++)
        if (d != D) ttc_sbuf_printf(src, " + i%d * x_s%d", d, d);
    int32_t kind = op->p.scan.kind;
    if (kind == TTC_SCAN_LOGSUMEXP && !ttc_codegen_floatish(out->dtype)) {
        s = ttc_fail(TTC_ERR_INTERNAL, "scan %s: logcumsumexp into a non-float dtype", op->name);
        goto fail;
    }
    ttc_sbuf_printf(src, ";\n    %s acc = %s;\n    for (int c = 0; c < sz%d; c++) {\n", acc_t,
                    kind == TTC_SCAN_PROD ? "1" : kind == TTC_SCAN_LOGSUMEXP ? "-INFINITY" : "0", D);
    char idx[32];
    snprintf(idx, sizeof idx, "xb + c * x_s%d", D);
    ttc_sbuf_printf(src, "        %s v = (%s)", acc_t, acc_t);
    ttc_codegen_load(src, k, g->sp, x->dtype, "x", idx);
    ttc_sbuf_printf(src, ";\n");
    if (kind == TTC_SCAN_PROD) ttc_sbuf_printf(src, "        acc *= v;\n");
    else if (kind == TTC_SCAN_SUM) ttc_sbuf_printf(src, "        acc += v;\n");
    else  /* torch's log-add-exp: min/max as std::min/max, a NaN update taken as both, equal
           * infinities stay */
        ttc_sbuf_printf(src, "        { float mn = isnan(v) ? v : v < acc ? v : acc, mx = isnan(v) ? v : acc < v ? v : acc;\n"
                             "          if (mn != mx || isfinite(mn)) acc = mx + log1p(exp(mn - mx)); }\n");
    const char *at = "lin + c * inner";
    if (op->epi.n > 0) ttc_sbuf_printf(src, "        %s_store((float)acc, %s%s);\n", ks->name, at, A_);
    else ttc_codegen_store(src, k, g->sp, out->dtype, "acc", "acc", at, "        ");
    ttc_sbuf_printf(src, "    }\n}\n");
fail:
    ttc_kp_free(&p);
    return s;
}
