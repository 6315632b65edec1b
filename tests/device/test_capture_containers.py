"""Capture as users call models: kwarg inputs (in any dict order, with Input ranges), outputs
that hold containers (dicts, registered pytree classes), a clear error for a container torch.export
cannot flatten, the [B*S, K] regions that GPT-2- and OPT-style code writes kept 3-D when B and S
are both dynamic, dims our shapes cannot hold running in torch (named in a warning), sizes read
where they are used, and save/load of such a module. Plain torch modules: transformers' own
containers are in tests/models/."""
import dataclasses
import re

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils._pytree as pytree

import torchtrt_c
from zoo import submodules


def _close(out, ref, rtol=1e-5, what="output"):
    o, os_ = pytree.tree_flatten(out)
    r, rs = pytree.tree_flatten(ref)
    assert os_ == rs, f"{what}: structure differs: {os_} vs {rs}"
    for k, (a, b) in enumerate(zip(o, r)):
        assert a.shape == b.shape and a.dtype == b.dtype, f"{what} leaf {k}: {a.shape}/{a.dtype} vs {b.shape}/{b.dtype}"
        err = (a.float() - b.float()).abs().max().item() if a.numel() else 0.0
        scale = max(b.float().abs().max().item() if b.numel() else 0.0, 1e-3)
        assert err <= rtol * scale, f"{what} leaf {k}: max abs err {err:.3g} > {rtol} * {scale:.3g}"


class Masked(nn.Module):
    """input_ids/attention_mask style: an embedding, a Linear over [B, S, K], a masked mean."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(50, 16)
        self.lin = nn.Linear(16, 24)

    def forward(self, input_ids, attention_mask=None, scale=None):
        h = self.lin(self.emb(input_ids))
        m = attention_mask.unsqueeze(-1).to(h.dtype)
        pooled = (h * m).sum(1) / m.sum(1).clamp(min=1.0)
        return {"hidden": h, "pooled": pooled}


def _ids(b, s, seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, 50, (b, s), generator=g)
    am = torch.ones(b, s, dtype=torch.long)
    am[0, s // 2:] = 0
    return ids, am


@pytest.mark.parametrize("order", ["signature", "reversed"])
def test_kwarg_inputs_dynamic_batch_and_seq(order):
    torch.manual_seed(0)
    m = Masked().eval()
    # different dtypes, so that a mix-up of the two specs shows
    kw = {"input_ids": torchtrt_c.Input(min_shape=(1, 2), opt_shape=(2, 8), max_shape=(4, 13), dtype=torch.long),
          "attention_mask": torchtrt_c.Input(min_shape=(1, 2), opt_shape=(2, 8), max_shape=(4, 13), dtype=torch.int32)}
    if order == "reversed":  # the placeholders follow forward's order, not the dict's
        kw = dict(reversed(list(kw.items())))
    trt = torchtrt_c.compile(m, kwarg_inputs=kw, min_block_size=1)
    assert not [n for n, _ in trt.named_children() if n.startswith("_run_on_gpu")]
    for b, s in [(1, 2), (3, 7), (4, 13)]:
        ids, am = _ids(b, s, seed=b * 100 + s)
        am = am.to(torch.int32)
        with torch.no_grad():
            _close(trt(input_ids=ids, attention_mask=am), m(input_ids=ids, attention_mask=am), what=f"B={b} S={s}")
    with pytest.raises(torchtrt_c.InputError, match="attention_mask"):
        trt(input_ids=ids, attention_mask=am.to(torch.long))


class FlatMatmul(nn.Module):
    """GPT-2's Conv1D: x.view(-1, K) @ W + b, viewed back to [B, S, N]; with B and S dynamic the
    flattened dim is B*S (two symbols), so capture keeps the matmul 3-D."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(16, 24) * 0.2)
        self.b = nn.Parameter(torch.randn(24))
        self.w2 = nn.Parameter(torch.randn(24, 5) * 0.2)

    def forward(self, x):
        shp = x.shape[:-1]
        y = torch.addmm(self.b, x.view(-1, x.size(-1)), self.w).view(shp + (24,))
        y = torch.relu(y)
        z = torch.mm(y.view(-1, 24), self.w2).view(shp + (5,))
        return y, z


def test_flattened_matmul_with_two_dynamic_dims():
    torch.manual_seed(0)
    m = FlatMatmul().eval()
    spec = torchtrt_c.Input(min_shape=(1, 1, 16), opt_shape=(2, 5, 16), max_shape=(3, 9, 16))
    trt = torchtrt_c.compile(m, inputs=[spec], min_block_size=1)
    names = [n for n, _ in trt.named_children()]
    assert names == ["_run_on_acc_0"], names
    for shape in [(1, 1, 16), (2, 7, 16), (3, 9, 16)]:
        x = torch.randn(shape)
        with torch.no_grad():
            _close(trt(x), m(x), what=str(shape))


def test_linear_over_two_dynamic_leading_dims():
    """nn.Linear on [B, S, K] with B and S dynamic: a batched GEMM (weight broadcast)."""
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(16, 33), nn.GELU(), nn.Linear(33, 7)).eval()
    spec = torchtrt_c.Input(min_shape=(1, 1, 16), opt_shape=(2, 6, 16), max_shape=(5, 11, 16))
    trt = torchtrt_c.compile(m, inputs=[spec], min_block_size=1)
    assert [n for n, _ in trt.named_children()] == ["_run_on_acc_0"]
    for shape in [(1, 1, 16), (3, 5, 16), (5, 11, 16)]:
        x = torch.randn(shape)
        with torch.no_grad():
            _close(trt(x), m(x), what=str(shape))


@dataclasses.dataclass
class Pair:
    a: torch.Tensor
    b: torch.Tensor


class ReturnsPair(nn.Module):
    def forward(self, x):
        return Pair(torch.relu(x) * 2, x.sum(-1))


def test_unknown_container_is_a_clear_error():
    with pytest.raises(torchtrt_c.Error, match=r"returns a .*Pair.*register_pytree_node") as ei:
        torchtrt_c.compile(ReturnsPair().eval(), inputs=[torch.randn(2, 3)], min_block_size=1)
    assert "Traceback" not in str(ei.value)


def test_unknown_container_clear_error_whatever_export_raises(monkeypatch):
    """torch 2.11's export fails on an unregistered dataclass output with "unhashable type"
    instead of "not a known type"; the error must still name the class and the fix."""
    def export_fails(*a, **k):
        raise TypeError("unhashable type: 'Pair'")
    monkeypatch.setattr(torch.export, "export", export_fails)
    with pytest.raises(torchtrt_c.Error, match=r"returns a .*Pair.*register_pytree_node"):
        torchtrt_c.compile(ReturnsPair().eval(), inputs=[torch.randn(2, 3)], min_block_size=1)


def test_other_export_failures_are_raised_as_they_are(monkeypatch):
    def export_fails(*a, **k):
        raise TypeError("something else entirely")
    monkeypatch.setattr(torch.export, "export", export_fails)
    with pytest.raises(TypeError, match="something else entirely"):
        torchtrt_c.compile(nn.ReLU().eval(), inputs=[torch.randn(2, 3)], min_block_size=1)


def test_registered_container_is_returned():
    pytree.register_dataclass(Pair)
    try:
        m = ReturnsPair().eval()
        x = torch.randn(2, 3)
        trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
        out = trt(x)
        assert isinstance(out, Pair)
        _close(out, m(x))
    finally:
        pytree._deregister_pytree_node(Pair)


def test_save_load_kwargs_and_dict_output(tmp_path):
    torch.manual_seed(0)
    m = Masked().eval()
    spec = torchtrt_c.Input(min_shape=(1, 2), opt_shape=(2, 8), max_shape=(4, 13), dtype=torch.long)
    trt = torchtrt_c.compile(m, kwarg_inputs={"attention_mask": spec, "input_ids": spec}, min_block_size=1)
    p = tmp_path / "masked.ep"
    torchtrt_c.save(trt, p)
    back = torchtrt_c.load(p)
    for b, s in [(1, 3), (4, 13)]:
        ids, am = _ids(b, s, seed=s)
        with torch.no_grad():
            _close(back(input_ids=ids, attention_mask=am), m(input_ids=ids, attention_mask=am),
                   what=f"loaded B={b} S={s}")


class FlattensTwoDynamicDims(nn.Module):
    def forward(self, x):
        return torch.relu(x.reshape(-1)) * 2


def _segments(gm):
    return len(submodules(gm, "_run_on_acc_")), len(submodules(gm, "_run_on_gpu_"))


def test_product_of_two_dynamic_dims_runs_in_torch(caplog):
    """x.reshape(-1) with both dims dynamic has dim s0*s1, which our shapes cannot hold: the
    reshape and what reads it run in torch (right answers at every shape), a warning names the
    node, its source line and what to make static, and the dry run gives the same reason."""
    spec = torchtrt_c.Input(min_shape=(1, 2), opt_shape=(2, 5), max_shape=(4, 9))
    m = FlattensTwoDynamicDims().eval()
    with caplog.at_level("WARNING", logger="torchtrt_c"):
        trt = torchtrt_c.compile(m, inputs=[spec], min_block_size=1)
    assert any(re.search(r"at node .*x.reshape\(-1\).* has dim s\d+\*s\d+;.*a product of dynamic dims, so it "
                         r"runs in torch.*Input with min == max", r.getMessage()) for r in caplog.records), \
        [r.getMessage() for r in caplog.records]
    for shape in [(1, 2), (3, 7), (4, 9), (2, 5)]:
        x = torch.randn(*shape)
        _close(trt(x), m(x), what=f"{shape}")
    rep = torchtrt_c.compile(m, inputs=[spec], min_block_size=1, dryrun=True).dryrun_report
    reasons = [r for _c, rs in rep.unsupported.values() for r in rs]
    assert any("depends on 2 symbols" in r and "runs in torch" in r for r in reasons), rep.unsupported


def test_floor_divided_dynamic_dim_runs_in_torch(caplog):
    """A strided conv over a dynamic length gives (L - k) // s + 1, not affine in L: the conv
    and what follows run in torch, named in a warning."""
    m = nn.Sequential(nn.Conv1d(2, 3, 5, stride=3), nn.ReLU()).eval()
    spec = torchtrt_c.Input(min_shape=(1, 2, 8), opt_shape=(1, 2, 20), max_shape=(1, 2, 40))
    with caplog.at_level("WARNING", logger="torchtrt_c"):
        trt = torchtrt_c.compile(m, inputs=[spec], min_block_size=1)
    assert any(re.search(r"has dim .*//.*floor division.*runs in torch.*Input with min == max", r.getMessage())
               for r in caplog.records), [r.getMessage() for r in caplog.records]
    for n in (8, 17, 40, 23):
        x = torch.randn(1, 2, n)
        with torch.no_grad():
            _close(trt(x), m(x), what=f"length {n}")


class RowBlock(nn.Module):
    """OPT's feed-forward block: x.reshape(-1, K), layer norm, fc1, activation, fc2, a softmax
    over the row's features (dim 1 of the 2-D form), + the flattened residual, view back; then
    a Linear on the 3-D result."""

    def __init__(self, k=12, f=19):
        super().__init__()
        self.ln = nn.LayerNorm(k)
        self.fc1 = nn.Linear(k, f)
        self.fc2 = nn.Linear(f, k)
        self.out = nn.Linear(k, 5)
        self.scale = nn.Parameter(torch.randn(k))

    def forward(self, x):
        shape = x.shape
        h = x.reshape(-1, x.size(-1))
        r = h
        h = self.fc2(torch.nn.functional.gelu(self.fc1(self.ln(h))))
        h = torch.softmax(h, dim=1) * self.scale
        h = (r + h).view(shape)
        return self.out(h)


class RowsToHeads(nn.Module):
    """A projection on the flattened rows viewed straight to heads ([B*S, 2*D] -> [B, S, 2, D]),
    and another flattened back to one dim per batch ([B*S, N] -> [B, S*N])."""

    def __init__(self):
        super().__init__()
        self.q = nn.Linear(8, 12)
        self.o = nn.Linear(8, 3)

    def forward(self, x):
        b, s, k = x.shape
        h = x.reshape(-1, k)
        q = torch.relu(self.q(h)).view(b, s, 2, 6).transpose(1, 2)
        o = self.o(h).view(b, s * 3)
        return q, o


class RowsThenReduce(nn.Module):
    """A flattened [B*S, K] reduced over its rows: no row-wise region, so it stays in torch."""

    def forward(self, x):
        h = x.reshape(-1, x.size(-1))
        return torch.relu(x) * 2, h.sum(0)


def test_row_wise_region_kept_unflattened():
    """With batch and sequence dynamic, the region between x.reshape(-1, K) and the view back
    runs on the 3-D x: one engine, no torch segment, eager's answers at odd shapes."""
    torch.manual_seed(0)
    m = RowBlock().eval()
    spec = torchtrt_c.Input(min_shape=(1, 1, 12), opt_shape=(2, 5, 12), max_shape=(4, 9, 12))
    trt = torchtrt_c.compile(m, inputs=[spec], min_block_size=1)
    assert _segments(trt) == (1, 0), [n for n, _ in trt.named_children()]
    for shape in [(1, 1, 12), (3, 7, 12), (4, 9, 12), (2, 5, 12)]:
        x = torch.randn(*shape)
        with torch.no_grad():
            _close(trt(x), m(x), what=f"{shape}")


def test_row_region_ending_in_other_views():
    """Views that end a row-wise region into another shape reshape its 3-D result: the heads
    view stays in the engine; [B, S*N] (s*3: affine in s, the batch kept) too."""
    torch.manual_seed(0)
    m = RowsToHeads().eval()
    spec = torchtrt_c.Input(min_shape=(1, 1, 8), opt_shape=(2, 5, 8), max_shape=(4, 9, 8))
    trt = torchtrt_c.compile(m, inputs=[spec], min_block_size=1)
    assert _segments(trt) == (1, 0), [n for n, _ in trt.named_children()]
    for shape in [(1, 1, 8), (3, 7, 8), (4, 9, 8)]:
        x = torch.randn(*shape)
        with torch.no_grad():
            _close(trt(x), m(x), what=f"{shape}")


def test_rows_reduced_stay_in_torch():
    m = RowsThenReduce().eval()
    spec = torchtrt_c.Input(min_shape=(1, 1, 6), opt_shape=(2, 5, 6), max_shape=(4, 9, 6))
    trt = torchtrt_c.compile(m, inputs=[spec], min_block_size=1)
    assert _segments(trt)[0] >= 1 and _segments(trt)[1] >= 1, [n for n, _ in trt.named_children()]
    for shape in [(1, 1, 6), (3, 7, 6), (4, 9, 6)]:
        x = torch.randn(*shape)
        _close(trt(x), m(x), what=f"{shape}")


class SizesShared(nn.Module):
    """The input's sizes read once (b, s = ids.shape) and used by views of other tensors, by an
    arange, and returned as an int: the views read the sizes from their own inputs, so the model
    is one engine beside a torch segment of the size and the arange."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(40, 16)
        self.pos = nn.Embedding(32, 16)
        self.q = nn.Linear(16, 16)
        self.k = nn.Linear(16, 16)

    def forward(self, ids):
        b, s = ids.shape
        h = self.emb(ids) + self.pos(torch.arange(s))
        q = self.q(h).view(b, s, 2, 8).transpose(1, 2)
        k = self.k(h).view(b, s, 2, 8).transpose(1, 2)
        a = torch.softmax(q @ k.transpose(-1, -2), dim=-1)
        return (a @ q).transpose(1, 2).reshape(b, s, 16), s


def test_sizes_read_where_they_are_used():
    torch.manual_seed(0)
    m = SizesShared().eval()
    spec = torchtrt_c.Input(min_shape=(1, 2), opt_shape=(2, 8), max_shape=(4, 16), dtype=torch.long)
    rep = torchtrt_c.compile(m, inputs=[spec], min_block_size=1, dryrun=True).dryrun_report
    seg_ops = {op for seg in rep.torch_segments for op in seg.ops}
    assert len(rep.engines) == 1 and seg_ops <= {"aten.sym_size.int", "aten.arange.start_step"}, \
        (len(rep.engines), [dict(seg.ops) for seg in rep.torch_segments])
    trt = torchtrt_c.compile(m, inputs=[spec], min_block_size=1)
    for b, s in [(1, 2), (3, 11), (4, 16)]:
        ids = torch.randint(0, 40, (b, s))
        with torch.no_grad():
            out, ref = trt(ids), m(ids)
        assert out[1] == ref[1] == s
        _close(out[0], ref[0], what=f"{b}x{s}")


class WeightNormed(nn.Module):
    """weight_norm (a parametrization: g * v / ||v|| computed from the weights on every call),
    as Wav2Vec2's positional convolution has it: folded to a constant weight at capture."""

    def __init__(self):
        super().__init__()
        self.conv = nn.utils.parametrizations.weight_norm(nn.Conv1d(4, 6, 5, padding=2, groups=2), dim=2)
        self.scale = nn.Parameter(torch.rand(6) + 0.5)

    def forward(self, x):
        return torch.nn.functional.gelu(self.conv(x)) * self.scale.exp().unsqueeze(-1)


def test_weight_computations_fold_to_constants():
    torch.manual_seed(0)
    m = WeightNormed().eval()
    with torch.no_grad():
        m.conv.parametrizations.weight.original0.mul_(torch.rand_like(m.conv.parametrizations.weight.original0) + 0.5)
    spec = torchtrt_c.Input(min_shape=(1, 4, 11), opt_shape=(2, 4, 11), max_shape=(3, 4, 11))
    trt = torchtrt_c.compile(m, inputs=[spec], min_block_size=1)
    assert [n for n, _ in trt.named_children()] == ["_run_on_acc_0"]
    for b in (1, 3):
        x = torch.randn(b, 4, 11)
        with torch.no_grad():
            _close(trt(x), m(x), what=f"batch {b}")


class SliceBySeq(nn.Module):
    """BERT's token_type_ids / position buffers: a constant sliced to the run-time length."""

    def __init__(self):
        super().__init__()
        self.register_buffer("pos", torch.randn(1, 40, 8))

    def forward(self, x):
        return torch.relu(x + self.pos[:, 1:x.size(1) + 1] * 2)


def test_slice_end_known_only_at_run_time():
    torch.manual_seed(0)
    m = SliceBySeq().eval()
    spec = torchtrt_c.Input(min_shape=(1, 2, 8), opt_shape=(2, 9, 8), max_shape=(3, 39, 8))
    trt = torchtrt_c.compile(m, inputs=[spec], min_block_size=1)
    assert [n for n, _ in trt.named_children()] == ["_run_on_acc_0"]
    for shape in [(1, 2, 8), (2, 17, 8), (3, 39, 8)]:
        x = torch.randn(shape)
        with torch.no_grad():
            _close(trt(x), m(x), what=str(shape))


class ChainedWeights(nn.Module):
    """A weight computation whose result is both used and computed on further (DETR's query
    position embeddings): two folded values, one read by the other."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(9, 5))
        self.b = nn.Parameter(torch.randn(5))

    def forward(self, x):
        w2 = self.w * 2
        return x @ w2, x @ (w2 + self.b).sin()


def test_chained_weight_computations_fold():
    """fold_weight_computations folds every value before it replaces any (it raised
    KeyError '_ttc_folded_0_mul' reading a value it had already replaced, dry run too)."""
    torch.manual_seed(0)
    m = ChainedWeights().eval()
    x = torch.randn(3, 9)
    rep = torchtrt_c.compile(m, inputs=[x], min_block_size=1, dryrun=True).dryrun_report
    assert "engines: 1, torch segments: 0" in str(rep), str(rep)
    trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
    assert submodules(trt, "_run_on_gpu_") == []
    with torch.no_grad():
        _close(trt(x), m(x))


class StdConv(nn.Conv2d):
    """Weight standardisation as timm's StdConv2d/ScaledStdConv2d (NF-Nets) write it: the weight
    normalised by F.batch_norm over its output channels in training mode, every call."""

    def forward(self, x):
        w = F.batch_norm(self.weight.reshape(1, self.out_channels, -1), None, None, training=True,
                         momentum=0.0, eps=1e-6).reshape_as(self.weight)
        return F.conv2d(x, w, self.bias, self.stride, self.padding)


class StdNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = StdConv(3, 8, 3, padding=1)
        self.b = StdConv(8, 5, 1)

    def forward(self, x):
        return self.b(torch.relu(self.a(x)))


def test_weight_standardisation_folds():
    """The standardised weights are computed once at compile time (batch_norm in training mode
    with no running statistics is a pure function of the weight), so the convolutions get
    constant weights: one engine (each convolution fell back: "weights are not a float32/float16
    constant", and the decompositions took torch's whole-program re-trace). Weights computed
    from the inputs stay in torch, and the dry run says why."""
    torch.manual_seed(0)
    m = StdNet().eval()
    spec = torchtrt_c.Input(min_shape=(1, 3, 9, 7), opt_shape=(2, 3, 9, 7), max_shape=(4, 3, 9, 7))
    trt = torchtrt_c.compile(m, inputs=[spec], min_block_size=1)
    assert [n for n, _ in trt.named_children()] == ["_run_on_acc_0"]
    for b in (1, 4):
        x = torch.randn(b, 3, 9, 7)
        with torch.no_grad():
            _close(trt(x), m(x), what=f"batch {b}")


class InputWeights(nn.Module):
    """A convolution whose weight is computed from the model's input (a hypernetwork)."""

    def forward(self, x, w):
        return torch.relu(F.conv2d(x, w * 2, padding=1))


def test_runtime_weights_stay_in_torch_with_the_reason():
    x, w = torch.randn(1, 3, 8, 8), torch.randn(4, 3, 3, 3)
    rep = torchtrt_c.compile(InputWeights().eval(), inputs=[x, w], min_block_size=1, dryrun=True).dryrun_report
    assert "weights are computed at run time from the model's inputs" in str(rep), str(rep)
