"""Engine I/O metadata and the affine dim expressions it carries ("s0", "3*s0", "2*s0+1").

An engine's meta (JSON, stored in the compiled module next to the engine blob) lists its inputs
and outputs with dims that are ints or affine expressions of one symbol. The runtime binds each
symbol from the input shapes (checking ranges), then evaluates output dims; the fake (meta)
implementation does the same with SymInts, so compiled modules export with dynamic shapes.

    m = EngineMeta.from_json(s)
    env = m.bind_inputs([(7, 4)])      # {'s0': 7}; raises InputError naming a bad input
    m.output_shapes(env)               # [(7, 8)]
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass

_AFFINE = re.compile(r"^\s*(?:(-?\d+)\s*\*\s*)?([A-Za-z_]\w*)\s*(?:([+-])\s*(\d+))?\s*$")


@dataclass(frozen=True)
class Dim:
    sym: str | None
    mul: int
    add: int

    @staticmethod
    def parse(d) -> "Dim":
        if isinstance(d, int):
            return Dim(None, 0, d)
        if isinstance(d, str) and re.fullmatch(r"-?\d+", d.strip()):
            return Dim(None, 0, int(d))
        m = _AFFINE.match(str(d))
        if not m:
            raise ValueError(f"cannot read dim expression {d!r}")
        mul = int(m.group(1)) if m.group(1) else 1
        add = int(m.group(4)) if m.group(4) else 0
        if m.group(3) == "-":
            add = -add
        return Dim(m.group(2), mul, add)

    def eval(self, env):
        if self.sym is None:
            return self.add
        return self.mul * env[self.sym] + self.add

    def __str__(self):
        if self.sym is None:
            return str(self.add)
        s = self.sym if self.mul == 1 else f"{self.mul}*{self.sym}"
        return s if self.add == 0 else f"{s}{'+' if self.add > 0 else '-'}{abs(self.add)}"


def _input_error(msg):
    from torchtrt_c import InputError
    return InputError(msg)


class EngineMeta:
    """What the runtime needs to know about one engine without deserializing it."""

    def __init__(self, d: dict):
        self.d = d
        self.id = d["id"]
        self.name = d.get("name", "engine")
        self.inputs = [(i["name"], i["dtype"], [Dim.parse(x) for x in i["shape"]]) for i in d["inputs"]]
        self.outputs = [(o["name"], o["dtype"], [Dim.parse(x) for x in o["shape"]]) for o in d["outputs"]]
        self.symbols = {k: tuple(v) for k, v in d.get("symbols", {}).items()}
        # inputs the engine writes in place (KV caches): every path hands the engine the
        # caller's memory or copies the result back into it (_execute.py, write_back)
        self.written = tuple(k for k, i in enumerate(d["inputs"]) if i.get("written"))

    _cache: dict = {}

    @classmethod
    def from_json(cls, s: str) -> "EngineMeta":
        m = cls._cache.get(s)
        if m is None:
            m = cls(json.loads(s))
            cls._cache[s] = m
        return m

    def to_json(self) -> str:
        return json.dumps(self.d, sort_keys=True)

    def bind_inputs(self, shapes, dtypes=None, check=True) -> dict:
        """Binds symbols from input shapes. With check, validates count, dtype, rank, static
        dims and symbol ranges and raises InputError naming the offending input."""
        names = [n for n, _, _ in self.inputs]
        if check and len(shapes) != len(self.inputs):
            raise _input_error(f"engine {self.name}: expected {len(self.inputs)} input(s) "
                               f"({', '.join(names)}), got {len(shapes)}")
        env = {}
        for k, (shape, (name, dtype, dims)) in enumerate(zip(shapes, self.inputs)):
            if check and dtypes is not None and dtypes[k] != dtype:
                raise _input_error(f"input {name!r}: expected dtype {dtype}, got {dtypes[k]}")
            if check and len(shape) != len(dims):
                raise _input_error(f"input {name!r}: expected rank {len(dims)} "
                                   f"(shape {self.shape_str(dims)}), got rank {len(shape)} "
                                   f"(shape {tuple(shape)})")
            for i, (v, d) in enumerate(zip(shape, dims)):
                if d.sym is None:
                    if check and v != d.add:
                        raise _input_error(f"input {name!r}: dim {i} is {v}, the engine was built "
                                           f"for {d.add} (shape {self.shape_str(dims)})")
                    continue
                if d.mul == 1 and d.add == 0:
                    val = v
                elif not check:
                    val = (v - d.add) // d.mul
                else:
                    if (v - d.add) % d.mul:
                        raise _input_error(f"input {name!r}: dim {i} is {v}, expected {d}")
                    val = (v - d.add) // d.mul
                if d.sym in env:
                    if check and env[d.sym] != val:
                        raise _input_error(f"input {name!r}: dim {i} is {v}, inconsistent with "
                                           f"{d.sym}={env[d.sym]} from an earlier input")
                    continue
                if check and d.sym in self.symbols:
                    lo, hi = self.symbols[d.sym]
                    if not lo <= val <= hi:
                        raise _input_error(f"input {name!r}: dim {i} is {v}, outside the compiled "
                                           f"range [{d.eval({d.sym: lo})}, {d.eval({d.sym: hi})}]")
                env[d.sym] = val
        return env

    def output_shapes(self, env) -> list:
        return [tuple(d.eval(env) for d in dims) for _, _, dims in self.outputs]

    @staticmethod
    def shape_str(dims):
        return "(" + ", ".join(str(d) for d in dims) + ")"
