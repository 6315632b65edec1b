"""Settings, Input specs and engine metadata: pure Python, no OpenCL device needed."""
import pytest
import torch

import torchtrt_c
from torchtrt_c._settings import CompilationSettings, resolve_op_names
from torchtrt_c.runtime._shapes import Dim, EngineMeta


def test_defaults_match_torch_tensorrt():
    s = CompilationSettings.from_kwargs()
    assert s.min_block_size == 5
    assert s.enabled_precisions == {torch.float32}
    assert s.require_full_compilation is False and s.use_fast_partitioner is True
    assert s.pass_through_build_failures is False and s.truncate_double is False
    assert s.precision() == "fp32" and s.opt_level() == 3


def test_unknown_setting_is_named_with_a_hint():
    with pytest.raises(TypeError, match=r"'min_blok_size' \(did you mean 'min_block_size'\?\)"):
        CompilationSettings.from_kwargs(min_blok_size=3)


@pytest.mark.parametrize("kw, msg", [
    ({"min_block_size": 0}, "min_block_size"),
    ({"min_block_size": "3"}, "min_block_size"),
    ({"debug": "yes"}, "debug"),
    ({"enabled_precisions": {torch.int8}}, "enabled_precisions"),
    ({"optimization_level": 9}, "optimization_level"),
    ({"cpu_memory_budget": -1}, "cpu_memory_budget"),
    ({"torch_executed_ops": {"aten::no_such_op"}}, "unknown op"),
    ({"torch_executed_ops": {"torch.ops.aten.add.NoSuchOverload"}}, "no overload"),
    ({"torch_executed_modules": {3}}, "torch_executed_modules"),
])
def test_ill_typed_settings_raise(kw, msg):
    with pytest.raises((TypeError, ValueError), match=msg):
        CompilationSettings.from_kwargs(**kw)


def test_compile_rejects_bad_settings_before_capture():
    class Boom(torch.nn.Module):
        def forward(self, x):
            raise AssertionError("must not be traced")
    with pytest.raises(TypeError, match="min_blok_size"):
        torchtrt_c.compile(Boom(), inputs=[torch.randn(2)], min_blok_size=1)
    with pytest.raises(ValueError, match="ir="):
        torchtrt_c.compile(Boom(), ir="ts", inputs=[torch.randn(2)])


def test_torch_executed_ops_spellings():
    assert resolve_op_names([torch.ops.aten.add.Tensor]) == ["aten.add.Tensor"]
    assert resolve_op_names(["torch.ops.aten.add.Tensor"]) == ["aten.add.Tensor"]
    every = resolve_op_names(["aten::add"])
    assert "aten.add.Tensor" in every and "aten.add.Scalar" in every
    assert resolve_op_names([torch.ops.aten.lgamma]) == resolve_op_names(["aten::lgamma"])
    assert resolve_op_names(["aten.relu.default"]) == ["aten.relu.default"]


def test_input_specs():
    i = torchtrt_c.Input(min_shape=(1, 3), opt_shape=(8, 3), max_shape=(32, 3))
    assert i.is_dynamic() and i.dynamic_dims() == [0]
    assert tuple(i.example_tensor().shape) == (8, 3)
    j = torchtrt_c.Input(min_shape=(1, 3), opt_shape=(1, 3), max_shape=(4, 3))
    assert tuple(j.example_tensor().shape) == (2, 3)  # never trace a dynamic dim at 1
    s = torchtrt_c.Input((2, 5), dtype=torch.float16)
    assert not s.is_dynamic() and s.example_tensor().dtype == torch.float16
    t = torchtrt_c.Input.from_tensor(torch.zeros(4, 2, dtype=torch.int64))
    assert t.shape == (4, 2) and t.dtype == torch.int64
    with pytest.raises(ValueError, match="min <= opt <= max"):
        torchtrt_c.Input(min_shape=(4,), opt_shape=(2,), max_shape=(8,))
    with pytest.raises(ValueError, match="ranks"):
        torchtrt_c.Input(min_shape=(4,), max_shape=(8, 1))


def test_dim_expressions_round_trip():
    for s in ["s0", "3*s0", "s0+1", "2*s1-3", "7"]:
        assert str(Dim.parse(s)) == s
    assert Dim.parse("2*s0+1").eval({"s0": 5}) == 11


def _meta():
    return EngineMeta({"id": "x", "name": "_run_on_acc_0",
                       "inputs": [{"name": "x", "dtype": "float32", "shape": ["s0", 4]},
                                  {"name": "y", "dtype": "float32", "shape": ["2*s0", 4]}],
                       "outputs": [{"name": "o", "dtype": "float32", "shape": ["3*s0+1", 4]}],
                       "symbols": {"s0": [1, 32]}})


def test_engine_meta_binds_and_checks_inputs():
    m = _meta()
    env = m.bind_inputs([(5, 4), (10, 4)], ["float32", "float32"])
    assert m.output_shapes(env) == [(16, 4)]
    cases = [
        ([(5, 4)], None, "expected 2 input"),
        ([(5, 4), (10, 4)], ["float64", "float32"], "input 'x': expected dtype float32"),
        ([(5, 4, 1), (10, 4)], None, "input 'x': expected rank 2"),
        ([(33, 4), (66, 4)], None, r"input 'x': dim 0 is 33, outside the compiled range \[1, 32\]"),
        ([(5, 3), (10, 4)], None, "input 'x': dim 1 is 3"),
        ([(5, 4), (12, 4)], None, "input 'y': dim 0 is 12, inconsistent"),
        ([(5, 4), (11, 4)], None, "input 'y': dim 0 is 11, expected 2\\*s0"),
    ]
    for shapes, dtypes, msg in cases:
        with pytest.raises(torchtrt_c.InputError, match=msg):
            m.bind_inputs(shapes, dtypes)


def _decomposed_ops(model, x):
    from torchtrt_c.dynamo._capture import capture, decompose
    ep = decompose(capture(model, [torchtrt_c.Input.from_tensor(x)], {}))
    return {str(n.target) for n in ep.graph.nodes if n.op == "call_function"}


def test_decomposition_sets_are_user_adjustable():
    from torchtrt_c.dynamo import lowering
    aten = torch.ops.aten

    class M(torch.nn.Module):
        def forward(self, x):
            return torch.nn.functional.mish(torch.nn.functional.elu(x)) + torch.square(x)

    x = torch.randn(4, 4)
    default = _decomposed_ops(M(), x)
    assert "aten.mish.default" not in default          # torch's default table breaks it up
    assert "aten.elu.default" in default               # not in the default table
    assert "aten.square.default" not in default        # ours: square -> mul
    try:
        lowering.torch_disabled_decompositions.add(aten.mish.default)
        lowering.torch_enabled_decompositions.add(aten.elu.default)
        adjusted = _decomposed_ops(M(), x)
    finally:
        lowering.torch_disabled_decompositions.discard(aten.mish.default)
        lowering.torch_enabled_decompositions.discard(aten.elu.default)
    assert "aten.mish.default" in adjusted and "aten.elu.default" not in adjusted


def test_register_decomposition():
    from torchtrt_c.dynamo.lowering import get_decompositions, register_decomposition
    reg = {}

    @register_decomposition(torch.ops.aten.mish.default, registry=reg)
    def mish(x):
        return x
    assert reg[torch.ops.aten.mish.default] is mish
    with pytest.raises(ValueError, match="already registered"):
        register_decomposition(torch.ops.aten.mish.default, registry=reg)(mish)
    # the native ops stay whole unless asked otherwise
    assert torch.ops.aten.linear.default not in get_decompositions()
    assert torch.ops.aten.linear.default not in get_decompositions(keep=[torch.ops.aten.linear.default])
