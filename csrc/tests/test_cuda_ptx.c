/* The PTX rewrite and .reqntid parsing of the CUDA launch path (backend/cuda/cuda_driver.h):
 * pure text, no driver. Edge cases run under ASan: a register name at the very end, a
 * truncated number, an entry name that is a prefix of another. */
#include <string.h>

#include "backend/cuda/cuda_driver.h"
#include "tests/ctest.h"

#define HEAD ".version 9.0\n.target sm_90, texmode_independent\n.address_size 64\n\n"

static void test_rewrite(void) {
    const char *src = HEAD ".entry k1(\n\t.param .u64 .ptr .global .align 4 k1_param_0\n)\n{\n"
                      "\tmov.b32 \t%r1, %envreg3;\n\tmov.b32 \t%r2, %envreg7;\n\tmov.u32 %r3, %envreg0 ;\n\tret;\n}\n";
    char *out = NULL;
    CHECK_OK(ttc_cuda_ptx_prepare(src, strlen(src) + 1, &out));
    CHECK(out && !strstr(out, "%envreg"), "%s", out ? out : "(null)");
    CHECK(out && strstr(out, "mov.b32 \t%r1, 0;"), "offset -> 0");
    CHECK(out && strstr(out, "mov.u32 \t%r2, %nctaid.y;"), "group count -> nctaid");
    CHECK(out && strstr(out, "mov.b32 %r3, 0 ;"), "mnemonic spelled for the value");
    free(out);
}

static void test_refusals(void) {
    const char *bad[] = {
        HEAD ".entry k(\n)\n{\n\tmov.b32 \t%r1, %envreg9;\n}\n",
        HEAD ".entry k(\n)\n{\n\tmov.b32 \t%r1, %envreg",            /* ends in the name */
        HEAD ".entry k(\n)\n{\n\tadd.s32 \t%r1, %envreg3, 1;\n}\n",
        HEAD ".entry k(\n\t.param .u64 .ptr .shared .align 4 k_param_0\n)\n{\n\tmov.u64 %rd1, k_param_0;\n}\n",
        HEAD ".entry k(\n\t.param .u64 .ptr .shared .align 4 k_param_0\n)\n{\n\tld.param.u64 %rd1, [k_param_0]",
        ".version 9.0\n.entry k(\n\t.param .u64 .ptr .shared .align 4 k_param_0\n)\n{\n}\n",
        "%envreg3",
        "",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char *out = (char *)1;
        ttc_status s = ttc_cuda_ptx_prepare(bad[i], strlen(bad[i]), &out);
        CHECK(s == TTC_ERR_UNSUPPORTED && !out, "case %zu: %s", i, ttc_status_name(s));
    }
}

static void test_local_params(void) {
    const char *src = HEAD ".entry k(\n\t.param .u64 .ptr .shared .align 4 k_param_1,\n\t.param .u32 k_param_10\n)\n{\n"
                      "\tld.param.u64 \t%rd3, [k_param_1];\n\tret;\n}\n";
    char *out = NULL;
    CHECK_OK(ttc_cuda_ptx_prepare(src, strlen(src), &out));
    CHECK(out && strstr(out, ".address_size 64\n.extern .shared .align 1024 .b8 ttc_dsmem[];\n"), "%s", out ? out : "");
    CHECK(out && strstr(out, "\t.param .u64 k_param_1,\n\t.param .u32 k_param_10\n"), "%s", out ? out : "");
    CHECK(out && strstr(out, "[k_param_1]; { .reg .u64 %ttc_db; mov.u64 %ttc_db, ttc_dsmem; add.u64 %rd3, %rd3, %ttc_db; }"),
          "%s", out ? out : "");
    free(out);
    /* a kernel keeping only the low word of the address loads it as .u32 */
    const char *w = HEAD ".entry k(\n\t.param .u64 .ptr .shared .align 16 k_param_6\n)\n{\n"
                    "\tld.param.u32 \t%r74, [k_param_6];\n\tret;\n}\n";
    CHECK_OK(ttc_cuda_ptx_prepare(w, strlen(w), &out));
    CHECK(out && strstr(out, "[k_param_6]; { .reg .u32 %ttc_dw; mov.u32 %ttc_dw, ttc_dsmem; add.u32 %r74, %r74, %ttc_dw; }"),
          "%s", out ? out : "");
    free(out);
}

/* sm_90a statements carried as comments through NVIDIA's OpenCL build come back, retargeted */
static void test_carried_90a(void) {
    const char *src = ".version 9.0\n.target sm_90, texmode_independent\n.address_size 64\n\n.entry k(\n)\n{\n"
                      "\t// begin inline asm\n\t//@ttc90a wgmma.fence.sync.aligned;\n\t// end inline asm\n"
                      "\t//@ttc90a { .reg .pred p; wgmma.commit_group.sync.aligned; }\n\tret;\n}\n";
    char *out = NULL;
    CHECK_OK(ttc_cuda_ptx_prepare(src, strlen(src), &out));
    CHECK(out && strstr(out, ".target sm_90a, texmode_independent\n"), "%s", out ? out : "");
    CHECK(out && strstr(out, "\n\twgmma.fence.sync.aligned;\n\t// end inline asm\n"), "%s", out ? out : "");
    CHECK(out && strstr(out, "\n\t{ .reg .pred p; wgmma.commit_group.sync.aligned; }\n"), "%s", out ? out : "");
    CHECK(out && !strstr(out, "@ttc90a"), "%s", out ? out : "");
    free(out);
    /* nothing carried: the target stays */
    const char *plain = HEAD ".entry k(\n)\n{\n\tret;\n}\n";
    CHECK_OK(ttc_cuda_ptx_prepare(plain, strlen(plain), &out));
    CHECK(out && strstr(out, ".target sm_90, texmode_independent\n"), "%s", out ? out : "");
    free(out);
    /* carried statements on another architecture are refused by name */
    const char *other = ".version 9.0\n.target sm_89\n.address_size 64\n.entry k(\n)\n{\n\t//@ttc90a wgmma.fence.sync.aligned;\n}\n";
    out = (char *)1;
    ttc_status st = ttc_cuda_ptx_prepare(other, strlen(other), &out);
    CHECK(st == TTC_ERR_UNSUPPORTED && !out && strstr(ttc_last_error(), "sm_89"), "%s: %s", ttc_status_name(st), ttc_last_error());
}

static void test_reqntid(void) {
    const char *src = HEAD ".entry k14(\n\t.param .u32 k14_param_0\n)\n.reqntid 128, 1, 1\n{\n}\n"
                      ".entry k1(\n)\n{\n}\n.entry k2 (\n)\n.reqntid 64\n{\n}\n";
    uint32_t r[3];
    ttc_cuda_ptx_reqntid(src, "k14", r);
    CHECK(r[0] == 128 && r[1] == 1 && r[2] == 1, "k14: %u %u %u", r[0], r[1], r[2]);
    ttc_cuda_ptx_reqntid(src, "k1", r);   /* not k14's */
    CHECK(r[0] == 0, "k1 declares none: %u", r[0]);
    ttc_cuda_ptx_reqntid(src, "k2", r);
    CHECK(r[0] == 64 && r[1] == 1 && r[2] == 1, "k2: %u %u %u", r[0], r[1], r[2]);
    ttc_cuda_ptx_reqntid(src, "k9", r);
    CHECK(r[0] == 0, "no such entry");
}

TEST_MAIN(test_rewrite, test_refusals, test_local_params, test_carried_90a, test_reqntid)
