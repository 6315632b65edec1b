"""Per-call path of execute: host memory passed in place where the device's host-pointer buffers
are that memory (_C.host_in_place(), probed once; PoCL), with the mapped path kept for comparison
(TORCHTRT_C_HOST_IN_PLACE=0), and the Python fast path above it (CompiledModule's check cache,
run_engine without the engine lock).

Every engine here runs twice on the same inputs: once as compiled (in place where the device
allows it) and once through a twin engine deserialized from the same blob whose execution
context was made with TORCHTRT_C_HOST_IN_PLACE=0 (maps), and the results must be identical."""
import threading

import numpy as np
import pytest
import torch
import torch.nn as nn

import torchtrt_c
from torchtrt_c import _C
from torchtrt_c.runtime import _execute
from torchtrt_c.runtime._shapes import EngineMeta
from torchtrt_c import settings


class Chain(nn.Module):
    """Ten kernels: softmax and cumsum alternate (reductions do not fuse)."""

    def forward(self, x):
        for _ in range(5):
            x = torch.cumsum(torch.softmax(x, -1), -1)
        return x


class Fused(nn.Module):
    def forward(self, x):
        return torch.sigmoid(torch.relu(x * 2 + 1) - 0.5)


class Gemm(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(16, 9)

    def forward(self, x):
        return torch.relu(self.l(x)), x.sum(-1)


class Embed(nn.Module):
    def __init__(self):
        super().__init__()
        self.e = nn.Embedding(11, 6)

    def forward(self, ids):
        return self.e(ids) * 3


def _engine(trt):
    accs = [m for n, m in trt.named_children() if n.startswith("_run_on_acc_")]
    assert len(accs) == 1, f"expected one engine, got {len(accs)}"
    meta = EngineMeta.from_json(accs[0].meta)
    return _execute.ENGINES.get(meta.id, accs[0].engine)[0], meta


def _mapped_twin(eng, x_np, monkeypatch):
    """The same engine, whose execution context maps its outputs (made under the env knob)."""
    twin = _C.Engine.deserialize(eng.serialize())
    outs = [np.empty(s, np.float32) for s in twin.output_shapes([a.shape for a in x_np])]
    with monkeypatch.context() as mp:
        mp.setenv("TORCHTRT_C_HOST_IN_PLACE", "0")
        twin.execute(x_np, outs)  # makes the context now, while the knob is set
    return twin


def _run(eng, ins):
    shapes = eng.output_shapes([a.shape for a in ins])
    outs = [np.full(s, np.nan, dtype={"float32": np.float32, "int64": np.int64}[b["dtype"]])
            for s, b in zip(shapes, eng.outputs)]
    eng.execute(ins, outs)
    return outs


def test_knob_turns_in_place_off(monkeypatch):
    on = _C.host_in_place()
    dev = _C.devices()[_C.default_device()]
    if dev.get("type") != "cpu":
        assert not on, "host memory is only passed in place on CPU devices"
    settings.set(HOST_IN_PLACE="0")
    assert _C.host_in_place() is False


@pytest.mark.parametrize("name", ["chain", "fused", "gemm"])
def test_in_place_and_mapped_agree_and_outputs_are_never_stale(name, monkeypatch):
    torch.manual_seed(0)
    m = {"chain": Chain, "fused": Fused, "gemm": Gemm}[name]().eval()
    x0 = torch.randn(3, 16)
    trt = torchtrt_c.compile(m, inputs=[x0], min_block_size=1)
    eng, _ = _engine(trt)
    twin = _mapped_twin(eng, [x0.numpy()], monkeypatch)
    for seed in range(4):  # different inputs each call, the same output arrays reused
        x = torch.randn(3, 16, generator=torch.Generator().manual_seed(seed))
        a, b = _run(eng, [x.numpy()]), _run(twin, [x.numpy()])
        for i, (u, v) in enumerate(zip(a, b)):
            np.testing.assert_array_equal(u, v, err_msg=f"{name} output {i}: in place vs mapped, seed {seed}")
        got = trt(x)
        with torch.no_grad():
            want = m(x)
        got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
        for i, (g, w) in enumerate(zip(got, want)):
            torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-5, msg=lambda s: f"{name} output {i}: {s}")


def test_misaligned_buffers_take_the_copy_path():
    # numpy arrays 1 and 3 bytes off a float boundary: not passed in place (kernels load whole
    # floats), copied in and read back, with the same results as aligned arrays
    m = Chain().eval()
    x = torch.randn(3, 16)
    trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
    eng, _ = _engine(trt)
    want = _run(eng, [x.numpy()])[0]
    raw_in, raw_out = bytearray(x.numel() * 4 + 8), bytearray(x.numel() * 4 + 8)
    xin = np.ndarray((3, 16), np.float32, buffer=raw_in, offset=1)
    xin[...] = x.numpy()
    for off in (3, 0):
        out = np.ndarray((3, 16), np.float32, buffer=raw_out, offset=off)
        out[...] = np.nan
        eng.execute([xin], [out])
        np.testing.assert_array_equal(out, want, err_msg=f"input 1 byte off, output {off} bytes off")


def test_dynamic_shapes_alternating(monkeypatch):
    torch.manual_seed(1)
    m = Chain().eval()
    trt = torchtrt_c.compile(m, inputs=[torchtrt_c.Input(min_shape=(1, 16), opt_shape=(4, 16),
                                                          max_shape=(9, 16))], min_block_size=1)
    eng, _ = _engine(trt)
    twin = _mapped_twin(eng, [np.zeros((2, 16), np.float32)], monkeypatch)
    for i, b in enumerate((1, 9, 4, 1, 7, 9)):
        x = torch.randn(b, 16, generator=torch.Generator().manual_seed(i))
        np.testing.assert_array_equal(_run(eng, [x.numpy()])[0], _run(twin, [x.numpy()])[0],
                                      err_msg=f"batch {b}")
        with torch.no_grad():
            torch.testing.assert_close(trt(x), m(x), rtol=1e-4, atol=1e-5)


def test_index_error_flag_in_place(monkeypatch):
    # the flag lives in host memory when in place: set to 0 before every call, read after it
    torch.manual_seed(2)
    m = Embed().eval()
    ids = torch.tensor([[1, 2, 10], [0, 5, 7]])
    trt = torchtrt_c.compile(m, inputs=[ids], min_block_size=1)
    for bad in (11, 50):
        with pytest.raises(torchtrt_c.InputError, match="index out of range"):
            trt(torch.tensor([[1, bad, 3], [0, 5, 7]]))
        with torch.no_grad():
            torch.testing.assert_close(trt(ids), m(ids), rtol=0, atol=0)


def test_two_threads_share_one_compiled_module():
    torch.manual_seed(3)
    m = Gemm().eval()
    trt = torchtrt_c.compile(m, inputs=[torchtrt_c.Input(min_shape=(1, 16), opt_shape=(4, 16),
                                                         max_shape=(8, 16))], min_block_size=1)
    errors = []

    def worker(seed):
        try:
            for i in range(40):
                b = 1 + (seed * 5 + i) % 8
                x = torch.randn(b, 16, generator=torch.Generator().manual_seed(seed * 1000 + i))
                y, s = trt(x)
                with torch.no_grad():
                    wy, ws = m(x)
                torch.testing.assert_close(y, wy, rtol=1e-4, atol=1e-5)
                torch.testing.assert_close(s, ws, rtol=1e-4, atol=1e-5)
        except Exception as ex:  # noqa: BLE001
            errors.append(ex)

    ts = [threading.Thread(target=worker, args=(s,)) for s in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors[0]


def test_input_check_cache_still_checks_every_call():
    m = Fused().eval()
    trt = torchtrt_c.compile(m, inputs=[torchtrt_c.Input(min_shape=(1, 4), opt_shape=(2, 4), max_shape=(3, 4))],
                             min_block_size=1)
    x = torch.randn(2, 4)
    trt(x)
    trt(x)  # cached now
    with pytest.raises(torchtrt_c.InputError, match="outside the compiled range"):
        trt(torch.randn(5, 4))
    with pytest.raises(torchtrt_c.InputError, match="expected dtype float32"):
        trt(x.double())
    with pytest.raises(torchtrt_c.InputError, match="expected rank 2"):
        trt(x[None])
    for b in (1, 3, 2):
        with torch.no_grad():
            torch.testing.assert_close(trt(torch.ones(b, 4)), m(torch.ones(b, 4)))
    # a non-contiguous input and one that needs grad take the copy; results unchanged
    xt = torch.randn(4, 2).t()
    torch.testing.assert_close(trt(xt), m(xt))
    xg = torch.randn(2, 4, requires_grad=True)
    with torch.no_grad():
        torch.testing.assert_close(trt(xg), m(xg))
