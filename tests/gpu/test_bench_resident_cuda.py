"""runtime.benchmark_resident with CUDA tensors times the path a call with those tensors takes
(issue 36, item 6): before, it timed the OpenCL queue on OpenCL buffers while calls took the
CUDA launch path, so "resident" read slower than end to end on every GPU row. The result's
paths name the path per engine, and it is the path a plain call took (runtime.cuda_path()).
Speed itself is measured in bench/, never asserted here. Skipped without a CUDA torch."""
import pytest
import torch

import torchtrt_c
from torchtrt_c import runtime

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA torch and a CUDA device")

DEV = torch.device("cuda", 0)


def test_resident_times_the_call_path_of_cuda_tensors():
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 64)).eval()
    x = torch.randn(8, 64)
    trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1).to(DEV)
    xc = x.to(DEV)
    with torch.inference_mode():
        trt(xc)
    call_path = runtime.cuda_path()["path"]
    assert call_path in ("launch", "shared", "host"), runtime.cuda_path()
    r = runtime.benchmark_resident(trt, [xc], runs=5, warmup=2)
    engines = [n for n, _ in trt.named_children() if n.startswith("_run_on_acc")]
    assert r["paths"] == {n: f"cuda {call_path}" for n in engines}, (r["paths"], call_path)
    assert len(r["times_ms"]) == 5 and all(t > 0 for t in r["times_ms"])
    # host tensors on the same module: the OpenCL kernels, and the result says so
    r = runtime.benchmark_resident(trt, [x], runs=3, warmup=1)
    assert r["paths"] == {n: "opencl" for n in engines}
