"""Shared by the tests of the CUDA launch path (tests/gpu/test_cuda_launch.py,
test_cuda_graphs.py, test_gemm_dynsmem.py, test_cublas_gemm.py, test_cudnn_engine.py, test_cuda_nhwc.py;
tests/device/test_cudnn_epilogue.py): why they cannot run here, if they cannot, and the library
steps' helpers (knobs, counters, calls through the launch path, tolerances, a convolution net)."""
import torch

import torchtrt_c
from torchtrt_c import _C


def why_not():
    """None where CUDA tensors can go through the CUDA launch path (a CUDA torch and device,
    libcuda, an NVIDIA OpenCL device), else the reason."""
    if not torch.cuda.is_available():
        return "needs a CUDA torch and a CUDA device"
    ok, why = _C.cuda_driver()
    if not ok:
        return why
    if not any("NVIDIA" in f"{d.platform} {d.vendor}" for d in torchtrt_c.devices()):
        return "no NVIDIA OpenCL device"
    return None


def why_not_cudnn():
    """why_not(), and where that is None, why cuDNN cannot be had (None: it can)."""
    w = why_not()
    if w is not None:
        return w
    ok, why, _ = _C.cudnn_available()
    return None if ok else why


def torch_graph_replay(trt, *xs):
    """trt(*xs) recorded in a caller's torch.cuda.graph (after one call on a side stream, as
    torch asks) and replayed once: (the replay's outputs, the graph, kept while they are read)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        launch_call(trt, *xs)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.inference_mode(), torch.cuda.graph(g):
        got = trt(*xs)
    g.replay()
    torch.cuda.synchronize()
    return got, g


# ---- the library steps' tests (test_cublas_gemm.py, test_cudnn_engine.py, test_cudnn_epilogue.py)

LIB_KNOBS = ("TORCHTRT_C_CUDA_LAUNCH", "TORCHTRT_C_CUDA_GRAPHS", "TORCHTRT_C_CUDA_LIBS", "TORCHTRT_C_CUDA_NHWC",
             "TORCHTRT_C_CONV_KSPLIT", "TORCHTRT_C_GEMM_WIDE", "TORCHTRT_C_GEMM_TILE")


def clear_knobs(monkeypatch):
    """The knobs the engines read when they are made, at their defaults; torch's TF32 switches
    as they were (returned: restore with restore_tf32)."""
    for v in LIB_KNOBS:
        monkeypatch.delenv(v, raising=False)
    return torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32


def restore_tf32(old):
    torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = old


def accs(trt):
    """The compiled module's engine submodules."""
    return [mod for n, mod in trt.named_children() if n.startswith("_run_on_acc_")]


def lib_stats(trt):
    """The engines' CUDA-launch counters summed: library kernels, library calls, those that
    applied the epilogue themselves (cuBLASLt), shapes timed, calls, graph calls."""
    from torchtrt_c.runtime import _cuda_launch, _execute
    st = [_cuda_launch.stats(_execute._plan(a.meta, a.engine)) for a in accs(trt)]
    return {k: sum(s[k] for s in st) for k in ("lib_kernels", "lib_calls", "lib_fused", "lib_timed", "calls",
                                                 "graph_calls", "lib_nhwc", "nhwc_calls", "nhwc_tensors")}


def launch_call(trt, *xs, **kw):
    """trt(*xs, **kw) under inference mode, asserting the CUDA launch path ran it."""
    from torchtrt_c import runtime
    with torch.inference_mode():
        out = trt(*xs, **kw)
    assert runtime.cuda_path()["path"] == "launch", runtime.cuda_path()
    return out


def close(a, b, tol, what):
    """max |a - b| <= tol * max(|b|, 1), the error printed (pytest -s shows the measured ones)."""
    err = (a.float() - b.float()).abs().max().item()
    scale = max(b.float().abs().max().item(), 1.0)
    print(f"{what}: max abs difference {err:.3g}, scale {scale:.3g}")
    assert err <= tol * scale, f"{what}: max abs difference {err:.3g} (scale {scale:.3g}, tol {tol})"


class ConvNet(torch.nn.Module):
    """Convolutions with every epilogue the library steps must carry: conv + BN + ReLU
    (stride 2), a 3x3 with bias + residual + ReLU, a depthwise conv + ReLU6, a grouped dilated
    conv + sigmoid, a 1x1 without bias or epilogue."""

    def __init__(self, c):
        super().__init__()
        self.a = torch.nn.Sequential(torch.nn.Conv2d(3, c, 3, stride=2, padding=1, bias=False), torch.nn.BatchNorm2d(c),
                                     torch.nn.ReLU())
        self.b = torch.nn.Conv2d(c, c, 3, padding=1)
        self.dw = torch.nn.Conv2d(c, c, 3, padding=1, groups=c)
        self.g = torch.nn.Conv2d(c, 2 * c, 3, padding=2, dilation=2, groups=4)
        self.plain = torch.nn.Conv2d(2 * c, 5, 1, bias=False)

    def forward(self, x):
        y = self.a(x)
        y = torch.relu(self.b(y) + y)
        y = torch.nn.functional.relu6(self.dw(y))
        return self.plain(torch.sigmoid(self.g(y)))
