"""Input specs: a fixed shape or a (min, opt, max) range per dim, plus a dtype.

    Input(min_shape=(1, 3, 224, 224), opt_shape=(8, 3, 224, 224), max_shape=(32, 3, 224, 224))
    Input(shape=(1, 3, 224, 224), dtype=torch.float16)
    Input.from_tensor(torch.randn(2, 8))

The compiler captures with an example tensor at the opt shape and marks every dim whose
min != max as dynamic (a torch.export.Dim with that range).
"""
from __future__ import annotations

from typing import Optional, Sequence

import torch


def _shape(name, v):
    if isinstance(v, torch.Size):
        v = tuple(v)
    if not isinstance(v, (tuple, list)) or not all(isinstance(d, int) and not isinstance(d, bool)
                                                   for d in v):
        raise TypeError(f"Input: {name} must be a sequence of ints, got {v!r}")
    if any(d < 0 for d in v):
        raise ValueError(f"Input: {name} has a negative dim: {tuple(v)}")
    return tuple(v)


class Input:
    def __init__(self, *args, shape=None, min_shape=None, opt_shape=None, max_shape=None,
                 dtype: torch.dtype = torch.float32, name: Optional[str] = None, format=None,
                 device=None, torch_tensor: Optional[torch.Tensor] = None):
        if len(args) == 1:
            shape = args[0]
        elif len(args) == 3:
            min_shape, opt_shape, max_shape = args
        elif args:
            raise TypeError("Input takes a shape, or min/opt/max shapes")
        if not isinstance(dtype, torch.dtype):
            raise TypeError(f"Input: dtype must be a torch.dtype, got {dtype!r}")
        self.dtype = dtype
        self.name = name
        self.device = device
        self.torch_tensor = torch_tensor
        if shape is not None:
            if min_shape is not None or max_shape is not None:
                raise ValueError("Input: give either shape or min_shape/opt_shape/max_shape")
            s = _shape("shape", shape)
            self.min_shape = self.opt_shape = self.max_shape = s
        else:
            if min_shape is None or max_shape is None:
                raise ValueError("Input: a dynamic input needs min_shape and max_shape "
                                 "(opt_shape defaults to max_shape)")
            mn, mx = _shape("min_shape", min_shape), _shape("max_shape", max_shape)
            op = _shape("opt_shape", opt_shape) if opt_shape is not None else mx
            if not (len(mn) == len(op) == len(mx)):
                raise ValueError(f"Input: min/opt/max shapes have different ranks: {mn}, {op}, {mx}")
            for i, (a, b, c) in enumerate(zip(mn, op, mx)):
                if not a <= b <= c:
                    raise ValueError(f"Input: dim {i} needs min <= opt <= max, got {a}, {b}, {c}")
            self.min_shape, self.opt_shape, self.max_shape = mn, op, mx

    @classmethod
    def from_tensor(cls, t: torch.Tensor, name: Optional[str] = None) -> "Input":
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"Input.from_tensor expects a tensor, got {type(t).__name__}")
        return cls(shape=tuple(t.shape), dtype=t.dtype, name=name, device=t.device, torch_tensor=t)

    @property
    def shape(self):
        return self.opt_shape

    def is_dynamic(self) -> bool:
        return self.min_shape != self.max_shape

    def dynamic_dims(self) -> list:
        return [i for i, (a, c) in enumerate(zip(self.min_shape, self.max_shape)) if a != c]

    def example_tensor(self, device=None) -> torch.Tensor:
        """A tensor at the opt shape (for capture): the Input's own tensor where it has that
        shape, else a made-up one on the Input's device (else the CPU). Dims of size 0/1 that are
        dynamic are traced at 2 (within range) so torch.export does not specialise them."""
        shape = list(self.opt_shape)
        for i in self.dynamic_dims():
            if shape[i] < 2:
                shape[i] = min(2, self.max_shape[i])
        if self.torch_tensor is not None and list(self.torch_tensor.shape) == shape:
            return self.torch_tensor
        if device is None:
            device = self.device if self.device is not None else "cpu"
        if self.dtype.is_floating_point:
            return torch.randn(shape, device=device).to(self.dtype)
        if self.dtype == torch.bool:
            return torch.zeros(shape, dtype=torch.bool, device=device)
        return torch.ones(shape, dtype=self.dtype, device=device)

    def __repr__(self):
        if self.is_dynamic():
            return (f"Input(min_shape={self.min_shape}, opt_shape={self.opt_shape}, "
                    f"max_shape={self.max_shape}, dtype={self.dtype})")
        return f"Input(shape={self.opt_shape}, dtype={self.dtype})"


def as_inputs(seq: Sequence) -> list:
    """Normalises the user's inputs (Input objects, tensors, or shapes) to Input objects."""
    out = []
    for i, x in enumerate(seq):
        if isinstance(x, Input):
            out.append(x)
        elif isinstance(x, torch.Tensor):
            out.append(Input.from_tensor(x))
        elif isinstance(x, (tuple, list, torch.Size)) and all(isinstance(d, int) for d in x):
            out.append(Input(shape=tuple(x)))
        else:
            raise TypeError(f"inputs[{i}]: expected a torchtrt_c.Input, a tensor or a shape, "
                            f"got {type(x).__name__}")
    return out
