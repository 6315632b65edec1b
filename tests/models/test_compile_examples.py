"""The examples a user runs first: they run from anywhere (no imports from tests/), and say what
they should. The notebook runs in a real Jupyter kernel (nbclient + ipykernel; skipped where
they are not installed)."""
import ast
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EX = os.path.join(ROOT, "examples")


def _run(name, *args, cwd=None):
    r = subprocess.run([sys.executable, os.path.join(EX, name), *args], capture_output=True,
                       text=True, timeout=600, cwd=cwd or ROOT)
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
def test_transformer_dynamic(tmp_path):
    pytest.importorskip("transformers")
    out = _run("transformer_dynamic.py", cwd=tmp_path)
    assert "engines: ['_run_on_acc_0']" in out
    for b, s in ((1, 4), (7, 33), (32, 64)):
        line = next(ln for ln in out.splitlines() if ln.startswith(f"batch {b:2d}, sequence {s:2d}:"))
        assert float(line.rsplit(" ", 1)[1]) < 1e-5, line
    assert "batch 33: input 'input_ids'" in out


def _example_sources():
    for name in sorted(os.listdir(EX)):
        path = os.path.join(EX, name)
        if name.endswith(".py"):
            yield name, open(path).read()
        elif name.endswith(".ipynb"):
            import json
            nb = json.load(open(path))
            yield name, "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")


def test_examples_import_nothing_from_tests():
    """What a pip install has: torchtrt_c, torch and public libraries, no test helpers and no
    sys.path edits."""
    allowed = {"torch", "torchtrt_c", "transformers", "os", "sys", "time", "subprocess", "tempfile",
               "logging", "json"}
    for name, src in _example_sources():
        assert "sys.path" not in src, f"{name} edits sys.path"
        for node in ast.walk(ast.parse(src)):
            mods = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                    [node.module] if isinstance(node, ast.ImportFrom) else [])
            for m in mods:
                assert m.split(".")[0] in allowed, f"{name} imports {m}"


def _execute_notebook(nb, cwd):
    """Runs every cell of `nb` (an nbformat notebook) in a fresh python3 kernel started in cwd;
    the kernel inherits this process's environment (PYTHONPATH picks this tree)."""
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(cwd)}}).execute()
    return nb


def _outputs(cell):
    """(kind, text) for each output of a code cell: kind is the stream name, or 'display'."""
    out = []
    for o in cell.outputs:
        if o.output_type == "stream":
            out.append((o.name, o.text))
        elif o.output_type in ("display_data", "execute_result"):
            out.append(("display", o.data.get("text/plain", "") + o.data.get("text/html", "")))
        elif o.output_type == "error":
            raise AssertionError(f"cell failed: {o.ename}: {o.evalue}")
    return out


def test_dryrun_notebook_runs_in_a_kernel_and_shows_each_report_once(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.read(os.path.join(EX, "dryrun_report.ipynb"), as_version=4)
    nbformat.validate(nb)
    for c in nb.cells:   # committed without outputs
        assert c.cell_type == "markdown" or c.outputs == [], "clear the notebook's outputs"
    _execute_notebook(nb, tmp_path)   # not the repository: no tests/ to import from
    code = [c for c in nb.cells if c.cell_type == "code"]
    reports = []
    for c in code:
        outs = _outputs(c)
        shown = [t for k, t in outs if k == "display" and "torchtrt_c dry run" in t]
        printed = [t for k, t in outs if k != "display" and "torchtrt_c dry run" in t]
        assert not printed, f"the report was printed as text beside its table:\n{printed}"
        if "dryrun=True" in c.source:
            assert len(shown) == 1, f"a dry-run compile showed its report {len(shown)} times"
            reports.append(shown[0])
        else:
            assert not shown
    assert len(reports) == 2
    assert "<table>" in reports[0] and "in torch_executed_ops" in reports[0]
    assert "_run_on_acc_0" in reports[1]
    text = "".join(t for c in code for k, t in _outputs(c) if k == "stdout")
    assert "coverage: 66.7%" in text and "engines: ['_run_on_acc_0']" in text
    err = float(text.split("max abs error vs eager:")[1].split()[0])
    assert err < 1e-5


def test_progress_in_a_notebook_is_one_updating_line_and_the_logger_silences_it(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    setup = ("import logging, torch, torchtrt_c\n"
             "from torchtrt_c.dynamo import _progress\n"
             "_progress.SHOW_AFTER_S = 0   # show every compile's progress, however short\n"
             "model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 4)).eval()\n"
             "x = torch.randn(2, 8)")
    compile_ = "trt = torchtrt_c.compile(model, inputs=[x], min_block_size=1)"
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell(setup),
        nbformat.v4.new_code_cell(compile_),
        nbformat.v4.new_code_cell('logging.getLogger("torchtrt_c").setLevel(logging.ERROR)\n' + compile_),
    ])
    _execute_notebook(nb, tmp_path)
    outs = _outputs(nb.cells[1])
    progress = [t for k, t in outs if "[torchtrt_c" in t]
    assert len(progress) == 1 and outs[0][0] == "display", f"one updating display expected, got {outs}"
    assert "done in" in progress[0], progress   # updated to the last step
    assert not [t for k, t in _outputs(nb.cells[2]) if "[torchtrt_c" in t], "the logger at ERROR shows no progress"


@pytest.mark.slow
def test_llm_generate_example(tmp_path):
    pytest.importorskip("transformers")
    out = _run("llm_generate.py", cwd=tmp_path)
    assert "engines ['_run_on_acc_0']" in out
    line = next(ln for ln in out.splitlines() if ln.startswith("generate():"))
    # fp32 on the CPU: every token equal; fp16 on a GPU may part at a near-tie
    n = int(line.split()[1])
    assert n == 48 or ("device cuda" in out and n >= 16), line
