"""CompiledModule: the stitched GraphModule, plus a check of the user's inputs on each call.

The engines check their own inputs too, but when a torch segment runs first an engine only
sees intermediates; checking the user inputs up front names the argument the user passed.

    trt(torch.randn(33, 8))   # InputError: input 'x': dim 0 is 33, outside the compiled range [1, 32]

Checks are skipped while tracing (torch.export / torch.compile see fake tensors).
"""
from __future__ import annotations

import torch
import torch.fx


def _is_real(t) -> bool:
    from torch._subclasses.fake_tensor import FakeTensor
    return isinstance(t, torch.Tensor) and not isinstance(t, FakeTensor)


class CompiledModule(torch.fx.GraphModule):
    _ttc_specs = None      # [(name, Input)] in call order
    _ttc_truncate = False

    def __call__(self, *args, **kwargs):
        specs = self._ttc_specs
        if specs is not None and not torch.compiler.is_compiling():
            # the check depends only on the dtypes and shapes: plain tensors whose dtypes and
            # shapes passed it once skip it (FakeTensors and other subclasses always take it)
            key = None
            if not kwargs and len(args) == len(specs):
                key = tuple([(t.dtype, t.shape) if type(t) is torch.Tensor else None for t in args])
            passed = self.__dict__.get("_ttc_passed")
            if key is None or passed is None or key not in passed:
                self._ttc_check(specs, args, kwargs)
                if key is not None and None not in key:
                    if passed is None or len(passed) >= 64:  # dynamic shapes: keep it bounded
                        passed = self.__dict__["_ttc_passed"] = set()
                    passed.add(key)
        return super().__call__(*args, **kwargs)

    def _ttc_check(self, specs, args, kwargs):
        from torchtrt_c import InputError
        given = list(args)
        names = [n for n, _ in specs]
        for k, v in kwargs.items():
            if k not in names:
                raise InputError(f"unexpected input {k!r}; the module takes {', '.join(names)}")
        for i, (name, inp) in enumerate(specs):
            if i < len(given):
                t = given[i]
            elif name in kwargs:
                t = kwargs[name]
            else:
                raise InputError(f"input {name!r} is missing: the module takes {len(specs)} input(s) "
                                 f"({', '.join(names)}), got {len(given) + len(kwargs)}")
            if not _is_real(t):
                continue
            dt = inp.dtype
            if t.dtype != dt and not (self._ttc_truncate and dt == torch.float64 and t.dtype == torch.float32):
                raise InputError(f"input {name!r}: expected dtype {str(dt).replace('torch.', '')}, "
                                 f"got {str(t.dtype).replace('torch.', '')}")
            if t.dim() != len(inp.min_shape):
                raise InputError(f"input {name!r}: expected rank {len(inp.min_shape)} "
                                 f"(shape {_range_str(inp)}), got shape {tuple(t.shape)}")
            for d, (v, lo, hi) in enumerate(zip(t.shape, inp.min_shape, inp.max_shape)):
                if lo == hi and v != lo:
                    raise InputError(f"input {name!r}: dim {d} is {v}, the module was compiled for "
                                     f"{lo} (shape {_range_str(inp)})")
                if not lo <= v <= hi:
                    raise InputError(f"input {name!r}: dim {d} is {v}, outside the compiled range "
                                     f"[{lo}, {hi}]")


def _range_str(inp) -> str:
    return "(" + ", ".join(str(a) if a == b else f"{a}..{b}"
                           for a, b in zip(inp.min_shape, inp.max_shape)) + ")"
