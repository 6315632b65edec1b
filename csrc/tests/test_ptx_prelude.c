/* The PTX prelude (kernels/ptx.cl) against the PTX ISA's definitions, computed here on the
 * host: mma.sync f16 and tf32 on fragments loaded per the documented layouts, tf32 rounding,
 * ldmatrix x4/x2 with and without .trans, ldmatrix feeding mma (the way the kernels use them),
 * cp.async with zero fill, and shfl.sync.bfly. On NVIDIA devices the real instructions run
 * (TTC_PTX), elsewhere the emulation: the same expectations hold for both, so the emulation
 * that CI tests kernels with is checked against the hardware wherever a GPU runs this. */
#include <math.h>
#include <stdlib.h>

#include "backend/backend.h"
#include "kernels/kernels.h"
#include "tests/ctest.h"

static const char *KSRC =
    "__kernel __attribute__((reqd_work_group_size(64, 1, 1)))\n"
    "void t(__global const ushort *ah, __global const float *af, __global float *out_mma,\n"
    "       __global float *out_tf, __global uint *out_ld, __global float *out_shfl,\n"
    "       __global const uchar *cpsrc, __global uchar *cpdst, __global float *out_gemm,\n"
    "       __global uint *out_bits, __global const float *tfin) {\n"
    "    TTC_PTX_SCRATCH(scr, 2);\n"
    "    __local ushort tile[64 * 24] __attribute__((aligned(16)));\n"
    "    __local uchar cpbuf[64 * 16] __attribute__((aligned(16)));\n"
    "    int lid = ttc_lid(), l = ttc_lane(), w = ttc_warp(), g = l >> 2, t = l & 3;\n"
    "    uint a[4], b[2], r[4];\n"
    "    float acc[4];\n"
    /* 1. f16 mma, fragments straight from global: A_w 16x16 row-major, B_w 16x8 (k, n) */
    "    __global const ushort *A = ah + w * 256, *B = ah + 512 + w * 128;\n"
    "    for (int i = 0; i < 4; i++) {\n"
    "        int row = g + (i & 1) * 8, k = 2 * t + (i >> 1) * 8;\n"
    "        a[i] = (uint)A[row * 16 + k] | ((uint)A[row * 16 + k + 1] << 16);\n"
    "    }\n"
    "    for (int i = 0; i < 2; i++) { int k = 2 * t + i * 8; b[i] = (uint)B[k * 8 + g] | ((uint)B[(k + 1) * 8 + g] << 16); }\n"
    "    for (int i = 0; i < 4; i++) acc[i] = 1.0f;\n"
    "    ttc_mma_f16(acc, a, b, scr);\n"
    "    for (int i = 0; i < 4; i++) out_mma[w * 128 + (g + (i >> 1) * 8) * 8 + 2 * t + (i & 1)] = acc[i];\n"
    /* 2. tf32 mma: A_w 16x8, B_w 8x8 (k, n) */
    "    __global const float *Af = af + w * 128, *Bf = af + 256 + w * 64;\n"
    "    for (int i = 0; i < 4; i++) a[i] = ttc_tf32(Af[(g + (i & 1) * 8) * 8 + t + (i >> 1) * 4]);\n"
    "    for (int i = 0; i < 2; i++) b[i] = ttc_tf32(Bf[(t + i * 4) * 8 + g]);\n"
    "    for (int i = 0; i < 4; i++) acc[i] = 0.0f;\n"
    "    ttc_mma_tf32(acc, a, b, scr);\n"
    "    for (int i = 0; i < 4; i++) out_tf[w * 128 + (g + (i >> 1) * 8) * 8 + 2 * t + (i & 1)] = acc[i];\n"
    "    out_bits[lid] = ttc_tf32(tfin[lid]);\n"
    /* 3. ldmatrix from a padded tile (rows of 16 halves, stride 24) */
    "    for (int c = 0; c < 16; c++) tile[lid * 24 + c] = ah[(lid * 16 + c) & 511];\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    int off = (w * 32 + (l >> 3) * 8 + (l & 7)) * 24 + ((l >> 3) & 1) * 8;\n"
    "    ttc_ldsm_x4(r, tile, off, scr);\n"
    "    for (int i = 0; i < 4; i++) out_ld[lid * 12 + i] = r[i];\n"
    "    ttc_ldsm_x4_trans(r, tile, off, scr);\n"
    "    for (int i = 0; i < 4; i++) out_ld[lid * 12 + 4 + i] = r[i];\n"
    "    ttc_ldsm_x2(r, tile, off, scr);\n"
    "    for (int i = 0; i < 2; i++) out_ld[lid * 12 + 8 + i] = r[i];\n"
    "    ttc_ldsm_x2_trans(r, tile, off, scr);\n"
    "    for (int i = 0; i < 2; i++) out_ld[lid * 12 + 10 + i] = r[i];\n"
    /* 4. ldmatrix feeding mma: A = tile rows 0..15, B = tile rows 16..31 cols 0..7 (k, n) */
    "    ttc_ldsm_x4(a, tile, (l & 15) * 24 + (l >> 4) * 8, scr);\n"
    "    ttc_ldsm_x2_trans(b, tile, (16 + (l & 15)) * 24, scr);\n"
    "    for (int i = 0; i < 4; i++) acc[i] = 0.0f;\n"
    "    ttc_mma_f16(acc, a, b, scr);\n"
    "    for (int i = 0; i < 4; i++) out_gemm[w * 128 + (g + (i >> 1) * 8) * 8 + 2 * t + (i & 1)] = acc[i];\n"
    /* 5. shuffles */
    "    out_shfl[lid * 2] = ttc_shfl_xor(lid * 1.5f, 1, scr);\n"
    "    out_shfl[lid * 2 + 1] = ttc_shfl_xor(lid * 1.5f, 6, scr);\n"
    /* 6. cp.async: odd work-items zero-fill after lid % 17 bytes */
    "    if (lid & 1) ttc_cp_async16_zfill(cpbuf + lid * 16, cpsrc + lid * 16, lid % 17);\n"
    "    else ttc_cp_async16(cpbuf + lid * 16, cpsrc + lid * 16);\n"
    "    ttc_cp_async_commit();\n"
    "    TTC_CP_ASYNC_WAIT(0);\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    for (int i = 0; i < 16; i++) cpdst[lid * 16 + i] = cpbuf[((lid + 1) & 63) * 16 + i];\n"
    "}\n";

/* half bits of a value that half holds exactly (the test's values are such) */
static uint16_t h_exact(float f) {
    if (f == 0.0f) return 0;
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t sign = u >> 31, e = (u >> 23) & 0xff, m = u & 0x7fffff;
    return (uint16_t)((sign << 15) | ((e - 127 + 15) << 10) | (m >> 13));
}
static float h_val(uint16_t h) {   /* normal numbers and zero only */
    if (!(h & 0x7fff)) return 0.0f;
    uint32_t u = ((uint32_t)(h >> 15) << 31) | ((((h >> 10) & 0x1f) - 15 + 127) << 23) | ((uint32_t)(h & 0x3ff) << 13);
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static uint32_t tf32_bits(float f) {   /* cvt.rna.tf32.f32 */
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7f800000u) == 0x7f800000u) return u;
    return (u + 0x1000u) & 0xffffe000u;
}
static float tf32_val(float f) {
    uint32_t u = tf32_bits(f);
    memcpy(&f, &u, 4);
    return f;
}

static void test_prelude(void) {
    ttc_device *d = NULL;
    if (ttc_device_select(NULL, &d) != TTC_OK) { printf("  (no device: %s)\n", ttc_last_error()); return; }
    bool ptx = ttc_device_facts(d)->nvidia;
    printf("  (%s: %s)\n", ttc_device_facts(d)->name, ptx ? "PTX instructions" : "emulation");
    const char *pre = ttc_kernel_source_get("ptx");
    CHECK(pre != NULL, "ptx.cl embedded");
    if (!pre) return;
    size_t n = strlen(pre) + strlen(KSRC) + 64;
    char *src = malloc(n);
    snprintf(src, n, "%s%s%s", ptx ? "#define TTC_PTX 1\n" : "", pre, KSRC);

    uint16_t ah[1024];
    float ahf[1024], af[512], tfin[64];
    unsigned char cps[1024];
    for (int i = 0; i < 1024; i++) { ahf[i] = (float)((i * 7) % 13 - 6) * 0.125f; ah[i] = h_exact(ahf[i]); }
    for (int i = 0; i < 512; i++) af[i] = sinf((float)i * 0.37f) * 3.0f;
    for (int i = 0; i < 64; i++) tfin[i] = cosf((float)i) * 5.0f;
    tfin[0] = 1.0f + 1.0f / 2048.0f;        /* a tie: away from zero */
    tfin[1] = -(1.0f + 1.0f / 2048.0f);
    tfin[2] = 1.0f + 1.0f / 4096.0f;        /* below half an ulp: down */
    for (int i = 0; i < 1024; i++) cps[i] = (unsigned char)(i * 13 + 5);

    ttc_program *p = NULL;
    ttc_queue *q = NULL;
    ttc_kernel *k = NULL;
    ttc_buf *bufs[11] = {0};
    size_t sizes[11] = {sizeof ah, sizeof af, 256 * 4, 256 * 4, 64 * 12 * 4, 128 * 4, 1024, 1024, 256 * 4, 64 * 4,
                        sizeof tfin};
    const void *init[11] = {ah, af, NULL, NULL, NULL, NULL, cps, NULL, NULL, NULL, tfin};
    if (ttc_program_build(d, src, "", NULL, &p) != TTC_OK) {
        CHECK(0, "prelude test kernel builds: %.2000s", ttc_last_error());
        goto done;
    }
    CHECK_OK(ttc_queue_new(d, false, &q));
    CHECK_OK(ttc_kernel_new(p, "t", &k));
    for (int i = 0; i < 11; i++) {
        CHECK_OK(ttc_buf_alloc(d, sizes[i], init[i], "b", &bufs[i]));
        CHECK_OK(ttc_kernel_set_buf(k, (uint32_t)i, bufs[i]));
    }
    size_t gws = 64, lws = 64;
    CHECK_OK(ttc_queue_launch(q, k, 1, &gws, &lws, NULL));
    float mma[256], tf[256], shfl[128], gemm[256];
    uint32_t ld[64 * 12], bits[64];
    unsigned char cpd[1024];
    CHECK_OK(ttc_buf_read(q, bufs[2], 0, sizeof mma, mma, true));
    CHECK_OK(ttc_buf_read(q, bufs[3], 0, sizeof tf, tf, true));
    CHECK_OK(ttc_buf_read(q, bufs[4], 0, sizeof ld, ld, true));
    CHECK_OK(ttc_buf_read(q, bufs[5], 0, sizeof shfl, shfl, true));
    CHECK_OK(ttc_buf_read(q, bufs[7], 0, sizeof cpd, cpd, true));
    CHECK_OK(ttc_buf_read(q, bufs[8], 0, sizeof gemm, gemm, true));
    CHECK_OK(ttc_buf_read(q, bufs[9], 0, sizeof bits, bits, true));

    int bad = 0;
    for (int w = 0; w < 2; w++)
        for (int r = 0; r < 16; r++)
            for (int c = 0; c < 8; c++) {
                /* f16: exact (products of eighths, sums far below 2^24) */
                float s = 1.0f;
                for (int kk = 0; kk < 16; kk++) s += ahf[w * 256 + r * 16 + kk] * ahf[512 + w * 128 + kk * 8 + c];
                if (mma[w * 128 + r * 8 + c] != s && bad++ < 5)
                    CHECK(0, "mma f16 warp %d (%d,%d): %g, want %g", w, r, c, mma[w * 128 + r * 8 + c], s);
                double st = 0;
                for (int kk = 0; kk < 8; kk++)
                    st += (double)tf32_val(af[w * 128 + r * 8 + kk]) * tf32_val(af[256 + w * 64 + kk * 8 + c]);
                if (fabs(tf[w * 128 + r * 8 + c] - st) > 1e-5 * (1 + fabs(st)) && bad++ < 5)
                    CHECK(0, "mma tf32 warp %d (%d,%d): %g, want %g", w, r, c, tf[w * 128 + r * 8 + c], st);
                float sg = 0.0f;
                for (int kk = 0; kk < 16; kk++) sg += ahf[r * 16 + kk] * ahf[((16 + kk) * 16 + c) & 511];
                if (gemm[w * 128 + r * 8 + c] != sg && bad++ < 5)
                    CHECK(0, "ldmatrix->mma warp %d (%d,%d): %g, want %g", w, r, c, gemm[w * 128 + r * 8 + c], sg);
            }
    for (int i = 0; i < 64; i++)
        if (bits[i] != tf32_bits(tfin[i]) && bad++ < 5)
            CHECK(0, "tf32 rounding of %.9g: %08x, want %08x", tfin[i], bits[i], tf32_bits(tfin[i]));
    /* ldmatrix: tile row R holds ah[(R*16 + c) & 511]; lane l of warp w gave row
     * w*32 + (l/8)*8 + l%8, column ((l/8)&1)*8: matrix i = rows w*32+8i.., column ((i&1)*8) */
    for (int lid = 0; lid < 64; lid++) {
        int w = lid >> 5, l = lid & 31, g = l >> 2, t = l & 3;
        for (int v = 0; v < 4; v++)
            for (int i = 0; i < 4; i++) {
                if ((v == 2 || v == 3) && i >= 2) continue;
                bool trans = v & 1;
                int base_row = w * 32 + i * 8, col0 = (i & 1) * 8;
                int r0 = trans ? base_row + 2 * t : base_row + g, c0 = trans ? col0 + g : col0 + 2 * t;
                int r1 = trans ? r0 + 1 : r0, c1 = trans ? c0 : c0 + 1;
                uint32_t want = (uint32_t)ah[(r0 * 16 + c0) & 511] | ((uint32_t)ah[(r1 * 16 + c1) & 511] << 16);
                int slot = v < 2 ? v * 4 + i : 8 + (v - 2) * 2 + i;
                if (ld[lid * 12 + slot] != want && bad++ < 5)
                    CHECK(0, "ldmatrix %s%s lane %d reg %d: %08x, want %08x", v < 2 ? "x4" : "x2", trans ? ".trans" : "",
                          lid, i, ld[lid * 12 + slot], want);
            }
        if ((shfl[lid * 2] != (float)(lid ^ 1) * 1.5f || shfl[lid * 2 + 1] != (float)((lid & 32) | ((lid & 31) ^ 6)) * 1.5f) &&
            bad++ < 5)
            CHECK(0, "shfl.bfly lane %d: %g %g", lid, shfl[lid * 2], shfl[lid * 2 + 1]);
        int src = (lid + 1) & 63;
        for (int i = 0; i < 16; i++) {
            unsigned char want = (src & 1) && i >= src % 17 ? 0 : cps[src * 16 + i];
            if (cpd[lid * 16 + i] != want && bad++ < 5)
                CHECK(0, "cp.async slot %d byte %d: %d, want %d", src, i, cpd[lid * 16 + i], want);
        }
    }
    CHECK(bad == 0, "%d mismatches", bad);
    (void)h_val;
done:
    for (int i = 0; i < 11; i++) ttc_buf_free(bufs[i]);
    ttc_kernel_free(k);
    ttc_queue_free(q);
    ttc_program_free(p);
    free(src);
}

TEST_MAIN(test_prelude)
