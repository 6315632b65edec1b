"""Engine blobs made on demand (issue 15): a compile keeps its engines live and makes no blob;
whoever asks for one (state_dict, torch.export, pickling, deepcopy, torchtrt_c.save) gets it
then, and the engine cache file is serialised by the thread that writes it. Round trips stay
exact; damaged or foreign engine cache files are still rejected."""
import copy
import io
import logging
import os
from pathlib import Path

import pytest
import torch

import torchtrt_c
from torchtrt_c import _C
from torchtrt_c.dynamo._compiler import wait_engine_cache_writes
from torchtrt_c.runtime._execute import ENGINES
from torchtrt_c.runtime._module import EngineModule


class Net(torch.nn.Module):
    def __init__(self, d=13):
        super().__init__()
        self.a = torch.nn.Linear(d, 29)
        self.b = torch.nn.Linear(29, 7)

    def forward(self, x):
        return self.b(torch.nn.functional.gelu(self.a(x))) * 0.5


def _engines(gm):
    return [m for m in gm.modules() if isinstance(m, EngineModule)]


def _deferred(mod) -> bool:
    return mod.__dict__.get("_deferred") is not None


def _close(a, b, tol=1e-5):
    err = (a - b).abs().max().item()
    assert err <= tol, f"max abs difference {err} > {tol}"


@pytest.fixture
def compiled():
    torch.manual_seed(3)
    m = Net().eval()
    x = torch.randn(5, 13)
    gm = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
    return m, gm, x


def test_compile_makes_no_blob_and_runs(compiled):
    m, gm, x = compiled
    (acc,) = _engines(gm)
    assert _deferred(acc) and acc._buffers["engine"].numel() == 0
    assert "bytes=deferred" in repr(acc)
    with torch.no_grad():
        _close(gm(x), m(x))
        gm.to("cpu")  # moving the module moves the placeholder, it does not make the blob
        _close(gm(x), m(x))
    assert _deferred(acc), "running or moving the module made the blob"
    # the registry forgot the engine (as ENGINES.clear() does): the module still holds it
    ENGINES.clear()
    with torch.no_grad():
        _close(gm(x), m(x))
    assert _deferred(acc)


def test_state_dict_makes_the_blob_and_it_round_trips_exactly(compiled):
    m, gm, x = compiled
    (acc,) = _engines(gm)
    with torch.no_grad():
        live = gm(x)
    sd = gm.state_dict()
    blob = sd["_run_on_acc_0.engine"]
    assert blob.numel() > 1000 and not _deferred(acc) and torch.equal(acc.engine, blob)
    # the blob alone rebuilds the engine: same bytes again, same outputs bit for bit
    e = _C.Engine.deserialize(blob.numpy().tobytes())
    assert e.serialize() == blob.numpy().tobytes()
    ENGINES.clear()   # the module now deserialises its blob
    with torch.no_grad():
        again = gm(x)
    assert torch.equal(live, again), (live - again).abs().max().item()


def test_export_pickle_and_deepcopy_carry_the_blob(compiled):
    m, gm, x = compiled
    with torch.no_grad():
        ref = gm(x)
    ep = torch.export.export(gm, (x,), strict=False)
    assert ep.state_dict["_run_on_acc_0.engine"].numel() > 1000
    buf = io.BytesIO()
    torch.export.save(ep, buf)
    buf.seek(0)
    ep2 = torch.export.load(buf)
    ENGINES.clear()   # the loaded program has to deserialise its own blob
    with torch.no_grad():
        assert torch.equal(ep2.module()(x), ref)

    torch.manual_seed(4)
    m2 = Net(d=6).eval()
    x2 = torch.randn(3, 6)
    for clone in (lambda g: copy.deepcopy(g), lambda g: _pickled(g)):
        g = torchtrt_c.compile(m2, inputs=[x2], min_block_size=1)
        assert all(_deferred(a) for a in _engines(g))
        g2 = clone(g)
        (a2,) = _engines(g2)
        assert not _deferred(a2) and a2._buffers["engine"].numel() > 1000
        ENGINES.clear()
        with torch.no_grad():
            _close(g2(x2), m2(x2))


def _pickled(g):
    buf = io.BytesIO()
    torch.save(g, buf)
    buf.seek(0)
    return torch.load(buf, weights_only=False)


def test_ids_without_engine_cache_are_distinct():
    torch.manual_seed(5)
    ms = [Net(d=9).eval() for _ in range(2)]
    x = torch.randn(2, 9)
    gms = [torchtrt_c.compile(mm, inputs=[x], min_block_size=1) for mm in ms]
    ids = [_engines(g)[0].engine_meta.id for g in gms]
    assert ids[0] != ids[1] and all(len(i) == 32 for i in ids), ids
    with torch.no_grad():
        for mm, g in zip(ms, gms):
            _close(g(x), mm(x))


def _cached(m, x, cache):
    return torchtrt_c.compile(m, inputs=[x], min_block_size=1, cache_built_engines=True,
                              reuse_cached_engines=True, engine_cache_dir=str(cache))


@pytest.mark.parametrize("damage", ["flip", "truncate", "not_an_engine"])
def test_engine_cache_file_is_the_blob_and_damage_is_rejected(tmp_path, monkeypatch, caplog, damage):
    monkeypatch.setenv("TORCHTRT_C_MODULE_CACHE", "0")   # the per-engine layer alone
    torch.manual_seed(6)
    m = Net(d=11).eval()
    x = torch.randn(4, 11)
    gm = _cached(m, x, tmp_path)
    (acc,) = _engines(gm)
    assert _deferred(acc)
    wait_engine_cache_writes()
    (f,) = [p for p in Path(tmp_path).iterdir() if p.suffix == ".ttce"]
    data = f.read_bytes()
    assert data == acc.blob().numpy().tobytes(), "the file written behind differs from the module's blob"
    with torch.no_grad():
        ref = gm(x)
    if damage == "flip":
        bad = bytearray(data)
        bad[len(bad) // 3] ^= 0x41
    elif damage == "truncate":
        bad = data[: len(data) // 2]
    else:   # not an engine file at all: a torch.save archive under the engine's name
        b = io.BytesIO()
        torch.save(torch.arange(100), b)
        bad = b.getvalue()
    f.write_bytes(bytes(bad))
    ENGINES.clear()   # as a new process: the file is read, not the live engine
    with caplog.at_level(logging.WARNING, logger="torchtrt_c"):
        g2 = _cached(m, x, tmp_path)
    src = g2._torchtrt_c_profile.engines[0]["source"]
    assert src == "built", (src, [r.getMessage() for r in caplog.records])
    assert any("ignoring cached engine" in r.getMessage() for r in caplog.records)
    with torch.no_grad():
        _close(g2(x), ref)
    wait_engine_cache_writes()
    assert f.read_bytes() == data, "the rebuilt engine's file was not written again"


def test_save_load_in_fresh_process_from_a_deferred_module(tmp_path):
    import subprocess
    import sys
    torch.manual_seed(7)
    m = Net(d=5).eval()
    x = torch.randn(3, 5)
    gm = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
    assert all(_deferred(a) for a in _engines(gm))
    path = tmp_path / "m.ep"
    torchtrt_c.save(gm, path)
    torch.save({"x": x, "y": gm(x).detach()}, tmp_path / "io.pt")
    code = (f"import torch, torchtrt_c\nd = torch.load({str(tmp_path / 'io.pt')!r})\n"
            f"g = torchtrt_c.load({str(path)!r})\n"
            "assert torch.equal(g(d['x']), d['y']), (g(d['x']) - d['y']).abs().max()\nprint('OK')\n")
    root = str(Path(__file__).resolve().parents[2])
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, PYTHONPATH=root))
    assert r.returncode == 0 and "OK" in r.stdout, r.stderr[-3000:]


def test_warm_compile_does_not_wait_for_the_cache_writes(tmp_path, monkeypatch):
    """A compile of the same module while this process still writes its cache entries takes
    the entry from memory (its engines are live) instead of waiting for the disk; the files,
    once written, serve a compile with no live engine."""
    import threading
    from torchtrt_c.dynamo import _compiler
    gate = threading.Event()
    real = _compiler._engine_file_writer

    def held_writer(path, engine):
        write = real(path, engine)

        def held():
            gate.wait(timeout=120)
            write()
        return held

    monkeypatch.setattr(_compiler, "_engine_file_writer", held_writer)
    torch.manual_seed(8)
    m = Net(d=10).eval()
    x = torch.randn(3, 10)
    try:
        cold = _cached(m, x, tmp_path)
        warm = _cached(m, x, tmp_path)
        assert not [p for p in Path(tmp_path).iterdir() if p.suffix in (".ttce", ".ttcm")], \
            "the writes were held: nothing should be on disk yet"
        p = warm._torchtrt_c_profile
        assert p.module_cache["result"] == "hit", p.module_cache
        assert [e["source"] for e in p.engines] == ["module cache (live)"]
        (acc,) = _engines(warm)
        assert _deferred(acc)
        with torch.no_grad():
            _close(warm(x), m(x))
            _close(cold(x), m(x))
    finally:
        gate.set()
    wait_engine_cache_writes()
    assert sorted(p.suffix for p in Path(tmp_path).iterdir() if p.suffix in (".ttce", ".ttcm")) == [".ttce", ".ttcm"]
    # as a new process: no module of this engine alive (a live one, or a plan holding its
    # engine, answers "module cache (live)"), so the entry and engine file are read and checked
    del cold, warm, acc
    import gc
    gc.collect()
    ENGINES.clear()
    g3 = _cached(m, x, tmp_path)
    p3 = g3._torchtrt_c_profile
    # the engine file is read and CRC-checked either by the lookup ("module cache") or, where
    # the speculative preload that starts during capture has already deserialised it (fast on
    # a GPU, whose blob holds binaries), by that preload ("module cache (live)")
    assert p3.module_cache["result"] == "hit", p3.module_cache
    assert p3.engines[0]["source"] in ("module cache", "module cache (live)"), p3.engines
    with torch.no_grad():
        _close(g3(x), m(x))
