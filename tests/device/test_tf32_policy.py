"""The TF32 policy on a device: Engine.build carries it (info()["tf32"]), engines serialise it,
compile() passes the resolved settings to every engine, and only NVIDIA targets act on it
(info()["tf32_active"])."""
import pytest
import torch

import torchtrt_c
import torchtrt_c._C as C
from torchtrt_c.runtime import _execute
from torchtrt_c.runtime._shapes import EngineMeta
from convtest import Const, build, rand


def _nvidia():
    d = C.devices()[C.default_device()]
    return "NVIDIA" in d["vendor"] or "NVIDIA" in d["platform"]


def _linear_graph():
    a, b = rand(5, 12, seed=1), rand(12, 7, seed=2)
    g, _ = build("aten.mm.default", [a, Const(b)], [a @ b])
    return g


@pytest.mark.parametrize("mm, cv", [(False, False), (True, False), (False, True), (True, True)])
def test_build_and_serialise_carry_the_policy(mm, cv):
    g = _linear_graph()
    e = C.Engine.build(g, name="tf32", cache_dir="", tf32_matmul=mm, tf32_conv=cv)
    info = e.info()
    assert info["tf32"] == {"matmul": mm, "conv": cv}
    nv = _nvidia()
    assert info["tf32_active"] == {"matmul": mm and nv, "conv": cv and nv}
    e2 = C.Engine.deserialize(e.serialize(), cache_dir="")
    assert e2.info()["tf32"] == {"matmul": mm, "conv": cv}


def test_build_default_is_no_tf32():
    assert C.Engine.build(_linear_graph(), name="tf32", cache_dir="").info()["tf32"] == {"matmul": False, "conv": False}


def _engine_info(trt):
    accs = [m for n, m in trt.named_children() if n.startswith("_run_on_acc_")]
    assert len(accs) == 1, f"expected one engine, got {len(accs)}"
    meta = EngineMeta.from_json(accs[0].meta)
    return _execute.ENGINES.get(meta.id, accs[0].engine)[0].info()


def test_compile_passes_the_resolved_policy(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCHTRT_C_MODULE_CACHE", "0")
    mm, cv = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.ReLU()).eval()
    x = torch.randn(3, 16)
    try:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = True, False
        got = _engine_info(torchtrt_c.compile(m, inputs=[x], min_block_size=1))["tf32"]
        assert got == {"matmul": True, "conv": False}
        got = _engine_info(torchtrt_c.compile(m, inputs=[x], min_block_size=1, disable_tf32=True))["tf32"]
        assert got == {"matmul": False, "conv": False}
        # the engine cache keeps one entry per policy
        opts = dict(inputs=[x], min_block_size=1, cache_built_engines=True, reuse_cached_engines=True,
                    engine_cache_dir=str(tmp_path))
        a = torchtrt_c.compile(m, allow_tf32_matmul=False, **opts)
        b = torchtrt_c.compile(m, allow_tf32_matmul=True, **opts)   # another key: built, not reused
        assert [e["source"] for e in b._torchtrt_c_profile.engines] == ["built"]
        assert _engine_info(a)["tf32"]["matmul"] is False and _engine_info(b)["tf32"]["matmul"] is True
        c = torchtrt_c.compile(m, allow_tf32_matmul=False, **opts)  # a's key again: reused
        assert [e["source"] for e in c._torchtrt_c_profile.engines] == ["engine cache (live)"]
        assert _engine_info(c)["tf32"]["matmul"] is False
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = mm, cv
