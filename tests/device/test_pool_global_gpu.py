"""Global average pooling (adaptive average to 1x1: the squeeze of squeeze-and-excitation
blocks and most CNN heads) with the GPU kernel families: one work-group per plane reducing
through rowred.cl (pool2d.cl MODE 3), here on PoCL through TORCHTRT_C_KERNELS=gpu. Against
torch eager on random inputs with odd planes, several images, an epilogue after the pool and
a dynamic batch; pools to other sizes keep the one-output-per-work-item kernel.
Tolerance: fp32 1e-5, fp16 engines 2e-3 relative to the output's scale (half storage)."""
import pytest
import torch

import torchtrt_c


@pytest.fixture(autouse=True)
def gpu_family(monkeypatch):
    monkeypatch.setenv("TORCHTRT_C_KERNELS", "gpu")


def _sources(mod):
    from torchtrt_c.runtime import _execute
    return [_execute._plan(m.meta, m.engine).engine.info()["source"] for m in mod.modules()
            if hasattr(m, "engine") and hasattr(m, "meta")]


class _SE(torch.nn.Module):
    """squeeze (global average) -> excitation (two 1x1 convs) -> channel scale"""
    def __init__(self, c):
        super().__init__()
        self.a = torch.nn.Conv2d(c, 4, 1)
        self.b = torch.nn.Conv2d(4, c, 1)

    def forward(self, x):
        s = torch.nn.functional.adaptive_avg_pool2d(x, 1)
        return x * torch.sigmoid(self.b(torch.nn.functional.silu(self.a(s))))


@pytest.mark.parametrize("shape", [(2, 5, 7, 9), (1, 3, 1, 1), (3, 4, 33, 17), (1, 6, 112, 112)])
@pytest.mark.parametrize("prec", [torch.float32, torch.float16])
def test_global_avg_pool(shape, prec):
    torch.manual_seed(sum(shape))
    m = torch.nn.Sequential(torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.ReLU()).eval()
    x = torch.randn(*shape) + 0.25
    trt = torchtrt_c.compile(m, inputs=[x], enabled_precisions={prec}, min_block_size=1)
    srcs = _sources(trt)
    assert srcs and any("#define MODE 3" in s for s in srcs), "the global-average kernel was not used"
    ref = m(x)
    got = trt(x).float()
    tol = 1e-5 if prec == torch.float32 else 2e-3
    err = (got - ref).abs().max().item() / max(ref.abs().max().item(), 1e-6)
    assert err <= tol, f"{shape} {prec}: relative error {err:.3g} > {tol}"


def test_se_block_dynamic_batch():
    torch.manual_seed(1)
    m = _SE(6).eval()
    x = torch.randn(2, 6, 15, 13)
    trt = torchtrt_c.compile(m, inputs=[torchtrt_c.Input(min_shape=(1, 6, 15, 13), opt_shape=(2, 6, 15, 13),
                                                          max_shape=(4, 6, 15, 13))], min_block_size=1)
    assert any("#define MODE 3" in s for s in _sources(trt))
    for b in (1, 3, 4):
        xb = torch.randn(b, 6, 15, 13)
        err = (trt(xb) - m(xb)).abs().max().item()
        assert err <= 1e-5, f"batch {b}: max abs error {err:.3g}"


def test_other_adaptive_sizes_keep_the_plain_kernel():
    m = torch.nn.AdaptiveAvgPool2d((2, 3)).eval()
    x = torch.randn(1, 3, 9, 10)
    trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
    srcs = _sources(trt)
    assert srcs and not any("#define MODE 3" in s for s in srcs)
    assert (trt(x) - m(x)).abs().max().item() <= 1e-5
