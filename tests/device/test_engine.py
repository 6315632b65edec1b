"""Engines end to end on the default OpenCL device (PoCL in CI): build, execute, fusion,
dynamic shapes, input checking, serialisation, threads, leaks."""
import os
import threading

import numpy as np
import pytest
import torch

import torchtrt_c
import torchtrt_c._C as C
from convtest import Const, build, check_op, rand, run
from torchtrt_c import settings


def linear_relu_graph(dyn=True):
    g = C.Graph()
    if dyn:
        g.add_symbol("s0", 1, 4, 32)
    w = rand(7, 13, seed=1)
    b = rand(7, seed=2)
    x = g.add_input("x", ("tensor", "float32", ["s0" if dyn else 5, 13]))
    wn = g.add_tensor_constant("fc.weight", "float32", [7, 13], w.numpy())
    bn = g.add_tensor_constant("fc.bias", "float32", [7], b.numpy())
    (l,) = g.add_node("aten.linear.default", [x, wn, bn], [("tensor", "float32", ["s0" if dyn else 5, 7])], name="fc")
    (y,) = g.add_node("aten.relu.default", [l], [("tensor", "float32", ["s0" if dyn else 5, 7])], name="relu")
    g.set_outputs([y])
    return g, w, b


def test_thin_path_linear_relu():
    g, w, b = linear_relu_graph()
    e = C.Engine.build(g, name="lr", cache_dir="")
    info = e.info()
    assert info["n_kernels"] == 1 and info["fused"] == 1, info["kernels"]
    assert e.inputs[0]["name"] == "x" and e.inputs[0]["shape"] == ("s0", 13)
    assert e.inputs[0]["min_shape"] == (1, 13) and e.inputs[0]["max_shape"] == (32, 13)
    for bs in (1, 3, 17, 32):
        x = rand(bs, 13, seed=bs)
        out = np.empty((bs, 7), np.float32)
        e.execute([x.numpy()], [out])
        ref = torch.relu(x @ w.T + b)
        np.testing.assert_allclose(out, ref.numpy(), rtol=1e-5, atol=1e-5)
    assert e.output_shapes([(9, 13)]) == [(9, 7)]
    assert e.peak_memory >= 7 * 13 * 4


def test_input_errors_name_the_input():
    g, _, _ = linear_relu_graph()
    e = C.Engine.build(g, cache_dir="")
    out = np.empty((2, 7), np.float32)
    with pytest.raises(torchtrt_c.InputError, match="1 inputs, 2 given"):
        e.execute([np.zeros((2, 13), np.float32)] * 2, [out])
    with pytest.raises(torchtrt_c.InputError, match="x.*float32"):
        e.execute([np.ones((2, 13), np.float64)], [out])
    with pytest.raises(torchtrt_c.InputError, match="x.*rank"):
        e.execute([np.ones((2, 13, 1), np.float32)], [out])
    with pytest.raises(torchtrt_c.InputError, match="x.*s0"):
        e.execute([np.ones((33, 13), np.float32)], [np.empty((33, 7), np.float32)])
    with pytest.raises(torchtrt_c.InputError, match="x.*dim 1"):
        e.execute([np.ones((2, 12), np.float32)], [out])
    with pytest.raises(torchtrt_c.InputError, match="output"):
        e.execute([np.ones((2, 13), np.float32)], [np.empty((3, 7), np.float32)])


def test_build_error_has_log():
    # a converter that exists but an op whose input is never produced: conversion error names the node
    g = C.Graph.parse("graph(%x : Float(2, 3)):\n  %y : Float(2, 3) = aten.lgamma.default(%x)\n  return (%y)\n")
    with pytest.raises(torchtrt_c.UnsupportedOperatorError, match="lgamma"):
        C.Engine.build(g, cache_dir="")


def test_serialize_roundtrip_and_corruption(tmp_path, monkeypatch):
    settings.set(PROGRAM_BINARIES="1")  # the binary path (off by default on PoCL)
    g, w, b = linear_relu_graph()
    e = C.Engine.build(g, name="ser", cache_dir="")
    blob = e.serialize()
    assert blob[:8] == b"TTCENGN1"
    e2 = C.Engine.deserialize(blob, cache_dir="")
    assert e2.info()["program_cached"], "the stored binary is used on the same device"
    x = rand(6, 13, seed=9)
    o1, o2 = np.empty((6, 7), np.float32), np.empty((6, 7), np.float32)
    e.execute([x.numpy()], [o1])
    e2.execute([x.numpy()], [o2])
    np.testing.assert_array_equal(o1, o2)
    for bad in (blob[:100], b"XXXXXXXX" + blob[8:], blob[:-1] + bytes([blob[-1] ^ 1]), b""):
        with pytest.raises(torchtrt_c.SerializationError):
            C.Engine.deserialize(bad)


def test_program_cache_second_build(tmp_path, monkeypatch):
    settings.set(PROGRAM_BINARIES="1")  # the binary path (off by default on PoCL)
    g, _, _ = linear_relu_graph()
    e1 = C.Engine.build(g, cache_dir=str(tmp_path))
    assert not e1.info()["program_cached"]
    e2 = C.Engine.build(g, cache_dir=str(tmp_path))
    assert e2.info()["program_cached"]
    files = os.listdir(tmp_path)
    assert files
    # a corrupt cache entry is ignored and rebuilt
    for f in files:
        with open(tmp_path / f, "r+b") as fh:
            fh.seek(60)
            fh.write(b"garbage")
    e3 = C.Engine.build(g, cache_dir=str(tmp_path))
    assert not e3.info()["program_cached"]
    x = rand(3, 13)
    out = np.empty((3, 7), np.float32)
    e3.execute([x.numpy()], [out])


def test_threads_share_an_engine():
    g, w, b = linear_relu_graph()
    e = C.Engine.build(g, cache_dir="")
    errors = []

    def worker(seed):
        try:
            for i in range(30):
                bs = 1 + (seed * 7 + i) % 20
                x = rand(bs, 13, seed=seed * 100 + i)
                out = np.empty((bs, 7), np.float32)
                e.execute([x.numpy()], [out])
                np.testing.assert_allclose(out, torch.relu(x @ w.T + b).numpy(), rtol=1e-5, atol=1e-5)
        except Exception as ex:  # noqa: BLE001
            errors.append(ex)

    ts = [threading.Thread(target=worker, args=(s,)) for s in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors[0]


def _rss_kb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


@pytest.mark.skipif("libasan" in os.environ.get("LD_PRELOAD", ""),
                    reason="ASan's quarantine keeps freed memory resident, so RSS says nothing there")
def test_no_leak_over_10000_executions():
    g, _, _ = linear_relu_graph()
    e = C.Engine.build(g, cache_dir="")
    x = rand(4, 13).numpy()
    out = np.empty((4, 7), np.float32)
    for _ in range(500):
        e.execute([x], [out])
    before = _rss_kb()
    for _ in range(10000):
        e.execute([x], [out])
    grown = _rss_kb() - before
    assert grown < 4096, f"RSS grew by {grown} KiB over 10000 executions"


def test_tuning_cache_and_every_choice_correct(tmp_path, monkeypatch):
    settings.set(NATIVE="0")   # the OpenCL GEMM's tiles (native GEMMs have none)
    settings.set(PROGRAM_BINARIES="1")  # the binary path (off by default on PoCL)
    g, w, b = linear_relu_graph()
    e = C.Engine.build(g, cache_dir=str(tmp_path), optimization_level=3)
    assert e.info()["tuned"] == 1
    tf = tmp_path / "tuning-v1.txt"
    lines = tf.read_text().splitlines()
    assert len(lines) == 1, lines
    key = lines[0].split("\t")[0]
    assert C.devices()[C.default_device()]["name"] in key
    # the candidates tuning chooses among: the engine's own kernel families (CPU work-group
    # shapes on a CPU device, the SIMT tiles with the GPU families; tensor cores need fp16)
    family = ("simt",) if e.info()["gpu_kernels"] else ("cpu",)
    choices = [t["index"] for t in C.gemm_tiles() if t["family"] in family]
    assert list(e.info()["tiles"].values())[0] in choices
    for choice in choices:
        tf.write_text(f"{key}\t{choice}\n")   # the cache decides: every candidate must be correct
        e = C.Engine.build(g, cache_dir=str(tmp_path))
        assert list(e.info()["tiles"].values()) == [choice]
        for bs in (1, 17, 32):
            x = rand(bs, 13, seed=bs)
            out = np.empty((bs, 7), np.float32)
            e.execute([x.numpy()], [out])
            np.testing.assert_allclose(out, torch.relu(x @ w.T + b).numpy(), rtol=1e-5, atol=1e-5)
        e2 = C.Engine.deserialize(e.serialize(), cache_dir=str(tmp_path))
        assert e2.info()["tiles"] == e.info()["tiles"] and e2.info()["program_cached"]
    assert C.Engine.build(g, cache_dir=str(tmp_path), optimization_level=0).info()["tuned"] == 0


def _checksum(data, seed=0):
    return C.hash64(data, seed)   # the C core's hash (csrc/common/status.c)


def test_fuzzed_blobs_never_crash():
    """Mutated blobs (half with the checksum fixed up, so the section and IR parsers see the
    damage) load cleanly or raise a torchtrt_c error; loaded ones still execute or refuse."""
    import random
    g, _, _ = linear_relu_graph()
    blob = C.Engine.build(g, cache_dir="").serialize()
    rng = random.Random(7)
    x = rand(3, 13).numpy()
    loaded = 0
    for i in range(300):
        m = bytearray(blob)
        for _ in range(rng.randint(1, 3)):
            k = rng.randrange(3)
            if k == 0:
                m[rng.randrange(len(m) - 8)] ^= 1 << rng.randrange(8)
            elif k == 1:
                m[rng.randrange(len(m) - 8)] = rng.randrange(256)
            elif len(m) > 9:
                del m[rng.randrange(8, len(m) - 8):][:rng.randint(1, 64)]
        if i % 2 and len(m) > 8:
            m[-8:] = _checksum(bytes(m[:-8])).to_bytes(8, "little")
        try:
            e = C.Engine.deserialize(bytes(m))
        except torchtrt_c.Error:
            continue
        loaded += 1
        try:
            e.execute([x], [np.empty((3, 7), np.float32)])
        except torchtrt_c.Error:
            pass
    assert loaded < 300
