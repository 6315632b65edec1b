"""Install as a user would: the sdist carries the C core, its headers and the OpenCL kernel
sources; a wheel built from that sdist alone (not from the checkout) installs into a fresh venv
and compiles and runs a model there, torch coming from the system site-packages (the venv is
made with --system-site-packages, as README's CPU-torch route leaves it).

Offline: the wheel is built with --no-build-isolation (setuptools and wheel from this
interpreter) and installed with --no-index, so the declared requirements (torch, numpy) must be
satisfied by what is installed: pip fails here if the metadata asked for anything else. Slow
(a full build of the extension, about a minute on 2 cores)."""
import os
import pathlib
import subprocess
import sys
import tarfile
import zipfile

import pytest

pytestmark = pytest.mark.slow

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _env():
    env = dict(os.environ)
    for k in ("PYTHONPATH", "LD_PRELOAD", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL"):
        env.pop(k, None)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def _run(args, cwd, timeout=900):
    r = subprocess.run(args, cwd=str(cwd), env=_env(), capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, f"{' '.join(map(str, args))} failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r.stdout


def test_sdist_wheel_venv_install_runs_a_model(tmp_path):
    dist = tmp_path / "dist"
    _run([sys.executable, "setup.py", "-q", "sdist", "-d", str(dist)], ROOT)
    (sdist,) = dist.glob("torchtrt_c-*.tar.gz")
    with tarfile.open(sdist) as t:
        names = {n.split("/", 1)[1] for n in t.getnames() if "/" in n}
    want = {str(p.relative_to(ROOT)) for pat in ("csrc/**/*.c", "csrc/**/*.h", "csrc/kernels/*.cl")
            for p in ROOT.glob(pat) if p.name != "embedded.c"}
    want |= {"setup.py", "pyproject.toml", "csrc/kernels/embed.py", "torchtrt_c/__init__.py"}
    missing = sorted(want - names)
    assert not missing, f"the sdist lacks {missing[:10]} ({len(missing)} files)"

    wheels = tmp_path / "wheels"
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(wheels),
          str(sdist)], tmp_path)
    (whl,) = wheels.glob("torchtrt_c-*.whl")
    with zipfile.ZipFile(whl) as z:
        files = set(z.namelist())
        meta = z.read(next(n for n in files if n.endswith(".dist-info/METADATA"))).decode()
    assert any(n.startswith("torchtrt_c/_C.") and n.endswith(".so") for n in files), sorted(files)
    pkg = {str(p.relative_to(ROOT)) for p in (ROOT / "torchtrt_c").rglob("*.py")}
    assert pkg <= files, f"the wheel lacks {sorted(pkg - files)}"
    assert "Requires-Dist: torch>=2.11" in meta, meta

    venv = tmp_path / "venv"
    # --without-pip: the venv's own setuptools would shadow the system's (torch requires a newer
    # one); this interpreter's pip installs into it through --python
    _run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)], tmp_path)
    py = venv / "bin" / "python"
    if sys.prefix != sys.base_prefix:
        # this interpreter is itself a venv (the GPU machine's torch lives in one): the new venv's
        # --system-site-packages reaches the base interpreter's, not this venv's, so point it at
        # this one's site-packages, where torch is
        site = _run([str(py), "-c", "import site; print(site.getsitepackages()[0])"], tmp_path).strip()
        here = [p for p in sys.path if p.endswith("site-packages") and p.startswith(sys.prefix)]
        pathlib.Path(site, "outer-site-packages.pth").write_text("\n".join(here) + "\n")
    _run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-index", str(whl)], tmp_path)
    script = (
        "import torch, torchtrt_c\n"
        "print(torchtrt_c.__file__)\n"
        "m = torch.nn.Sequential(torch.nn.Linear(8, 5), torch.nn.ReLU()).eval()\n"
        "x = torch.randn(3, 8)\n"
        "c = torchtrt_c.compile(m, inputs=[x], min_block_size=1)\n"
        "with torch.no_grad():\n"
        "    err = (c(x) - m(x)).abs().max().item()\n"
        "print('engines', sum(n.startswith('_run_on_acc') for n, _ in c.named_children()), 'err', err)\n")
    out = _run([str(py), "-c", script], tmp_path).split()
    assert pathlib.Path(out[0]).resolve().is_relative_to(venv.resolve()), f"imported {out[0]}, not the venv's copy"
    assert out[1:3] == ["engines", "1"], out
    assert float(out[4]) <= 1e-5, f"max abs error {out[4]} vs eager"
