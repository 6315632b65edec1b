"""cuDNN convolutions through torchtrt_c's own cuDNN step (csrc/backend/cuda/cudnn.c, via the
_C.cudnn_conv_* hooks) on torch's CUDA tensors, against a float64 convolution of the same
(rounded) inputs and against torch's own conv2d in the same precision: fp32 (true fp32 and
TF32), fp16, bf16; NCHW and NHWC; 1x1, 3x3 stride 2, 7x7 stem, depthwise, grouped, dilated,
asymmetric and odd sizes.

Tolerance: |y - ref| <= tol * conv(|x|, |w|) elementwise (the scale rounding errors grow
with), tol 1e-5 (fp32), 2e-3 (TF32, fp16), 1.6e-2 (bf16); and our worst error at most 4x
torch's own + a quarter of that tol (the same cuDNN library, which may time another algorithm
fastest: on the H100 a Winograd fp32 3x3 at 2.2e-6 against torch's 2.8e-7, a TF32 dilated one
at 2.4e-4 where torch's choice had none).
"""
import pytest
import torch

from torchtrt_c import _C

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA torch and a CUDA device")

# (n, c, h, w, k, groups, kh, kw, stride, pad, dil)
CASES = {
    "1x1": (2, 16, 7, 9, 24, 1, 1, 1, (1, 1), (0, 0), (1, 1)),
    "3x3s2": (2, 8, 13, 11, 16, 1, 3, 3, (2, 2), (1, 1), (1, 1)),
    "7x7stem": (2, 3, 45, 37, 16, 1, 7, 7, (2, 2), (3, 3), (1, 1)),
    "depthwise": (2, 32, 15, 14, 32, 32, 3, 3, (1, 1), (1, 1), (1, 1)),
    "depthwise7x7": (2, 24, 14, 13, 24, 24, 7, 7, (1, 1), (3, 3), (1, 1)),
    "grouped": (2, 16, 9, 9, 32, 4, 3, 3, (1, 1), (1, 1), (1, 1)),
    "dilated": (1, 8, 12, 15, 8, 1, 3, 3, (1, 1), (2, 2), (2, 2)),
    "asym1x5": (3, 5, 7, 17, 7, 1, 1, 5, (1, 2), (0, 2), (1, 1)),
    "resnet3x3": (8, 64, 28, 28, 64, 1, 3, 3, (1, 1), (1, 1), (1, 1)),
}
MODES = {"fp32": (torch.float32, False, 1e-5), "tf32": (torch.float32, True, 2e-3), "fp16": (torch.float16, False, 2e-3),
         "bf16": (torch.bfloat16, False, 1.6e-2)}
NAMES = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16"}


def _available():
    ok, why, ver = _C.cudnn_available()
    if not ok:
        pytest.skip(why)
    return ver


def _desc(x, w, dtype, tf32, nhwc, groups, stride, pad, dil, oh, ow):
    n, c, h, wd = x.shape
    k, _, kh, kw = w.shape
    return (NAMES[dtype], tf32, nhwc, n, c, h, wd, k, groups, kh, kw, stride[0], stride[1], pad[0], pad[1], dil[0], dil[1],
            oh, ow)


def _ours(x, w, dtype, tf32, nhwc, groups, stride, pad, dil, stream=None, time_it=True):
    mf = torch.channels_last if nhwc else torch.contiguous_format
    xs, ws = x.contiguous(memory_format=mf), w.contiguous(memory_format=mf)
    n, _, h, wd = x.shape
    k, _, kh, kw = w.shape
    oh = (h + 2 * pad[0] - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd + 2 * pad[1] - dil[1] * (kw - 1) - 1) // stride[1] + 1
    d = _desc(x, w, dtype, tf32, nhwc, groups, stride, pad, dil, oh, ow)
    nb, info = _C.cudnn_conv_prepare(d, x.device.index or 0, time_it)
    y = torch.empty((n, k, oh, ow), dtype=dtype, device=x.device, memory_format=mf)
    wsp = torch.empty(max(nb, 1), dtype=torch.uint8, device=x.device)
    s = stream if stream is not None else torch.cuda.current_stream()
    _C.cudnn_conv_run(d, x.device.index or 0, xs.data_ptr(), ws.data_ptr(), y.data_ptr(), wsp.data_ptr(), nb, s.cuda_stream)
    return y, info


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("case", list(CASES))
def test_cudnn_conv_matches(case, mode, layout):
    _available()
    n, c, h, w, k, g, kh, kw, stride, pad, dil = CASES[case]
    dtype, tf32, tol = MODES[mode]
    if dtype == torch.bfloat16 and not torch.cuda.is_bf16_supported():
        pytest.skip("no bf16 on this device")
    gen = torch.Generator().manual_seed(hash((case, mode)) & 0xFFFF)
    x = (torch.rand(n, c, h, w, generator=gen) * 2 - 1).to(dtype).cuda()
    wt = (torch.rand(k, c // g, kh, kw, generator=gen) * 2 - 1).to(dtype).cuda()
    y, info = _ours(x, wt, dtype, tf32, layout == "nhwc", g, stride, pad, dil)
    F = torch.nn.functional.conv2d
    ref = F(x.double(), wt.double(), None, stride, pad, dil, g)
    mag = F(x.double().abs(), wt.double().abs(), None, stride, pad, dil, g)
    prev = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = tf32
    try:
        theirs = F(x, wt, None, stride, pad, dil, g)
    finally:
        torch.backends.cudnn.allow_tf32 = prev
    torch.cuda.synchronize()
    err = ((y.double() - ref).abs() / mag.clamp_min(1e-30))
    their_err = float(((theirs.double() - ref).abs() / mag.clamp_min(1e-30)).max())
    worst = float(err.max())
    assert y.shape == ref.shape
    assert worst <= tol, (f"{case} {mode} {layout}: worst error {worst:.3g} of conv(|x|,|w|) > {tol} at "
                          f"{tuple(int(v) for v in torch.unravel_index(err.argmax(), err.shape))}; torch's {their_err:.3g}; "
                          f"algo {info}")
    # torch may pick an algorithm with less rounding (a non-TF32 one in TF32 mode, no Winograd in
    # fp32) than the one timed fastest here: a quarter of tol on top of 4x torch's own error
    assert worst <= 4 * their_err + tol / 4, f"{case} {mode} {layout}: {worst:.3g} vs torch's {their_err:.3g} ({info})"


def test_cudnn_conv_side_stream_and_cache():
    """A plan is made once per descriptor (the second prepare gives the same workspace and
    algorithm untimed), and runs on the stream given: ordered after work already queued there."""
    _available()
    x = torch.randn(4, 32, 20, 20, device="cuda")
    w = torch.randn(48, 32, 3, 3, device="cuda")
    s = torch.cuda.Stream()
    y0, info0 = _ours(x, w, torch.float32, False, False, 1, (1, 1), (1, 1), (1, 1))
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        x2 = x * 2            # queued on s: the convolution must see it
        y1, info1 = _ours(x2, w, torch.float32, False, False, 1, (1, 1), (1, 1), (1, 1), stream=s, time_it=False)
    torch.cuda.synchronize()
    assert info1 == info0 and info0["timed"]
    torch.testing.assert_close(y1, 2 * y0, rtol=1e-5, atol=1e-4)


def test_cudnn_conv_bad_descriptor():
    _available()
    with pytest.raises(_C.Error, match="groups do not divide"):
        _C.cudnn_conv_prepare(("float32", False, False, 1, 6, 8, 8, 4, 4, 3, 3, 1, 1, 1, 1, 1, 1, 8, 8), 0, False)
    with pytest.raises(_C.Error, match="output 9x8 given"):
        _C.cudnn_conv_prepare(("float32", False, False, 1, 4, 8, 8, 4, 1, 3, 3, 1, 1, 1, 1, 1, 1, 9, 8), 0, False)
    d = ("float16", False, True, 8, 64, 28, 28, 64, 1, 3, 3, 1, 1, 1, 1, 1, 1, 28, 28)
    nb, _ = _C.cudnn_conv_prepare(d, 0, True)
    if nb:   # a run given less workspace than its plan needs is refused before cuDNN sees it
        with pytest.raises(_C.Error, match="workspace"):
            _C.cudnn_conv_run(d, 0, 16, 16, 16, 16, nb - 1, 0)
