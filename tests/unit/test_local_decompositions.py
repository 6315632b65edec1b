"""Node-by-node decompositions (lowering/_local_decomp.py) against torch's whole-program
re-trace (ExportedProgram.run_decompositions) with the same table: the same ops, the same
results, and the re-trace where only it can do the job (issue 15)."""
import collections

import pytest
import torch

from torchtrt_c.dynamo.lowering import get_decompositions
from torchtrt_c.dynamo.lowering._local_decomp import _Rules, decompose_locally


def _ops(ep):
    return collections.Counter(str(n.target) for n in ep.graph.nodes if n.op == "call_function")


def _export(m, *args, dynamic_shapes=None):
    return torch.export.export(m.eval(), args, dynamic_shapes=dynamic_shapes, strict=False)


def _both(m, *args):
    table = get_decompositions()
    ref = _export(m, *args).run_decompositions(get_decompositions())
    ep = _export(m, *args)
    local = decompose_locally(ep, table)
    return ref, local, table


class Convs(torch.nn.Module):
    """conv2d/batch_norm/in-place activations/flatten/dropout: a torchvision-style CNN."""

    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.b1 = torch.nn.BatchNorm2d(8)
        self.c2 = torch.nn.Conv2d(8, 8, 3, padding=1, groups=8, bias=False)
        self.b2 = torch.nn.BatchNorm2d(8)
        self.fc = torch.nn.Linear(8, 5)
        self.drop = torch.nn.Dropout(0.2, inplace=True)

    def forward(self, x):
        y = torch.relu_(self.b1(self.c1(x)))
        z = torch.nn.functional.hardswish(self.b2(self.c2(y)), inplace=True)
        z += y
        z = torch.nn.functional.max_pool2d(z, 2)
        z = torch.flatten(torch.nn.functional.adaptive_avg_pool2d(z, 1), 1)
        return self.fc(self.drop(z))


class Attn(torch.nn.Module):
    """reshape/to/new_ones/arange/& and a torch.no_grad() block (a higher-order op in export)."""

    def __init__(self):
        super().__init__()
        self.qkv = torch.nn.Linear(16, 48)
        self.ln = torch.nn.LayerNorm(16)
        self.drop = torch.nn.Dropout(0.1)

    def forward(self, x):
        b, s, _ = x.shape
        with torch.no_grad():
            pos = torch.arange(s, device=x.device).to(x.dtype)
        mask = x.new_ones(s, s).bool() & (torch.arange(s)[:, None] >= torch.arange(s)[None, :])
        q, k, v = self.qkv(self.ln(x)).reshape(b, s, 3, 2, 8).permute(2, 0, 3, 1, 4)
        o = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        o = o.transpose(1, 2).reshape(b, s, 16) + pos[None, :, None]
        return self.drop(o).to(torch.float32)


@pytest.mark.parametrize("case", ["convs", "attn"])
def test_same_graph_and_results_as_the_retrace(case):
    torch.manual_seed(0)
    if case == "convs":
        m, x = Convs(), torch.randn(2, 3, 9, 11)
        with torch.no_grad():  # batch norm with statistics that are not the identity
            for bn in (m.b1, m.b2):
                bn.running_mean.uniform_(-1, 1)
                bn.running_var.uniform_(0.5, 2)
    else:
        m, x = Attn(), torch.randn(2, 7, 16)
    ref, local, table = _both(m, x)
    assert local is not None, "the local path gave up on a graph it handles"
    assert _ops(local) == _ops(ref), f"ops differ: only re-trace {_ops(ref) - _ops(local)}, only local {_ops(local) - _ops(ref)}"
    rules = _Rules(table)
    left = [n.name for n in local.graph.nodes if n.op == "call_function" and isinstance(n.target, torch._ops.OpOverload)
            and (rules.decomposition(n.target) is not None or n.target._schema.is_mutable)]
    assert not left, f"nodes still to decompose: {left}"
    with torch.no_grad():
        want = m(x.clone())
        got = local.module()(x.clone())
        err = (got - want).abs().max().item()
    assert err <= 1e-5, f"local decomposition differs from eager by {err}"


class MutatesInput(torch.nn.Module):
    def forward(self, x):
        x.add_(1)
        return x * 2


class ReluOnView(torch.nn.Module):
    def forward(self, x):
        y = x * 2
        v = y.view(-1)
        v.relu_()       # mutates y through its view
        return y + 1


@pytest.mark.parametrize("case", ["input", "view", "dynamic"])
def test_retrace_where_only_it_can(case):
    table = get_decompositions()
    x = torch.randn(4, 6)
    if case == "input":
        ep = _export(MutatesInput(), x.clone())
    elif case == "view":
        ep = _export(ReluOnView(), x)
    else:
        ep = _export(Convs(), torch.randn(2, 3, 8, 8),
                     dynamic_shapes=({0: torch.export.Dim("b", min=1, max=8)},))
    before = str(ep.graph)
    assert decompose_locally(ep, table) is None
    assert str(ep.graph) == before, "the program was changed although the local path gave up"
    # and the compile path still decomposes it (torch's re-trace)
    from torchtrt_c.dynamo._capture import decompose
    out = decompose(ep)
    rules = _Rules(get_decompositions())
    assert not [n for n in out.graph.nodes if n.op == "call_function"
                and isinstance(n.target, torch._ops.OpOverload) and n.target._schema.is_mutable]
    del rules


def test_relu_view_semantics_kept():
    """The in-place-on-a-view case gives eager's numbers through the fallback."""
    x = torch.randn(4, 6)
    from torchtrt_c.dynamo._capture import decompose
    ep = decompose(_export(ReluOnView(), x))
    with torch.no_grad():
        got, want = ep.module()(x), ReluOnView()(x)
    assert torch.equal(got, want)


def test_names_that_shadow_builtins_are_kept():
    """torch.export names a Sequential's input "input": the signature must still find it."""
    m = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout(0.1)).eval()
    ep = _export(m, torch.randn(2, 4))
    names = [n.name for n in ep.graph.nodes if n.op == "placeholder"]
    assert decompose_locally(ep, get_decompositions()) is not None
    assert [n.name for n in ep.graph.nodes if n.op == "placeholder"] == names
    want = {s.arg.name for s in ep.graph_signature.input_specs}
    assert want <= set(names)
