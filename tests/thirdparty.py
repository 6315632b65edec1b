"""Third-party model libraries for the model tier, importable beside a CPU-only torch.

    tv = import_torchvision()      # skips the test when torchvision is not installed
    timm = import_timm()

PyPI's torchvision wheels carry a C extension linked against CUDA torch (libtorch_cuda.so).
Beside the CPU build of torch that extension does not load, and torchvision's import then
stops at `torch.library.register_fake("torchvision::nms")` because the op was never defined.
The model definitions are pure Python and need none of its ops (nms/roi_align/deform_conv2d
are detection/segmentation post-processing), so when the extension is missing we define the
two schemas that the import registers fake kernels for and import again. Any use of those
ops then fails loudly ("no kernel"), never silently.
"""
import importlib
import importlib.util

import pytest

_SCHEMAS = ("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
            "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
_lib = None


def _import_without_extension():
    """torchvision's import failed at its nms registration: define the schemas, import again."""
    global _lib
    import sys

    import torch
    for name in [m for m in sys.modules if m == "torchvision" or m.startswith("torchvision.")]:
        del sys.modules[name]
    if _lib is None:
        _lib = torch.library.Library("torchvision", "DEF")
        for s in _SCHEMAS:
            _lib.define(s)
    return importlib.import_module("torchvision")


def import_torchvision():
    if importlib.util.find_spec("torchvision") is None:
        pytest.skip("torchvision is not installed")
    try:
        return importlib.import_module("torchvision")
    except RuntimeError as e:
        if "torchvision::nms" not in str(e):
            raise
        return _import_without_extension()


def import_timm():
    if importlib.util.find_spec("timm") is None:
        pytest.skip("timm is not installed")
    import_torchvision()
    return importlib.import_module("timm")
