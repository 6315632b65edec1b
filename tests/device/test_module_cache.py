"""The whole-module cache (torchtrt_c/dynamo/_module_cache.py): a warm compile is capture + key +
lookup and gives the cold compile's outputs; anything that changes what would be compiled
misses; damaged entries are rejected with a reason and compiled again; a new process hits.
Asserts on the profile's records, never on wall time."""
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import torchtrt_c
from torchtrt_c.runtime._execute import ENGINES

ROOT = Path(__file__).resolve().parents[2]


class Net(torch.nn.Module):
    def __init__(self, act=torch.nn.GELU):
        super().__init__()
        torch.manual_seed(0)
        self.a = torch.nn.Linear(12, 24)
        self.act = act()
        self.b = torch.nn.Linear(24, 5)

    def forward(self, x):
        return self.b(self.act(self.a(x)))


def _compile(m, cache, inputs=None, **kw):
    opts = dict(min_block_size=1, cache_built_engines=True, reuse_cached_engines=True,
                engine_cache_dir=str(cache))
    opts.update(kw)
    gm = torchtrt_c.compile(m, inputs=inputs or [torch.randn(3, 12)], **opts)
    # entries are written behind the compile: the next compile's preload reads the index file
    # the write leaves, so wait for it (on a loaded machine it can lag the next compile)
    from torchtrt_c.dynamo._compiler import wait_engine_cache_writes
    wait_engine_cache_writes()
    return gm, gm._torchtrt_c_profile


def _entries(cache, suffix):
    torchtrt_c.dynamo.wait_engine_cache_writes()   # entries are written behind the compile
    return sorted(p for p in os.listdir(cache) if p.endswith(suffix))


def test_warm_hit_equals_cold(tmp_path):
    m = Net().eval()
    x = torch.randn(3, 12)
    cold, pc = _compile(m, tmp_path)
    assert pc.module_cache["result"] == "stored", pc.module_cache
    assert len(_entries(tmp_path, ".ttcm")) == 1
    warm, pw = _compile(m, tmp_path)
    assert pw.module_cache["result"] == "hit", pw.module_cache
    # nothing after the lookup ran: no decompositions, import, lowering or engine build
    names = [p[0] for p in pw.phases]
    assert names == ["capture (torch.export)", "engine cache lookup", "load cached module"], names
    assert pw.engine_totals()["built"] == 0 and pw.engine_totals()["cache_hits"] == 1
    with torch.no_grad():
        assert torch.equal(warm(x), cold(x))
        assert (warm(x) - m(x)).abs().max().item() <= 1e-4


def test_lazy_engine_from_file_equals_cold(tmp_path):
    """An engine that is not live (as in a new process) is read from its file, checked, and
    deserialised at its first call."""
    m = Net().eval()
    x = torch.randn(3, 12)
    cold, _ = _compile(m, tmp_path)
    with torch.no_grad():
        ref = cold(x)
    ENGINES.clear()
    warm, pw = _compile(m, tmp_path)
    assert pw.module_cache["result"] == "hit"
    # the preload (weights hashed during capture, index file) started loading it already:
    # done ("live") or still running, by the time of the lookup
    assert pw.module_cache.get("preloaded_engines") == 1, pw.module_cache
    assert [e["source"] for e in pw.engines] in (["module cache"], ["module cache (live)"])
    with torch.no_grad():
        assert torch.equal(warm(x), ref)


def test_preloaded_engine_of_a_miss_is_dropped(tmp_path):
    """Same weights, settings and inputs but another program (an edited forward): the preload
    loads the old engine, the lookup misses, and that engine is not kept."""
    m = Net().eval()
    x = torch.randn(3, 12)
    cold, pc = _compile(m, tmp_path)
    old_ids = [EngineModule_id(mod) for mod in cold.modules() if type(mod).__name__ == "EngineModule"]
    ENGINES.clear()
    m2 = Net(torch.nn.ReLU).eval()
    gm, p = _compile(m2, tmp_path)
    assert p.module_cache["result"] == "stored" and p.module_cache.get("preloaded_engines") == 1, p.module_cache
    from torchtrt_c.runtime._module import PENDING
    for fut in list(PENDING.values()):   # any load still running has finished
        fut.result()
    assert all(ENGINES.peek(i) is None for i in old_ids)
    with torch.no_grad():
        assert (gm(x) - m2(x)).abs().max().item() <= 1e-4


def EngineModule_id(mod):
    from torchtrt_c.runtime._shapes import EngineMeta
    return EngineMeta.from_json(mod.meta).id


@pytest.mark.parametrize("change", ["weight", "setting", "input_range", "structure", "dtype_setting"])
def test_changes_miss(tmp_path, change):
    m = Net().eval()
    x = torch.randn(3, 12)
    _, pc = _compile(m, tmp_path)
    assert pc.module_cache["result"] == "stored"
    kw = {}
    inputs = None
    if change == "weight":
        m2 = Net().eval()
        with torch.no_grad():
            m2.b.weight[2, 7] += 1e-3   # one element
    elif change == "structure":
        m2 = Net(torch.nn.ReLU).eval()  # same weights, another activation
    else:
        m2 = m
        if change == "setting":
            kw = {"optimization_level": 1}
        elif change == "dtype_setting":
            kw = {"enabled_precisions": {torch.float16}}
        else:
            inputs = [torchtrt_c.Input(min_shape=(1, 12), opt_shape=(3, 12), max_shape=(8, 12))]
    gm, p = _compile(m2, tmp_path, inputs=inputs, **kw)
    assert p.module_cache["result"] == "stored", (change, p.module_cache)
    assert p.module_cache["key"] != pc.module_cache["key"]
    assert len(_entries(tmp_path, ".ttcm")) == 2
    tol = 5e-2 if change == "dtype_setting" else 1e-4
    with torch.no_grad():
        err = (gm(x) - m2(x)).abs().max().item()
    assert err <= tol, f"{change}: max abs error {err} vs eager of the changed model"
    # and the changed compile is itself a hit next time
    _, p2 = _compile(m2, tmp_path, inputs=inputs, **kw)
    assert p2.module_cache["result"] == "hit", (change, p2.module_cache)


def _damage(path, where):
    data = bytearray(Path(path).read_bytes())
    if where == "truncate":
        data = data[: len(data) // 2]
    else:
        data[len(data) // 2] ^= 0x5A
    Path(path).write_bytes(bytes(data))


@pytest.mark.parametrize("what", ["entry_flip", "entry_truncate", "engine_flip", "engine_missing"])
def test_damaged_entry_is_rejected_and_recompiled(tmp_path, what, caplog):
    m = Net().eval()
    x = torch.randn(3, 12)
    cold, _ = _compile(m, tmp_path)
    with torch.no_grad():
        ref = cold(x)
    ENGINES.clear()   # as in a new process: the engine file is read, not the live engine
    if what.startswith("entry"):
        _damage(tmp_path / _entries(tmp_path, ".ttcm")[0], what.split("_")[1])
        why = "checksum mismatch" if what == "entry_flip" else "checksum mismatch"
    elif what == "engine_flip":
        _damage(tmp_path / _entries(tmp_path, ".ttce")[0], "flip")
        why = "CRC-32 mismatch"
    else:
        os.remove(tmp_path / _entries(tmp_path, ".ttce")[0])
        why = "is missing"
    with caplog.at_level(logging.WARNING, logger="torchtrt_c"):
        gm, p = _compile(m, tmp_path)
    assert p.module_cache["result"].startswith("rejected: ") and why in p.module_cache["result"], p.module_cache
    msgs = [r.getMessage() for r in caplog.records if "ignoring the cached compile" in r.getMessage()]
    assert msgs and why in msgs[0], [r.getMessage() for r in caplog.records]
    assert p.engine_totals()["engines"] == 1 and p.engines[0]["source"] != "module cache"
    with torch.no_grad():
        assert (gm(x) - ref).abs().max().item() <= 1e-5
    # the entry was written again: the next compile hits
    _, p2 = _compile(m, tmp_path)
    assert p2.module_cache["result"] == "hit", p2.module_cache


def test_torch_segments_and_truncate_double_roundtrip(tmp_path):
    """A module with a torch fallback segment (torch_executed_ops) and a float64 input cast in
    the parent graph: both are rebuilt from the entry."""
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.l = torch.nn.Linear(6, 6)
            self.register_buffer("s", torch.linspace(0.5, 1.5, 6))

        def forward(self, x):
            y = torch.relu(self.l(x))
            return torch.sigmoid(y) * self.s + 1.0, y.sum(dim=1)

    torch.manual_seed(1)
    m = M().eval()
    x = torch.randn(4, 6)
    kw = dict(torch_executed_ops={"aten::sigmoid"})
    cold, pc = _compile(m, tmp_path, inputs=[x], **kw)
    assert pc.module_cache["result"] == "stored", pc.module_cache
    assert any(n.startswith("_run_on_gpu") for n, _ in cold.named_children())
    ENGINES.clear()
    warm, pw = _compile(m, tmp_path, inputs=[x], **kw)
    assert pw.module_cache["result"] == "hit", pw.module_cache
    with torch.no_grad():
        for a, b in zip(warm(x), cold(x)):
            assert torch.equal(a, b)


SCRIPT = r"""
import json, sys, torch, torchtrt_c
sys.path.insert(0, {tests!r})
from test_module_cache import Net
m = Net().eval()
torch.manual_seed(5)
x = torch.randn(3, 12)
gm = torchtrt_c.compile(m, inputs=[x], min_block_size=1, cache_built_engines=True,
                        reuse_cached_engines=True, engine_cache_dir={cache!r})
with torch.no_grad():
    y = gm(x)
torch.save(y, {out!r})
p = gm._torchtrt_c_profile
print("PROFILE" + json.dumps({{"module_cache": p.module_cache,
                               "sources": [e["source"] for e in p.engines],
                               "phases": [q[0] for q in p.phases]}}))
"""


def _run(cache, out):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    code = SCRIPT.format(tests=str(ROOT / "tests" / "device"), cache=str(cache), out=str(out))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("PROFILE")][-1]
    return json.loads(line[len("PROFILE"):])


def test_new_process_hits(tmp_path):
    cache = tmp_path / "cache"
    cold = _run(cache, tmp_path / "cold.pt")
    assert cold["module_cache"]["result"] == "stored", cold
    warm = _run(cache, tmp_path / "warm.pt")
    assert warm["module_cache"]["result"] == "hit", warm
    assert warm["sources"] in (["module cache"], ["module cache (live)"]), warm
    assert warm["module_cache"].get("preloaded_engines") == 1, warm
    assert "decompositions" not in warm["phases"], warm["phases"]
    assert warm["module_cache"]["key"] == cold["module_cache"]["key"]
    assert torch.equal(torch.load(tmp_path / "warm.pt"), torch.load(tmp_path / "cold.pt"))


def test_warm_module_saves_and_loads(tmp_path):
    """A hit's engine buffer is the mapped engine file: torchtrt_c.save writes it like any
    other, and the loaded program gives the same outputs."""
    m = Net().eval()
    x = torch.randn(3, 12)
    cold, _ = _compile(m, tmp_path / "cache")
    with torch.no_grad():
        ref = cold(x)
    ENGINES.clear()
    warm, pw = _compile(m, tmp_path / "cache")
    assert pw.module_cache["result"] == "hit"
    torchtrt_c.save(warm, tmp_path / "m.ep")
    ENGINES.clear()
    loaded = torchtrt_c.load(tmp_path / "m.ep")
    with torch.no_grad():
        assert torch.equal(loaded(x), ref)
        assert torch.equal(warm(x), ref)
