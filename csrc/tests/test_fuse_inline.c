/* kir/fuse.c's inline_concat_reads, no device needed: a concatenation (with its epilogue) read
 * only by a slot write, as that slot write's keys (in[0]), is inlined where the target has
 * inline_concat (the GPU kernel families): codegen then makes no kernel for it and the slot
 * write's kernel computes it ("<name>_x"). Not inlined: without inline_concat, when a second op
 * reads it, when it is an engine output, when the slot write reads it through a view, when it
 * reads the cache that the slot write writes (computed there, it would read the new values). */
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "kir/kir.h"
#include "tests/ctest.h"

enum { PLAIN, SECOND_READER, ENGINE_OUTPUT, THROUGH_VIEW, READS_CACHE, NO_TARGET };

typedef struct built { ttc_kir *k; int32_t cat, sw; ttc_target tg; } built;

/* cat(-a, b) * c along dim 3 ([1, 2, 3, 4] twice -> [1, 2, 3, 8]) written by a slot write into
 * cache [1, 2, 16, 8] at slots [3] along dim 2 */
static void build(built *b, int variant, ttc_dtype dt) {
    ttc_kir *k = b->k = ttc_kir_new();
    ttc_dim half_d[4] = {ttc_dim_const(1), ttc_dim_const(2), ttc_dim_const(3), ttc_dim_const(4)};
    ttc_dim full[4] = {ttc_dim_const(1), ttc_dim_const(2), ttc_dim_const(3), ttc_dim_const(8)};
    ttc_dim cd[4] = {ttc_dim_const(1), ttc_dim_const(2), ttc_dim_const(16), ttc_dim_const(8)};
    ttc_dim sd[1] = {ttc_dim_const(3)};
    int32_t a = ttc_kir_tensor(k, TTC_ET_INPUT, dt, 4, half_d, "a");
    int32_t bt = ttc_kir_tensor(k, TTC_ET_INPUT, dt, 4, half_d, "b");
    int32_t c = ttc_kir_tensor(k, TTC_ET_INPUT, dt, 4, full, "c");
    int32_t cache = ttc_kir_tensor(k, TTC_ET_INPUT, dt, 4, cd, "cache");
    int32_t slots = ttc_kir_tensor(k, TTC_ET_INPUT, TTC_DTYPE_INT64, 1, sd, "slots");
    if (variant == READS_CACHE) {   /* c: the cache's first 3 slots */
        c = ttc_kir_view(k, cache, TTC_VIEW_SLICE, 4, full, "cache_head");
        k->ts[c].vdim = 2;
        k->ts[c].start = 0;
        k->ts[c].end = 3;
    }
    b->cat = ttc_kir_op(k, TTC_KOP_CONCAT, dt, 4, full, "cat");
    ttc_kop *cat = &k->ops[b->cat];
    cat->in[0] = a;
    cat->in[1] = bt;
    cat->p.concat.dim = 3;
    cat->p.concat.n = 2;
    cat->p.concat.neg = 1;
    ttc_expr *e = &cat->epi;
    /* expression nodes are float32 whatever the storage (kir.h) */
    e->root = ttc_expr_op(e, TTC_EOP_MUL, ttc_expr_acc(e, TTC_DTYPE_FLOAT32), ttc_expr_leaf(e, c, TTC_DTYPE_FLOAT32), -1,
                          TTC_DTYPE_FLOAT32);
    int32_t y = cat->out;
    k->ts[y].contig = true;
    int32_t read = y;
    if (variant == THROUGH_VIEW) read = ttc_kir_view(k, y, TTC_VIEW_RESHAPE, 4, full, "y_view");
    b->sw = ttc_kir_op(k, TTC_KOP_SLOT_WRITE, dt, 4, full, "sw");
    ttc_kop *sw = &k->ops[b->sw];
    sw->in[0] = read;
    sw->in[1] = slots;
    sw->out = cache;
    sw->p.slot.dim = 2;
    if (variant == SECOND_READER) {   /* relu(y), an op of its own */
        ttc_expr r;
        ttc_expr_init(&r);
        r.root = ttc_expr_op(&r, TTC_EOP_RELU, ttc_expr_leaf(&r, y, TTC_DTYPE_FLOAT32), -1, -1, TTC_DTYPE_FLOAT32);
        ttc_kir_elementwise(k, &r, dt, 4, full, "relu");
    }
    if (variant == ENGINE_OUTPUT) {
        k->outputs = malloc(sizeof(int32_t));
        k->out_names = malloc(sizeof(char *));
        k->outputs[0] = y;
        k->out_names[0] = ttc_strdup("y");
        k->n_outputs = 1;
        k->ts[y].binding = 0;
    }
    b->tg = *ttc_target_defaults();
    b->tg.gpu_kernels = variant != NO_TARGET;
    b->tg.inline_concat = variant != NO_TARGET;
    k->target = &b->tg;
}

static void test_inline_decisions(void) {
    static const char *what[] = {"plain", "a second reader", "an engine output", "a view between", "reads the cache",
                                 "no inline_concat"};
    for (int variant = PLAIN; variant <= NO_TARGET; variant++) {
        built b;
        build(&b, variant, TTC_DTYPE_FLOAT32);
        int32_t fused = 0;
        CHECK_OK(ttc_fuse(b.k, &fused));
        bool inl = b.k->ops[b.cat].inlined;
        CHECK(inl == (variant == PLAIN), "%s: inlined %d", what[variant], inl);
        const char *name = b.k->ops[b.sw].name;
        CHECK((strcmp(name, "cat+sw") == 0) == inl, "%s: the slot write is named %s", what[variant], name);
        ttc_codegen cg;
        ttc_status st = ttc_codegen_run(b.k, true, &cg);
        CHECK(st == TTC_OK, "%s: codegen: %s", what[variant], ttc_last_error());
        if (st == TTC_OK) {
            int32_t want = variant == SECOND_READER ? 3 : inl ? 1 : 2;
            CHECK(cg.n_kernels == want, "%s: %d kernels, expected %d", what[variant], cg.n_kernels, want);
            bool has_fn = strstr(cg.source, "static inline float k0_x(int lin") != NULL;
            CHECK(has_fn == inl, "%s: the slot write computes the concatenation: %d\n%s", what[variant], has_fn, cg.source);
            if (inl) {
                /* the value: -a or b, times c, and the slot write binds a, b and c but not y */
                CHECK(strstr(cg.source, "v = -(float)(cx0[p]);") && strstr(cg.source, "float v = k0_x(lin, cx0,"),
                      "the inlined value:\n%s", cg.source);
                bool binds_y = false, binds_c = false;
                for (int32_t a = 0; a < cg.kernels[0].n_args; a++) {
                    const ttc_argspec *as = &cg.kernels[0].args[a];
                    if (as->kind != TTC_ARG_BUF) continue;
                    binds_y = binds_y || as->t == b.k->ops[b.cat].out;
                    binds_c = binds_c || as->t == b.k->ops[b.cat].epi.leaves[0];
                }
                CHECK(!binds_y && binds_c, "the slot write binds y %d, c %d", binds_y, binds_c);
            }
            ttc_codegen_free(&cg);
        }
        ttc_clear_error();
        ttc_kir_free(b.k);
    }
}

/* float16: the inlined value rounded to half as the concatenation's kernel stored it, by a cast
 * where the engine computes in half, else through vstore_half (the slot write then stores it
 * unchanged) */
static void test_inline_half(void) {
    for (int hc = 0; hc < 2; hc++) {
        built b;
        build(&b, PLAIN, TTC_DTYPE_FLOAT16);
        b.k->fp16 = true;
        b.k->half_compute = hc;
        int32_t fused = 0;
        CHECK_OK(ttc_fuse(b.k, &fused));
        CHECK(b.k->ops[b.cat].inlined, "half compute %d: not inlined", hc);
        ttc_codegen cg;
        ttc_status st = ttc_codegen_run(b.k, true, &cg);
        CHECK(st == TTC_OK, "half compute %d: codegen: %s", hc, ttc_last_error());
        if (st == TTC_OK) {
            const char *want = hc ? "    return (float)((half)v2);\n}\n"
                                  : "    ushort r_;\n    vstore_half((float)v2, 0, (__private half *)&r_);\n"
                                    "    return vload_half(0, (const __private half *)&r_);\n}\n";
            CHECK(cg.n_kernels == 1 && strstr(cg.source, want), "half compute %d: the rounding\n%s", hc, cg.source);
            if (getenv("TTC_SHOW")) puts(cg.source);
            ttc_codegen_free(&cg);
        }
        ttc_clear_error();
        ttc_kir_free(b.k);
    }
}

TEST_MAIN(test_inline_decisions, test_inline_half)
