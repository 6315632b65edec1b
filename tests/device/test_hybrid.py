"""Hybrid execution (Torch-TensorRT style): forced or unsupported ops run in `_run_on_gpu_N`
torch segments and nowhere else; engine counts are what partitioning promises."""
import pytest
import torch
import torch.nn as nn

import torchtrt_c
from zoo import assert_tree_close, ops_in, submodules



class LgammaModel(nn.Module):
    """seeds/000: add, lgamma(x), mul, lgamma(y), div, lgamma(div), cat."""

    def forward(self, x, y):
        add = x + y
        xl = torch.lgamma(x)
        mul = x * y
        yl = torch.lgamma(y)
        div = x / y
        dl = torch.lgamma(div)
        return torch.cat([xl, yl, dl, add, mul], 0)


def _positive(*shape):
    return torch.rand(*shape) + 0.5


@pytest.mark.parametrize("forced", [{"aten::lgamma"}, {torch.ops.aten.lgamma.default},
                                    {"torch.ops.aten.lgamma.default"}])
def test_lgamma_model_two_engines_one_torch_segment(forced):
    m = LgammaModel().eval()
    x, y = _positive(2, 3), _positive(2, 3)
    trt = torchtrt_c.compile(m, inputs=[x, y], min_block_size=1, torch_executed_ops=forced)
    acc, gpu = submodules(trt, "_run_on_acc_"), submodules(trt, "_run_on_gpu_")
    assert len(acc) == 2 and len(gpu) == 1, (acc, gpu)
    assert ops_in(getattr(trt, gpu[0])) == {"aten.lgamma.default"}
    assert_tree_close(trt(x, y), m(x, y))


class ConvAdd(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, padding=1)
        self.c2 = nn.Conv2d(8, 8, 3, padding=1)
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        a = torch.relu(self.c1(x))
        b = torch.relu(self.c2(a)) + a
        return self.fc(b.mean((2, 3)))


def test_forced_op_lands_only_in_torch_segments():
    torch.manual_seed(0)
    m = ConvAdd().eval()
    x = torch.randn(2, 3, 8, 8)
    trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1,
                             torch_executed_ops={torch.ops.aten.add.Tensor})
    gpu = submodules(trt, "_run_on_gpu_")
    assert gpu, "the forced add must run in torch"
    assert any("aten.add.Tensor" in ops_in(getattr(trt, g)) for g in gpu)
    assert len(submodules(trt, "_run_on_acc_")) == 2  # before and after the add
    assert_tree_close(trt(x), m(x))


class Inner(nn.Module):
    def forward(self, x):
        return torch.tanh(x) * 3


class WithInner(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1, self.inner, self.l2 = nn.Linear(6, 6), Inner(), nn.Linear(6, 6)

    def forward(self, x):
        return self.l2(self.inner(torch.relu(self.l1(x))))


@pytest.mark.parametrize("mods", [{Inner}, {"inner"}])
def test_torch_executed_modules(mods):
    m = WithInner().eval()
    x = torch.randn(3, 6)
    trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1, torch_executed_modules=mods)
    gpu = submodules(trt, "_run_on_gpu_")
    assert len(gpu) == 1
    assert ops_in(getattr(trt, gpu[0])) == {"aten.tanh.default", "aten.mul.Tensor"}
    assert len(submodules(trt, "_run_on_acc_")) == 2
    assert_tree_close(trt(x), m(x))


def test_min_block_size_sends_small_blocks_to_torch():
    m = LgammaModel().eval()
    x, y = _positive(2, 3), _positive(2, 3)
    trt = torchtrt_c.compile(m, inputs=[x, y], min_block_size=10, torch_executed_ops={"aten::lgamma"})
    assert submodules(trt, "_run_on_acc_") == []
    assert_tree_close(trt(x, y), m(x, y))


def test_require_full_compilation_refuses_fallback():
    with pytest.raises(torchtrt_c.Error, match="lgamma"):
        torchtrt_c.compile(LgammaModel().eval(), inputs=[_positive(2, 3), _positive(2, 3)],
                           min_block_size=1, require_full_compilation=True,
                           torch_executed_ops={"aten::lgamma"})


def test_non_tensor_values_cross_segment_boundaries():
    class M(nn.Module):
        def forward(self, x):
            n = x.shape[0]
            y = torch.lgamma(torch.relu(x) + 1)       # torch
            return (y * 2).reshape(n, -1), n

    x = torch.randn(4, 2, 3)
    inp = torchtrt_c.Input(min_shape=(1, 2, 3), opt_shape=(4, 2, 3), max_shape=(8, 2, 3))
    trt = torchtrt_c.compile(M().eval(), inputs=[inp], min_block_size=1, torch_executed_ops={"aten::lgamma"})
    for b in (1, 4, 8):
        xb = torch.randn(b, 2, 3)
        assert_tree_close(trt(xb), M()(xb))


def test_partitioning_functions_from_python():
    from torchtrt_c.dynamo.partitioning import fast_partition, global_partition, get_graph_converter_support
    m = LgammaModel().eval()
    x, y = _positive(2, 3), _positive(2, 3)
    gm = torch.export.export(m, (x, y)).run_decompositions().module()
    sup, total = get_graph_converter_support(gm, torch_executed_ops={"aten::lgamma"})
    no_mul, total2 = get_graph_converter_support(gm, torch_executed_ops={"aten::lgamma", "aten::mul"})
    assert total == total2 >= 7 and sup <= total - 3
    assert sup - no_mul == 1   # forcing mul takes exactly its one node away
    for fn in (fast_partition, global_partition):
        pgm, overview = fn(gm, min_block_size=1, torch_executed_ops={"aten::lgamma"})
        assert len(submodules(pgm, "_run_on_acc_")) == 2
        assert len(submodules(pgm, "_run_on_gpu_")) == 1
        assert overview["total"] == total
        assert_tree_close(pgm(x, y), m(x, y))


def test_resource_partitioning_splits_engines_under_a_budget():
    from zoo import build
    m, inp = build("resnet18", "tiny")
    x = inp(2)
    whole = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
    split = torchtrt_c.compile(m, inputs=[x], min_block_size=1, enable_resource_partitioning=True,
                               cpu_memory_budget=20000)
    assert len(submodules(whole, "_run_on_acc_")) == 1
    assert len(submodules(split, "_run_on_acc_")) > 1
    assert submodules(split, "_run_on_gpu_") == []
    assert_tree_close(split(x), m(x))


def test_hierarchical_partition_names_backends():
    from zoo import build
    from torchtrt_c.dynamo.partitioning import hierarchical_adjacency_partition
    m, inp = build("resnet18", "tiny")
    x = inp(2)
    gm = torch.export.export(m, (x,)).run_decompositions().module()
    pgm, _ = hierarchical_adjacency_partition(
        gm, min_block_size=1, backend_priority=["opencl", "other"],
        backend_support_map={"opencl": ["aten::relu", "aten::add"], "other": ["aten::convolution"]})
    names = [n for n, _ in pgm.named_children()]
    assert any(n.startswith("_run_on_acc_other_") for n in names)
    for n in names:
        if n.startswith("_run_on_acc_other_"):
            assert ops_in(getattr(pgm, n)) == {"aten.convolution.default"}
    assert_tree_close(pgm(x), m(x))


def test_python_ops_on_sizes_rebuild_in_torch():
    class M(nn.Module):
        def forward(self, x):
            n = x.shape[0]
            return (torch.relu(x) * 2).reshape(n * 4, -1) + 1   # operator.mul on a SymInt

    spec = torchtrt_c.Input(min_shape=(1, 4, 6), opt_shape=(4, 4, 6), max_shape=(8, 4, 6))
    # size arithmetic that only shapes a view runs inside an engine now; keeping the view in
    # torch keeps the py.mul there too (scalars do not cross engine boundaries)
    trt = torchtrt_c.compile(M(), inputs=[spec], min_block_size=1, torch_executed_ops={"aten::view"})
    gpu_code = "".join(getattr(trt, g).code for g in submodules(trt, "_run_on_gpu_"))
    assert "sym_size_int" in gpu_code and "* 4" in gpu_code
    for b in (1, 3, 8):
        x = torch.randn(b, 4, 6)
        assert_tree_close(trt(x), M()(x))
