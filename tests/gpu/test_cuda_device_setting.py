"""device="cuda:N" is the OpenCL device that is torch's CUDA device N (issue 36, item 5; the
error cases are tests/device/test_device_settings.py): on an NVIDIA machine with NVIDIA's
OpenCL, every CUDA device is found by its UUID, and an engine compiled with
device=torch.device("cuda", N) runs on it, called with CUDA tensors on that device.
Skipped without a CUDA torch."""
import pytest
import torch

import torchtrt_c
from torchtrt_c import _C
from torchtrt_c.runtime._execute import ENGINES

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA torch and a CUDA device")


@pytest.mark.parametrize("n", range(torch.cuda.device_count() if torch.cuda.is_available() else 0))
def test_cuda_n_is_its_opencl_device(n):
    uuid, why = _C.cuda_device_uuid(n)
    assert uuid is not None, why
    if not any(d.get("uuid") == uuid for d in _C.devices()):
        with pytest.raises(torchtrt_c.DeviceNotFoundError, match=f"cuda:{n}"):
            torchtrt_c.Device.of(f"cuda:{n}")
        pytest.skip(f"no OpenCL device has cuda:{n}'s UUID here (no NVIDIA OpenCL?): the error was checked")
    dev = torchtrt_c.Device.of(torch.device("cuda", n))
    assert dev.info["uuid"] == uuid and "NVIDIA" in f"{dev.platform} {dev.vendor}"
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4)).eval()
    x = torch.randn(3, 8)
    trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1, device=f"cuda:{n}")
    (acc,) = [c for name, c in trt.named_children() if name.startswith("_run_on_acc")]
    eng, _ = ENGINES.get(acc.engine_meta.id, acc.engine)
    assert eng.device["index"] == dev.index
    d = torch.device("cuda", n)
    with torch.inference_mode():
        got = trt.to(d)(x.to(d))
        want = m.to(d)(x.to(d))
    assert got.device == d
    torch.testing.assert_close(got, want, rtol=2e-3, atol=2e-3)
