"""CPU GEMM / convolution GFLOP/s side by side, for choosing and checking the native CPU path
(backend/cpu/native_ops.c): one process, interleaved rounds, medians.

    python bench/native_cpu.py [--rounds 3] [--libs] [--layers] [--convlib]

--libs: sgemm on BERT / ResNet-50 shapes through torch.mm (MKL), OpenBLAS (cblas_sgemm) and
oneDNN (dnnl_sgemm), called with ctypes on the same arrays (libraries that do not load are
skipped). --layers: one-layer engines (linear + bias; convolution + bias + relu) built with the
native path and with TORCHTRT_C_NATIVE=0 (the OpenCL kernels), beside torch eager's same layer,
executed end to end (Engine.execute). --convlib: ResNet-18's convolutions (+ bias + relu) as
one native engine each, run through oneDNN and through im2col + OpenBLAS (the same engine,
TORCHTRT_C_NATIVE_CONV toggled between calls) beside torch, round robin.
The machine may be shared: read ratios, not absolutes.
"""
import argparse
import ctypes
import os
import statistics
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import torchtrt_c._C as C  # noqa: E402

GEMMS = [(128, 768, 768), (128, 3072, 768), (128, 768, 3072), (1024, 1024, 1024),
         (3136, 64, 576), (196, 256, 2304), (49, 512, 4608)]   # M, N, K
LINEARS = [(128, 768, 768), (128, 768, 3072), (128, 3072, 768), (1024, 1024, 1024)]   # M, K, N
CONVS = [(1, 3, 64, 224, 7, 2, 3), (1, 64, 64, 56, 3, 1, 1), (1, 256, 256, 14, 3, 1, 1), (1, 512, 512, 7, 3, 1, 1),
         (1, 64, 256, 56, 1, 1, 0), (1, 1024, 256, 14, 1, 1, 0), (1, 2048, 512, 7, 1, 1, 0),
         (8, 64, 64, 56, 3, 1, 1)]   # N, C, OC, HW, k, stride, pad


def med(f, runs):
    f()
    ts = []
    for _ in range(runs):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def libs(rounds):
    fns = {"torch.mm": None}
    try:
        ob = ctypes.CDLL("libopenblas.so.0")
        ob.cblas_sgemm.argtypes = [ctypes.c_int] * 6 + [ctypes.c_float, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p,
                                                        ctypes.c_int, ctypes.c_float, ctypes.c_void_p, ctypes.c_int]
        fns["openblas"] = lambda M, N, K, a, b, c: ob.cblas_sgemm(101, 111, 111, M, N, K, 1.0, a, K, b, N, 0.0, c, N)
    except OSError:
        pass
    try:
        dn = ctypes.CDLL("libdnnl.so.2")
        dn.dnnl_sgemm.argtypes = [ctypes.c_char, ctypes.c_char] + [ctypes.c_int64] * 3 + [
            ctypes.c_float, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64, ctypes.c_float,
            ctypes.c_void_p, ctypes.c_int64]
        fns["onednn"] = lambda M, N, K, a, b, c: dn.dnnl_sgemm(b"N", b"N", M, N, K, 1.0, a, K, b, N, 0.0, c, N)
    except OSError:
        pass
    print("sgemm GFLOP/s (median of rounds): " + ", ".join(fns))
    for M, N, K in GEMMS:
        a, b, c = torch.randn(M, K), torch.randn(K, N), torch.empty(M, N)
        fl = 2 * M * N * K
        runs = max(3, min(30, int(2e9 / fl)))
        res = {k: [] for k in fns}
        for _ in range(rounds):
            for name, f in fns.items():
                if f is None:
                    res[name].append(med(lambda: torch.mm(a, b, out=c), runs))
                else:
                    res[name].append(med(lambda: f(M, N, K, a.data_ptr(), b.data_ptr(), c.data_ptr()), runs))
        print(f"  {M}x{N}x{K:<6d}" + "".join(f"  {k} {fl / statistics.median(v) / 1e9:6.1f}" for k, v in res.items()),
              flush=True)


def conv_engine(n, c, oc, hw, k, s, p):
    g = C.Graph()
    xi = g.add_input("x", ("tensor", "float32", [n, c, hw, hw]))
    w = torch.randn(oc, c, k, k) / (c * k * k) ** 0.5
    b = torch.randn(oc)
    wi = g.add_tensor_constant("w", "float32", list(w.shape), w.numpy())
    bi = g.add_tensor_constant("b", "float32", [oc], b.numpy())
    L = g.add_constant
    oh = (hw + 2 * p - k) // s + 1
    ot = ("tensor", "float32", [n, oc, oh, oh])
    (y,) = g.add_node("aten.convolution.default",
                      [xi, wi, bi, L([s, s]), L([p, p]), L([1, 1]), L(False), L([0, 0]), L(1)], [ot])
    (y,) = g.add_node("aten.relu.default", [y], [ot])
    g.set_outputs([y])
    return C.Engine.build(g, name="conv", cache_dir=""), (w, b, oh)


def lin_engine(m, k, n):
    g = C.Graph()
    xi = g.add_input("x", ("tensor", "float32", [m, k]))
    w, b = torch.randn(n, k) / k ** 0.5, torch.randn(n)
    wi = g.add_tensor_constant("w", "float32", [n, k], w.numpy())
    bi = g.add_tensor_constant("b", "float32", [n], b.numpy())
    (y,) = g.add_node("aten.linear.default", [xi, wi, bi], [("tensor", "float32", [m, n])])
    g.set_outputs([y])
    return C.Engine.build(g, name="linear", cache_dir=""), (w, b)


def layers(rounds):
    print(f"one-layer engines, GFLOP/s (median of rounds), native = {C.native_cpu()['library']}")
    old = os.environ.get("TORCHTRT_C_NATIVE")
    for kind, sh in [("linear", s) for s in LINEARS] + [("conv", s) for s in CONVS]:
        engines = {}
        for mode in ("native", "opencl"):
            os.environ["TORCHTRT_C_NATIVE"] = "1" if mode == "native" else "0"
            engines[mode], params = lin_engine(*sh) if kind == "linear" else conv_engine(*sh)
        if kind == "linear":
            (m, k, n), (w, b) = sh, params
            x = torch.randn(m, k)
            fl, out = 2 * m * k * n, np.empty((m, n), np.float32)
            tf = lambda: torch.nn.functional.linear(x, w, b)  # noqa: E731
        else:
            (n_, c, oc, hw, k, s, p), (w, b, oh) = sh, params
            x = torch.randn(n_, c, hw, hw)
            fl, out = 2 * n_ * oc * oh * oh * c * k * k, np.empty((n_, oc, oh, oh), np.float32)
            tf = lambda: torch.relu(torch.nn.functional.conv2d(x, w, b, s, p))  # noqa: E731
        xn = x.numpy()
        runs = max(3, min(30, int(3e9 / fl)))
        res = {"torch": [], "native": [], "opencl": []}
        with torch.no_grad():
            for _ in range(rounds):
                res["torch"].append(med(tf, runs))
                for mode, e in engines.items():
                    res[mode].append(med(lambda: e.execute([xn], [out]), runs))
        md = {k: statistics.median(v) for k, v in res.items()}
        nat = sum("(native)" in d for d in engines["native"].info()["kernels"])
        print(f"  {kind:6s} {str(sh):30s} torch {fl / md['torch'] / 1e9:6.1f}  native {fl / md['native'] / 1e9:6.1f}  "
              f"opencl {fl / md['opencl'] / 1e9:6.1f}  | time native/torch {md['native'] / md['torch']:5.2f}  "
              f"native/opencl {md['native'] / md['opencl']:5.2f}  (native kernels: {nat})", flush=True)
    if old is None:
        os.environ.pop("TORCHTRT_C_NATIVE", None)
    else:
        os.environ["TORCHTRT_C_NATIVE"] = old


# ResNet-18's distinct convolutions (N, C, OC, HW, k, stride, pad) and how often each occurs
R18 = [((1, 3, 64, 224, 7, 2, 3), 1), ((1, 64, 64, 56, 3, 1, 1), 4), ((1, 64, 128, 56, 3, 2, 1), 1),
       ((1, 128, 128, 28, 3, 1, 1), 3), ((1, 64, 128, 56, 1, 2, 0), 1), ((1, 128, 256, 28, 3, 2, 1), 1),
       ((1, 256, 256, 14, 3, 1, 1), 3), ((1, 128, 256, 28, 1, 2, 0), 1), ((1, 256, 512, 14, 3, 2, 1), 1),
       ((1, 512, 512, 7, 3, 1, 1), 3), ((1, 256, 512, 14, 1, 2, 0), 1)]


def convlib(rounds, batch):
    print(f"ResNet-18 convolutions at batch {batch}, ms per call (median of rounds); conv: {C.native_cpu()['conv_library']}")
    old = os.environ.get("TORCHTRT_C_NATIVE_CONV")
    tot = {"torch": 0.0, "onednn": 0.0, "blas": 0.0}
    for sh, count in R18:
        sh = (batch,) + sh[1:]
        e, (w, b, oh) = conv_engine(*sh)
        n_, c, oc, hw, k, s, p = sh
        x = torch.randn(n_, c, hw, hw)
        xn, out = x.numpy(), np.empty((n_, oc, oh, oh), np.float32)
        fl = 2 * n_ * oc * oh * oh * c * k * k
        runs = max(3, min(30, int(1e9 / fl)))
        res = {k_: [] for k_ in tot}
        with torch.no_grad():
            for _ in range(rounds):
                res["torch"].append(med(lambda: torch.relu(torch.nn.functional.conv2d(x, w, b, s, p)), runs))
                for mode in ("onednn", "blas"):
                    os.environ["TORCHTRT_C_NATIVE_CONV"] = "blas" if mode == "blas" else "dnnl"
                    res[mode].append(med(lambda: e.execute([xn], [out]), runs))
        md = {k_: statistics.median(v) * 1e3 for k_, v in res.items()}
        for k_ in tot:
            tot[k_] += md[k_] * count
        print(f"  {str(sh):28s} x{count}  torch {md['torch']:7.2f}  onednn {md['onednn']:7.2f}  blas {md['blas']:7.2f}"
              f"  | onednn/blas {md['onednn'] / md['blas']:5.2f}  onednn/torch {md['onednn'] / md['torch']:5.2f}",
              flush=True)
    print(f"  all convolutions (weighted)   torch {tot['torch']:7.2f}  onednn {tot['onednn']:7.2f}  blas {tot['blas']:7.2f}"
          f"  | onednn/blas {tot['onednn'] / tot['blas']:5.2f}  onednn/torch {tot['onednn'] / tot['torch']:5.2f}")
    if old is None:
        os.environ.pop("TORCHTRT_C_NATIVE_CONV", None)
    else:
        os.environ["TORCHTRT_C_NATIVE_CONV"] = old


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--libs", action="store_true")
    ap.add_argument("--layers", action="store_true")
    ap.add_argument("--convlib", action="store_true")
    ap.add_argument("--batch", type=int, default=1, help="--convlib: batch size")
    a = ap.parse_args()
    torch.set_num_threads(os.cpu_count() or 1)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; device {C.devices()[C.default_device()]['name']}")
    if a.convlib:
        convlib(a.rounds, a.batch)
        return
    if a.libs or not a.layers:
        libs(a.rounds)
    if a.layers or not a.libs:
        layers(a.rounds)


if __name__ == "__main__":
    main()
