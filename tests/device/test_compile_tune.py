"""GEMM tuning modes at optimization_level 3 (issue 15: fewer candidates for GPU compiles).

TORCHTRT_C_TUNE=fast (default) times the heuristic's shortlist of each GEMM shape, the biggest
TORCHTRT_C_TUNE_MAX shapes per engine; full times every candidate of the device's families (the
old behaviour, kept for A/B runs); heuristic times nothing. Run on any device with the GPU
kernel families forced (TORCHTRT_C_KERNELS=gpu: PoCL times the SIMT tiles as a GPU would), so
that the tuner's logic is covered without a GPU. Every mode must give eager's answer.
"""
import pytest
import torch

import torchtrt_c
import torchtrt_c._C as C

TOL = 1e-4


class ThreeShapes(torch.nn.Module):
    """Four GEMMs of three shapes (c and d are the same 96 x 96 product)."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(40, 72)
        self.b = torch.nn.Linear(72, 40)
        self.c = torch.nn.Linear(40, 40)
        self.d = torch.nn.Linear(40, 40)

    def forward(self, x):
        return self.d(torch.relu(self.c(torch.relu(self.b(torch.relu(self.a(x)))))))


def _simt_candidates():
    """Tiles a non-NVIDIA device times for an fp32 GEMM under KERNELS=gpu: the SIMT family."""
    d = C.devices()[C.default_device()]
    if "NVIDIA" in d["vendor"] or "NVIDIA" in d["platform"]:
        pytest.skip("on NVIDIA the tensor-core families widen the candidates: the counts below are for SIMT")
    return [t["index"] for t in C.gemm_tiles() if t["family"] == "simt"]


@pytest.fixture
def gpu_kernels(monkeypatch, tmp_path):
    for knob in ("TORCHTRT_C_GEMM_TILE", "TORCHTRT_C_TUNE", "TORCHTRT_C_TUNE_MAX"):
        monkeypatch.delenv(knob, raising=False)
    monkeypatch.setenv("TORCHTRT_C_KERNELS", "gpu")
    monkeypatch.setenv("TORCHTRT_C_MODULE_CACHE", "0")   # every compile here builds its engine
    monkeypatch.setenv("TORCHTRT_C_CACHE_DIR", str(tmp_path / "ttc"))
    return monkeypatch


def _fresh_cache(monkeypatch, tmp_path, name):
    monkeypatch.setenv("TORCHTRT_C_CACHE_DIR", str(tmp_path / name))


def _compile(mode, monkeypatch, x, cap=None):
    if mode is None:
        monkeypatch.delenv("TORCHTRT_C_TUNE", raising=False)
    else:
        monkeypatch.setenv("TORCHTRT_C_TUNE", mode)
    if cap is not None:
        monkeypatch.setenv("TORCHTRT_C_TUNE_MAX", str(cap))
    torch.manual_seed(0)
    m = ThreeShapes().eval()
    gm = torchtrt_c.compile(m, inputs=[x], min_block_size=1, optimization_level=3)
    (e,) = gm._torchtrt_c_profile.engines
    b = e["build"]
    with torch.inference_mode():
        ref, out = m(x), gm(x)
    out = out[0] if isinstance(out, (tuple, list)) else out
    err = (out - ref).abs().max().item()
    assert err <= TOL * max(1.0, ref.abs().max().item()), f"TORCHTRT_C_TUNE={mode}: max abs err {err:.2e} vs eager"
    assert b["gemms"] == 4, b
    return b


@pytest.mark.parametrize("rows", [37, pytest.param(1, marks=pytest.mark.slow)])  # 1: the M <= 16 rule
def test_fast_times_a_shortlist(gpu_kernels, tmp_path, rows):
    """The default (fast) times at most 6 candidates per shape, full every SIMT tile, heuristic
    none; identical shapes are timed once; all three agree with eager (odd sizes)."""
    simt = _simt_candidates()
    x = torch.randn(3, rows, 40)
    full = _compile("full", gpu_kernels, x)
    assert full["tune_timed"] == 3 and full["tune_cached"] == 1, full
    assert full["tune_candidates"] == 3 * len(simt), full
    _fresh_cache(gpu_kernels, tmp_path, "fast")   # (a full choice would answer the fast tuning)
    fast = _compile(None, gpu_kernels, x)
    assert fast["tune_timed"] == 3 and fast["tune_cached"] == 1, fast
    assert 3 * 2 <= fast["tune_candidates"] <= 3 * 6, fast
    assert fast["tune_candidates"] < full["tune_candidates"], (fast, full)
    heur = _compile("heuristic", gpu_kernels, x)
    assert heur["tune_timed"] == 0 and heur["tune_candidates"] == 0 and heur["tune_cached"] == 0, heur


def test_tuning_cache_keeps_modes_apart(gpu_kernels, tmp_path):
    """A shortlist's choice does not answer a full tuning (which times again); a full choice
    answers a fast one (it was made among more candidates)."""
    _simt_candidates()
    x = torch.randn(2, 9, 40)
    fast = _compile("fast", gpu_kernels, x)
    assert fast["tune_timed"] == 3, fast
    again = _compile("fast", gpu_kernels, x)
    assert again["tune_timed"] == 0 and again["tune_cached"] == 4, again
    full = _compile("full", gpu_kernels, x)
    assert full["tune_timed"] == 3 and full["tune_cached"] == 1, full
    _fresh_cache(gpu_kernels, tmp_path, "full first")
    full2 = _compile("full", gpu_kernels, x)
    assert full2["tune_timed"] == 3, full2
    fast2 = _compile("fast", gpu_kernels, x)
    assert fast2["tune_timed"] == 0 and fast2["tune_cached"] == 4, fast2


def test_cap_leaves_the_smaller_shapes_to_the_heuristic(gpu_kernels, tmp_path):
    """TORCHTRT_C_TUNE_MAX=1: only the shape with the most FLOPs is timed (40 x 40, which two
    GEMMs share: more than 40 x 72 or 72 x 40 alone), the other two keep the heuristic's tile
    (counted as capped); full ignores the cap."""
    _simt_candidates()
    x = torch.randn(2, 11, 40)
    capped = _compile("fast", gpu_kernels, x, cap=1)
    assert capped["tune_timed"] == 1 and capped["tune_capped"] == 2, capped
    (tf,) = list(tmp_path.rglob("tuning-v1.txt"))
    (line,) = tf.read_text().splitlines()
    assert line.split("\t")[0].endswith(",40,40|fast"), line
    full = _compile("full", gpu_kernels, x, cap=1)
    assert full["tune_timed"] == 3 and full["tune_capped"] == 0, full


@pytest.mark.parametrize("knob,value", [("TORCHTRT_C_TUNE", "fastest"), ("TORCHTRT_C_TUNE_MAX", "-3")])
def test_bad_tune_settings_are_named(gpu_kernels, knob, value):
    gpu_kernels.setenv(knob, value)
    m, x = ThreeShapes().eval(), torch.randn(2, 5, 40)
    with pytest.raises(Exception, match=knob):
        torchtrt_c.compile(m, inputs=[x], min_block_size=1, optimization_level=3,
                           pass_through_build_failures=True)
