"""torchvision and timm models for bench/run.py: the libraries' own model definitions, random
weights (weights=None / pretrained=False, nothing downloaded; constant-initialised tensors randomised), at
their default configuration.

    model, make_input = build_vision("tv_resnet50", "full")   # 3x224x224 images
    y = model(make_input(batch=8))                             # logits

torchvision/timm come through tests/thirdparty.py: as installed where torchvision imports (the
GPU machine), else from ./run.sh's side directory .deps/vision (beside a CPU-only torch).
size="tiny" keeps each architecture and feeds 64x64 images (ViT/DeiT built for 64x64; video
models 8x32x32 clips, 16x112x112 at "full"), for checking the harness quickly.
"""
from __future__ import annotations

import torch

# bench name -> (library, model name, {size: constructor kwargs for that input size})
_SPECS = {
    "tv_resnet18": ("torchvision", "resnet18", {}),
    "tv_resnet50": ("torchvision", "resnet50", {}),
    "tv_mobilenet_v2": ("torchvision", "mobilenet_v2", {}),
    "tv_mobilenet_v3_large": ("torchvision", "mobilenet_v3_large", {}),
    "tv_efficientnet_b0": ("torchvision", "efficientnet_b0", {}),
    "tv_convnext_tiny": ("torchvision", "convnext_tiny", {}),
    "tv_vit_b_16": ("torchvision", "vit_b_16", {64: {"image_size": 64}}),
    "timm_mobilevit_s": ("timm", "mobilevit_s", {}),
    "timm_levit_128s": ("timm", "levit_128s", {64: {"img_size": 64}}),
    # video CNNs (3-D convolutions; issue 33): clips of 3 x frames x H x W (_VIDEO)
    "tv_r3d_18": ("torchvision", "r3d_18", {}),
    "tv_mc3_18": ("torchvision", "mc3_18", {}),
    "tv_r2plus1d_18": ("torchvision", "r2plus1d_18", {}),
}
VISION_MODELS = list(_SPECS)
# video models: size -> (frames, H = W): Kinetics' 16 x 112 x 112 clips at "full", 8 x 32 x 32 at "tiny"
_VIDEO = {"tv_r3d_18", "tv_mc3_18", "tv_r2plus1d_18"}
_CLIP = {"full": (16, 112), "tiny": (8, 32)}


def build_vision(name: str, size: str = "full", seed: int = 0):
    if name not in _SPECS:
        raise ValueError(f"unknown model {name!r}; known: {', '.join(VISION_MODELS)}")
    # tests/thirdparty.py (run.py puts tests/ on sys.path)
    from thirdparty import load_timm, load_torchvision, randomize_constant_init
    lib, arch, by_size = _SPECS[name]
    hw = 224 if size == "full" else 64
    kwargs = by_size.get(hw, {})
    torch.manual_seed(seed)
    if lib == "torchvision":
        m = load_torchvision().models.get_model(arch, weights=None, **kwargs)
    else:
        m = load_timm().create_model(arch, pretrained=False, **kwargs)
    # constant inits (zero heads and residual BatchNorms, 1e-6 layer scales) would make the
    # max-error column meaningless (vit_b_16's zero head outputs zeros)
    if name in _VIDEO:
        t, vhw = _CLIP["full" if size == "full" else "tiny"]
        return randomize_constant_init(m.eval(), seed), (lambda batch=1: torch.randn(batch, 3, t, vhw, vhw))
    return randomize_constant_init(m.eval(), seed), (lambda batch=1: torch.randn(batch, 3, hw, hw))
