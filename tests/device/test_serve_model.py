"""torchtrt_c.serve's replica-side model (ServedModel) and HTTP bodies, without Ray: requests
checked against the saved module's inputs, batched along dim 0 (grouped by their other dims,
padded up to the module's smallest batch, cut at its largest), results split back per request and
equal to eager; the health probe runs the engine; files that are no compiled module are refused.
The Ray deployment itself is tested in tests/models/test_serve_ray.py."""
import json

import pytest
import torch
import torch.nn as nn

import torchtrt_c
from torchtrt_c.serve import _wire
from torchtrt_c.serve._model import ServedModel

TOL = dict(rtol=1e-5, atol=1e-5)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1, self.l2 = nn.Linear(7, 19), nn.Linear(19, 5)

    def forward(self, x):
        h = torch.relu(self.l1(x))
        return self.l2(h), h.sum(-1)


class Masked(nn.Module):
    """Two keyword inputs with a dynamic second dim (a sequence), like a tokenizer's output."""

    def __init__(self):
        super().__init__()
        self.emb, self.out = nn.Embedding(50, 12), nn.Linear(12, 3)

    def forward(self, ids, mask):
        h = self.emb(ids) * mask.unsqueeze(-1).to(torch.float32)
        return {"pooled": self.out(h.sum(1)), "tokens": h}


@pytest.fixture(scope="module")
def mlp(tmp_path_factory):
    torch.manual_seed(0)
    m = MLP().eval()
    trt = torchtrt_c.compile(m, inputs=[torchtrt_c.Input(min_shape=(1, 7), opt_shape=(4, 7), max_shape=(8, 7))],
                             min_block_size=1)
    path = tmp_path_factory.mktemp("serve") / "mlp.ep"
    torchtrt_c.save(trt, path)
    return m, path


def test_requests_batch_into_one_call_and_split_back(mlp):
    m, path = mlp
    sm = ServedModel(path, device="cpu")
    assert (sm.min_rows, sm.max_rows) == (1, 8)   # declared 1..8 (export reports 2..8)
    xs = [torch.randn(r, 7) for r in (1, 3, 2)]
    outs = sm.run([sm.request((x,)) for x in xs])
    assert sm.engine_calls == 1 and sm.requests == 3
    for x, got in zip(xs, outs):
        want = m(x)
        assert got[0].shape == want[0].shape and got[1].shape == want[1].shape
        torch.testing.assert_close(got, tuple(w.detach() for w in want), **TOL)


def test_large_request_is_cut_at_the_batch_range_and_joined(mlp):
    m, path = mlp
    sm = ServedModel(path, device="cpu")
    x = torch.randn(19, 7)
    parts = sm.chunks(sm.request((x,)))
    assert [p.rows for p in parts] == [8, 8, 3]
    got = sm.join([sm.run([p])[0] for p in parts])
    torch.testing.assert_close(got, tuple(w.detach() for w in m(x)), **TOL)
    assert [p.rows for p in sm.chunks(sm.request((x,)), limit=5)] == [5, 5, 5, 4]


def test_static_batch_is_padded_and_padding_dropped(tmp_path):
    torch.manual_seed(1)
    m = MLP().eval()
    trt = torchtrt_c.compile(m, inputs=[torch.randn(4, 7)], min_block_size=1)
    torchtrt_c.save(trt, tmp_path / "static.ep")
    sm = ServedModel(tmp_path / "static.ep", device="cpu")
    assert (sm.min_rows, sm.max_rows) == (4, 4)
    xs = [torch.randn(1, 7), torch.randn(2, 7)]
    outs = sm.run([sm.request((x,)) for x in xs])   # 3 rows + 1 padding row, one call
    assert sm.engine_calls == 1
    for x, got in zip(xs, outs):
        assert got[0].shape[0] == x.shape[0]
        torch.testing.assert_close(got, tuple(w.detach() for w in m(x)), **TOL)


def test_keyword_inputs_group_by_sequence_length(tmp_path):
    torch.manual_seed(2)
    m = Masked().eval()
    I = torchtrt_c.Input
    spec = {"ids": I(min_shape=(1, 2), opt_shape=(2, 6), max_shape=(6, 9), dtype=torch.long),
            "mask": I(min_shape=(1, 2), opt_shape=(2, 6), max_shape=(6, 9), dtype=torch.long)}
    trt = torchtrt_c.compile(m, kwarg_inputs=spec, min_block_size=1)
    torchtrt_c.save(trt, tmp_path / "masked.ep")
    sm = ServedModel(tmp_path / "masked.ep", device="cpu")
    assert [s.name for s in sm.inputs] == ["ids", "mask"]
    reqs, wants = [], []
    for rows, seq in [(2, 6), (1, 3), (3, 6), (1, 9)]:
        ids = torch.randint(0, 50, (rows, seq))
        mask = (torch.rand(rows, seq) > 0.3).long()
        # positional and keyword calls both fit the module's keyword-only export
        reqs.append(sm.request((ids,), {"mask": mask}) if rows == 1 else sm.request((), {"ids": ids, "mask": mask}))
        wants.append(m(ids=ids, mask=mask))
    outs = sm.run(reqs)
    assert sm.engine_calls == 3   # sequences 6 (two requests), 3 and 9
    for got, want in zip(outs, wants):
        assert set(got) == {"pooled", "tokens"}
        torch.testing.assert_close(got["pooled"], want["pooled"].detach(), **TOL)
        torch.testing.assert_close(got["tokens"], want["tokens"].detach(), **TOL)


@pytest.mark.parametrize("args,kwargs,match", [
    ((torch.randn(2, 7).double(),), {}, "dtype torch.float64, the module takes torch.float32"),
    ((torch.randn(2, 6),), {}, r"shape \(2, 6\): dim 1 is out of range"),
    ((torch.randn(9, 7),), {}, None),  # more rows than the range: cut into chunks, not refused
    ((), {}, "missing input"),
    ((torch.randn(2, 7), torch.randn(2, 7)), {}, "2 positional inputs given, the module takes 1"),
    ((), {"y": torch.randn(2, 7)}, "unknown input 'y'"),
    (([[1.0] * 7],), {}, "is a list, not a tensor"),
    ((torch.randn(0, 7),), {}, "0 rows"),
])
def test_bad_requests_are_refused_by_name(mlp, args, kwargs, match):
    sm = ServedModel(mlp[1], device="cpu")
    if match is None:
        assert sm.request(args, kwargs).rows == 9
        return
    with pytest.raises(torchtrt_c.InputError, match=match):
        sm.request(args, kwargs)


def test_health_probe_runs_the_engine(mlp):
    from torchtrt_c.runtime import ENGINES
    sm = ServedModel(mlp[1], device="cpu")
    sm.check()
    # the engine can no longer run: its live engine dropped and its blob unreadable
    blobs = [name for name, _ in sm.module.named_buffers() if name.endswith("engine")]
    assert blobs
    for name in blobs:
        owner = sm.module.get_submodule(name.rpartition(".")[0])
        owner._buffers["engine"] = torch.zeros(64, dtype=torch.uint8)
    ENGINES.clear()
    with pytest.raises(torchtrt_c.SerializationError):
        sm.check()


def test_files_that_are_no_compiled_module_are_refused(tmp_path, mlp):
    plain = tmp_path / "plain.ep"
    m = MLP().eval()
    with open(plain, "wb") as f:   # a torch.export program of the eager model: no engines
        torch.export.save(torch.export.export(m, (torch.randn(2, 7),)), f)
    with pytest.raises(torchtrt_c.SerializationError, match="without torchtrt_c engines"):
        ServedModel(plain, device="cpu")
    corrupt = tmp_path / "corrupt.ep"
    data = bytearray(mlp[1].read_bytes())
    data[len(data) // 2: len(data) // 2 + 64] = b"\xff" * 64
    corrupt.write_bytes(bytes(data))
    with pytest.raises(torchtrt_c.SerializationError, match="corrupt.ep"):
        ServedModel(corrupt, device="cpu")
    with pytest.raises(FileNotFoundError):
        ServedModel(tmp_path / "missing.ep", device="cpu")


def test_http_bodies(mlp):
    m, path = mlp
    sm = ServedModel(path, device="cpu")
    x = torch.randn(3, 7)
    for body in (json.dumps({"inputs": {"x": x.tolist()}}), json.dumps({"inputs": [x.tolist()]})):
        named = _wire.decode_json(body.encode(), sm.inputs)
        assert named["x"].dtype == torch.float32
        torch.testing.assert_close(named["x"], x)
    out = sm.run([sm.request((), named)])[0]
    doc = json.loads(_wire.encode_json(out))
    torch.testing.assert_close(torch.tensor(doc["outputs"][0]), m(x)[0].detach(), **TOL)
    for bad, match in [(b"{", "not JSON"), (b'{"x": 1}', '"inputs"'), (b'{"inputs": [[1], [2]]}', "lists 2 tensors"),
                       (b'{"inputs": {"x": [[1, 2], [3]]}}', "not a rectangular array")]:
        with pytest.raises(torchtrt_c.InputError, match=match):
            _wire.decode_json(bad, sm.inputs)
    pytest.importorskip("safetensors")
    back = _wire.decode_bytes(_wire.encode_bytes({"x": x}))
    torch.testing.assert_close(back["x"], x)
    assert set(_wire.named_tensors(out)) == {"0", "1"}
    assert set(_wire.named_tensors(out[0])) == {"output"}
    assert set(_wire.named_tensors({"a": out[0], "b": (out[1], None)})) == {"a", "b.0"}
    with pytest.raises(torchtrt_c.InputError, match="not a safetensors file"):
        _wire.decode_bytes(b"\x00" * 16)
