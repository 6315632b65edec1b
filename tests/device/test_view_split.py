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
    # a select of an inner dim: the split goes down to the dense tensor (a view too)
    _check(lambda x: x[:, 1].reshape(3, 2, 4) * 2, (x,), copies=1)
    # merging dims of a strided select still copies
    _check(lambda x: x[:, 1].reshape(24) * 2, (x,), copies=2)


def test_multi_head_attention_path_without_copies():
    """nn.MultiheadAttention (ViT's): the packed in-projection's q/k/v reach SDPA as views (six
    copies before session 6, four before session 8). batch_first's transpose into the
    projection is now the projection's output permuted (conv_matmul.c), its .contiguous() and
    the heads' split views (merge_split_views + conv_shape.c's split_down). The copies left:
    the heads' merge after attention and the transpose back (the engine's output)."""
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(32, 4, batch_first=True).eval()
    fn = lambda x: mha(x, x, x, need_weights=False)[0]  # noqa: E731
    x = rand(2, 9, 32, seed=5)
    _check(fn, (x,), copies=2, dynamic=True, more=((rand(3, 9, 32, seed=6),), (rand(1, 9, 32, seed=7),)))


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


def _vit_attention(x, heads, w):
    # torchvision's ViT through nn.MultiheadAttention's packed in-projection, written out:
    # batch_first transpose, one projection, unflatten/unsqueeze/transpose/squeeze/contiguous,
    # select q/k/v, view(L, B*H, D).transpose(0, 1).view(B, H, L, D)
    B, L, E = x.shape
    D = E // heads
    p = torch.nn.functional.linear(x.transpose(1, 0), w)
    p = p.unflatten(-1, (3, E)).unsqueeze(0).transpose(0, -2).squeeze(-2).contiguous()
    q, k, v = (p[i].view(L, B * heads, D).transpose(0, 1).view(B, heads, L, D) for i in range(3))
    return torch.nn.functional.scaled_dot_product_attention(q, k, v)


@pytest.mark.parametrize("shape,heads", [((2, 5, 16), 4), ((3, 7, 12), 2), ((1, 9, 8), 1)])
def test_vit_attention_views(shape, heads):
    # no copy kernel at all before the attention (three used to be left: the transpose into the
    # projection, the projection's .contiguous() and, once that was gone, one per q/k/v)
    x = rand(*shape, seed=13)
    w = rand(3 * shape[2], shape[2], seed=17) * 0.25
    m, trt, kernels = _compile(lambda x: _vit_attention(x, heads, w), x)
    with torch.no_grad():
        assert_close(trt(x), m(x), 1e-4, 1e-4, "ViT attention views")  # fp32 GEMM + softmax order
    assert not _copies(kernels), kernels


def test_vit_attention_views_dynamic_batch():
    x = rand(3, 7, 16, seed=14)
    w = rand(48, 16, seed=18) * 0.25
    m, trt, kernels = _compile(lambda x: _vit_attention(x, 4, w), x, dynamic=True)
    with torch.no_grad():
        for b in (1, 3, 4):
            y = rand(b, 7, 16, seed=15 + b)
            assert_close(trt(y), m(y), 1e-4, 1e-4, f"ViT attention views, batch {b}")
    assert not _copies(kernels), kernels


@pytest.mark.parametrize("case", ["merge_kept", "other_split", "size_one", "two_symbolic"])
def test_merge_then_permute_then_reshape(case):
    # chains the rewrite must leave alone (or apply to with size-1 dims), all checked vs eager
    x = rand(4, 6, 10, seed=16)
    if case == "merge_kept":      # the last reshape keeps the merge: a copy stays
        fn, copies = (lambda x: (x * 2).transpose(0, 1).reshape(6, 40).t().reshape(40, 6) + 1), None
    elif case == "other_split":   # re-split at another boundary (4*6 as 3, 8): not the atoms
        fn, copies = (lambda x: (x * 2).transpose(1, 2).reshape(40, 6).t().reshape(3, 2, 40) + 1), None
    elif case == "size_one":      # size-1 dims in the last reshape: still views
        fn, copies = (lambda x: (x * 2)[1].view(6, 5, 2).transpose(0, 1).reshape(5, 1, 6, 2) + 1), 2
    else:
        fn, copies = (lambda x: (x * 2).reshape(24, 10).t().reshape(10, 4, 6).permute(1, 2, 0) + 1), None
    m, trt, kernels = _compile(fn, x)
    with torch.no_grad():
        assert_close(trt(x), m(x), 1e-6, 1e-6, case)
    if copies is not None:
        assert len(_copies(kernels)) == copies, kernels
