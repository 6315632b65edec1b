"""Differential tests of the first-wave converters against torch eager (convtest.py).
Tolerances: elementwise 1e-5 (abs+rel), GEMM/conv/norm 1e-4 (float32 accumulation order
differs from torch), fp16 engines 2e-2."""
import pytest
import torch

import torchtrt_c._C as C
from convtest import Const, check_op, rand

SHAPES = [(7,), (3, 5), (2, 3, 9), (2, 1, 4, 6)]

UNARY = ["relu", "neg", "abs", "exp", "sqrt", "rsqrt", "reciprocal", "sin", "cos", "erf", "floor", "ceil",
         "round", "sign", "sigmoid", "tanh", "silu", "hardswish", "hardsigmoid", "log_sigmoid"]


@pytest.mark.parametrize("op", UNARY)
@pytest.mark.parametrize("shape", SHAPES)
def test_unary(op, shape):
    x = rand(*shape, seed=op)
    if op in ("sqrt", "rsqrt", "log"):
        x = x.abs() + 0.1
    check_op(f"aten.{op}.default", [x], tol=2e-5)


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
@pytest.mark.parametrize("sa,sb", [((3, 5), (3, 5)), ((4, 1, 6), (5, 1)), ((7,), (2, 3, 7)), ((2, 3, 4), ())])
def test_binary_broadcast(op, sa, sb):
    a, b = rand(*sa, seed=1), rand(*sb, seed=2)
    args = [a, b, 1] if op in ("add", "sub") else [a, b]
    check_op(f"aten.{op}.Tensor", args, tol=1e-5)


@pytest.mark.parametrize("op,extra", [("add", [0.5, 2]), ("sub", [1.5, 1]), ("mul", [-3.0]), ("div", [7])])
def test_binary_scalar(op, extra):
    x = rand(5, 3)
    check_op(f"aten.{op}.Tensor", [x] + extra, tol=1e-5)


def test_add_alpha_and_int():
    a = torch.randint(-5, 5, (4, 3))
    b = torch.randint(-5, 5, (3,))
    check_op("aten.add.Tensor", [a, b, 3])
    check_op("aten.mul.Tensor", [a, b])


@pytest.mark.parametrize("op", ["eq", "ne", "lt", "le", "gt", "ge"])
def test_compare(op):
    a, b = rand(4, 6, seed=3), rand(6, seed=4)
    b[0] = a[0, 0]
    check_op(f"aten.{op}.Tensor", [a, b])
    check_op(f"aten.{op}.Scalar", [a, 0.25])


def test_where_masked_fill_clamp():
    c = rand(3, 4, seed=5) > 0
    a, b = rand(3, 4, seed=6), rand(4, seed=7)
    check_op("aten.where.self", [c, a, b])
    check_op("aten.masked_fill.Scalar", [a, c, -1.5])
    check_op("aten.clamp.default", [a, -0.5, 0.75])
    check_op("aten.clamp.default", [a, None, 0.75])
    check_op("aten.hardtanh.default", [a, -1.0, 1.0])
    check_op("aten.leaky_relu.default", [a, 0.2])
    check_op("aten.gelu.default", [a, "none"], tol=2e-5)
    check_op("aten.gelu.default", [a, "tanh"], tol=2e-5)
    check_op("aten.elu.default", [a, 1.0, 1.0, 1.0], tol=2e-5)
    check_op("aten.softplus.default", [a, 1.0, 20.0], tol=2e-5)
    check_op("aten.pow.Tensor_Scalar", [a.abs() + 0.1, 2.5], tol=2e-5)


@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (3, 5, 7), (17, 33, 9), (64, 40, 31)])
def test_mm_addmm_linear(m, k, n):
    a, b = rand(m, k, seed=8), rand(k, n, seed=9)
    check_op("aten.mm.default", [a, b], tol=1e-4)
    check_op("aten.mm.default", [a, Const(b)], tol=1e-4)
    bias = rand(n, seed=10)
    check_op("aten.addmm.default", [bias, a, b, 0.5, 2.0], tol=1e-4)
    w = rand(n, k, seed=11)
    check_op("aten.linear.default", [a, Const(w), Const(bias)], tol=1e-4)
    check_op("aten.linear.default", [rand(2, m, k), Const(w), None], tol=1e-4)


def test_bmm_matmul():
    a, b = rand(3, 5, 7, seed=12), rand(3, 7, 4, seed=13)
    check_op("aten.bmm.default", [a, b], tol=1e-4)
    check_op("aten.matmul.default", [a, b], tol=1e-4)
    check_op("aten.matmul.default", [a, rand(7, 6)], tol=1e-4)


def test_matmul_transposed_operand():
    """q @ k^T: the transposed view is read in place (trans_b GEMM)."""
    q, k = rand(2, 5, 8, seed=14), rand(2, 6, 8, seed=15)
    g = C.Graph()
    qi = g.add_input("q", ("tensor", "float32", [2, 5, 8]))
    ki = g.add_input("k", ("tensor", "float32", [2, 6, 8]))
    d1, d2 = g.add_constant(1), g.add_constant(2)
    (kt,) = g.add_node("aten.transpose.int", [ki, d1, d2], [("tensor", "float32", [2, 8, 6])])
    (s,) = g.add_node("aten.bmm.default", [qi, kt], [("tensor", "float32", [2, 5, 6])])
    g.set_outputs([s])
    e = C.Engine.build(g, cache_dir="")
    import numpy as np
    out = np.empty((2, 5, 6), np.float32)
    e.execute([q.numpy(), k.numpy()], [out])
    np.testing.assert_allclose(out, (q @ k.transpose(1, 2)).numpy(), rtol=1e-4, atol=1e-4)
    assert e.info()["n_kernels"] == 1, e.info()["kernels"]


@pytest.mark.parametrize("stride,pad,dil,groups,cin,cout", [
    (1, 0, 1, 1, 3, 8), (2, 1, 1, 1, 4, 16), (1, 2, 2, 1, 3, 5), (2, 1, 1, 4, 8, 8),
    (1, 1, 1, 6, 6, 6), (1, 1, 1, 2, 6, 20)])
def test_conv2d(stride, pad, dil, groups, cin, cout):
    x = rand(2, cin, 11, 9, seed=16)
    w = rand(cout, cin // groups, 3, 3, seed=17) * 0.3
    b = rand(cout, seed=18)
    check_op("aten.convolution.default", [x, Const(w), Const(b), [stride] * 2, [pad] * 2, [dil] * 2, False, [0, 0], groups],
             tol=1e-4)
    check_op("aten.convolution.default", [x, Const(w), None, [stride, 1], [pad, 0], [1, dil], False, [0, 0], groups],
             tol=1e-4)


def test_conv1d():
    x, w = rand(2, 4, 13), rand(6, 4, 3) * 0.3
    check_op("aten.conv1d.default", [x, Const(w), None, [2], [1], [1], 1], tol=1e-4)


def test_conv_bn_relu_folds():
    x = rand(1, 3, 10, 10)
    w, b = rand(16, 3, 3, 3, seed=19) * 0.3, rand(16, seed=20)
    gamma, beta, mean, var = rand(16, seed=21), rand(16, seed=22), rand(16, seed=23), rand(16, seed=24).abs() + 0.5
    g = C.Graph()
    xi = g.add_input("x", ("tensor", "float32", [1, 3, 10, 10]))
    cs = [g.add_tensor_constant(n, "float32", list(t.shape), t.numpy())
          for n, t in [("w", w), ("b", b), ("g", gamma), ("be", beta), ("m", mean), ("v", var)]]
    L = lambda v: g.add_constant(v)  # noqa: E731
    (c,) = g.add_node("aten.convolution.default", [xi, cs[0], cs[1], L([1, 1]), L([1, 1]), L([1, 1]), L(False),
                                                   L([0, 0]), L(1)], [("tensor", "float32", [1, 16, 10, 10])])
    outs = g.add_node("aten._native_batch_norm_legit_no_training.default",
                      [c, cs[2], cs[3], cs[4], cs[5], L(0.1), L(1e-5)],
                      [("tensor", "float32", [1, 16, 10, 10]), ("tensor", "float32", [0]), ("tensor", "float32", [0])])
    (r,) = g.add_node("aten.relu.default", [outs[0]], [("tensor", "float32", [1, 16, 10, 10])])
    g.set_outputs([r])
    e = C.Engine.build(g, cache_dir="")
    assert e.info()["n_kernels"] == 1, e.info()["kernels"]
    import numpy as np
    out = np.empty((1, 16, 10, 10), np.float32)
    e.execute([x.numpy()], [out])
    ref = torch.relu(torch.nn.functional.batch_norm(torch.nn.functional.conv2d(x, w, b, padding=1), mean, var, gamma,
                                                    beta, eps=1e-5))
    np.testing.assert_allclose(out, ref.numpy(), rtol=1e-4, atol=1e-4)


def test_batch_norm_standalone():
    x = rand(2, 5, 4, 3)
    p = [Const(rand(5, seed=s)) for s in range(3)] + [Const(rand(5, seed=9).abs() + 0.5)]
    check_op("aten._native_batch_norm_legit_no_training.default", [x] + p + [0.1, 1e-5], tol=1e-4, keep=[0])


@pytest.mark.parametrize("k,s,p,ceil", [(2, 2, 0, False), (3, 2, 1, False), (3, 2, 1, True), (3, 1, 1, False)])
def test_pools(k, s, p, ceil):
    x = rand(2, 3, 9, 11)
    check_op("aten.max_pool2d.default", [x, [k, k], [s, s], [p, p], [1, 1], ceil], tol=1e-6)
    check_op("aten.avg_pool2d.default", [x, [k, k], [s, s], [p, p], ceil, True, None], tol=1e-5)
    check_op("aten.avg_pool2d.default", [x, [k, k], [s, s], [p, p], ceil, False, None], tol=1e-5)


@pytest.mark.parametrize("out", [(1, 1), (3, 4), (5, 5)])
def test_adaptive_avg_pool(out):
    check_op("aten._adaptive_avg_pool2d.default", [rand(2, 3, 9, 11), list(out)], tol=1e-5)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax(dim):
    x = rand(4, 7, 5) * 4
    check_op("aten._softmax.default", [x, dim, False], tol=1e-5)
    check_op("aten._log_softmax.default", [x, dim, False], tol=1e-5)


def test_layer_norm_group_norm():
    x = rand(3, 5, 33)
    check_op("aten.layer_norm.default", [x, [33], Const(rand(33, seed=1)), Const(rand(33, seed=2)), 1e-5, True], tol=1e-4)
    check_op("aten.layer_norm.default", [x, [5, 33], None, None, 1e-5, True], tol=1e-4)
    y = rand(2, 6, 4, 5)
    check_op("aten.group_norm.default", [y, 3, Const(rand(6, seed=3)), Const(rand(6, seed=4)), 1e-5, True], tol=1e-4)


@pytest.mark.parametrize("keep", [False, True])
def test_reductions(keep):
    x = rand(3, 4, 5)
    check_op("aten.sum.dim_IntList", [x, [1], keep, None], tol=1e-5)
    check_op("aten.mean.dim", [x, [0, 2], keep, None], tol=1e-5)
    check_op("aten.amax.default", [x, [2], keep], tol=1e-6)
    check_op("aten.amin.default", [x, [0], keep], tol=1e-6)
    check_op("aten.var.correction", [x, [1], 1, keep], tol=1e-5)
    check_op("aten.argmax.default", [x, 1, keep])
    check_op("aten.sum.default", [x, None], tol=1e-5)


def test_views_feeding_elementwise():
    x = rand(2, 3, 4)
    check_op("aten.permute.default", [x, [2, 0, 1]])
    check_op("aten.transpose.int", [x, 0, 2])
    check_op("aten.view.default", [x, [6, 4]])
    check_op("aten.slice.Tensor", [x, 2, 1, 4, 2])
    check_op("aten.select.int", [x, 1, -1])
    check_op("aten.expand.default", [rand(3, 1), [2, 3, 5], False])
    check_op("aten.unsqueeze.default", [x, 1])


def test_dynamic_batch_elementwise_and_linear():
    x = rand(5, 6)
    e = check_op("aten.linear.default", [x, Const(rand(3, 6)), Const(rand(3))], tol=1e-4, dynamic=(1, 4, 9))
    assert e.inputs[0]["shape"][0] == "s0"


def test_fp16_engine():
    x = rand(4, 16)
    check_op("aten.linear.default", [x, Const(rand(8, 16)), Const(rand(8))], tol=3e-2, precision="fp16")
    check_op("aten._softmax.default", [x, 1, False], tol=2e-2, precision="fp16")
