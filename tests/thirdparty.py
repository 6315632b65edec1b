"""torchvision and timm for the model tier and bench, importable beside a CPU-only torch.

    tv = import_torchvision()      # in a test: skips when torchvision cannot be had
    timm = import_timm()
    tv = load_torchvision()        # anywhere else: raises ImportError saying why
    randomize_constant_init(model) # before comparing with eager (see there)

Where torchvision is installed and imports (the GPU machine), it is used as it is. Elsewhere
`./run.sh` installs torchvision (the release matching torch) and timm with
`pip install --no-deps --target .deps/vision` (SIDE_DIR), outside site-packages: PyPI's
torchvision wheel carries a C extension linked against CUDA torch, and an installed torchvision
that fails to import breaks `import transformers` for everyone (transformers imports it when it
finds it). So the side directory joins sys.path only here, when a vision test or bench row asks
for torchvision/timm, and only in that process.

Beside the CPU build of torch that extension does not load, and torchvision's import then stops
at `torch.library.register_fake("torchvision::nms")` because the op was never defined. The
models we test and time are pure Python and use none of its C ops (nms/roi_align/deform_conv2d
are detection post-processing; image.so is file decoding), so only then do we define the two
schemas the import registers fake kernels for and import again. Any use of those ops then fails
loudly ("no kernel"), never silently. Once torchvision is in sys.modules, a transformers import
in the same process that looks for torchvision gets this working module, not a second import.
"""
import importlib
import importlib.util
import sys
from pathlib import Path

SIDE_DIR = Path(__file__).resolve().parent.parent / ".deps" / "vision"

_SCHEMAS = ("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
            "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
_lib = None


def _drop_modules(pkg):
    for name in [m for m in sys.modules if m == pkg or m.startswith(pkg + ".")]:
        del sys.modules[name]


def _find(pkg):
    """Make pkg findable: installed first, else from SIDE_DIR (appended, so that the side
    directory never shadows an installed package). Returns whether the side directory was added."""
    if importlib.util.find_spec(pkg) is not None:
        return False
    side = str(SIDE_DIR)
    if not (SIDE_DIR / pkg).is_dir():
        raise ImportError(f"{pkg} is not installed (nor in {SIDE_DIR}; ./run.sh installs it there)")
    added = side not in sys.path
    if added:
        sys.path.append(side)
        importlib.invalidate_caches()
    return added


def _import_without_extension():
    """torchvision's import failed at its nms registration: define the schemas, import again."""
    global _lib
    import torch
    _drop_modules("torchvision")
    if _lib is None:
        _lib = torch.library.Library("torchvision", "DEF")
        for s in _SCHEMAS:
            _lib.define(s)
    return importlib.import_module("torchvision")


def load_torchvision():
    if "torchvision" in sys.modules:
        return sys.modules["torchvision"]
    added = _find("torchvision")
    try:
        try:
            return importlib.import_module("torchvision")
        except RuntimeError as e:
            if "torchvision::nms" not in str(e):  # not the missing-extension case: report it
                raise
            return _import_without_extension()
    except Exception as e:
        # leave nothing half-imported or findable behind: transformers would trip over it
        _drop_modules("torchvision")
        if added:
            sys.path.remove(str(SIDE_DIR))
            importlib.invalidate_caches()
        raise ImportError(f"torchvision does not import here: {type(e).__name__}: {e}") from e


def load_timm():
    load_torchvision()
    _find("timm")
    return importlib.import_module("timm")


def randomize_constant_init(model, seed=0):
    """Random values for every floating parameter or buffer that the library initialised to one
    constant, in place; returns the model. Their inits hide most of a model from a comparison
    with eager: zero-initialised last BatchNorm of each residual block (timm resnet18d, levit)
    and zero heads (torchvision vit_b_16) zero whole branches or the output, layer scales of
    1e-6/1e-5 (ConvNeXt, PoolFormer) shrink every block below a 1e-5 tolerance, zero attention
    biases (levit) leave their indexing untested, and BatchNorm's running mean 0 / var 1 make
    it an identity. Scale-like vectors get U(0.5, 1.5), biases and running means U(-0.1, 0.1),
    running variances U(0.5, 1.5), bias tables of 2+ dims N(0, 1), other tensors of 2+ dims
    N(0, 1/fan_in)."""
    import torch
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, t in list(model.named_parameters()) + list(model.named_buffers()):
            if not t.is_floating_point() or t.numel() < 2 or not bool((t == t.flatten()[0]).all()):
                continue
            leaf = name.rsplit(".", 1)[-1]
            u = torch.rand(t.shape, generator=g, dtype=torch.float32)
            if "bias" in leaf and t.dim() >= 2:  # attention-logit bias tables (levit)
                # N(0, 1): a wrong gather of a U(-0.1, 0.1) table moved levit's output by 1.5e-6
                # of its max, under the tolerance; of this one by 5e-5
                v = torch.randn(t.shape, generator=g)
            elif "bias" in leaf or leaf == "running_mean":
                v = (u - 0.5) * 0.2
            elif t.dim() >= 2:
                v = torch.randn(t.shape, generator=g) / t[0].numel() ** 0.5
            else:  # norm weights, layer scales, running_var
                v = u + 0.5
            t.copy_(v.to(t.dtype))
    return model


def _or_skip(load):
    import pytest
    try:
        return load()
    except ImportError as e:
        pytest.skip(str(e))


def import_torchvision():
    return _or_skip(load_torchvision)


def import_timm():
    return _or_skip(load_timm)
