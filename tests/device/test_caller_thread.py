"""Small engines on the device's caller-thread companion (issue 13 item 4): on PoCL, engines
without native steps whose launches are small at their largest shapes build their program for
PoCL's basic device, which runs each launch on the calling thread (no hand-over to PoCL's
worker threads). Every choice gives the same results as the worker threads
(TORCHTRT_C_CALLER_THREAD=0) and as eager, on odd and dynamic shapes, from several threads,
with the index-error flag and with an output over its own input; the knobs turn it off, force
it (=all) and move the threshold (TORCHTRT_C_CALLER_THREAD_ITEMS). Skipped where the device
has no such companion (GPUs, PoCL started before torchtrt_c or with POCL_DEVICES set)."""
import threading

import numpy as np
import pytest
import torch
import torch.nn as nn

import torchtrt_c
from torchtrt_c import _C
from convtest_data import In, assert_close, build, rand_tensor, run


class Chain(nn.Module):
    """Row reductions that do not fuse with each other (2 kernels per round)."""

    def __init__(self, rounds=3):
        super().__init__()
        self.rounds = rounds

    def forward(self, x):
        for _ in range(self.rounds):
            x = torch.cumsum(torch.softmax(x, -1), -1)
        return x


def _blob(model, inputs):
    trt = torchtrt_c.compile(model, inputs=inputs, min_block_size=1)
    acc = [m for n, m in trt.named_children() if n.startswith("_run_on_acc_")]
    assert len(acc) == 1
    return acc[0].engine.numpy().tobytes()


def _load(blob, monkeypatch, mode=None, items=None):
    """The engine of blob, deserialised (rebuilt) with the knobs given (None: default)."""
    with monkeypatch.context() as mp:
        if mode is None:
            mp.delenv("TORCHTRT_C_CALLER_THREAD", raising=False)
        else:
            mp.setenv("TORCHTRT_C_CALLER_THREAD", mode)
        if items is not None:
            mp.setenv("TORCHTRT_C_CALLER_THREAD_ITEMS", str(items))
        return _C.Engine.deserialize(blob)


def _exec(eng, x):
    out = np.empty(tuple(eng.output_shapes([tuple(x.shape)])[0]), np.float32)
    eng.execute([np.ascontiguousarray(x.numpy())], [out])
    return torch.from_numpy(out)


def _want(m, x):
    with torch.no_grad():
        return m(x)


@pytest.fixture(scope="module")
def dyn_blob():
    torch.manual_seed(0)
    m = Chain().eval()
    spec = torchtrt_c.Input(min_shape=(1, 13), opt_shape=(5, 13), max_shape=(9, 13))
    return m, _blob(m, [spec])


@pytest.fixture
def companion(dyn_blob, monkeypatch):
    if not _load(dyn_blob[1], monkeypatch, "all").info()["caller_thread"]:
        pytest.skip("the default device has no caller-thread companion")


def test_small_engine_runs_on_the_caller_thread_by_default(dyn_blob, companion, monkeypatch):
    m, blob = dyn_blob
    on, off = _load(blob, monkeypatch), _load(blob, monkeypatch, "0")
    i_on, i_off = on.info(), off.info()
    assert i_on["caller_thread"], f"a {i_on['launch_items']}-item engine stayed on the worker threads"
    assert 0 < i_on["launch_items"] <= 32768
    assert not i_off["caller_thread"], "TORCHTRT_C_CALLER_THREAD=0 did not turn it off"
    # the companion is not a device of its own
    assert not any(d.name.startswith("basic") for d in torchtrt_c.devices())


@pytest.mark.parametrize("rows", [1, 4, 5, 9])
def test_same_results_on_and_off(dyn_blob, companion, monkeypatch, rows):
    m, blob = dyn_blob
    on, off = _load(blob, monkeypatch), _load(blob, monkeypatch, "0")
    x = rand_tensor((rows, 13))
    got_on, got_off = _exec(on, x), _exec(off, x)
    assert_close(got_on, got_off, 1e-6, 1e-6, f"caller thread vs workers, {rows}x13")
    assert_close(got_on, _want(m, x), 1e-5, 1e-5, f"caller thread vs eager, {rows}x13")


def test_threshold_and_force(companion, monkeypatch):
    """A 64x1024 chain (10 kernels, ~1.3M elements) stays on the worker threads by default;
    a higher threshold or =all moves it; results agree every way."""
    torch.manual_seed(1)
    m = Chain(5).eval()
    x = torch.randn(64, 1023)
    blob = _blob(m, [x])
    default, forced, raised = (_load(blob, monkeypatch), _load(blob, monkeypatch, "all"),
                               _load(blob, monkeypatch, items=10**9))
    assert not default.info()["caller_thread"], f"{default.info()['launch_items']} work-items went to the caller"
    assert default.info()["launch_items"] > 32768
    assert forced.info()["caller_thread"] and raised.info()["caller_thread"]
    want = _want(m, x)
    for name, e in (("default", default), ("forced", forced), ("raised threshold", raised)):
        assert_close(_exec(e, x), want, 1e-4, 1e-4, f"64x1023 chain, {name}")


def test_native_steps_stay_on_the_workers(companion, monkeypatch):
    """Library calls (oneDNN/OpenBLAS) thread on their own: an engine with one never moves."""
    torch.manual_seed(2)
    m = nn.Sequential(nn.Linear(16, 8), nn.ReLU()).eval()
    x = torch.randn(3, 16)
    blob = _blob(m, [x])
    e = _load(blob, monkeypatch, "all")
    if not any("(native)" in k for k in e.info()["kernels"]):
        pytest.skip("no native steps on this device")
    assert not e.info()["caller_thread"]
    assert_close(_exec(e, x), _want(m, x), 1e-5, 1e-5, "linear + relu")


def test_blob_from_either_side_loads_on_the_other(dyn_blob, companion, monkeypatch):
    """A blob carries the program binary of the device it ran on; the other one rejects it and
    builds the source."""
    m, blob = dyn_blob
    on = _load(blob, monkeypatch)
    x = rand_tensor((7, 13))
    for src in (on.serialize(), _load(blob, monkeypatch, "0").serialize()):
        for mode in (None, "0"):
            e = _load(src, monkeypatch, mode)
            assert e.info()["caller_thread"] == (mode is None)
            assert_close(_exec(e, x), _want(m, x), 1e-5, 1e-5, f"reloaded, mode {mode}")


def test_index_error_on_the_caller_thread(companion, monkeypatch):
    monkeypatch.setenv("TORCHTRT_C_CALLER_THREAD", "all")
    a = rand_tensor((6, 5))
    eng = build("aten.index_select.default", [In("x", "float32", [6, 5]), 0, In("i", "int32", [3])],
                [("tensor", "float32", [3, 5])])
    assert eng.info()["caller_thread"]
    with pytest.raises(torchtrt_c.InputError, match=r"node \S+: index out of range"):
        run(eng, [a, torch.tensor([0, 6, 1], dtype=torch.int32)])
    ok = torch.tensor([5, 0, 2], dtype=torch.int32)
    assert_close(run(eng, [a, ok])[0], torch.index_select(a, 0, ok.long()), 0, 0, "index_select after the error")


def test_output_over_its_own_input(dyn_blob, companion, monkeypatch):
    m, blob = dyn_blob
    e = _load(blob, monkeypatch)
    x = rand_tensor((5, 13))
    want = _want(m, x)
    arr = np.ascontiguousarray(x.numpy()).copy()
    e.execute([arr], [arr])
    assert_close(torch.from_numpy(arr), want, 1e-5, 1e-5, "output written over its input")


def test_threads_share_one_engine(dyn_blob, companion, monkeypatch):
    m, blob = dyn_blob
    e = _load(blob, monkeypatch)
    errors = []

    def worker(seed):
        try:
            for i in range(30):
                x = rand_tensor((1 + (seed + i) % 9, 13), gen=torch.Generator().manual_seed(seed * 100 + i))
                assert_close(_exec(e, x), _want(m, x), 1e-5, 1e-5, f"thread {seed} call {i}")
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    ts = [threading.Thread(target=worker, args=(s,)) for s in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors[0]


def test_compiled_module_end_to_end(companion):
    torch.manual_seed(3)
    m = Chain(5).eval()
    x = torch.randn(4, 63)
    trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
    for i in range(3):  # the first call loads the engine, later ones reuse its context
        assert_close(trt(x), _want(m, x), 1e-5, 1e-5, f"compiled chain, 4x63, call {i}")


def test_children_do_not_inherit_pocl_devices(companion):
    """POCL_DEVICES is set only while PoCL starts: a child process (which may use PoCL without
    torchtrt_c, or start torchtrt_c itself) sees the environment the user gave."""
    import os
    import subprocess
    import sys
    before = os.environ.get("POCL_DEVICES")  # Python's copy, taken at start-up
    out = subprocess.run([sys.executable, "-c", "import os; print(os.environ.get('POCL_DEVICES'))"],
                         capture_output=True, text=True, check=True).stdout.strip()
    assert out == str(before), f"the child saw POCL_DEVICES={out!r}"
