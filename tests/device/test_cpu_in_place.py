"""CPU tensors passed to engines in place (issue 13 item 4): on a device whose host-pointer
buffers are the host memory (_C.host_in_place(): PoCL), aligned contiguous inputs and outputs
are read and written where they are, with no device buffer and no copy; the inputs in-place
cannot take (non-contiguous, misaligned, an output sharing an input's memory) still give the
eager result, through a copy; a wrong dtype is an InputError naming the input."""
import numpy as np
import pytest
import torch
import torch.nn as nn

import torchtrt_c
from torchtrt_c import _C
from torchtrt_c.runtime import _execute
from torchtrt_c.runtime._shapes import EngineMeta


class Chain(nn.Module):
    """Row reductions (softmax, cumsum): every output element reads the whole input row, so an
    output written over its own input while kernels still read it would give wrong values."""

    def forward(self, x):
        for _ in range(3):
            x = torch.cumsum(torch.softmax(x, -1), -1)
        return x


@pytest.fixture(scope="module")
def chain():
    torch.manual_seed(0)
    m = Chain().eval()
    x = torch.randn(5, 13)
    trt = torchtrt_c.compile(m, inputs=[torchtrt_c.Input(min_shape=(1, 13), opt_shape=(5, 13), max_shape=(9, 13))],
                             min_block_size=1)
    acc = [mod for n, mod in trt.named_children() if n.startswith("_run_on_acc_")]
    assert len(acc) == 1
    eng = _execute.ENGINES.get(EngineMeta.from_json(acc[0].meta).id, acc[0].engine)[0]
    trt(x)
    return m, trt, eng


def _want(m, x):
    with torch.no_grad():
        return m(x)


def _device_bytes():
    s = _C.runtime_stats()
    return s["live_bytes"] - s["host_ptr_bytes"]


def test_aligned_tensors_use_no_device_buffer(chain):
    """Steady-state calls with aligned contiguous tensors add no device memory (the engine's
    context buffers for staged inputs/outputs are never made); a misaligned input does."""
    if not _C.host_in_place():
        pytest.skip("the default device does not compute in host memory")
    m, _, eng = chain
    # a fresh engine of the same blob: its execution context has made no staging buffer yet
    e2 = _C.Engine.deserialize(eng.serialize())
    x = torch.randn(7, 13)
    out = torch.empty(7, 13)
    e2.execute([x.numpy()], [out.numpy()])
    before = _device_bytes()
    for i in range(5):
        x = torch.randn(7, 13, generator=torch.Generator().manual_seed(i))
        out = torch.empty(7, 13)
        e2.execute([x.numpy()], [out.numpy()])
        torch.testing.assert_close(out, _want(m, x), rtol=1e-4, atol=1e-5)
    assert _device_bytes() == before, "aligned in-place calls allocated device memory"
    raw = bytearray(7 * 13 * 4 + 4)
    xm = np.ndarray((7, 13), np.float32, buffer=raw, offset=2)
    xm[...] = x.numpy()
    e2.execute([xm], [out.numpy()])
    torch.testing.assert_close(out, _want(m, x), rtol=1e-4, atol=1e-5)
    assert _device_bytes() > before, "a misaligned input should have been staged in a device buffer"


@pytest.mark.parametrize("kind", ["transposed", "strided", "offset", "misaligned"])
def test_inputs_in_place_cannot_take(chain, kind):
    m, trt, _ = chain
    base = torch.randn(13, 9, generator=torch.Generator().manual_seed(3))
    if kind == "transposed":
        x = base.t()[:6]                                   # (6, 13), not contiguous
    elif kind == "strided":
        x = torch.randn(6, 26)[:, ::2]                     # every other column
    elif kind == "offset":
        x = torch.randn(8, 13)[2:]                         # contiguous, storage offset 26 floats
    else:
        raw = bytearray(6 * 13 * 4 + 4)                    # float32 data 1 byte off alignment
        x = torch.frombuffer(raw, dtype=torch.float32, offset=1, count=6 * 13).view(6, 13)
        x.copy_(base.t()[:6])
        assert x.data_ptr() % 4 == 1
    keep = x.clone()
    got = trt(x)
    torch.testing.assert_close(got, _want(m, keep), rtol=1e-4, atol=1e-5)
    assert torch.equal(x, keep), f"{kind}: the engine changed its input"
    assert got.is_contiguous() and got.data_ptr() % 4 == 0


class Two(nn.Module):
    """Two outputs read from the same input by different kernels: whichever runs first would
    overwrite x, the second kernel's input, if its output were written in place over x."""

    def forward(self, x):
        return torch.softmax(x, -1) * 2, torch.cumsum(torch.softmax(x, 0), -1)


@pytest.fixture(scope="module")
def two():
    m = Two().eval()
    x = torch.randn(6, 13)
    trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
    acc = [mod for n, mod in trt.named_children() if n.startswith("_run_on_acc_")]
    assert len(acc) == 1
    return m, _execute.ENGINES.get(EngineMeta.from_json(acc[0].meta).id, acc[0].engine)[0]


@pytest.mark.parametrize("alias", ["out0", "out1", "out0-shifted", "both"])
def test_output_sharing_an_input_s_memory(two, alias):
    """An output array over its input's memory (or overlapping it) gets the eager result: it is
    staged and written back after the last kernel, never written while kernels read the input."""
    m, eng = two
    x = torch.randn(6, 13, generator=torch.Generator().manual_seed(5))
    want = [t.numpy() for t in _want(m, x)]
    buf = np.zeros(7 * 13, np.float32)
    xin = buf[:6 * 13].reshape(6, 13)
    xin[...] = x.numpy()
    outs = [np.full((6, 13), np.nan, np.float32) for _ in range(2)]
    if alias in ("out0", "both"):
        outs[0] = xin
    if alias == "out1":
        outs[1] = xin
    if alias == "out0-shifted":
        outs[0] = buf[13:].reshape(6, 13)
    if alias == "both":   # the second output overlaps the first (and the input)
        outs[1] = buf[13:].reshape(6, 13)
    eng.execute([xin], outs)
    for i in range(2):
        if alias == "both" and i == 0:
            continue   # rows 1.. of output 0 are output 1's memory
        np.testing.assert_allclose(outs[i], want[i], rtol=1e-4, atol=1e-5,
                                   err_msg=f"{alias}: output {i} differs from eager")


def test_two_outputs_over_one_array(two):
    """Two outputs given the same array: no crash, and the array holds one of the two results."""
    m, eng = two
    x = torch.randn(6, 13)
    out = np.full((6, 13), np.nan, np.float32)
    eng.execute([x.numpy()], [out, out])
    a, b = (t.numpy() for t in _want(m, x))
    assert np.allclose(out, a, rtol=1e-4, atol=1e-5) or np.allclose(out, b, rtol=1e-4, atol=1e-5), \
        "an output array shared by two outputs holds neither result"


def test_dtype_mismatch_is_a_clear_error(chain):
    _, trt, eng = chain
    name = eng.inputs[0]["name"]
    with pytest.raises(torchtrt_c.InputError, match="float64"):
        trt(torch.randn(5, 13, dtype=torch.float64))
    with pytest.raises(torchtrt_c.InputError, match=rf"{name}.*float32"):
        eng.execute([np.zeros((5, 13), np.float64)], [np.zeros((5, 13), np.float32)])
    with pytest.raises(torchtrt_c.InputError, match="float32"):
        eng.execute([np.zeros((5, 13), np.float32)], [np.zeros((5, 13), np.int32)])
    with pytest.raises(torchtrt_c.InputError, match="writable"):
        ro = np.zeros((5, 13), np.float32)
        ro.flags.writeable = False
        eng.execute([np.zeros((5, 13), np.float32)], [ro])
