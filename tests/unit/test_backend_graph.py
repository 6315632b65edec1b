"""How the torch.compile backend reads dynamo's graphs (no OpenCL device needed): which inputs are
frozen weights, which are sizes and with what bounds; and which nodes of a graph that mixes
devices are left to torch (with fake CUDA tensors, so it runs on a CPU-only torch too)."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch._subclasses.fake_tensor import FakeTensorMode

from torchtrt_c.backend import CONST, FIXED, SIZE, TENSOR, _Roles
from torchtrt_c.dynamo._compiler import engine_device, forced_nodes_for_devices


def _roles(model, *calls, dynamic=None, mark=None):
    """The backend's reading (_Roles) of each graph dynamo makes for these calls, taken while
    dynamo hands the graph over (it drops the placeholders' metadata afterwards)."""
    got = []

    def keep(gm, ex):
        got.append((_Roles(gm, list(ex)), [n.name for n in gm.graph.nodes if n.op == "placeholder"], list(ex)))
        return gm.forward

    torch._dynamo.reset()
    f = torch.compile(model, backend=keep, dynamic=dynamic)
    for args in calls:
        if mark:
            mark(args)
        f(*args)
    return got


class ConvBN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.bn = nn.BatchNorm2d(4)
        self.register_buffer("steps", torch.zeros(()))
        self.register_buffer("cache", torch.zeros(2, 4))

    def forward(self, x, pos):
        self.steps.add_(1)                              # a counter the model writes
        self.cache.view(-1).index_copy_(0, pos, pos.float())   # a cache written through a view
        return F.relu(self.bn(self.conv(x))).sum() + self.cache.sum()


def test_weights_are_constants_and_mutated_buffers_are_not():
    m = ConvBN().eval()
    [(roles, names, _)] = _roles(m, (torch.randn(1, 3, 8, 8), torch.tensor([1, 5])))
    by = dict(zip(names, roles.roles))
    consts = sorted(n for n, r in by.items() if r == CONST)
    assert all(("conv" in n or "bn" in n) for n in consts) and len(consts) == 6, by   # w, b, bn w/b/mean/var
    assert by[next(n for n in names if "steps" in n)] == TENSOR, by
    assert by[next(n for n in names if "cache" in n)] == TENSOR, by
    assert [r for n, r in by.items() if "x" in n.split("_")] == [TENSOR], by


class Seq(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(8, 8)

    def forward(self, x, n: int):
        return self.l(x)[:, :n] * 2


def test_sizes_are_derived_and_bounded_by_mark_dynamic():
    def mark(args):
        torch._dynamo.mark_dynamic(args[0], 0, min=2, max=48)
    [(roles, _, ex)] = _roles(Seq().eval(), (torch.randn(5, 3, 8), 3), mark=mark)
    assert roles.dynamic and len(roles.symbols) == 1, roles.roles
    (s,) = roles.symbols
    assert roles.bounds[s] == (2, 48), roles.bounds
    assert roles.roles.count(SIZE) == 1 and roles.roles.count(CONST) == 2, roles.roles
    assert roles.values(ex) == {s: 5}


def test_unbounded_size_and_an_int_input_read_by_value():
    # dynamic=True: the int n is a symbol that is no tensor's size, so it stays fixed per compile
    [(roles, _, _)] = _roles(Seq().eval(), (torch.randn(5, 4, 8), 3), dynamic=True)   # 3: no size
    assert FIXED in roles.roles and SIZE in roles.roles, roles.roles
    for s in roles.symbols:
        assert roles.bounds[s][1] is None, roles.bounds   # no upper bound: the backend buckets it


def _rotary_graph(dev):
    """A GPU model's rotary angles from host-side position ids, as capture gives them (aten):
    the ids cast and scaled on the CPU, moved to the weights' device, then cos/sin there."""
    A = torch.ops.aten
    g = torch.fx.Graph()
    inv, pos, x = g.placeholder("inv_freq"), g.placeholder("pos"), g.placeholder("x")
    f = g.call_function(A._to_copy.default, (pos,), {"dtype": torch.float32})
    f = g.call_function(A.mul.Tensor, (f, 0.5))
    f = g.call_function(A.unsqueeze.default, (f, 1))
    f = g.call_function(A._to_copy.default, (f,), {"device": torch.device(dev)})
    ang = g.call_function(A.mul.Tensor, (f, inv))
    y = g.call_function(A.add.Tensor, (g.call_function(A.mul.Tensor, (x, g.call_function(A.cos.default, (ang,)))),
                                        g.call_function(A.mul.Tensor, (x, g.call_function(A.sin.default, (ang,))))))
    g.output(y)
    gm = torch.fx.GraphModule(torch.nn.Module(), g)
    from torch.fx.passes.fake_tensor_prop import FakeTensorProp
    with FakeTensorMode(allow_non_fake_inputs=True) as mode:
        ins = (torch.empty(4, device=dev), torch.empty(6, dtype=torch.long), torch.empty(6, 4, device=dev))
        FakeTensorProp(gm, mode).propagate(*ins)
    return g


def test_nodes_on_another_device_than_the_engines_run_in_torch():
    g = _rotary_graph("cuda")
    assert engine_device(g) == torch.device("cuda:0")
    forced = forced_nodes_for_devices(g)
    ops = {n.name: str(n.target) for n in g.nodes}
    # the CPU part (cast, scale, unsqueeze) and the copy to the GPU; nothing that runs on the GPU alone
    assert sorted(ops[n] for n in forced) == sorted(["aten._to_copy.default", "aten.mul.Tensor",
                                                     "aten.unsqueeze.default", "aten._to_copy.default"]), forced
    assert all("on cpu, beside the engines' cuda:0" in r for r in forced.values()), forced


def test_one_device_graph_forces_nothing():
    g = _rotary_graph("cpu")
    assert engine_device(g) == torch.device("cpu")
    assert forced_nodes_for_devices(g) == {}
