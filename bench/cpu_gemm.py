"""GEMM GFLOP/s on the CPU, side by side in one process, round robin: torch (F.linear / addmm,
MKL or oneDNN inside torch) against the libraries a CPU engine can call as native kernels:
OpenBLAS cblas_sgemm as the engine calls it (row-major, B as [K,N] or, trans_b, [N,K]) and
oneDNN 2.x matmul (libdnnl.so.2, the one native_conv_dnnl.c loads) with the weights reordered
once into the layout the primitive asks for ("dnnl packed") and, for comparison, read as they lie
("dnnl plain"), and BLIS's CBLAS sgemm where libblis.so.4 is installed. The shapes are the zoo's linears: BERT/GPT-2 (768 wide, 3072 MLP), the
Llama-style model (GQA: k/v 768->256, MLP 2048) and ConvNeXt-T's pointwise MLPs, at batch 1 and 8.
Also the "kernel table shows GEMM GFLOP/s beside torch.mm" item of issue 14.

    python bench/cpu_gemm.py [--batch 1,8] [--threads 1,2] [--shapes bert] [--rounds 5]

On a shared machine read the ratios (each round runs every variant back to back), not the
absolutes; the load average is printed first.
"""
import argparse
import ctypes as ct
import os
import statistics
import time

import numpy as np
import torch
import torch.nn.functional as F

# (model, M per batch item, K, N, weight layout): "nk" = nn.Linear ([N,K], trans_b), "kn" =
# GPT-2's Conv1D (addmm with [K,N] weights)
SHAPES = {
    "bert": [("bert qkv/out", 128, 768, 768, "nk"), ("bert fc1", 128, 768, 3072, "nk"),
             ("bert fc2", 128, 3072, 768, "nk")],
    "gpt2": [("gpt2 c_attn", 128, 768, 2304, "kn"), ("gpt2 c_proj", 128, 768, 768, "kn"),
             ("gpt2 c_fc", 128, 768, 3072, "kn"), ("gpt2 mlp c_proj", 128, 3072, 768, "kn")],
    "llama": [("llama k/v", 128, 768, 256, "nk"), ("llama gate/up", 128, 768, 2048, "nk"),
              ("llama down", 128, 2048, 768, "nk")],
    "convnext": [("cnx s1 fc1", 3136, 96, 384, "nk"), ("cnx s1 fc2", 3136, 384, 96, "nk"),
                 ("cnx s2 fc1", 784, 192, 768, "nk"), ("cnx s2 fc2", 784, 768, 192, "nk"),
                 ("cnx s3 fc1", 196, 384, 1536, "nk"), ("cnx s3 fc2", 196, 1536, 384, "nk"),
                 ("cnx s4 fc1", 49, 768, 3072, "nk"), ("cnx s4 fc2", 49, 3072, 768, "nk")],
}


class OpenBLAS:
    def __init__(self):
        os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")   # as the engine loads it (backend/blas.c)
        self.lib = ct.CDLL("libopenblas.so.0")
        f = self.lib.cblas_sgemm
        f.restype = None
        f.argtypes = [ct.c_int] * 6 + [ct.c_float, ct.c_void_p, ct.c_int, ct.c_void_p, ct.c_int, ct.c_float,
                                       ct.c_void_p, ct.c_int]
        self.lib.openblas_set_num_threads.argtypes = [ct.c_int]

    def threads(self, n):
        self.lib.openblas_set_num_threads(n)

    def gemm(self, a, w, c, trans_b):
        M, K = a.shape
        N = c.shape[1]
        self.lib.cblas_sgemm(101, 111, 112 if trans_b else 111, M, N, K, 1.0, a.ctypes.data, K, w.ctypes.data,
                             K if trans_b else N, 0.0, c.ctypes.data, N)


class BLIS(OpenBLAS):
    """BLIS 0.9 (Debian libblis4-pthread) through its CBLAS layer, when installed."""

    def __init__(self):
        self.lib = ct.CDLL("libblis.so.4")
        f = self.lib.cblas_sgemm
        f.restype = None
        f.argtypes = [ct.c_int] * 6 + [ct.c_float, ct.c_void_p, ct.c_int, ct.c_void_p, ct.c_int, ct.c_float,
                                       ct.c_void_p, ct.c_int]
        self.lib.bli_thread_set_num_threads.argtypes = [ct.c_long]

    def threads(self, n):
        self.lib.bli_thread_set_num_threads(n)


# oneDNN 2.6 C API constants (oneapi/dnnl/dnnl_types.h)
D_F32, D_ANY, D_AB, D_BA = 3, 1, 3, 22
ARG_SRC, ARG_WEI, ARG_DST, ARG_FROM, ARG_TO = 1, 33, 17, 1, 17
Q_WEI_MD = 131
MD_BYTES, MATMUL_BYTES = 1024, 4096   # >= sizeof(dnnl_memory_desc_t) 696, dnnl_matmul_desc_t 2800


class ExecArg(ct.Structure):
    _fields_ = [("arg", ct.c_int), ("memory", ct.c_void_p)]


class OneDNN:
    def __init__(self):
        self.lib = L = ct.CDLL("libdnnl.so.2")
        self.eng = ct.c_void_p()
        assert L.dnnl_engine_create(ct.byref(self.eng), 1, 0) == 0
        self.stream = ct.c_void_p()
        assert L.dnnl_stream_create(ct.byref(self.stream), self.eng, 1) == 0
        L.dnnl_primitive_desc_query_md.restype = ct.c_void_p
        L.dnnl_version.restype = ct.c_void_p
        v = ct.cast(L.dnnl_version(), ct.POINTER(ct.c_int * 3)).contents
        self.version = f"{v[0]}.{v[1]}.{v[2]}"
        try:   # the OpenMP runtime oneDNN is linked against (not torch's own copy)
            self.omp = ct.CDLL("libgomp.so.1")
        except OSError:
            self.omp = None

    def threads(self, n):
        if self.omp:
            self.omp.omp_set_num_threads(n)

    def md(self, dims, tag):
        m = ct.create_string_buffer(MD_BYTES)
        d = (ct.c_int64 * len(dims))(*dims)
        assert self.lib.dnnl_memory_desc_init_by_tag(m, len(dims), d, D_F32, tag) == 0
        return m

    def mem(self, md, ptr):
        h = ct.c_void_p()
        assert self.lib.dnnl_memory_create(ct.byref(h), md, self.eng, ct.c_void_p(ptr)) == 0
        return h

    def run(self, prim, *args):
        a = (ExecArg * len(args))(*[ExecArg(k, m) for k, m in args])
        assert self.lib.dnnl_primitive_execute(prim, self.stream, len(args), a) == 0
        assert self.lib.dnnl_stream_wait(self.stream) == 0

    def matmul(self, a, w, c, trans_b, packed):
        """A callable computing c = a @ op(w); with packed the weights are reordered once, here."""
        L = self.lib
        M, K = a.shape
        N = c.shape[1]
        src, dst = self.md([M, K], D_AB), self.md([M, N], D_AB)
        wu = self.md([K, N], D_BA if trans_b else D_AB)
        wd = self.md([K, N], D_ANY) if packed else wu
        desc = ct.create_string_buffer(MATMUL_BYTES)
        assert L.dnnl_matmul_desc_init(desc, src, wd, None, dst) == 0
        pd = ct.c_void_p()
        assert L.dnnl_primitive_desc_create(ct.byref(pd), desc, None, self.eng, None) == 0
        prim = ct.c_void_p()
        assert L.dnnl_primitive_create(ct.byref(prim), pd) == 0
        wmd = ct.c_void_p(L.dnnl_primitive_desc_query_md(pd, Q_WEI_MD, 0))
        m_w = self.mem(wu, w.ctypes.data)
        if packed:
            m_p = self.mem(wmd, 2 ** 64 - 1)   # DNNL_MEMORY_ALLOCATE: ((void *)(size_t)-1)
            rpd, rp = ct.c_void_p(), ct.c_void_p()
            assert L.dnnl_reorder_primitive_desc_create(ct.byref(rpd), wu, self.eng, wmd, self.eng, None) == 0
            assert L.dnnl_primitive_create(ct.byref(rp), rpd) == 0
            self.run(rp, (ARG_FROM, m_w), (ARG_TO, m_p))
            m_w = m_p
        m_a, m_c = self.mem(src, a.ctypes.data), self.mem(dst, c.ctypes.data)
        keep = (desc, src, dst, wu, wd)   # the descriptors outlive the call
        return lambda: (keep, self.run(prim, (ARG_SRC, m_a), (ARG_WEI, m_w), (ARG_DST, m_c)))


def timed(f, runs):
    f()   # untimed: lets the previous variant's thread pool go idle first
    ts = []
    for _ in range(runs):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch", default="1,8")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--shapes", default="bert,gpt2,llama,convnext")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--check", action="store_true", help="compare every library's result with torch's")
    a = ap.parse_args()
    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    blas, dnnl = OpenBLAS(), OneDNN()
    try:
        blis = BLIS()
    except OSError:   # not installed: the column says "-"
        blis = None
    print(f"torch {torch.__version__}, oneDNN {dnnl.version}, BLIS {'yes' if blis else 'no'}, "
          f"load average {' '.join(load)}")
    print("| shape | B | M x K x N | thr | torch GF/s | OpenBLAS | BLIS | dnnl packed | dnnl plain | best/torch |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for th in [int(t) for t in a.threads.split(",")]:
        torch.set_num_threads(th)
        blas.threads(th)
        dnnl.threads(th)
        if blis:
            blis.threads(th)
        for b in [int(x) for x in a.batch.split(",")]:
            for group in a.shapes.split(","):
                for name, m1, K, N, lay in SHAPES[group]:
                    M = m1 * b
                    g = torch.Generator().manual_seed(M * 7 + N)
                    x = torch.randn(M, K, generator=g)
                    w = torch.randn(N, K, generator=g) / K ** 0.5
                    wt = w.t().contiguous() if lay == "kn" else w   # the layout the model holds
                    bias = torch.zeros(N)
                    an, wn = x.numpy(), wt.numpy()
                    outs = {k: np.empty((M, N), np.float32) for k in ("blas", "blis", "dnnl", "plain")}
                    if lay == "kn":
                        ftorch = lambda: torch.addmm(bias, x, wt)  # noqa: E731
                    else:
                        ftorch = lambda: F.linear(x, w)  # noqa: E731
                    fns = {"torch": ftorch,
                           "blas": lambda: blas.gemm(an, wn, outs["blas"], lay == "nk"),
                           "dnnl": dnnl.matmul(an, wn, outs["dnnl"], lay == "nk", True),
                           "blis": (lambda: blis.gemm(an, wn, outs["blis"], lay == "nk")) if blis else None,
                           "plain": dnnl.matmul(an, wn, outs["plain"], lay == "nk", False)}
                    fns = {k: f for k, f in fns.items() if f is not None}
                    if not blis:
                        del outs["blis"]
                    for f in fns.values():
                        f()
                    if a.check:
                        ref = ftorch().numpy()
                        for k, o in outs.items():
                            err = float(np.abs(o - ref).max())
                            assert err < 1e-3, f"{name}: {k} differs from torch by {err}"
                    res = {k: [] for k in fns}
                    runs = max(1, min(a.runs * 4, int(2e9 / (2 * M * N * K) + 1)))
                    for _ in range(a.rounds):
                        for k, f in fns.items():
                            res[k].append(timed(f, runs))
                    gf = {k: 2 * M * N * K / statistics.median(v) / 1e9 for k, v in res.items()}
                    best = max(v for k, v in gf.items() if k != "torch")
                    bl = f"{gf['blis']:.0f}" if "blis" in gf else "-"
                    print(f"| {name} | {b} | {M}x{K}x{N} | {th} | {gf['torch']:.0f} | {gf['blas']:.0f} | {bl} | "
                          f"{gf['dnnl']:.0f} | {gf['plain']:.0f} | {best / gf['torch']:.2f} |", flush=True)
    with open("/proc/loadavg") as f:
        print(f"load average at the end: {' '.join(f.read().split()[:3])}")


if __name__ == "__main__":
    main()
