"""A saved compiled module as a serving replica holds it, without Ray: loading on the replica's
device, checking requests, running several requests as one batch and splitting the results.

    model = ServedModel("model.ep", device="cpu")
    req = model.request((x,), {})             # InputError naming what is wrong with it
    (y,) = model.run([req])                   # several requests: one call per shape group
    model.check()                             # the health probe: runs the engine

Batching concatenates requests along dim 0 of every input (the batch dim, which must be dim 0
of each input and may be dynamic), so the module's outputs must carry the batch in their dim 0
too; a batch smaller than the module's smallest batch is padded with copies of its last row,
whose results are dropped. Requests whose other dims or dtypes differ run as separate calls.
The Ray deployment (_deployment.py) feeds this class; unit tests use it directly.
"""
from __future__ import annotations

import dataclasses
import inspect
import logging
import os
import threading

import torch
from torch.utils import _pytree as pytree

log = logging.getLogger("torchtrt_c.serve")


def _input_error(msg):
    from torchtrt_c import InputError
    return InputError(msg)


@dataclasses.dataclass(frozen=True)
class InputSpec:
    """One tensor input of the served module: dims as (lowest, highest) sizes, dim 0 the batch."""
    name: str
    dtype: torch.dtype
    dims: tuple

    def describe(self) -> str:
        return f"{self.name}: {str(self.dtype).replace('torch.', '')}[" + ", ".join(
            str(lo) if lo == hi else f"{lo}..{hi}" for lo, hi in self.dims) + "]"


def _dim_range(d) -> tuple:
    """(lowest, highest) size of a placeholder's dim: an int, or a SymInt whose range the
    exported program's shape environment holds (torch.export's range_constraints)."""
    if isinstance(d, int):
        return d, d
    node = d.node
    vr = node.shape_env.bound_sympy(node.expr)
    hi = vr.upper
    return int(vr.lower), (int(hi) if hi.is_finite else None)


def input_specs(module) -> list:
    """The module's tensor inputs in its forward's order, read from the exported graph."""
    params = list(inspect.signature(module.forward).parameters)
    vals = {n.name: n.meta.get("val") for n in module.graph.nodes if n.op == "placeholder"}
    specs = []
    for name in params:
        v = vals.get(name)
        if not isinstance(v, torch.Tensor):
            raise _input_error(f"torchtrt_c.serve: input {name!r} of the saved module is not a tensor "
                               "(served modules take tensors only)")
        if v.dim() == 0:
            raise _input_error(f"torchtrt_c.serve: input {name!r} is 0-d; requests are batched along "
                               "dim 0 of every input")
        specs.append(InputSpec(name, v.dtype, tuple(_dim_range(d) for d in v.shape)))
    return specs


def keyword_inputs(module) -> set:
    """The inputs the module takes by keyword: the module torch.export gives back checks that
    each call passes its inputs as the exported call did (its _in_spec: (args, kwargs))."""
    spec = getattr(module, "_in_spec", None)
    if spec is None:
        return set()
    _, kwargs = pytree.tree_unflatten(list(range(spec.num_leaves)), spec)
    return set(kwargs)


@dataclasses.dataclass
class Request:
    """One request's tensors in the module's input order; rows = their common dim 0."""
    tensors: tuple
    rows: int

    def key(self) -> tuple:
        """Requests of one key can be concatenated along dim 0."""
        return tuple((t.dtype, tuple(t.shape[1:])) for t in self.tensors)

    def rows_slice(self, start: int, stop: int) -> "Request":
        return Request(tuple(t[start:stop] for t in self.tensors), stop - start)


class ServedModel:
    """A module saved by torchtrt_c.save, loaded for serving on one device."""

    def __init__(self, path, device=None):
        import torchtrt_c
        from torchtrt_c._compile import _engine_nodes, rebuilt_engines
        from torchtrt_c.runtime._execute import ENGINES
        from torchtrt_c.runtime._shapes import EngineMeta
        path = os.fspath(path)
        self.path = path
        try:
            self.module = torchtrt_c.load(path, device=device)
        except torchtrt_c.Error as ex:  # the replica's log and the deployment's error name the file
            if path in str(ex):
                raise
            raise type(ex)(f"cannot load {path}: {ex}") from ex
        engines = [ENGINES.peek(EngineMeta.from_json(n.args[2]).id) for _, n in _engine_nodes(self.module)]
        if not engines:
            raise torchtrt_c.SerializationError(
                f"{path}: a torch.export program without torchtrt_c engines; serve a module compiled "
                "with torchtrt_c.compile and saved with torchtrt_c.save")
        self.device = {k: engines[0].device.get(k) for k in ("name", "type", "platform")}
        self.rebuilt = rebuilt_engines(self.module)
        self.inputs = input_specs(self.module)
        self._keywords = keyword_inputs(self.module)
        batch = [s.dims[0] for s in self.inputs]
        highest = [hi for _, hi in batch if hi is not None]
        self.max_rows = min(highest) if highest else None
        self.min_rows = max(lo for lo, _ in batch)
        self._lock = threading.Lock()
        self.requests = 0
        self.engine_calls = 0
        self._reference = None
        if self.min_rows == 2:
            # torch.export reports a dynamic dim declared from 1 as starting at 2 (it specialises
            # 0 and 1 while tracing) although the module takes 1 row: the probe finds out which
            self.min_rows = 1
            try:
                self._reference = self._probe()
            except (AssertionError, RuntimeError, torchtrt_c.Error):  # its guards refuse 1 row
                self.min_rows = 2
        if self._reference is None:
            self._reference = self._probe()  # the engine runs here, or the replica fails to start
        self.inputs = [dataclasses.replace(s, dims=((self.min_rows, s.dims[0][1]),) + s.dims[1:])
                       for s in self.inputs]

    def describe(self) -> dict:
        """What a client or an operator wants to know about this replica's model."""
        return {"path": self.path, "device": self.device, "inputs": [s.describe() for s in self.inputs],
                "batch_rows": [self.min_rows, self.max_rows], "rebuilt_engines": self.rebuilt,
                "requests": self.requests, "engine_calls": self.engine_calls, "pid": os.getpid()}

    # ------------------------------------------------------------------ requests
    def request(self, args=(), kwargs=None) -> Request:
        """A request from call arguments as the module takes them (positional and/or by name),
        checked against the module's inputs; InputError says what does not fit."""
        kwargs = dict(kwargs or {})
        names = [s.name for s in self.inputs]
        if len(args) > len(names):
            raise _input_error(f"{len(args)} positional inputs given, the module takes {len(names)} "
                               f"({', '.join(names)})")
        given = dict(zip(names, args))
        for k, v in kwargs.items():
            if k not in names:
                raise _input_error(f"unknown input {k!r}; the module takes {', '.join(names)}")
            if k in given:
                raise _input_error(f"input {k!r} given twice")
            given[k] = v
        missing = [n for n in names if n not in given]
        if missing:
            raise _input_error(f"missing input(s) {', '.join(missing)}; the module takes "
                               + "; ".join(s.describe() for s in self.inputs))
        tensors, rows = [], None
        for s in self.inputs:
            t = given[s.name]
            if not isinstance(t, torch.Tensor):
                raise _input_error(f"input {s.name!r} is a {type(t).__name__}, not a tensor")
            if t.dtype != s.dtype:
                raise _input_error(f"input {s.name!r} has dtype {t.dtype}, the module takes {s.dtype}")
            if t.dim() != len(s.dims):
                raise _input_error(f"input {s.name!r} has shape {tuple(t.shape)}; expected {s.describe()}")
            for i, ((lo, hi), n) in enumerate(zip(s.dims, t.shape)):
                # a lowest size of 2 may be export's way of saying 1 (see __init__): the module's
                # own guards judge those
                if i and ((n < lo and lo != 2) or (hi is not None and n > hi)):
                    raise _input_error(f"input {s.name!r} has shape {tuple(t.shape)}: dim {i} is out of "
                                       f"range; expected {s.describe()}")
            if rows is None:
                rows = t.shape[0]
            elif t.shape[0] != rows:
                raise _input_error(f"inputs disagree on the batch (dim 0): {s.name!r} has {t.shape[0]} rows, "
                                   f"{self.inputs[0].name!r} has {rows}")
            tensors.append(t.detach().to("cpu").contiguous())
        if rows == 0:
            raise _input_error("the request has 0 rows")
        return Request(tuple(tensors), rows)

    def chunks(self, req: Request, limit=None) -> list:
        """req cut into pieces of at most limit rows (the module's largest batch by default)."""
        limit = limit or self.max_rows or req.rows
        return [req.rows_slice(i, min(i + limit, req.rows)) for i in range(0, req.rows, limit)]

    @staticmethod
    def join(outputs: list):
        """The outputs of a request's chunks, concatenated back along dim 0."""
        if len(outputs) == 1:
            return outputs[0]
        flat = [pytree.tree_flatten(o) for o in outputs]
        spec = flat[0][1]
        leaves = [torch.cat(ls) if isinstance(ls[0], torch.Tensor) else ls[0]
                  for ls in zip(*(f[0] for f in flat))]
        return pytree.tree_unflatten(leaves, spec)

    # ------------------------------------------------------------------ running
    def run(self, reqs: list) -> list:
        """Runs requests as few module calls as their shapes allow (one per group of requests
        that share their non-batch dims and dtypes; the caller keeps each group's rows within
        max_rows) and gives each request its own outputs, in order, or the exception its group's
        call raised (the other groups' requests are not failed by it). One call at a time."""
        groups = {}
        for i, r in enumerate(reqs):
            groups.setdefault(r.key(), []).append(i)
        out = [None] * len(reqs)
        with self._lock:
            for idx in groups.values():
                rows = [reqs[i].rows for i in idx]
                tensors = [torch.cat([reqs[i].tensors[k] for i in idx]) if len(idx) > 1 else reqs[idx[0]].tensors[k]
                           for k in range(len(self.inputs))]
                try:
                    res = self._call(tensors, sum(rows))
                except Exception as ex:  # noqa: BLE001  (handed to the group's requests)
                    for i in idx:
                        out[i] = ex
                    continue
                start = 0
                for i, n in zip(idx, rows):
                    out[i] = self._rows(res, start, start + n)
                    start += n
            self.requests += len(reqs)
        return out

    def _call(self, tensors: list, rows: int):
        pad = self.min_rows - rows
        if pad > 0:  # below the module's smallest batch: copies of the last row, dropped after
            tensors = [torch.cat([t, t[-1:].expand(pad, *t.shape[1:])]) for t in tensors]
        res = self._forward(tensors)
        self.engine_calls += 1
        for leaf in pytree.tree_leaves(res):
            if isinstance(leaf, torch.Tensor) and (leaf.dim() == 0 or leaf.shape[0] != rows + max(pad, 0)):
                from torchtrt_c import Error
                raise Error(
                    f"an output of shape {tuple(leaf.shape)} does not carry the batch in dim 0 "
                    f"({rows + max(pad, 0)} rows in): this module cannot be served with batching")
        return res

    @staticmethod
    def _rows(res, start: int, stop: int):
        return pytree.tree_map(lambda t: t[start:stop].clone() if isinstance(t, torch.Tensor) else t, res)

    # ------------------------------------------------------------------ health
    def _probe_inputs(self) -> list:
        return [torch.zeros((self.min_rows,) + tuple(lo for lo, _ in s.dims[1:]), dtype=s.dtype)
                for s in self.inputs]

    def _forward(self, tensors: list):
        args = [t for s, t in zip(self.inputs, tensors) if s.name not in self._keywords]
        kwargs = {s.name: t for s, t in zip(self.inputs, tensors) if s.name in self._keywords}
        with torch.inference_mode():
            return self.module(*args, **kwargs)

    def _probe(self):
        return self._forward(self._probe_inputs())

    def check(self) -> None:
        """Runs the module on the probe input and compares with what it gave at load time:
        raises (and so marks the replica unhealthy) when the engine fails or answers otherwise."""
        with self._lock:
            got = self._probe()
        want = self._reference
        for g, w in zip(pytree.tree_leaves(got), pytree.tree_leaves(want)):
            if isinstance(w, torch.Tensor) and not torch.allclose(g, w, rtol=1e-5, atol=1e-6, equal_nan=True):
                raise RuntimeError(f"torchtrt_c.serve health check: {self.path} answers the probe input "
                                   f"differently than at load (largest difference {(g - w).abs().max().item():.3g})")
