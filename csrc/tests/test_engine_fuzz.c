/* Serialisation fuzz: a real engine blob (conv + bn + relu + linear + softmax) mutated
 * thousands of times (bit flips, byte sets, truncations, length-field edits), half of them
 * with the checksum recomputed so that the section parser, the IR parser and the rebuild
 * see the damage. Every load must fail cleanly or give a working engine; run under
 * `make ctest SAN=1` for the memory-safety half of the claim. */
#include <stdlib.h>
#include <unistd.h>

#include "engine/engine.h"
#include "backend/backend.h"
#include "tests/ctest.h"

static const char *GRAPH =
    "graph(%x : Float(s0, 2, 5, 5)) where s0 in [1, 2, 4]:\n"
    "  %w : Float(3, 2, 3, 3) = prim.Constant[value=tensor([0.1, -0.2, 0.3, 0.4, -0.5, 0.6, 0.7, 0.8, -0.9, 0.1, 0.2, 0.3,"
    " 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, -0.1, 0.2, -0.3, 0.4, -0.5, 0.6, 0.7, -0.8, 0.9, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7,"
    " 0.8, 0.9, 0.1, -0.2, 0.3, -0.4, 0.5, -0.6, 0.7, 0.8, 0.9, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9])]()\n"
    "  %b : Float(3) = prim.Constant[value=tensor([0.1, 0.2, 0.3])]()\n"
    "  %s : int[] = prim.Constant[value=[1, 1]]()\n"
    "  %p : int[] = prim.Constant[value=[1, 1]]()\n"
    "  %d : int[] = prim.Constant[value=[1, 1]]()\n"
    "  %f : bool = prim.Constant[value=false]()\n"
    "  %op : int[] = prim.Constant[value=[0, 0]]()\n"
    "  %g : int = prim.Constant[value=1]()\n"
    "  %c : Float(s0, 3, 5, 5) = aten.convolution.default(%x, %w, %b, %s, %p, %d, %f, %op, %g)\n"
    "  %r : Float(s0, 3, 5, 5) = aten.relu.default(%c)\n"
    "  %one : int = prim.Constant[value=1]()\n"
    "  %m1 : int = prim.Constant[value=-1]()\n"
    "  %fl : Float(s0, 75) = aten.flatten.using_ints(%r, %one, %m1)\n"
    "  %sm : Float(s0, 75) = aten._softmax.default(%fl, %one, %f)\n"
    "  return (%sm)\n";

static void put64(unsigned char *b, uint64_t v) { for (int i = 0; i < 8; i++) b[i] = (unsigned char)(v >> (8 * i)); }

static void test_fuzz_blobs(void) {
    ttc_device *dev;
    if (ttc_device_select(NULL, &dev) != TTC_OK) { printf("  (no device)\n"); return; }
    ttc_graph *g = NULL;
    CHECK_OK(ttc_graph_parse(GRAPH, &g));
    if (!g) return;
    ttc_engine_options o = ttc_engine_options_default();
    o.cache_dir = "";
    ttc_engine *e = NULL;
    setenv("TORCHTRT_C_PROGRAM_BINARIES", "1", 1);   /* blobs with a binary to damage (off by default on PoCL) */
    CHECK_OK(ttc_engine_build(g, &o, &e));
    ttc_graph_free(g);
    if (!e) return;
    unsigned char *blob;
    size_t len;
    CHECK_OK(ttc_engine_serialize(e, &blob, &len));
    if (getenv("TTC_FUZZ_DUMP")) {
        char *orig = ttc_strfmt("%s.orig", getenv("TTC_FUZZ_DUMP"));
        FILE *df = orig ? fopen(orig, "wb") : NULL;
        if (df) { fwrite(blob, 1, len, df); fclose(df); }
        free(orig);
    }
    ttc_engine *e2 = NULL;
    CHECK_OK(ttc_engine_deserialize(blob, len, NULL, "", &e2));
    CHECK(e2 && ttc_engine_program_from_cache(e2), "same device: the stored binary is used");
    ttc_engine_free(e2);
    /* rebuilds of blobs whose binary was damaged come from a private program cache */
    char cache[] = "/tmp/ttc_fuzz_cacheXXXXXX";
    if (!mkdtemp(cache)) return;
    unsigned char *m = malloc(len);
    srand(getenv("TTC_FUZZ_SEED") ? (unsigned)atoi(getenv("TTC_FUZZ_SEED")) : 12345u);
    int ok = 0, failed = 0;
    const int iters = getenv("TTC_FUZZ_ITERS") ? atoi(getenv("TTC_FUZZ_ITERS")) : 3000;
    for (int it = 0; it < iters; it++) {
        memcpy(m, blob, len);
        size_t n = len;
        int kind = rand() % 5;
        int count = 1 + rand() % 4;
        for (int c = 0; c < count; c++) {
            size_t at = (size_t)rand() % (n > 8 ? n - 8 : 1);
            switch (kind) {
            case 0: m[at] ^= (unsigned char)(1u << (rand() % 8)); break;
            case 1: m[at] = (unsigned char)rand(); break;
            case 2: if (n > 1) n = (size_t)rand() % n; break;
            case 3: /* a plausible length field: a 32/64-bit word set to a large or small value */
                if (at + 8 <= n) put64(m + at, rand() % 2 ? (uint64_t)rand() * 977u : (uint64_t)(rand() % 64));
                break;
            case 4: if (at + 1 < n) m[at] = m[at + 1]; break;
            }
        }
        if (n >= 8 && rand() % 2) put64(m + n - 8, ttc_hash64(m, n - 8, 0));  /* get past the checksum */
        ttc_engine *f = NULL;
        if (getenv("TTC_FUZZ_DUMP")) {  /* the blob under test, to reproduce a crash */
            FILE *df = fopen(getenv("TTC_FUZZ_DUMP"), "wb");
            if (df) { fwrite(m, 1, n, df); fclose(df); }
        }
        if (getenv("TTC_FUZZ_VERBOSE")) { fprintf(stderr, "iteration %d (kind %d, %zu bytes)\n", it, kind, n); fflush(stderr); }
        ttc_status s = ttc_engine_deserialize(m, n, NULL, cache, &f);
        if (getenv("TTC_FUZZ_VERBOSE")) { fprintf(stderr, "  -> %s: %.200s\n", ttc_status_name(s), s ? ttc_last_error() : ""); fflush(stderr); }
        if (s == TTC_OK) {
            ok++;
            /* a blob that loads must also run (or refuse its inputs cleanly) */
            float x[2 * 2 * 5 * 5], y[2 * 75];
            for (int i = 0; i < 100; i++) x[i] = (float)(i % 7) * 0.1f;
            const void *in[1] = {x};
            size_t inb[1] = {sizeof x}, outb[1] = {sizeof y};
            int64_t shp[1][TTC_MAX_RANK] = {{2, 2, 5, 5}};
            void *out[1] = {y};
            if (ttc_engine_n_inputs(f) == 1 && ttc_engine_n_outputs(f) == 1)
                (void)ttc_engine_execute(f, in, inb, (const int64_t(*)[TTC_MAX_RANK])shp, out, outb);
            ttc_engine_free(f);
        } else {
            failed++;
            CHECK(f == NULL);
            CHECK(s == TTC_ERR_SERIALIZATION || s == TTC_ERR_UNSUPPORTED || s == TTC_ERR_BUILD ||
                  s == TTC_ERR_INVALID_ARG || s == TTC_ERR_NOMEM || s == TTC_ERR_INTERNAL,
                  "iteration %d: status %s: %s", it, ttc_status_name(s), ttc_last_error());
        }
    }
    printf("  %d mutated blobs: %d loaded, %d rejected\n", iters, ok, failed);
    CHECK(failed > iters / 2, "most mutations are rejected");
    char *cmd = ttc_strfmt("rm -rf %s", cache);
    CHECK(system(cmd) == 0);
    free(cmd);
    free(m);
    free(blob);
    ttc_engine_free(e);
}

TEST_MAIN(test_fuzz_blobs)
