"""The examples a user runs first: they run, and say what they should."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EX = os.path.join(ROOT, "examples")



def _run(name, *args):
    r = subprocess.run([sys.executable, os.path.join(EX, name), *args], capture_output=True,
                       text=True, timeout=600, cwd=ROOT)
    assert r.returncode == 0, f"{name} failed:\n{r.stdout[-2000:]}\n{r.stderr[-4000:]}"
    return r.stdout


def test_quickstart():
    out = _run("quickstart.py")
    assert "OpenCL devices:" in out and "max abs error vs eager" in out
    assert "compiled: 1 engine(s)" in out


@pytest.mark.slow
def test_cnn_fallback():
    out = _run("cnn_fallback.py")
    assert "_run_on_gpu_" in out and "aten.lgamma.default" in out


@pytest.mark.slow
def test_save_load_example(tmp_path):
    out = _run("save_load.py", str(tmp_path / "m.ep"))
    assert "fresh process, max abs error" in out


@pytest.mark.slow
def test_transformer_dynamic():
    out = _run("transformer_dynamic.py")
    for b in (1, 7, 32):
        assert f"batch {b:2d}:" in out
    assert "batch 33: input 'input_ids'" in out


def test_dryrun_notebook_is_valid_and_runs(capsys):
    nb = json.load(open(os.path.join(EX, "dryrun_report.ipynb")))
    assert nb["nbformat"] == 4 and nb["cells"]
    for c in nb["cells"]:
        assert c["cell_type"] in ("markdown", "code") and isinstance(c["source"], list)
        if c["cell_type"] == "code":
            assert c["outputs"] == [] and "execution_count" in c
    ns = {}
    cwd = os.getcwd()
    os.chdir(EX)
    try:
        for c in nb["cells"]:
            if c["cell_type"] == "code":
                exec(compile("".join(c["source"]), "dryrun_report.ipynb", "exec"), ns)
    finally:
        os.chdir(cwd)
    assert "<table>" in ns["report"]._repr_html_()
    assert "coverage" in capsys.readouterr().out
