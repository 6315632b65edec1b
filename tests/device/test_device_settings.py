"""Device settings that cannot be honoured raise (issue 36, item 5): compile(device=...) and
Input(device=...) naming a CUDA device this machine does not have, a CUDA device with no
matching OpenCL device, an unknown TORCHTRT_C_DEVICE or device index: DeviceNotFoundError
(a torchtrt_c.Error and a ValueError) naming the OpenCL devices there are, never a silent
choice of another device or a warning and a torch fallback. "cuda:N" means the OpenCL device
that is torch's CUDA device N (same UUID). Expectations are read from this machine: where CUDA
exists the same calls must find its OpenCL device instead (tests/gpu/test_cuda_device_setting.py
checks that on a GPU)."""
import pytest
import torch

import torchtrt_c
from torchtrt_c import _C
from torchtrt_c._devices import find_device


def _mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4)).eval()


def _cuda_count() -> int:
    """CUDA devices the driver has (torch's count where torch has CUDA)."""
    if torch.cuda.is_available():
        return torch.cuda.device_count()
    n = 0
    while _C.cuda_device_uuid(n)[0] is not None:
        n += 1
    return n


def _opencl_of(n: int):
    """The OpenCL device dict with CUDA device n's UUID, or None."""
    uuid = _C.cuda_device_uuid(n)[0]
    return next((d for d in _C.devices() if uuid and d.get("uuid") == uuid), None)


def _names_devices(ex):
    msg = str(ex)
    assert all(d["name"] in msg for d in _C.devices()), f"the error does not list the devices: {msg}"


@pytest.mark.parametrize("spec", [torch.device("cuda:0"), "cuda", "cuda:0"])
def test_cuda_device_setting_is_its_opencl_device_or_an_error(spec):
    x = torch.randn(3, 8)
    if _cuda_count() == 0 or _opencl_of(0) is None:
        with pytest.raises(torchtrt_c.DeviceNotFoundError) as ei:
            torchtrt_c.compile(_mlp(), inputs=[x], min_block_size=1, device=spec)
        assert "cuda:0" in str(ei.value)
        _names_devices(ei.value)
        assert isinstance(ei.value, ValueError)
    else:
        want = _opencl_of(0)
        trt = torchtrt_c.compile(_mlp(), inputs=[x], min_block_size=1, device=spec)
        (acc,) = [m for n, m in trt.named_children() if n.startswith("_run_on_acc")]
        from torchtrt_c.runtime._execute import ENGINES
        eng, _ = ENGINES.get(acc.engine_meta.id, acc.engine)
        assert eng.device["index"] == want["index"]


def test_cuda_device_past_the_last_raises():
    n = _cuda_count()
    with pytest.raises(torchtrt_c.DeviceNotFoundError, match=f"cuda:{n}") as ei:
        torchtrt_c.compile(_mlp(), inputs=[torch.randn(3, 8)], min_block_size=1, device=torch.device("cuda", n))
    _names_devices(ei.value)
    with pytest.raises(torchtrt_c.DeviceNotFoundError):
        torchtrt_c.Device.of(f"cuda:{n}")


def test_input_on_a_cuda_device_torch_lacks_raises():
    n = torch.cuda.device_count() if torch.cuda.is_available() else 0
    inp = torchtrt_c.Input(shape=(3, 8), device=f"cuda:{n}" if n else "cuda", name="x")
    with pytest.raises(torchtrt_c.DeviceNotFoundError, match="input x") as ei:
        torchtrt_c.compile(_mlp(), inputs=[inp], min_block_size=1)
    _names_devices(ei.value)
    if n:  # a CUDA device torch has is fine (the engine takes CUDA tensors)
        trt = torchtrt_c.compile(_mlp(), inputs=[torchtrt_c.Input(shape=(3, 8), device="cuda:0")], min_block_size=1)
        assert trt is not None


def test_unknown_torchtrt_c_device_raises_instead_of_running_in_torch(monkeypatch):
    monkeypatch.setenv("TORCHTRT_C_DEVICE", "no-such-device-xyz")
    with pytest.raises(torchtrt_c.DeviceNotFoundError, match="TORCHTRT_C_DEVICE=no-such-device-xyz") as ei:
        torchtrt_c.compile(_mlp(), inputs=[torch.randn(3, 8)], min_block_size=1)
    _names_devices(ei.value)
    monkeypatch.setenv("TORCHTRT_C_DEVICE", str(len(_C.devices())))
    with pytest.raises(torchtrt_c.DeviceNotFoundError, match="out of range"):
        torchtrt_c.compile(_mlp(), inputs=[torch.randn(3, 8)], min_block_size=1)


def test_an_engine_for_an_unknown_device_is_no_torch_fallback(monkeypatch):
    # the device goes away between the check and the build (the environment changed): the
    # build's error is raised, not turned into a torch segment with a warning
    from torchtrt_c.dynamo import _compiler
    monkeypatch.setattr(_compiler, "check_devices", lambda settings, inputs: None)
    monkeypatch.setenv("TORCHTRT_C_DEVICE", "no-such-device-xyz")
    with pytest.raises(torchtrt_c.DeviceNotFoundError):
        torchtrt_c.compile(_mlp(), inputs=[torch.randn(3, 8)], min_block_size=1)


def test_index_out_of_range_and_torch_cpu_device():
    devs = _C.devices()
    with pytest.raises(torchtrt_c.DeviceNotFoundError, match="out of range") as ei:
        torchtrt_c.compile(_mlp(), inputs=[torch.randn(3, 8)], min_block_size=1, device=len(devs))
    _names_devices(ei.value)
    cpu = [d for d in devs if d["type"] == "cpu"]
    if cpu:
        assert find_device(torch.device("cpu"))["index"] == cpu[0]["index"]
    else:
        with pytest.raises(torchtrt_c.DeviceNotFoundError):
            find_device(torch.device("cpu"))
    with pytest.raises(torchtrt_c.DeviceNotFoundError, match="meta"):
        find_device(torch.device("meta"))
