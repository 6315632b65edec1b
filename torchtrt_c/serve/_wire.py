"""HTTP bodies of a served model: JSON, and raw tensor bytes in the safetensors layout.

    JSON      {"inputs": {"x": [[...], ...]}}  or  {"inputs": [x0, x1, ...]} (the module's order)
              -> {"outputs": <the module's outputs, tensors as nested lists>}
    bytes     Content-Type: application/octet-stream, a safetensors file whose tensors are named
              as the module's inputs -> the same, tensors named by their place in the outputs
              ("output" for a lone tensor, "0", "1" for a tuple, "logits" for a dict/ModelOutput)

JSON numbers take the dtype of the input they are given for; safetensors carries dtypes and
shapes itself (a small JSON header, then each tensor's bytes, no pickle). Either way the module
sees the same tensors as a Python caller's; a body that cannot be read raises InputError.
"""
from __future__ import annotations

import json

import torch
from torch.utils import _pytree as pytree

JSON = "application/json"
BYTES = "application/octet-stream"


def _input_error(msg):
    from torchtrt_c import InputError
    return InputError(msg)


def decode_json(body: bytes, inputs: list) -> dict:
    """{input name: tensor} from a JSON body; inputs: the module's InputSpecs."""
    try:
        doc = json.loads(body)
    except ValueError as ex:
        raise _input_error(f"request body is not JSON ({ex})") from None
    given = doc.get("inputs") if isinstance(doc, dict) else None
    if isinstance(given, list):
        if len(given) != len(inputs):
            raise _input_error(f"'inputs' lists {len(given)} tensors, the module takes {len(inputs)} "
                               f"({', '.join(s.name for s in inputs)})")
        given = {s.name: v for s, v in zip(inputs, given)}
    if not isinstance(given, dict):
        raise _input_error('a JSON request is {"inputs": {name: nested list, ...}} or {"inputs": [nested list, ...]}')
    dtypes = {s.name: s.dtype for s in inputs}
    out = {}
    for name, v in given.items():
        if name not in dtypes:
            raise _input_error(f"unknown input {name!r}; the module takes {', '.join(dtypes)}")
        try:
            out[name] = torch.tensor(v, dtype=dtypes[name])
        except (TypeError, ValueError, RuntimeError) as ex:
            raise _input_error(f"input {name!r}: not a rectangular array of numbers ({ex})") from None
    return out


def encode_json(outputs) -> bytes:
    return json.dumps({"outputs": _plain(outputs)}).encode()


def _plain(x):
    if isinstance(x, torch.Tensor):
        return x.tolist()
    if isinstance(x, dict):  # dicts and Hugging Face ModelOutputs
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    return x


def decode_bytes(body: bytes) -> dict:
    from safetensors import SafetensorError
    from safetensors.torch import load
    try:
        return load(body)
    except (SafetensorError, ValueError, RuntimeError) as ex:
        raise _input_error(f"request body is not a safetensors file ({ex})") from None


def encode_bytes(outputs) -> bytes:
    from safetensors.torch import save
    return save(named_tensors(outputs))


def named_tensors(outputs) -> dict:
    """The output tensors by their place in the outputs ("output" when the outputs are one)."""
    leaves, _ = pytree.tree_flatten_with_path(outputs)
    named = {}
    for path, leaf in leaves:
        if isinstance(leaf, torch.Tensor):
            name = ".".join(str(getattr(k, "key", getattr(k, "idx", getattr(k, "name", k)))) for k in path)
            named[name or "output"] = leaf.contiguous()
    return named
