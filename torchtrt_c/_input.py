"""Input specs: a fixed shape or a (min, opt, max) range per dim, plus a dtype.

    Input(min_shape=(1, 3, 224, 224), opt_shape=(8, 3, 224, 224), max_shape=(32, 3, 224, 224))
    Input(shape=(1, 3, 224, 224), dtype=torch.float16)
    Input.from_tensor(torch.randn(2, 8))

The compiler captures with an example tensor at the opt shape and marks every dim whose
min != max as dynamic (a torch.export.Dim with that range).

An input of the model may also be a list, tuple or dict of these (a detection model's list of
images: `inputs=[[img0, img1]]`), or a bool, int, float, str or None (`use_cache=True`): such a
value is fixed at compile time, as torch.export fixes it, and the compiled module checks that
later calls pass the same one. as_inputs normalises them all (see there).
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


# values an input may be besides tensors: torch.export fixes them at capture
CONSTANT_TYPES = (bool, int, float, str, type(None))


def as_input_tree(x, where: str):
    """One input of the model: Input and tensors -> Input; lists, tuples and dicts of inputs ->
    the same containers of normalised inputs; bool/int/float/str/None stay as they are."""
    if isinstance(x, Input):
        return x
    if isinstance(x, torch.Tensor):
        return Input.from_tensor(x)
    if isinstance(x, CONSTANT_TYPES):
        return x
    if type(x) in (list, tuple):
        return type(x)(as_input_tree(v, f"{where}[{i}]") for i, v in enumerate(x))
    if type(x) is dict:
        return {k: as_input_tree(v, f"{where}[{k!r}]") for k, v in x.items()}
    raise TypeError(f"{where}: expected a torchtrt_c.Input, a tensor, a shape, a list/tuple/dict of "
                    f"them, or a bool/int/float/str/None, got {type(x).__name__}")


def as_input(x, where: str):
    """One of the user's inputs: a shape (a tuple, list or torch.Size of ints) -> Input, else
    as_input_tree."""
    if isinstance(x, (tuple, list, torch.Size)) and all(isinstance(d, int) and not isinstance(d, bool) for d in x):
        return Input(shape=tuple(x))
    return as_input_tree(x, where)


def as_inputs(seq: Sequence) -> list:
    """Normalises the user's inputs (as_input each)."""
    return [as_input(x, f"inputs[{i}]") for i, x in enumerate(seq)]


def example_inputs(tree, own_device: bool = False):
    """tree with each Input replaced by its example tensor (for torch.export): on the CPU, or
    with own_device on the Input's device where it names one."""
    import torch.utils._pytree as pytree

    def ex(v):
        if not isinstance(v, Input):
            return v
        return v.example_tensor((v.device or "cpu") if own_device else "cpu")
    return pytree.tree_map(ex, tree)


def input_leaves(args: Sequence, kwargs: dict) -> list:
    """The leaves of (args, kwargs) in the order torch.export numbers the program's user inputs
    (kwargs in the order of its in_spec: _capture.kwarg_order): Inputs and constants."""
    import torch.utils._pytree as pytree
    return pytree.tree_leaves((tuple(args), dict(kwargs)))
