"""Nodes that lowering passes create without a name (fuse_linear turns mm + add and addmm
into linear) must still be found when their segment is extracted and stitched."""
import pytest
import torch

import torchtrt_c


class MatmulBias(torch.nn.Module):
    def __init__(self, addmm: bool):
        super().__init__()
        self.addmm = addmm
        self.w = torch.nn.Parameter(torch.randn(9, 5))
        self.b = torch.nn.Parameter(torch.randn(5))

    def forward(self, x):
        y = torch.addmm(self.b, x, self.w) if self.addmm else x @ self.w + self.b
        return torch.relu(y)


@pytest.mark.parametrize("addmm", [False, True])
@pytest.mark.parametrize("prec,tol", [(torch.float32, 1e-5), (torch.float16, 2e-2)])
def test_fused_linear_segment_compiles_and_matches(addmm, prec, tol):
    torch.manual_seed(0)
    m = MatmulBias(addmm).eval()
    x = torch.randn(3, 9)
    c = torchtrt_c.compile(m, inputs=[x], min_block_size=1, enabled_precisions={prec})
    engines = [n for n, _ in c.named_children() if n.startswith("_run_on_acc")]
    assert engines, "expected the linear to run in an engine"
    with torch.no_grad():
        ref = m(x)
        got = c(x)
    err = ((got - ref).abs() / (1 + ref.abs())).max().item()
    assert err <= tol, f"max error {err} > {tol}"
