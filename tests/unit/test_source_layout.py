"""The C core's rooms and the arrows between them (issues 13 and 31). Every folder under csrc/
is a room with a fixed list of rooms it may include from; an include of any other room (an
arrow pointing up or sideways) fails, and so does a folder missing from the list. On top:
the engine runs on a device through backend.h and the CPU steps' one header only (no OpenCL,
no CUDA call), holds only the engine (a line budget), and reads no environment."""
import pathlib
import re

import pytest

CSRC = pathlib.Path(__file__).resolve().parents[2] / "csrc"
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
SUFFIXES = (".c", ".h", ".inc", ".def")

BASE = {"include", "common"}
# room -> the rooms its files may include (besides its own files), lowest first:
#   include, common < ir, target < kir < codegen < backend/{cpu,cuda} < convert < engine < python
# backend/ itself (the device interface) and backend/opencl know no op, graph or kernel.
ALLOWED = {
    "include": set(),
    "common": {"include"},
    "kernels": set(),
    "ir": BASE,
    "target": BASE,
    "passes": BASE | {"ir"},
    "kir": BASE | {"ir", "target"},
    "codegen": BASE | {"ir", "target", "kir", "kernels"},
    "backend": BASE | {"target"},
    "backend/opencl": BASE | {"target", "backend"},
    # the CUDA launch path and the CPU steps execute an engine's plan: they read the kernel IR
    # and the code generator's specs through ttc_engine_view (codegen/plan.h), never the engine
    "backend/cuda": BASE | {"target", "backend", "kir", "codegen"},
    "backend/cpu": BASE | {"target", "backend", "kir", "codegen"},
    "convert": BASE | {"ir", "target", "kir"},
    "partition": BASE | {"ir"},
    # the engine builds from a segment: conversion is its first step (build.c, serialize.c)
    "engine": BASE | {"ir", "target", "kir", "codegen", "kernels", "convert", "backend", "backend/cpu"},
    # the binding may use every layer, but no backend's internals (backend/opencl)
    "python": BASE | {"ir", "target", "passes", "kir", "codegen", "kernels", "convert", "partition", "engine",
                      "backend", "backend/cpu", "backend/cuda"},
    "tests": None,  # C unit tests may include anything
}
# the only headers of these rooms the engine includes: its narrow interfaces to them
ENGINE_GATES = {"backend": {"backend.h"}, "backend/cpu": {"native.h"}}
ENGINE_LINE_BUDGET = 3000


def rooms():
    return sorted(str(p.relative_to(CSRC)) for p in CSRC.rglob("*") if p.is_dir() and "__pycache__" not in p.parts)


def sources(room):
    files = sorted(p for p in (CSRC / room).glob("*") if p.suffix in SUFFIXES)
    assert files, f"csrc/{room} has no sources"
    return files


def code(path):
    """The file's text without comments (comments may name other rooms)."""
    return COMMENT.sub(" ", path.read_text())


def resolve(path, inc):
    """The room and file name an include names: relative to the including file, else to csrc/
    (the -Icsrc of every build)."""
    for base in (path.parent, CSRC):
        p = (base / inc).resolve()
        if p.exists():
            try:
                return str(p.parent.relative_to(CSRC)).replace("\\", "/"), p.name
            except ValueError:
                break
    return None, inc


def test_every_room_is_placed():
    missing = [r for r in rooms() if r not in ALLOWED]
    assert not missing, f"csrc folders with no place in ALLOWED (add them with the rooms they may include): {missing}"


@pytest.mark.parametrize("room", [r for r in ALLOWED if ALLOWED[r] is not None])
def test_no_include_upwards(room):
    bad = []
    for p in sources(room):
        for inc in INCLUDE.findall(code(p)):
            to, name = resolve(p, inc)
            if to is None:
                bad.append(f"{p.name}: #include \"{inc}\" (not found)")
            elif to != room and to not in ALLOWED[room]:
                bad.append(f"{p.name}: #include \"{inc}\" (csrc/{to})")
            elif room == "engine" and to in ENGINE_GATES and name not in ENGINE_GATES[to]:
                bad.append(f"{p.name}: #include \"{inc}\" (the engine takes only {sorted(ENGINE_GATES[to])} of csrc/{to})")
    assert not bad, f"csrc/{room} includes what its layer may not: {bad}"


def test_engine_has_no_opencl():
    bad = []
    for p in sources("engine"):
        text = code(p)
        for inc in INCLUDE.findall(text):
            if inc.startswith("CL/") or "opencl/" in inc:
                bad.append(f"{p.name}: #include {inc}")
        for m in re.finditer(r"\b(cl_[a-z]\w*|CL_[A-Z]\w*)\b", text):
            bad.append(f"{p.name}: {m.group(1)}")
    assert not bad, f"OpenCL in csrc/engine (it belongs in csrc/backend/opencl): {bad[:10]}"


def test_engine_makes_no_cuda_call():
    """The CUDA launch path is backend/cuda's (exec_cuda.h); the binding starts it with the
    engine's view."""
    bad = [f"{p.name}: {m.group(0)}" for p in sources("engine")
           for m in re.finditer(r"\bttc_(cuda|cublas|cudnn)\w*", code(p))]
    assert not bad, f"CUDA calls in csrc/engine (they belong in csrc/backend/cuda): {bad[:10]}"


def test_engine_line_budget():
    n = sum(len(p.read_text().splitlines()) for p in sources("engine"))
    assert n < ENGINE_LINE_BUDGET, (f"csrc/engine has {n} lines (budget {ENGINE_LINE_BUDGET}): it holds only the "
                                    "engine (build, plan, exec, serialize, tune, bench); device steps go in csrc/backend/")


def test_engine_reads_no_environment():
    bad = [p.name for p in sources("engine") if re.search(r"\b(secure_)?getenv\s*\(", code(p))]
    assert not bad, f"getenv in csrc/engine (knobs are read in csrc/target/target.c): {bad}"
