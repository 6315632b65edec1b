"""Programs that write their inputs in place (dynamo/_mutations.py): an index_copy_ into an input
(a KV cache update) runs in the engine, on the caller's tensor; any other write (add_) is copied
back by the compiled module. Through torchtrt_c.compile and the torch.compile backend; the
outputs and the inputs' new values against eager on copies. Before, the compiled module failed
at call time (treespec.unflatten: leaves has length 2 but the spec holds 1)."""
import pytest
import torch

import torchtrt_c
from torchtrt_c.runtime import EngineMeta


class CacheUpdate(torch.nn.Module):
    def forward(self, cache, pos, k, buf):
        cache.index_copy_(2, pos, k)          # in place in the engine
        buf.add_(1.0)                         # copied back
        return cache * 2.0 + buf.sum()


def _args(seed=0, L=11, S=2):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(2, 3, L, 5, generator=g), torch.tensor([7, 2][:S]), torch.randn(2, 3, S, 5, generator=g),
            torch.randn(4, generator=g)]


def _check(fn, args):
    ref_args = [a.clone() for a in args]
    want = CacheUpdate()(*ref_args)
    got_args = [a.clone() for a in args]
    got = fn(*got_args)
    assert torch.allclose(got, want, atol=1e-5)
    assert torch.equal(got_args[0], ref_args[0]), "the cache was not written"
    assert torch.allclose(got_args[3], ref_args[3]), "the buffer's new value was not copied back"


def test_compile_writes_inputs():
    args = _args()
    trt = torchtrt_c.compile(CacheUpdate().eval(), inputs=[a.clone() for a in args], min_block_size=1)
    names = [n for n, _ in trt.named_children()]
    assert names == ["_run_on_acc_0"], names
    meta = EngineMeta.from_json(trt._run_on_acc_0.meta)
    assert [meta.inputs[i][0] for i in meta.written] == ["cache"]
    for seed in range(3):
        _check(trt, _args(seed))


def test_backend_writes_inputs():
    fn = torch.compile(CacheUpdate(), backend="torchtrt_c", options={"min_block_size": 1})
    for seed in range(3):
        _check(fn, _args(seed))


@pytest.mark.parametrize("dim", [0, 1, 3])
def test_index_copy_any_dim(dim):
    class M(torch.nn.Module):
        def forward(self, x, idx, src):
            x.index_copy_(dim, idx, src)
            return x + 1.0
    g = torch.Generator().manual_seed(dim)
    x = torch.randn(4, 6, 3, 5, generator=g)
    idx = torch.tensor([3, 0])
    shape = list(x.shape)
    shape[dim] = 2
    src = torch.randn(*shape, generator=g)
    trt = torchtrt_c.compile(M().eval(), inputs=[x.clone(), idx, src], min_block_size=1)
    a, b = x.clone(), x.clone()
    want = M()(a, idx, src)
    got = trt(b, idx, src)
    assert torch.allclose(got, want) and torch.equal(a, b)
