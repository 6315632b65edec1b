"""Out-of-range indices raise instead of being clamped: embedding, index_select, gather and
index.Tensor kernels set an error flag (one int per execution context) and execute raises
InputError naming the node after the call, as torch raises. As in torch, x[idx] takes
[-size, size) (negative counts from the end) while embedding/index_select/gather take
[0, size) only; an engine that raised runs the next valid call correctly (the flag is reset
per call)."""
import pytest
import torch

import torchtrt_c
from convtest_data import Const, In, TList, assert_close, build, rand_tensor, run



def _raises_naming_node(eng, tensors):
    with pytest.raises(torchtrt_c.InputError, match=r"node \S+: index out of range"):
        run(eng, tensors)


def test_embedding_row_past_the_table():
    w = rand_tensor((9, 5))
    eng = build("aten.embedding.default", [Const(w), In("ids", "int64", [2, 3]), -1, False, False],
                [("tensor", "float32", [2, 3, 5])])
    for bad in (9, 1000, -1, -10):  # torch raises on negative rows too
        ix = torch.tensor([[1, 2, 3], [4, bad, 0]])
        _raises_naming_node(eng, [ix])
    ok = torch.tensor([[8, 0, 3], [4, 7, 1]])
    assert_close(run(eng, [ok])[0], torch.nn.functional.embedding(ok, w), 0, 0, "embedding after an error")


@pytest.mark.parametrize("dim", [0, 1])
def test_index_select_out_of_range(dim):
    a = rand_tensor((6, 4))
    eng = build("aten.index_select.default", [In("x", "float32", [6, 4]), dim, In("i", "int32", [3])],
                [("tensor", "float32", [3, 4] if dim == 0 else [6, 3])])
    _raises_naming_node(eng, [a, torch.tensor([0, a.shape[dim], 1], dtype=torch.int32)])
    _raises_naming_node(eng, [a, torch.tensor([0, -1, 1], dtype=torch.int32)])  # torch: no negatives here
    ok = torch.tensor([a.shape[dim] - 1, 0, 1], dtype=torch.int32)
    assert_close(run(eng, [a, ok])[0], torch.index_select(a, dim, ok.long()), 0, 0, "index_select")


def test_gather_out_of_range():
    a = rand_tensor((5, 7))
    eng = build("aten.gather.default", [In("x", "float32", [5, 7]), 1, In("i", "int64", [5, 2]), False],
                [("tensor", "float32", [5, 2])])
    ix = torch.zeros(5, 2, dtype=torch.int64)
    ix[3, 1] = 7
    with pytest.raises(RuntimeError, match="out of bounds"):
        torch.gather(a, 1, ix)  # torch raises too
    _raises_naming_node(eng, [a, ix])
    ix[3, 1] = -1
    _raises_naming_node(eng, [a, ix])
    ix[3, 1] = 6
    assert_close(run(eng, [a, ix])[0], torch.gather(a, 1, ix), 0, 0, "gather")


def test_index_tensor_negative_in_range_and_out_of_range():
    a = rand_tensor((5, 3))
    eng = build("aten.index.Tensor", [In("x", "float32", [5, 3]), TList([In("i", "int64", [4])])],
                [("tensor", "float32", [4, 3])])
    ok = torch.tensor([-5, -1, 0, 4])
    assert_close(run(eng, [a, ok])[0], a[ok], 0, 0, "x[i] with negative indices")
    for bad in (5, -6):
        ix = torch.tensor([0, bad, 1, 2])
        with pytest.raises(IndexError):
            a[ix]
        _raises_naming_node(eng, [a, ix])


def test_compiled_embedding_model_raises_input_error():
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(11, 6)

        def forward(self, ids):
            return torch.relu(self.emb(ids)).sum(-1)

    m = M().eval()
    ids = torch.randint(0, 11, (2, 5))
    trt = torchtrt_c.compile(m, inputs=[ids], min_block_size=1, require_full_compilation=True)
    torch.testing.assert_close(trt(ids), m(ids))
    bad = ids.clone()
    bad[1, 2] = 11
    with pytest.raises(torchtrt_c.InputError, match="index out of range"):
        trt(bad)
    torch.testing.assert_close(trt(ids), m(ids))


def test_resident_benchmark_of_an_index_engine_runs():
    # the benchmark path binds its own flag buffer (it times, it does not check)
    w = rand_tensor((9, 5))
    eng = build("aten.embedding.default", [Const(w), In("ids", "int64", [4]), -1, False, False],
                [("tensor", "float32", [4, 5])])
    times = eng.benchmark([torch.tensor([0, 8, 3, 1]).numpy()], runs=3, warmup=1)
    assert len(times) == 3 and all(t > 0 for t in times)
