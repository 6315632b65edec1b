"""The compile profile (torchtrt_c/dynamo/_profile.py): every phase, each lowering pass, per
engine its build steps and counts; shown with debug=True, in the dry-run report and through
logging; progress lines that read the same on a non-tty stream (Jupyter). Kernel dedupe
(csrc/codegen/codegen_dedupe.c) is checked against eager here too, since the profile counts it."""
import io
import logging
import re
import time

import torch

import torchtrt_c
from torchtrt_c.dynamo import _progress
from torchtrt_c.dynamo._profile import BUILD_STEPS, last_compile_profile
from torchtrt_c import settings

# "engine cache lookup": the whole-module cache's key, taken right after capture (the engine
# cache is on in _compile below)
PHASES = ["capture (torch.export)", "engine cache lookup", "decompositions", "import", "lowering", "partitioning", "engines + stitching"]


class Repeated(torch.nn.Module):
    """Three blocks of identical shapes: their kernels are the same up to the kernel name."""

    def __init__(self, dim=24):
        super().__init__()
        self.blocks = torch.nn.ModuleList(torch.nn.Linear(dim, dim) for _ in range(3))

    def forward(self, x):
        for b in self.blocks:
            x = torch.relu(b(x)) * 0.5 + x
        return x


def _compile(model, x, tmp_path, **kw):
    opts = dict(inputs=[x], min_block_size=1, cache_built_engines=True, reuse_cached_engines=True,
                engine_cache_dir=str(tmp_path / "engines"), optimization_level=1)
    opts.update(kw)
    return torchtrt_c.compile(model, **opts)


def test_profile_has_every_phase(tmp_path):
    torch.manual_seed(0)
    m, x = Repeated().eval(), torch.randn(5, 24)
    gm = _compile(m, x, tmp_path)
    prof = gm._torchtrt_c_profile
    assert prof is last_compile_profile()
    names = [p[0] for p in prof.phases]
    assert names[:len(PHASES)] == PHASES, names
    assert all(s >= 0 for _, s in prof.phases)
    assert prof.total_s >= sum(s for _, s in prof.phases) - 1e-6
    assert {p[0] for p in prof.passes} >= {"constant_fold", "cse", "dce"}, prof.passes
    assert len(prof.engines) == 1
    e = prof.engines[0]
    assert e["name"] == "_run_on_acc_0" and e["source"] == "built"
    assert {"cache_key", "build", "total"} <= set(e["seconds"]), e["seconds"]
    assert "serialize" not in e["seconds"], "the blob is made when asked for, not by the compile"
    b = e["build"]
    for k in BUILD_STEPS:
        assert b[k] >= 0, (k, b)
    # one program, or parts built in parallel (GPUs: TORCHTRT_C_BUILD_THREADS), at most one per kernel
    assert b["program_origin"] == "compiled" and 1 <= b["programs"] <= b["unique_kernels"]
    assert b["source_bytes"] > 0 and 1 <= b["unique_kernels"] <= b["kernels"]
    assert b["gemms"] == 3 and b["tune_timed"] == 0, "optimization_level=1 times no candidate"
    assert prof.programs["compiled"] >= 1
    d = prof.as_dict()
    assert d["engine_totals"]["built"] == 1 and d["engine_totals"]["engines"] == 1
    text = str(prof)
    for n in PHASES:
        assert n in text
    assert "_run_on_acc_0" in text and "unique" in text


def test_kernel_dedupe_matches_eager(tmp_path, monkeypatch):
    torch.manual_seed(1)
    m = Repeated().eval()
    results = {}
    for flag in ("1", "0"):
        settings.set(DEDUPE_KERNELS=flag)
        gm = _compile(m, torch.randn(7, 24), tmp_path / flag)
        b = gm._torchtrt_c_profile.engines[0]["build"]
        results[flag] = b
        for seed in (2, 3):
            x = torch.randn(7, 24, generator=torch.Generator().manual_seed(seed))
            got, want = gm(x), m(x)
            err = (got - want).abs().max().item()
            assert err <= 1e-4, f"dedupe={flag}: max abs error {err} vs eager"
    assert results["0"]["unique_kernels"] == results["0"]["kernels"]
    assert results["1"]["kernels"] == results["0"]["kernels"]
    assert results["1"]["unique_kernels"] < results["1"]["kernels"], results["1"]
    assert results["1"]["source_bytes"] < results["0"]["source_bytes"]


def test_debug_prints_the_profile_and_logging_has_the_summary(tmp_path, capsys, caplog):
    m, x = Repeated().eval(), torch.randn(3, 24)
    with caplog.at_level(logging.INFO, logger="torchtrt_c"):
        _compile(m, x, tmp_path, debug=True)
    err = capsys.readouterr().err
    assert "torchtrt_c compile profile" in err
    for n in PHASES:
        assert f"phase: {n}" in err
    summaries = [r.getMessage() for r in caplog.records if r.getMessage().startswith("compile ")]
    assert summaries and "capture (torch.export)" in summaries[-1], summaries
    logging.getLogger("torchtrt_c").setLevel(logging.NOTSET)  # debug=True raised it


def test_dryrun_report_has_the_profile(tmp_path, capsys):
    m, x = Repeated().eval(), torch.randn(3, 24)
    gm = torchtrt_c.compile(m, inputs=[x], min_block_size=1, dryrun=True)
    rep = gm.dryrun_report
    assert rep.profile is gm._torchtrt_c_profile and rep.profile.dryrun
    text = str(rep)
    assert "compile profile" in text and "partitioning" in text
    assert "Compile profile" in rep._repr_html_()
    assert not rep.profile.engines


def test_progress_lines_on_a_non_tty_stream(monkeypatch):
    monkeypatch.setattr(_progress, "HEARTBEAT_S", 0.2)
    buf = io.StringIO()   # what Jupyter's stderr is: not a tty
    p = _progress.Progress(debug=True, stream=buf)
    p.phase("capture (torch.export)")
    p.engine(1, 2, "_run_on_acc_0")
    time.sleep(0.7)       # a long step: the heartbeat says it is still running
    p.phase("engines + stitching")
    prof = p.done()
    out = buf.getvalue()
    assert "\r" not in out and "\x1b" not in out
    lines = out.splitlines()
    assert all(re.match(r"\[torchtrt_c +\d+\.\ds\] ", ln) or ln.startswith(" ") or ln.startswith("torchtrt_c compile")
               for ln in lines), lines
    assert any("still at: building engine 1 of 2" in ln for ln in lines), lines
    assert [n for n, _ in prof.phases] == ["capture (torch.export)", "engines + stitching"]
    assert prof.phases[0][1] >= 0.6
    n = len(buf.getvalue())
    time.sleep(0.5)
    assert len(buf.getvalue()) == n, "the heartbeat stops with done()"


def _progress_text(**kw) -> str:
    buf = io.StringIO()
    p = _progress.Progress(stream=buf, **kw)
    p.phase("capture (torch.export)")
    p.engine(1, 1, "_run_on_acc_0")
    p.done()
    return buf.getvalue()


def test_progress_follows_the_torchtrt_c_logger(monkeypatch):
    """Progress shows where the logger lets a warning through: a user silences it as they
    silence the library's warnings (the logger's level, or logging.disable)."""
    monkeypatch.setattr(_progress, "SHOW_AFTER_S", 0.0)
    lg = logging.getLogger("torchtrt_c")
    level = lg.level
    try:
        lg.setLevel(logging.NOTSET)
        assert "phase: capture (torch.export)" in _progress_text()
        lg.setLevel(logging.ERROR)
        assert _progress_text() == ""
        lg.setLevel(logging.WARNING)
        assert "building engine 1 of 1" in _progress_text()
        lg.setLevel(logging.NOTSET)
        logging.disable(logging.WARNING)
        assert _progress_text() == ""
    finally:
        logging.disable(logging.NOTSET)
        lg.setLevel(level)


def test_a_compile_with_the_logger_at_error_writes_nothing_to_stderr(monkeypatch, capfd):
    monkeypatch.setattr(_progress, "SHOW_AFTER_S", 0.0)   # every compile shows its progress
    lg = logging.getLogger("torchtrt_c")
    level = lg.level
    m, x = Repeated().eval(), torch.randn(3, 24)
    try:
        lg.setLevel(logging.NOTSET)
        torchtrt_c.compile(m, inputs=[x], min_block_size=1)
        assert "[torchtrt_c" in capfd.readouterr().err
        lg.setLevel(logging.ERROR)
        trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
        err = capfd.readouterr().err
        assert "[torchtrt_c" not in err, err
        assert [n for n, _ in trt.named_children()] == ["_run_on_acc_0"]
    finally:
        lg.setLevel(level)
