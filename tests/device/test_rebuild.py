"""A saved engine built for another device is rebuilt for this one from its IR: the stored program
binary and GEMM tile choices are not used, the results match. The "other device" is made by
rewriting the device identity inside a real blob (engine_blob.py), so this runs on any
single-device machine."""

import numpy as np
import pytest
import torch

import torchtrt_c._C as C
from convtest import rand
from engine_blob import SEC_DEVICE, from_another_device, parse, rewrite, strings


def _graph():
    """x [5, 12] -> linear (GEMM) -> relu -> transposed conv over [1, 4, 5, 6] view."""
    w1, b1 = rand(24, 12, seed=1) * 0.3, rand(24, seed=2)
    wt = rand(4, 3, 3, 3, seed=3) * 0.3
    g = C.Graph()
    x = g.add_input("x", ("tensor", "float32", [5, 12]))
    L = g.add_constant
    c1 = g.add_tensor_constant("w1", "float32", [24, 12], w1.numpy())
    c2 = g.add_tensor_constant("b1", "float32", [24], b1.numpy())
    c3 = g.add_tensor_constant("wt", "float32", [4, 3, 3, 3], wt.numpy())
    (h,) = g.add_node("aten.linear.default", [x, c1, c2], [("tensor", "float32", [5, 24])])
    (r,) = g.add_node("aten.relu.default", [h], [("tensor", "float32", [5, 24])])
    (v,) = g.add_node("aten.view.default", [r, L([1, 4, 5, 6])], [("tensor", "float32", [1, 4, 5, 6])])
    (y,) = g.add_node("aten.convolution.default", [v, c3, L(None), L([2, 2]), L([1, 1]), L([1, 1]), L(True),
                                                   L([1, 0]), L(1)], [("tensor", "float32", [1, 3, 10, 11])])
    g.set_outputs([y, r])

    def ref(xx):
        rr = torch.relu(xx @ w1.T + b1)
        return torch.nn.functional.conv_transpose2d(rr.reshape(1, 4, 5, 6), wt, None, 2, 1, (1, 0)), rr

    return g, ref


def _run(e, x):
    outs = [np.empty((1, 3, 10, 11), np.float32), np.empty((5, 24), np.float32)]
    e.execute([x.numpy()], outs)
    return outs


def test_blob_from_another_device_is_rebuilt(monkeypatch):
    monkeypatch.setenv("TORCHTRT_C_PROGRAM_BINARIES", "1")  # the binary path (off by default on PoCL)
    g, ref = _graph()
    e = C.Engine.build(g, name="rb", optimization_level=1, cache_dir="")
    blob = e.serialize()
    x = rand(5, 12, seed=4)
    want = [t.numpy() for t in ref(x)]
    here = strings(dict(parse(blob)[1])[SEC_DEVICE])
    assert here == [e.device["platform"], e.device["name"], e.device["driver"]]

    same = C.Engine.deserialize(blob, cache_dir="")
    assert same.info()["program_cached"], "an unmodified blob should reuse its program binary"

    foreign = rewrite(blob, device=("Imaginary Platform", "Imaginary Accelerator 9000", "0.0-test"))
    e2 = C.Engine.deserialize(foreign, cache_dir="")
    assert not e2.info()["program_cached"], "a blob from another device must be rebuilt from its IR"
    assert e2.device["name"] == e.device["name"]
    for got, w in zip(_run(e2, x), want):
        np.testing.assert_allclose(got, w, rtol=1e-4, atol=1e-4)
    # and the rebuilt engine serialises with this device's identity again
    assert strings(dict(parse(e2.serialize())[1])[SEC_DEVICE])[1] == e.device["name"]


def test_tile_choices_of_another_device_are_not_reused():
    g, ref = _graph()
    e = C.Engine.build(g, name="rb", optimization_level=1, cache_dir="")
    default = e.info()["tiles"]
    assert default, "the graph has a GEMM"
    other = 1 if set(default.values()) == {0} else 0
    blob = e.serialize()
    x = rand(5, 12, seed=5)
    want = [t.numpy() for t in ref(x)]
    # same device: the stored choice is used as is
    e_same = C.Engine.deserialize(rewrite(blob, tile=other), cache_dir="")
    assert set(e_same.info()["tiles"].values()) == {other}
    # another device: chosen again for this one (here: the untuned default)
    e_far = C.Engine.deserialize(rewrite(blob, device=("P", "Elsewhere", "1"), tile=other), cache_dir="")
    assert e_far.info()["tiles"] == default
    for eng in (e_same, e_far):
        for got, w in zip(_run(eng, x), want):
            np.testing.assert_allclose(got, w, rtol=1e-4, atol=1e-4)


def test_rewritten_blob_without_checksum_fix_is_refused():
    g, _ = _graph()
    blob = C.Engine.build(g, cache_dir="").serialize()
    bad = bytearray(rewrite(blob, device=("A", "B", "C")))
    bad[-1] ^= 0xFF
    import torchtrt_c
    with pytest.raises(torchtrt_c.SerializationError, match="checksum"):
        C.Engine.deserialize(bytes(bad), cache_dir="")


def test_saved_module_from_another_device_is_logged_and_reported(tmp_path, caplog):
    """A saved module whose engine blob names another device: load rebuilds the engine, says so
    in the log (torchtrt_c.serve replicas rely on it) and rebuilt_engines() lists it; the same
    module saved here lists nothing."""
    import logging
    import torchtrt_c
    from torchtrt_c._compile import rebuilt_engines
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(12, 24), torch.nn.ReLU(), torch.nn.Linear(24, 5)).eval()
    x = rand(3, 12, seed=7)
    trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
    torchtrt_c.save(trt, tmp_path / "here.ep")
    here = torchtrt_c.load(tmp_path / "here.ep")
    assert rebuilt_engines(here) == []
    far = ("Imaginary Platform", "Imaginary Accelerator 9000", "0.0-test")
    n_engines = from_another_device(trt, far)
    assert n_engines, "the model compiles to an engine"
    torchtrt_c.save(trt, tmp_path / "far.ep")
    with caplog.at_level(logging.INFO, logger="torchtrt_c"):
        back = torchtrt_c.load(tmp_path / "far.ep")
    got = rebuilt_engines(back)
    assert [r["built_for"]["name"] for r in got] == [far[1]] * n_engines
    assert all(r["device"]["name"] == C.devices()[C.default_device()]["name"] for r in got)
    assert any("Imaginary Accelerator 9000" in r.getMessage() and "rebuilt from its IR" in r.getMessage()
               for r in caplog.records), [r.getMessage() for r in caplog.records]
    torch.testing.assert_close(back(x), m(x), rtol=1e-4, atol=1e-4)


def _types():
    try:
        ds = C.devices()
    except Exception:
        return set()
    return {d["type"] for d in ds}


needs_cpu_and_gpu = pytest.mark.skipif(not {"cpu", "gpu"} <= _types(),
                                       reason="needs a CPU and a GPU OpenCL device (e.g. PoCL + NVIDIA)")


@needs_cpu_and_gpu
def test_engine_built_on_cpu_is_rebuilt_on_gpu():
    g, ref = _graph()
    e = C.Engine.build(g, device="cpu", optimization_level=3, cache_dir="")  # tiles timed on the CPU
    assert e.device["type"] == "cpu"
    e2 = C.Engine.deserialize(e.serialize(), device="gpu", cache_dir="")
    assert e2.device["type"] == "gpu"
    assert not e2.info()["program_cached"]
    x = rand(5, 12, seed=6)
    for got, want in zip(_run(e2, x), ref(x)):
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-4, atol=1e-4)


@needs_cpu_and_gpu
def test_module_saved_with_cpu_device_loads_on_gpu(tmp_path):
    """build + save under TORCHTRT_C_DEVICE=cpu, load + run in a fresh process under
    TORCHTRT_C_DEVICE=gpu: the engines are rebuilt for the GPU and the outputs match."""
    import os
    import subprocess
    import sys
    import textwrap
    here = os.path.dirname(os.path.abspath(__file__))
    save = textwrap.dedent(f"""
        import sys, torch, torchtrt_c
        sys.path[:0] = [{here!r}, {os.path.dirname(here)!r}]
        from test_conv_transpose import _decoder
        m = _decoder()
        z = torch.randn(2, 8, 5, 7)
        assert torchtrt_c._C.devices()[torchtrt_c._C.default_device()]["type"] == "cpu"
        trt = torchtrt_c.compile(m, inputs=[z], require_full_compilation=True, min_block_size=1)
        torchtrt_c.save(trt, {str(tmp_path / 'dec.ep')!r}, inputs=[z])
        with torch.no_grad():
            torch.save({{"z": z, "want": m(z)}}, {str(tmp_path / 'io.pt')!r})
    """)
    load = textwrap.dedent(f"""
        import torch, torchtrt_c
        assert torchtrt_c._C.devices()[torchtrt_c._C.default_device()]["type"] == "gpu"
        io = torch.load({str(tmp_path / 'io.pt')!r})
        mod = torchtrt_c.load({str(tmp_path / 'dec.ep')!r})
        got = mod(io["z"])
        for a, b in zip(got, io["want"]):
            err = (a - b).abs().max().item()
            assert err < 1e-4, err
        print("rebuilt-on-gpu-ok")
    """)
    for dev, script in (("cpu", save), ("gpu", load)):
        env = dict(os.environ, TORCHTRT_C_DEVICE=dev)
        r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, env=env,
                           cwd=str(tmp_path))
        assert r.returncode == 0, f"{dev}: {r.stderr[-3000:]}"
    assert "rebuilt-on-gpu-ok" in r.stdout
