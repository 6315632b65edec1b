"""Program builds in worker processes (csrc/backend/build_procs.c, TORCHTRT_C_BUILD_PROCS).

On by default only on NVIDIA (its OpenCL compiles one program at a time per process); here it is
forced on whatever the device, with binaries kept (PoCL keeps none by default) and the caller-
thread companion off (workers open devices of the device list). Each case runs in a fresh
process: the knobs are read at device discovery and target creation, and the program counters
are process-wide."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SCRIPT = textwrap.dedent(r"""
    import json, os, sys
    import torch, torchtrt_c
    from torchtrt_c import _C
    if sys.argv[1] == "bad-python":
        _C._set_build_worker("/nonexistent/python", _C.__file__)
    if sys.argv[1] == "bad-module":
        _C._set_build_worker(sys.executable, "/nonexistent/_C.so")
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(), torch.nn.Conv2d(8, 5, 3),
                            torch.nn.Softmax(1), torch.nn.Flatten(), torch.nn.LayerNorm(5 * 7 * 9)).eval()
    x = torch.randn(3, 3, 11, 13)
    s0 = dict(_C.program_stats())
    c = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
    s1 = dict(_C.program_stats())
    errs = []
    for shape in [(3, 3, 11, 13)]:
        xi = torch.randn(*shape)
        errs.append((c(xi) - m(xi)).abs().max().item())
    print(json.dumps({"stats": {k: s1[k] - s0[k] for k in s1}, "errs": errs, "worker_error": _C.build_worker_error(),
                      "cached": len(os.listdir(os.environ["TORCHTRT_C_CACHE_DIR"]))}))
""")


def _run_env(tmp_path, base):
    env = dict(base, TORCHTRT_C_CACHE_DIR=str(tmp_path / "cache"), TORCHTRT_C_PROGRAM_BINARIES="1",
               TORCHTRT_C_BUILD_THREADS="3", TORCHTRT_C_BUILD_PROCS="2", TORCHTRT_C_CALLER_THREAD="0",
               TMPDIR=str(tmp_path), TORCHTRT_C_NATIVE="0", PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, "-c", SCRIPT, "ok"], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def _run(tmp_path, mode, procs="2"):
    env = dict(os.environ, TORCHTRT_C_CACHE_DIR=str(tmp_path / "cache"), TORCHTRT_C_PROGRAM_BINARIES="1",
               TORCHTRT_C_BUILD_THREADS="3", TORCHTRT_C_BUILD_PROCS=procs, TORCHTRT_C_BUILD_PROC_BYTES="1", TORCHTRT_C_CALLER_THREAD="0", TMPDIR=str(tmp_path),
               TORCHTRT_C_NATIVE="0", PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, "-c", SCRIPT, mode], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_workers_build_the_parts_and_the_engine_loads_them(tmp_path):
    out = _run(tmp_path, "ok")
    st = out["stats"]
    # the engine's parts (3 threads -> up to 3 parts) were compiled by the workers, and the
    # engine's own builds all came from the binary cache they filled
    assert st["prebuilt"] >= 2, st
    assert st["compiled"] == 0 and st["failed"] == 0, st
    assert st["cache_hits"] >= st["prebuilt"], st
    assert out["cached"] >= st["prebuilt"]
    assert max(out["errs"]) < 1e-4, out["errs"]


def test_off_builds_in_process(tmp_path):
    out = _run(tmp_path, "ok", procs="1")
    st = out["stats"]
    assert st["prebuilt"] == 0 and st["compiled"] >= 2, st
    assert max(out["errs"]) < 1e-4


def test_a_failing_worker_is_counted_and_says_why(tmp_path):
    """A worker that exits with an error (its interpreter cannot load the module) is counted and
    its output kept for build_worker_error(); the caller's builds still make the engine."""
    out = _run(tmp_path, "bad-module")
    st = out["stats"]
    assert st["prebuilt"] == 0 and st["prebuild_failed"] >= 1 and st["compiled"] >= 2, st
    assert "build worker failed" in out["worker_error"], out["worker_error"]
    assert max(out["errs"]) < 1e-4


def test_a_worker_that_cannot_start_leaves_the_builds_to_the_caller(tmp_path):
    out = _run(tmp_path, "bad-python")
    st = out["stats"]
    assert st["prebuilt"] == 0 and st["compiled"] >= 2 and st["failed"] == 0, st
    assert max(out["errs"]) < 1e-4


def test_small_programs_build_in_process(tmp_path, monkeypatch):
    """The default bytes-per-worker floor: a tiny engine's few KiB of source never start a worker
    (a test suite of small engines would spawn hundreds of interpreters otherwise)."""
    monkeypatch.delenv("TORCHTRT_C_BUILD_PROC_BYTES", raising=False)
    env = dict(os.environ)
    env.pop("TORCHTRT_C_BUILD_PROC_BYTES", None)
    out = _run_env(tmp_path, env)
    st = out["stats"]
    assert st["prebuilt"] == 0 and st["compiled"] >= 2, st


def test_worker_entry_rejects_bad_jobs(tmp_path):
    from torchtrt_c import _C
    assert _C._build_worker(str(tmp_path / "missing.txt")) == 2
    job = tmp_path / "job.txt"
    job.write_text("NOTAJOB\n0\nx\ny\n/tmp\n\n0\n")
    assert _C._build_worker(str(job)) == 2
    dev = _C.devices()[0]
    job.write_text(f"TTCJOB1\n0\nnot {dev['name']}\n{dev['driver']}\n{tmp_path}\n\n0\n")
    assert _C._build_worker(str(job)) == 2
    job.write_text(f"TTCJOB1\n0\n{dev['name']}\nnot {dev['driver']}\n{tmp_path}\n\n0\n")
    assert _C._build_worker(str(job)) == 2
    # the index is only a hint: the device is found by name and driver
    job.write_text(f"TTCJOB1\n99999\n{dev['name']}\n{dev['driver']}\n{tmp_path}\n\n0\n")
    assert _C._build_worker(str(job)) == 0


def test_worker_reports_a_source_that_does_not_compile(tmp_path):
    from torchtrt_c import _C
    dev = _C.devices()[0]
    bad = tmp_path / "bad.cl"
    bad.write_text("__kernel void k(__global float *x) { this is not C; }\n")
    good = tmp_path / "good.cl"
    good.write_text("__kernel void k(__global float *x) { x[get_global_id(0)] += 1.0f; }\n")
    cache = tmp_path / "cache"
    job = tmp_path / "job.txt"
    job.write_text(f"TTCJOB1\n{dev['index']}\n{dev['name']}\n{dev['driver']}\n{cache}\n\n2\n{bad}\n{good}\n")
    env = dict(os.environ, TORCHTRT_C_PROGRAM_BINARIES="1", PYTHONPATH=ROOT)
    code = ("import importlib.util as u, sys; s = u.spec_from_file_location('torchtrt_c._C', sys.argv[1]); "
            "m = u.module_from_spec(s); s.loader.exec_module(m); sys.exit(m._build_worker(sys.argv[2]))")
    r = subprocess.run([sys.executable, "-S", "-c", code, _C.__file__, str(job)], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 1, (r.returncode, r.stderr[-2000:])
    assert "bad.cl" in r.stderr
    # the good source was still built into the cache
    assert cache.is_dir() and len(os.listdir(cache)) == 1


def test_tuning_candidates_built_by_workers_agree_with_eager(monkeypatch, tmp_path):
    """The GEMM tuner's candidate programs (GPU families forced, every candidate timed) are
    compiled by the workers first; the chosen kernels still give eager's answer (odd sizes)."""
    from torchtrt_c import _C
    import torch
    import torchtrt_c

    # set from code: the workers get them in their environment (knobs.c, ttc_knob_environ)
    torchtrt_c.settings.set(KERNELS="gpu", TUNE="full", MODULE_CACHE=False, CACHE_DIR=str(tmp_path / "c"),
                            PROGRAM_BINARIES=True, BUILD_PROCS=2, BUILD_PROC_BYTES=1, CALLER_THREAD=0, NATIVE=False,
                            GEMM_TILE=None)
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(40, 72), torch.nn.ReLU(), torch.nn.Linear(72, 33)).eval()
    x = torch.randn(3, 37, 40)
    # the device's one-time probes build programs of their own: done before counting (no GEMM
    # here: the candidates' sources do not depend on the shape, they would be cached already)
    torchtrt_c.compile(torch.nn.Sequential(torch.nn.Softmax(-1), torch.nn.ReLU()).eval(), inputs=[torch.randn(2, 8)],
                       min_block_size=1)
    s0 = dict(_C.program_stats())
    gm = torchtrt_c.compile(m, inputs=[x], min_block_size=1, optimization_level=3)
    st = {k: v - s0[k] for k, v in _C.program_stats().items()}
    (e,) = gm._torchtrt_c_profile.engines
    assert e["build"]["tune_candidates"] >= 4, e["build"]
    # candidates of different shapes may share a source (sizes are arguments): each distinct
    # one is built once, by a worker; in-process only the engine's own one-part program
    assert st["prebuilt"] >= 2 and st["compiled"] <= 1 and st["failed"] == 0, (st, e["build"], _C.build_worker_error())
    with torch.inference_mode():
        ref, out = m(x), gm(x)
    out = out[0] if isinstance(out, (tuple, list)) else out
    assert (out - ref).abs().max().item() <= 1e-4 * max(1.0, ref.abs().max().item())
