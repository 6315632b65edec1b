"""Warm compiles: the engine cache (cache_built_engines / reuse_cached_engines /
engine_cache_dir) in the same process and in a fresh one, and the program binary cache in a
fresh process. Asserts on the profile's cache counters, never on wall time."""
import gc
import json
import os
import subprocess
import sys
from pathlib import Path

import torch

import torchtrt_c

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = r"""
import json, sys
sys.path.insert(0, {tests!r})
import torch, torchtrt_c
from zoo import build
m, inp = build("resnet18", "tiny")
gm = torchtrt_c.compile(m, inputs=[inp(2)], min_block_size=1, cache_built_engines=True,
                        reuse_cached_engines={reuse}, engine_cache_dir={cache!r}, optimization_level=3)
x = inp(2)
err = (gm(x) - m(x)).abs().max().item()
print("PROFILE" + json.dumps(dict(gm._torchtrt_c_profile.as_dict(), max_err=err)))
"""


def _run(cache, reuse, env_extra):
    env = dict(os.environ, PYTHONPATH=str(ROOT), **env_extra)
    code = SCRIPT.format(tests=str(ROOT / "tests"), reuse=reuse, cache=str(cache))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("PROFILE")][-1]
    return json.loads(line[len("PROFILE"):])


def _mlp_cached(tmp_path, monkeypatch):
    """A small MLP, its input and compile options that write and read the engine cache in
    tmp_path; the per-engine layer only (the whole-module cache in front of it,
    test_module_cache, is off)."""
    monkeypatch.setenv("TORCHTRT_C_MODULE_CACHE", "0")
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 8)).eval()
    x = torch.randn(4, 16)
    return m, x, dict(inputs=[x], min_block_size=1, cache_built_engines=True, reuse_cached_engines=True,
                      engine_cache_dir=str(tmp_path))


def test_second_compile_in_process_reuses_engines(tmp_path, monkeypatch):
    m, x, opts = _mlp_cached(tmp_path, monkeypatch)
    first = torchtrt_c.compile(m, **opts)
    cold = first._torchtrt_c_profile
    assert [e["source"] for e in cold.engines] == ["built"]
    gm = torchtrt_c.compile(m, **opts)
    warm = gm._torchtrt_c_profile
    # the engine of the module compiled a moment ago (still alive) is live: shared as it is
    assert [e["source"] for e in warm.engines] == ["engine cache (live)"]
    assert warm.engine_totals()["cache_hits"] == 1 and warm.engine_totals()["built"] == 0
    assert warm.engines[0]["build"] is None and warm.programs.get("compiled", 0) == 0, warm.programs
    err = (gm(x) - m(x)).abs().max().item()
    assert err <= 1e-4, f"max abs error {err} vs eager"
    # an engine lives as long as a module using it: with both deleted, the next compile reads
    # the cache file
    del first, gm
    gc.collect()
    again = torchtrt_c.compile(m, **opts)
    assert [e["source"] for e in again._torchtrt_c_profile.engines] == ["engine cache"]
    assert (again(x) - m(x)).abs().max().item() <= 1e-4


def test_fresh_process_hits_engine_and_program_caches(tmp_path):
    env = {"TORCHTRT_C_PROGRAM_BINARIES": "1",   # exercise the binary path on any device (PoCL too)
           "TORCHTRT_C_MODULE_CACHE": "0"}       # the per-engine layer (test_module_cache: the module one)
    cold = _run(tmp_path, True, env)
    assert cold["engine_totals"]["built"] == cold["engine_totals"]["engines"] >= 1
    assert cold["programs"]["compiled"] >= 1
    assert cold["max_err"] <= 1e-4

    # a fresh process, engine cache on: every engine comes from its blob, whose program binary
    # is used as it is (no program compiled, no candidate timed)
    warm = _run(tmp_path, True, env)
    t = warm["engine_totals"]
    assert t["cache_hits"] == t["engines"] == cold["engine_totals"]["engines"], t
    assert warm["programs"]["compiled"] == 0, warm["programs"]
    assert warm["programs"]["from_binary"] >= t["engines"], warm["programs"]
    assert warm["max_err"] <= 1e-4

    # a fresh process rebuilding its engines (reuse off): the programs come from the on-disk
    # binary cache and the GEMM tiles from the tuning cache
    rebuilt = _run(tmp_path, False, env)
    t = rebuilt["engine_totals"]
    assert t["built"] == t["engines"] and t["cache_hits"] == 0, t
    # every GEMM the cold process tuned (timed or read) is read from the tuning cache; GEMMs that
    # need no tuning (native CPU kernels, heuristics) count in neither
    c = cold["engine_totals"]
    assert t["tune_timed"] == 0 and t["tune_cached"] == c["tune_timed"] + c["tune_cached"], (t, c)
    assert rebuilt["programs"]["compiled"] == 0, rebuilt["programs"]
    assert rebuilt["programs"]["cache_hits"] >= t["engines"], rebuilt["programs"]
    assert rebuilt["max_err"] <= 1e-4


def test_engine_key_takes_the_settings(tmp_path, monkeypatch):
    """An engine built under other TORCHTRT_C_* settings (kernel paths, native steps) is not
    another's: a changed setting builds anew, the same one hits."""
    m, x, opts = _mlp_cached(tmp_path, monkeypatch)
    first = torchtrt_c.compile(m, **opts)
    assert [e["source"] for e in first._torchtrt_c_profile.engines] == ["built"]
    with torchtrt_c.settings.override(NATIVE="0"):
        other = torchtrt_c.compile(m, **opts)
        assert [e["source"] for e in other._torchtrt_c_profile.engines] == ["built"]
        again = torchtrt_c.compile(m, **opts)
        assert again._torchtrt_c_profile.engine_totals()["cache_hits"] == 1
        err = (again(x) - m(x)).abs().max().item()
    assert err <= 1e-4, err
