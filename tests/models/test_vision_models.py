"""Model tier, torchvision and timm: random weights (weights=None / pretrained=False, then every
constant-initialised tensor randomised, so that no block is zeroed or scaled out), small
inputs, default settings; each must be one engine with no torch segment and match eager, at a
dynamic batch (1..4, checked at 1, 2 and 3). torchvision/timm come through tests/thirdparty.py:
as installed where torchvision imports (the GPU machine), else from ./run.sh's side directory
.deps/vision (beside a CPU-only torch, so CI runs them on PoCL); they skip where neither exists.

    PYTHONPATH=$PWD python3 -m pytest tests/models/test_vision_models.py -q           # the fast few
    PYTHONPATH=$PWD python3 -m pytest tests/models/test_vision_models.py -q -m slow   # the rest
"""
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

import torchtrt_c  # noqa: E402
from model_check import check_close, segments  # noqa: E402
from thirdparty import import_timm, import_torchvision, randomize_constant_init  # noqa: E402

# name -> (constructor kwargs, input size H = W); sizes are small but keep every stage > 1x1
TORCHVISION = {
    "resnet18": ({}, 64),
    "mobilenet_v3_small": ({}, 64),
    "efficientnet_b0": ({}, 64),
    "convnext_tiny": ({}, 64),
    "regnet_y_400mf": ({}, 64),
    "shufflenet_v2_x0_5": ({}, 64),
    "densenet121": ({}, 64),
    "squeezenet1_0": ({}, 64),
    "swin_t": ({}, 64),
    "vit_b_16": ({"image_size": 64}, 64),
    # segmentation models return an OrderedDict {"out": ...}: a container output
    "deeplabv3_mobilenet_v3_large": ({"weights_backbone": None, "num_classes": 5}, 64),
    "fcn_resnet50": ({"weights_backbone": None, "num_classes": 5}, 64),
}

TIMM = {
    "mobilevit_xxs": ({}, 64),
    "levit_128s": ({"img_size": 64}, 64),
    "poolformer_s12": ({}, 64),
    "convnext_atto": ({}, 64),
    "resnet18d": ({}, 64),
    "deit_tiny_patch16_224": ({"img_size": 64}, 64),
    # session 10's probe of timm architectures: EdgeNeXt's positional encoding raises a number
    # to a tensor's power (aten.pow.Scalar, fell back to torch before); the others compiled
    # whole: MobileNetV4, FastViT (reparameterisable blocks), EVA-02 (rotary embeddings)
    "edgenext_xx_small": ({}, 64),
    "mobilenetv4_conv_small": ({}, 64),
    "fastvit_t8": ({}, 64),
    "eva02_tiny_patch14_224": ({"img_size": 56}, 56),
    # weight standardisation (ScaledStdConv2d: every convolution's weight normalised in the
    # graph): split into 26 engines and 25 torch segments before issue 33
    "nf_resnet26": ({}, 64),
}

# video CNNs (issue 33: 3-D convolution, pooling): name -> (frames, H = W); before issue 33 each
# refused every 3-D convolution and kept 17% of r3d_18's graph in the engine
VIDEO = {
    "r3d_18": (8, 32),
    "mc3_18": (8, 32),
    "r2plus1d_18": (8, 32),
}

BATCHES = (2, 1, 3)

# run in the default (CI) run: three light ones (a plain CNN, a ceil-mode pooling + concat CNN,
# a timm ConvNeXt with LayerNorm/GELU/7x7 depthwise); the rest are slow (CI runs them once with
# -m slow). Whole test on PoCL, 2 cores under load (other jobs), empty PoCL kernel cache:
# resnet18 18 s, squeezenet1_0 10 s, convnext_atto 39 s; mobilenet_v3_small 60 s, swin_t 83 s,
# resnet18d 23 s. The whole file in one process (kernel cache filling as it goes): 7.5 min,
# 5-42 s a model (deeplabv3 42 s, vit_b_16 42 s, densenet121 34 s, mobilevit 32 s). swin_t/levit's
# relative-position bias indexing also has a small stand-in in tests/device/test_compile.py.
FAST = {"resnet18", "squeezenet1_0", "convnext_atto", "r3d_18"}


def _params(names):
    return [pytest.param(n, marks=() if n in FAST else pytest.mark.slow) for n in names]


def _check(model, size, name, frames=None):
    """frames: a video model's clip length (inputs [N, 3, frames, size, size])."""
    # constant inits (zero residual BatchNorm, 1e-6 layer scales, zero heads) would hide most of
    # the model from the comparison: see randomize_constant_init
    model = randomize_constant_init(model.eval())
    rest = (3, size, size) if frames is None else (3, frames, size, size)
    spec = torchtrt_c.Input(min_shape=(1, *rest), opt_shape=(2, *rest), max_shape=(4, *rest))
    gm = torchtrt_c.compile(model, inputs=[spec])
    err = 0.0
    for b in BATCHES:
        x = torch.randn(b, *rest, generator=torch.Generator().manual_seed(b))
        with torch.no_grad():
            err = max(err, check_close(gm(x), model(x), what=f"{name} at batch {b}"))
    eng, tor = segments(gm)
    print(f"{name}: {eng} engine(s), {tor} torch segment(s), max error {err:.1e}")  # pytest -s: the docs/models.md table
    if (eng, tor) != (1, 0):
        # a dry run builds no engine, so a segment whose build failed (and fell back to torch)
        # shows only in the compile's profile
        failed = gm._torchtrt_c_profile.build_failures()
        rep = torchtrt_c.compile(model, inputs=[spec], dryrun=True).dryrun_report
        ops = {op: sorted(r) for op, (_c, r) in rep.unsupported.items()}
        pytest.fail(f"{name}: {eng} engine(s), {tor} torch segment(s), coverage {rep.coverage:.1%}; "
                    f"falling back: {ops}; engine builds that failed: {failed}")


@pytest.mark.parametrize("name", _params(TORCHVISION))
def test_torchvision_model(name):
    tv = import_torchvision()
    kwargs, size = TORCHVISION[name]
    torch.manual_seed(0)
    model = tv.models.get_model(name, weights=None, **kwargs)
    _check(model, size, name)


@pytest.mark.parametrize("name", _params(TIMM))
def test_timm_model(name):
    timm = import_timm()
    kwargs, size = TIMM[name]
    torch.manual_seed(0)
    model = timm.create_model(name, pretrained=False, **kwargs)
    _check(model, size, name)


@pytest.mark.parametrize("name", _params(VIDEO))
def test_torchvision_video_model(name):
    tv = import_torchvision()
    frames, size = VIDEO[name]
    torch.manual_seed(0)
    model = getattr(tv.models.video, name)(weights=None)
    _check(model, size, name, frames=frames)
