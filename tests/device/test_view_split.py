"""Reshapes that need no copy (csrc/convert/conv_shape.c): a reshape that only splits dims of a
permuted dense tensor becomes a reshape of the dense tensor then a permutation, and a select or
unit-step slice of a dense tensor's leading dim stays dense, so reshaping it is a view. That is
multi-head attention's q/k/v path (torchvision's ViT: select of the packed projection, view,
transpose, view into heads), which made six copy kernels per layer before. Every case is
checked against eager (fp32, exact up to 1e-5) and by the engine's kernel list; the reshapes
that still need a copy (merging permuted dims, selecting an inner dim) are checked too.
"""
import pytest
import torch

import torchtrt_c
import torchtrt_c._C as C
from convtest import assert_close, rand


def _compile(fn, *ins, dynamic=False):
    class M(torch.nn.Module):
        def forward(self, x):
            return fn(x)

    m = M().eval()
    if dynamic:
        spec = [torchtrt_c.Input(min_shape=(1,) + tuple(t.shape[1:]), opt_shape=tuple(t.shape),
                                 max_shape=(4,) + tuple(t.shape[1:])) for t in ins]
        trt = torchtrt_c.compile(m, inputs=spec, min_block_size=1)
    else:
        trt = torchtrt_c.compile(m, inputs=list(ins), min_block_size=1)
    eng = C.Engine.deserialize(bytes(trt._run_on_acc_0.engine.numpy()), cache_dir="")
    return m, trt, eng.info()["kernels"]


def _copies(kernels):
    return [d for d in kernels if d.split()[1] == "elementwise:"]


def _check(fn, ins, copies, dynamic=False, more=()):
    m, trt, kernels = _compile(fn, *ins, dynamic=dynamic)
    with torch.no_grad():
        for x in (ins,) + tuple(more):
            assert_close(trt(*x), m(*x), 1e-5, 1e-5, "reshape views")
    got = _copies(kernels)
    assert len(got) == copies, f"expected {copies} copy kernels, got {got}"


def test_split_of_transposed_is_a_view():
    # [L, B*H, D] -> transpose -> [B*H, L, D] -> view [B, H, L, D]; *2 makes one kernel
    x = rand(5, 6, 8, seed=1)
    _check(lambda x: x.transpose(0, 1).reshape(2, 3, 5, 8) * 2, (x,), copies=1)


def test_split_of_permuted_several_groups():
    x = rand(4, 6, 10, seed=2)
    _check(lambda x: x.permute(2, 0, 1).reshape(2, 5, 2, 2, 3, 2) * 2, (x,), copies=1)


def test_merge_of_transposed_still_copies():
    x = rand(5, 6, 8, seed=3)
    _check(lambda x: x.transpose(0, 1).reshape(30, 8) * 2, (x,), copies=2)


def test_select_of_leading_dim_reshapes_in_place():
    x = rand(3, 5, 8, seed=4)
    _check(lambda x: x[1].reshape(5, 2, 4) * 2, (x,), copies=1)
    _check(lambda x: x[1:3].reshape(2, 5, 2, 4) * 2, (x,), copies=1)
    # an inner dim is strided: the reshape copies
    _check(lambda x: x[:, 1].reshape(3, 2, 4) * 2, (x,), copies=2)


def test_multi_head_attention_path_without_copies():
    """nn.MultiheadAttention (ViT's): the packed in-projection's q/k/v reach SDPA as views (six
    copies before). The copies left: batch_first's transpose into the projection, the
    projection's own .contiguous(), the heads' merge after attention, the transpose back."""
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(32, 4, batch_first=True).eval()
    fn = lambda x: mha(x, x, x, need_weights=False)[0]  # noqa: E731
    x = rand(2, 9, 32, seed=5)
    _check(fn, (x,), copies=4, dynamic=True, more=((rand(3, 9, 32, seed=6),), (rand(1, 9, 32, seed=7),)))


def _kv_cache_first_update(x):
    # Hugging Face's DynamicLayer on its first update: cat of an empty 1-d tensor and the new keys
    k = x.view(x.shape[0], x.shape[1], 3, 4).transpose(1, 2)
    k = torch.cat([torch.tensor([], dtype=x.dtype), k], dim=-2)
    return torch.nn.functional.scaled_dot_product_attention(k, k, k)


@pytest.mark.parametrize("shape", [(2, 5, 12), (3, 7, 12), (1, 1, 12)])
def test_cat_with_empty_is_the_other_input(shape):
    # no concat kernel (attention does not take it as a prologue, so it used to be a copy)
    x = rand(*shape, seed=4)
    m, trt, kernels = _compile(_kv_cache_first_update, x)
    with torch.no_grad():
        assert_close(trt(x), m(x), 1e-5, 1e-5, "cat with an empty 1-d tensor")
    assert not [d for d in kernels if "concat" in d], kernels


def test_cat_with_empty_as_engine_output():
    # the cat's result leaves the engine as a transposed view of a kernel's output
    x = rand(2, 5, 12, seed=5)

    def fn(x):
        y = (x + 1).view(2, 5, 3, 4).transpose(1, 2)
        return torch.cat([torch.tensor([]), y], dim=2)

    m, trt, _ = _compile(fn, x)
    with torch.no_grad():
        out = trt(x)
        assert_close(out, m(x), 1e-6, 1e-6, "cat with an empty 1-d tensor, engine output")
    assert out.shape == (2, 3, 5, 4)


def test_cat_with_empty_and_two_tensors_still_concatenates():
    x = rand(2, 5, seed=6)
    _check(lambda x: torch.cat([torch.tensor([]), x, x * 3], 1), (x,), copies=1)


def _fused_qkv(x, heads, start=0):
    # GPT-2's attention: one projection, split into q/k/v on the last dim, each viewed as heads
    B, L, E3 = x.shape
    E = E3 // 3
    y = x * 2
    q, k, v = y.split(E, dim=2)
    q, k, v = (t.view(B, L, heads, E // heads).transpose(1, 2) for t in (q, k, v))
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)


@pytest.mark.parametrize("shape,heads", [((2, 5, 48), 2), ((3, 7, 24), 4), ((1, 1, 96), 4)])
def test_split_of_slice_is_a_view(shape, heads):
    # the q/k/v head views are slices of the projection split as heads: no copy kernels left
    x = rand(*shape, seed=7)
    _check(lambda x: _fused_qkv(x, heads), (x,), copies=1)


def test_split_of_slice_dynamic_rows():
    x = rand(3, 6, 48, seed=8)
    _check(lambda x: _fused_qkv(x, 4), (x,), copies=1, dynamic=True, more=((rand(1, 6, 48, seed=9),),))


def test_split_of_misaligned_slice_still_copies():
    # a slice starting inside a head (offset 3 of head dim 4) cannot be split as heads: a copy
    x = rand(2, 5, 20, seed=10)
    _check(lambda x: (x * 2)[:, :, 3:19].reshape(2, 5, 4, 4) + 1, (x,), copies=3)


def test_split_of_slice_other_dim_and_negative_start():
    x = rand(4, 6, 10, seed=11)
    # the slice on dim 1 and the split of dim 2 (not the sliced one)
    _check(lambda x: (x * 2)[:, 2:5].reshape(4, 3, 2, 5).transpose(1, 2) * 3, (x,), copies=2)
    # a negative start (x[..., -6:]) keeps the copy path (and its answer)
    _check(lambda x: (x * 2)[..., -6:].reshape(4, 6, 3, 2) + 1, (x,), copies=3)
