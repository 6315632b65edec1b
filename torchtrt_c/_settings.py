"""Compilation settings: Torch-TensorRT's CompilationSettings names and defaults, checked early.

    s = CompilationSettings.from_kwargs(min_block_size=3, torch_executed_ops={"aten::add"})
    s.torch_executed_op_names()   # ['aten.add.Tensor', 'aten.add.Scalar', ...]

Unknown names and ill-typed values raise TypeError/ValueError naming the setting, at compile
time, before anything is captured.

TF32: fp32 GEMMs (linear, matmul, bmm) and convolutions may run on TF32 tensor cores (NVIDIA
targets only). allow_tf32_matmul / allow_tf32_conv None (the default) follow torch's own
switches, read when the settings are made (at compile time):
torch.backends.cuda.matmul.allow_tf32 (torch's default False) and torch.backends.cudnn.allow_tf32
(torch's default True); True/False force either way; disable_tf32=True (Torch-TensorRT's name)
turns both off. s.tf32_policy() gives the resolved {"matmul": bool, "conv": bool}.
"""
from __future__ import annotations

import dataclasses
import difflib
import os
import tempfile
from dataclasses import dataclass, field
from typing import Any, Optional

import torch

_DEFAULT_CACHE_DIR = os.path.join(tempfile.gettempdir(), "torchtrt_c_engine_cache")
# bfloat16 is accepted (Torch-TensorRT's spelling for a bfloat16 model) and changes nothing:
# engines take and return bfloat16 tensors whatever the setting and compute them in float
_PRECISIONS = {torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16"}
_PRECISION_ALIASES = {"fp32": torch.float32, "float32": torch.float32, "float": torch.float32,
                      "fp16": torch.float16, "float16": torch.float16, "half": torch.float16,
                      "bf16": torch.bfloat16, "bfloat16": torch.bfloat16}


@dataclass
class CompilationSettings:
    enabled_precisions: set = field(default_factory=lambda: {torch.float32})
    debug: bool = False
    min_block_size: int = 5
    torch_executed_ops: Any = field(default_factory=set)
    torch_executed_modules: Any = field(default_factory=set)
    require_full_compilation: bool = False
    use_fast_partitioner: bool = True
    truncate_double: bool = False
    device: Any = None
    dryrun: Any = False
    cache_built_engines: bool = False
    reuse_cached_engines: bool = False
    engine_cache_dir: str = _DEFAULT_CACHE_DIR
    enable_resource_partitioning: bool = False
    cpu_memory_budget: Optional[int] = None
    pass_through_build_failures: bool = False
    assume_dynamic_shape_support: bool = False
    optimization_level: Optional[int] = None
    allow_tf32_matmul: Optional[bool] = None
    allow_tf32_conv: Optional[bool] = None
    disable_tf32: bool = False
    # False: engines do not report out-of-range indices (such an element reads 0) and the CUDA
    # launch path never waits for the device to read the flag back, so calls can be captured in
    # a CUDA graph; for callers that validate their indices (compile_llm's step)
    check_indices: bool = True
    # weight-only quantization of linear layers with constant weights (issue 35;
    # dynamo/_weight_only.py): "int8_weight_only" (per output channel) or "int4_weight_only"
    # (groups of quantize_group_size input features, clipped to K)
    quantize: Optional[str] = None
    quantize_group_size: int = 128

    @classmethod
    def from_kwargs(cls, **kwargs) -> "CompilationSettings":
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(kwargs) - names)
        if unknown:
            hints = []
            for u in unknown:
                close = difflib.get_close_matches(u, names, n=1)
                hints.append(f"{u!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
            raise TypeError(f"torchtrt_c.compile: unknown setting(s) {', '.join(hints)}; "
                            f"known settings: {', '.join(sorted(names))}")
        s = cls(**kwargs)
        s._validate()
        return s

    # ---- validation ----
    def _validate(self) -> None:
        for name in ("debug", "require_full_compilation", "use_fast_partitioner", "truncate_double",
                     "cache_built_engines", "reuse_cached_engines", "enable_resource_partitioning",
                     "pass_through_build_failures", "assume_dynamic_shape_support", "disable_tf32",
                     "check_indices"):
            v = getattr(self, name)
            if not isinstance(v, bool):
                raise TypeError(f"setting {name} must be a bool, got {type(v).__name__} {v!r}")
        if isinstance(self.min_block_size, bool) or not isinstance(self.min_block_size, int) \
                or self.min_block_size < 1:
            raise ValueError(f"setting min_block_size must be an int >= 1, got {self.min_block_size!r}")
        if self.optimization_level is not None and (
                isinstance(self.optimization_level, bool) or not isinstance(self.optimization_level, int)
                or not 0 <= self.optimization_level <= 5):
            raise ValueError(f"setting optimization_level must be None or an int in 0..5, "
                             f"got {self.optimization_level!r}")
        if self.cpu_memory_budget is not None and (
                isinstance(self.cpu_memory_budget, bool) or not isinstance(self.cpu_memory_budget, int)
                or self.cpu_memory_budget <= 0):
            raise ValueError(f"setting cpu_memory_budget must be None or a positive int (bytes), "
                             f"got {self.cpu_memory_budget!r}")
        if not isinstance(self.dryrun, (bool, str, os.PathLike)):
            raise TypeError(f"setting dryrun must be a bool or a path, got {self.dryrun!r}")
        if not isinstance(self.engine_cache_dir, (str, os.PathLike)):
            raise TypeError(f"setting engine_cache_dir must be a path, got {self.engine_cache_dir!r}")
        for name in ("allow_tf32_matmul", "allow_tf32_conv"):
            v = getattr(self, name)
            if v is not None and not isinstance(v, bool):
                raise TypeError(f"setting {name} must be None (follow torch's switch) or a bool, "
                                f"got {type(v).__name__} {v!r}")
            if v is True and self.disable_tf32:
                raise ValueError(f"settings disable_tf32=True and {name}=True contradict each other")
        from torchtrt_c.dynamo._weight_only import check_quantize
        check_quantize(self.quantize, self.quantize_group_size)
        self._tf32 = None
        self.tf32_policy()  # torch's switches as they are now, at compile time
        self.enabled_precisions = _normalize_precisions(self.enabled_precisions)
        self.torch_executed_ops = set(_as_collection("torch_executed_ops", self.torch_executed_ops))
        self._op_names = resolve_op_names(self.torch_executed_ops)
        mods = _as_collection("torch_executed_modules", self.torch_executed_modules)
        for m in mods:
            if not (isinstance(m, str) or isinstance(m, type)):
                raise TypeError(f"setting torch_executed_modules: expected module classes or qualified "
                                f"names, got {m!r}")
        self.torch_executed_modules = set(mods)
        if self.device is not None and not isinstance(self.device, (int, str)) \
                and not hasattr(self.device, "index"):
            raise TypeError(f"setting device must be None, an int, a str or a torchtrt_c.Device, "
                            f"got {self.device!r}")

    # ---- derived views ----
    def precision(self) -> str:
        return "fp16" if torch.float16 in self.enabled_precisions else "fp32"

    def torch_executed_op_names(self) -> list:
        return list(self._op_names)

    def opt_level(self) -> int:
        return 3 if self.optimization_level is None else self.optimization_level

    def tf32_policy(self) -> dict:
        """{"matmul": bool, "conv": bool}: whether fp32 GEMMs / convolutions may use TF32. The
        None settings read torch's switches once (the first call; from_kwargs makes it), so a
        compile sees one answer throughout."""
        if getattr(self, "_tf32", None) is None:
            def pick(v, torch_switch):
                if v is not None:
                    return v
                return False if self.disable_tf32 else bool(torch_switch())
            self._tf32 = {"matmul": pick(self.allow_tf32_matmul, lambda: torch.backends.cuda.matmul.allow_tf32),
                          "conv": pick(self.allow_tf32_conv, lambda: torch.backends.cudnn.allow_tf32)}
        return dict(self._tf32)

    def engine_key_fields(self) -> dict:
        """The settings that change what an engine is (part of the engine cache key)."""
        tf32 = self.tf32_policy()
        return {"precision": self.precision(), "opt": self.opt_level(),
                "truncate_double": self.truncate_double,
                "tf32_matmul": tf32["matmul"], "tf32_conv": tf32["conv"], "check_indices": self.check_indices}


def _as_collection(name, v):
    if v is None:
        return []
    if isinstance(v, (str, bytes)) or not hasattr(v, "__iter__"):
        v = [v]
    return list(v)


def _normalize_precisions(v) -> set:
    out = set()
    for p in _as_collection("enabled_precisions", v):
        if isinstance(p, str) and p.lower() in _PRECISION_ALIASES:
            p = _PRECISION_ALIASES[p.lower()]
        if p not in _PRECISIONS:
            raise ValueError(f"setting enabled_precisions: unsupported precision {p!r} "
                             f"(supported: torch.float32, torch.float16, torch.bfloat16)")
        out.add(p)
    if not out:
        raise ValueError("setting enabled_precisions must not be empty")
    return out


def _packet_overloads(packet) -> list:
    ns = packet._qualified_op_name.split("::")[0]
    base = packet._qualified_op_name.split("::")[1]
    return [f"{ns}.{base}.{o}" for o in packet.overloads()]


def resolve_op_names(ops) -> list:
    """Turns OpOverloads, OpOverloadPackets and strings into the IR's op names
    ("aten.add.Tensor"). "aten::add" / torch.ops.aten.add mean every overload."""
    names = []
    for op in ops:
        if isinstance(op, torch._ops.OpOverload):
            names.append(str(op))
            continue
        if isinstance(op, torch._ops.OpOverloadPacket):
            names += _packet_overloads(op)
            continue
        if not isinstance(op, str):
            raise TypeError(f"setting torch_executed_ops: expected an op, got {op!r}")
        s = op.strip()
        if s.startswith("torch.ops."):
            s = s[len("torch.ops."):]
        s = s.replace("::", ".")
        parts = s.split(".")
        if len(parts) not in (2, 3):
            raise ValueError(f"setting torch_executed_ops: cannot read op name {op!r} (use "
                             f"torch.ops.aten.add.Tensor, 'torch.ops.aten.add.Tensor' or 'aten::add')")
        ns_obj = getattr(torch.ops, parts[0], None)
        packet = getattr(ns_obj, parts[1], None) if ns_obj is not None else None
        if not isinstance(packet, torch._ops.OpOverloadPacket):
            raise ValueError(f"setting torch_executed_ops: unknown op {op!r}")
        if len(parts) == 2:
            names += _packet_overloads(packet)
        else:
            ov = "default" if parts[2] == "" else parts[2]
            if ov not in packet.overloads():
                raise ValueError(f"setting torch_executed_ops: op {op!r} has no overload {ov!r} "
                                 f"(overloads: {', '.join(packet.overloads())})")
            names.append(f"{parts[0]}.{parts[1]}.{ov}")
    return sorted(set(names))
