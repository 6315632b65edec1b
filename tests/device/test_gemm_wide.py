"""GEMM kernels' "<name>_w" variant (csrc/codegen/codegen.c, wide_wanted): the same product and
epilogue on tile 62 (tensor copies + warpgroup MMA), which the CUDA launch path times against the
kernel (and the library) per shape and runs where faster (csrc/backend/cuda/exec_cuda.c, wide_choice).
It is emitted by default only where that path runs on an NVIDIA device of compute capability
9.0 with the CUDA libraries off; TORCHTRT_C_GEMM_WIDE=1 emits it on any device, so that here
(PoCL) its text is compiled with the rest of the program and the argument layout the launch
builds is checked against its signature: the kernel's first nine parameters, then dsm, nst, tmA, tmB, then the kernel's own
store parameters. The OpenCL launch never runs it: results must equal an engine without it,
bit for bit. tests/gpu/test_gemm_wide_cuda.py runs it on the GPU."""
import re

import numpy as np
import pytest
import torch

import torchtrt_c._C as C
from convtest import DTYPES, rand
from torchtrt_c import settings


def _engine(monkeypatch, wide, k=512, dtype=torch.float16, bias=True):
    settings.set(GEMM_TILE=None)
    settings.set(GEMM_WIDE=wide)
    settings.set(NATIVE="0")
    x = (rand(2, 37, k, seed=1) / 4).to(dtype)
    w, b = rand(70, k, seed=2) / k ** 0.5, rand(70, seed=3)
    g = C.Graph()
    xi = g.add_input("x", ("tensor", DTYPES[dtype], [2, 37, k]))
    wi = g.add_tensor_constant("w", "float32", [70, k], w.numpy())
    bi = g.add_tensor_constant("b", "float32", [70], b.numpy())
    (y,) = g.add_node("aten.linear.default", [xi, wi, bi], [("tensor", DTYPES[dtype], [2, 37, 70])])
    (z,) = g.add_node("aten.relu.default", [y], [("tensor", DTYPES[dtype], [2, 37, 70])])
    g.set_outputs([z])
    e = C.Engine.build(g, cache_dir="", precision="fp16" if dtype == torch.float16 else "fp32")
    out = np.empty((2, 37, 70), np.float16 if dtype == torch.float16 else np.float32)
    e.execute([x.numpy()], [out])
    return e, out


def _params(src, name):
    """the GEMM template's parameters (A .. sBb) and then EPI_PARAMS as #defined for kernel name"""
    m = re.search(r"^#define KNAME " + re.escape(name) + r"\n(?:#define [^\n]*\n)*?#define EPI_PARAMS ([^\n]*)\n", src, re.M)
    assert m, f"no kernel {name}"
    epi = [p.strip().split()[-1].lstrip("*") for p in m.group(1).split(",") if p.strip()]
    return ["A", "offA", "B", "offB", "M", "N", "K", "sAb", "sBb"] + epi


def test_wide_variant_signature_and_results(monkeypatch):
    e, out = _engine(monkeypatch, "1")
    src = e.info()["source"]
    names = re.findall(r"^#define KNAME (\w+)_w$", src, re.M)
    assert len(names) == 1, names
    main, wide = _params(src, names[0]), _params(src, names[0] + "_w")
    assert wide[:9] == main[:9] == ["A", "offA", "B", "offB", "M", "N", "K", "sAb", "sBb"]
    assert wide[9:13] == ["dsm", "nst", "tmA", "tmB"]
    assert wide[13:] == main[9:] and len(main) > 9   # the store function's (bias, ...)
    e0, out0 = _engine(monkeypatch, "0")
    assert not re.search(r"^#define KNAME \w+_w$", e0.info()["source"], re.M)
    assert np.array_equal(out.view(np.int16), out0.view(np.int16))


def _defines(src, name):
    m = re.search(r"^#define KNAME " + re.escape(name) + r"\n((?:#define [^\n]*\n)+)", src, re.M)
    assert m, f"no kernel {name}"
    return dict(re.findall(r"^#define (\w+) ?([^\n]*)$", m.group(1), re.M))


def _fill(tiles, per):
    waves = -(-tiles // per)
    return tiles * 100 // (waves * per)


@pytest.mark.parametrize("m,n", [(384, 256), (37, 70), (640, 512)])
def test_wide_tile_by_wave_fill(monkeypatch, m, n):
    """"_w" takes tile 62 (128x128, two work-groups per compute unit) unless tile 61's
    (192x256, one) waves fill the device's compute units better by more than 10% of the slots."""
    settings.set(GEMM_WIDE="1")
    settings.set(NATIVE="0")
    g = C.Graph()
    xi = g.add_input("x", ("tensor", "float16", [m, 64]))
    wi = g.add_tensor_constant("w", "float32", [n, 64], rand(n, 64, seed=2).numpy())
    (y,) = g.add_node("aten.linear.default", [xi, wi, g.add_tensor_constant("b", "float32", [n], rand(n, seed=3).numpy())],
                      [("tensor", "float16", [m, n])])
    g.set_outputs([y])
    e = C.Engine.build(g, cache_dir="", precision="fp16")
    src = e.info()["source"]
    name = re.search(r"^#define KNAME (\w+)_w$", src, re.M).group(1) + "_w"
    d = _defines(src, name)
    cu = max(int(C.devices()[C.default_device()]["compute_units"]), 1)
    f62 = _fill(-(-m // 128) * -(-n // 128), 2 * cu)
    f61 = _fill(-(-m // 192) * -(-n // 256), cu)
    want = (192, 256) if f61 > f62 + 10 else (128, 128)
    assert (int(d["BM"]), int(d["BN"])) == want, (d["BM"], d["BN"], f62, f61, cu)
    out = np.empty((m, n), np.float16)
    e.execute([(rand(m, 64, seed=1) / 4).half().numpy()], [out])   # the OpenCL path runs the kernel


@pytest.mark.parametrize("case", ["K not a multiple of 8", "float32 operands"])
def test_no_wide_variant_where_it_cannot_run(monkeypatch, case):
    if case == "float32 operands":
        e, _ = _engine(monkeypatch, "1", dtype=torch.float32)
    else:
        e, _ = _engine(monkeypatch, "1", k=203)
    assert not re.search(r"^#define KNAME \w+_w$", e.info()["source"], re.M)


def test_setting_is_checked(monkeypatch):
    settings.set(GEMM_WIDE="yes")
    g = C.Graph()
    a = g.add_input("a", ("tensor", "float16", [4, 8]))
    (y,) = g.add_node("aten.relu.default", [a], [("tensor", "float16", [4, 8])])
    g.set_outputs([y])
    with pytest.raises(Exception, match="TORCHTRT_C_GEMM_WIDE=yes: expected 0, 1, always or auto"):
        C.Engine.build(g, cache_dir="", precision="fp16")
