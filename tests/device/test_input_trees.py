"""Inputs that are not tensors (issue 33): a list of images (detection models take list[Tensor]),
dicts and tuples of tensors, and bool/int/float/str/None arguments (`use_cache=True`), as
example inputs to torchtrt_c.compile. Containers are flattened as torch.export flattens them
(each tensor an engine input, with its own Input range); a non-tensor value is fixed at compile
time, as torch.export fixes it, and a call with another value, another container shape or a
tensor outside its range is an InputError naming it. compile raised TypeError ("expected a
torchtrt_c.Input, a tensor or a shape, got list / bool") before."""
import pytest
import torch
import torch.nn as nn

import torchtrt_c
from zoo import assert_tree_close, submodules


class PerImage(nn.Module):
    """A detection-style backbone over a list of images of different sizes, features pooled per
    image; keyword switches that change what is computed."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 6, 3, padding=1)
        self.fc = nn.Linear(6, 4)

    def forward(self, images, scale: float = 1.0, use_cache: bool = False, mode: str = "mean", tag=None):
        feats = []
        for img in images:
            y = torch.relu(self.conv(img.unsqueeze(0)))
            feats.append(y.mean((2, 3)) if mode == "mean" else y.amax((2, 3)))
        out = self.fc(torch.cat(feats)) * scale
        return (out, out.sum(0)) if use_cache else out


def _images(seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(3, 9, 11, generator=g), torch.randn(3, 7, 5, generator=g), torch.randn(3, 4, 13, generator=g)]


KW = {"scale": 0.5, "use_cache": True, "mode": "max", "tag": None}


def test_list_of_images_and_constant_kwargs():
    torch.manual_seed(0)
    m = PerImage().eval()
    trt = torchtrt_c.compile(m, inputs=[_images()], kwarg_inputs=KW, min_block_size=1)
    assert submodules(trt, "_run_on_gpu_") == [], "torch segments"
    for seed in (1, 2):
        imgs = _images(seed)
        with torch.no_grad():
            assert_tree_close(trt(imgs, **KW), m(imgs, **KW), atol=1e-5, rtol=1e-5)


def test_calls_that_differ_from_the_compiled_inputs_raise():
    torch.manual_seed(0)
    m = PerImage().eval()
    trt = torchtrt_c.compile(m, inputs=[_images()], kwarg_inputs=KW, min_block_size=1)
    imgs = _images(1)
    with pytest.raises(torchtrt_c.InputError, match=r"'use_cache' is False; the module was compiled with True"):
        trt(imgs, **{**KW, "use_cache": False})
    with pytest.raises(torchtrt_c.InputError, match=r"'mode' is 'mean'"):
        trt(imgs, **{**KW, "mode": "mean"})
    with pytest.raises(torchtrt_c.InputError, match=r"'images': expected a list of 3 items"):
        trt(imgs[:2], **KW)
    with pytest.raises(torchtrt_c.InputError, match=r"'images\[1\]': dim 1 is 8"):
        trt([imgs[0], torch.randn(3, 8, 5), imgs[2]], **KW)
    with pytest.raises(torchtrt_c.InputError, match=r"'images\[2\]': expected a tensor"):
        trt([imgs[0], imgs[1], 3.0], **KW)


def test_list_with_dynamic_ranges():
    """Each tensor of a list takes its own Input range."""
    torch.manual_seed(0)
    m = PerImage().eval()
    specs = [torchtrt_c.Input(min_shape=(3, 4, 4), opt_shape=(3, 9, 11), max_shape=(3, 16, 16)),
             torchtrt_c.Input(shape=(3, 7, 5))]
    trt = torchtrt_c.compile(m, inputs=[specs], min_block_size=1)
    assert submodules(trt, "_run_on_gpu_") == []
    for h, w in ((9, 11), (4, 16), (13, 5)):
        imgs = [torch.randn(3, h, w), torch.randn(3, 7, 5)]
        with torch.no_grad():
            assert_tree_close(trt(imgs), m(imgs), atol=1e-5, rtol=1e-5)
    with pytest.raises(torchtrt_c.InputError, match=r"'images\[0\]': dim 1 is 17, outside the compiled range"):
        trt([torch.randn(3, 17, 5), torch.randn(3, 7, 5)])


class DictIn(nn.Module):
    def forward(self, batch, pair):
        a, b = pair
        return {"y": torch.softmax(batch["x"] @ batch["w"], -1) + a, "z": b * 2}


def test_dict_and_tuple_inputs():
    batch = {"x": torch.randn(4, 5), "w": torch.randn(5, 6)}
    pair = (torch.randn(4, 6), torch.randn(2, 3))
    m = DictIn().eval()
    trt = torchtrt_c.compile(m, inputs=[batch, pair], min_block_size=1)
    assert submodules(trt, "_run_on_gpu_") == []
    b2 = {"x": torch.randn(4, 5), "w": torch.randn(5, 6)}
    with torch.no_grad():
        assert_tree_close(trt(b2, pair), m(b2, pair), atol=1e-5, rtol=1e-5)
    with pytest.raises(torchtrt_c.InputError, match=r"'batch': expected a dict of keys \['w', 'x'\]"):
        trt({"x": b2["x"]}, pair)


def test_dry_run_and_save_load(tmp_path):
    torch.manual_seed(0)
    m = PerImage().eval()
    rep = torchtrt_c.compile(m, inputs=[_images()], kwarg_inputs=KW, min_block_size=1, dryrun=True).dryrun_report
    assert "engines: 1, torch segments: 0" in str(rep), str(rep)
    trt = torchtrt_c.compile(m, inputs=[_images()], kwarg_inputs=KW, min_block_size=1)
    torchtrt_c.save(trt, tmp_path / "m.ep")
    back = torchtrt_c.load(tmp_path / "m.ep")
    imgs = _images(3)
    with torch.no_grad():
        assert_tree_close(back(imgs, **KW), m(imgs, **KW), atol=1e-5, rtol=1e-5)


def test_unsupported_input_type_is_named():
    with pytest.raises(TypeError, match=r"kwarg_inputs\['opts'\]\[1\]: expected .* got object"):
        torchtrt_c.compile(PerImage().eval(), inputs=[_images()], kwarg_inputs={"opts": [1, object()]})


def test_module_cache_keys_the_inputs(tmp_path):
    """The module cache (cache_built_engines / reuse_cached_engines) keys containers and
    constants too: the same ones hit, another constant misses."""
    torch.manual_seed(0)
    m = PerImage().eval()
    kw = dict(min_block_size=1, cache_built_engines=True, reuse_cached_engines=True, engine_cache_dir=str(tmp_path))
    a = torchtrt_c.compile(m, inputs=[_images()], kwarg_inputs=KW, **kw)
    from torchtrt_c.dynamo._compiler import wait_engine_cache_writes
    wait_engine_cache_writes()
    b = torchtrt_c.compile(m, inputs=[_images()], kwarg_inputs=KW, **kw)
    assert b._torchtrt_c_profile.module_cache["result"] == "hit", b._torchtrt_c_profile.module_cache
    c = torchtrt_c.compile(m, inputs=[_images()], kwarg_inputs={**KW, "scale": 2.0}, **kw)
    assert c._torchtrt_c_profile.module_cache["result"] != "hit"
    imgs = _images(4)
    with torch.no_grad():
        assert_tree_close(b(imgs, **KW), a(imgs, **KW), atol=0, rtol=0)
        assert_tree_close(c(imgs, **{**KW, "scale": 2.0}), m(imgs, **{**KW, "scale": 2.0}), atol=1e-5, rtol=1e-5)
