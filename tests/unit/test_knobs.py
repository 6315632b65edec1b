"""The settings table (csrc/target/knobs.def): every TORCHTRT_C_* setting is a row of it, read
through it (no getenv of a setting elsewhere in csrc/ or torchtrt_c/), settable from code with
torchtrt_c.settings.override, and docs/settings.md is the table's generated text."""
import os
import re

import pytest

import torchtrt_c
from torchtrt_c import _C, settings

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NAME = re.compile(r"TORCHTRT_C_[A-Z0-9_]*[A-Z0-9]")
# identifiers that share the prefix but are no setting
NOT_SETTINGS = {"TORCHTRT_C_DECOMPOSITIONS", "TORCHTRT_C_H"}


def _files(top, exts):
    for d, _, names in os.walk(os.path.join(ROOT, top)):
        for n in names:
            if n.endswith(exts):
                yield os.path.join(d, n)


def _rel(p):
    return os.path.relpath(p, ROOT)


def test_docs_settings_md_is_generated_from_the_table():
    with open(os.path.join(ROOT, "docs", "settings.md")) as f:
        text = f.read()
    assert text == settings.markdown(), "docs/settings.md is stale: run python tools/gen_settings_md.py"
    for k in settings.TABLE.values():
        assert f"`{k.env}`" in text


def test_table_rows_are_well_formed():
    rows = _C.knobs()
    names = [r["name"] for r in rows]
    assert len(names) == len(set(names)) >= 50
    for r in rows:
        assert r["type"] in ("FLAG", "CHOICE", "WORD", "INT", "COUNT", "TILE", "TEXT"), r
        assert r["level"] in ("user", "debug") and r["doc"] and r["default"] is not None, r
        if r["type"] in ("CHOICE", "WORD", "INT"):
            assert r["values"], r


def test_no_getenv_outside_the_table():
    """The core's one getenv is csrc/target/knobs.c (a setting through ttc_knob_*, anything else
    through ttc_env_other); C unit tests may read their own variables."""
    bad = []
    for p in _files("csrc", (".c", ".h", ".inc")):
        rel = _rel(p)
        if rel.startswith("csrc/tests/") or rel == "csrc/target/knobs.c":
            continue
        for i, line in enumerate(open(p, errors="replace"), 1):
            if re.search(r"\bgetenv\s*\(", line):
                bad.append(f"{rel}:{i}: {line.strip()}")
    assert not bad, "getenv outside csrc/target/knobs.c (add a row to knobs.def, read it with ttc_knob_*):\n" + \
        "\n".join(bad)


def test_no_environment_read_of_a_setting_in_python():
    """torchtrt_c/ reads TORCHTRT_C_* through torchtrt_c.settings only."""
    bad = []
    read = re.compile(r"os\.environ\.get|os\.getenv|os\.environ\[|environ\.items|environ\.get")
    for p in _files("torchtrt_c", (".py",)):
        rel = _rel(p)
        if rel == "torchtrt_c/settings.py":
            continue
        for i, line in enumerate(open(p), 1):
            if read.search(line) and "TORCHTRT_C_" in line:
                bad.append(f"{rel}:{i}: {line.strip()}")
    assert not bad, "TORCHTRT_C_* read outside torchtrt_c.settings:\n" + "\n".join(bad)


def test_every_setting_named_in_code_and_docs_is_in_the_table():
    """A getenv/os.environ of a TORCHTRT_C_ name, or any mention of one in the core, the package
    or the docs, names a row of the table."""
    table = {k.env for k in settings.TABLE.values()}
    missing = {}
    pages = [os.path.join(ROOT, "README.md")] + list(_files("docs", (".md",)))
    for p in list(_files("csrc", (".c", ".h", ".inc", ".def", ".md"))) + list(_files("torchtrt_c", (".py",))) + pages:
        for name in NAME.findall(open(p, errors="replace").read()):
            if name not in table and name not in NOT_SETTINGS:
                missing.setdefault(name, _rel(p))
    assert not missing, f"TORCHTRT_C_ names not in csrc/target/knobs.def: {missing}"


def test_override_reaches_the_core_and_comes_back(monkeypatch):
    monkeypatch.setenv("TORCHTRT_C_TUNE_MAX", "7")
    assert settings.get("TUNE_MAX") == "7" == _C.knob_get("TORCHTRT_C_TUNE_MAX")
    with settings.override(TUNE_MAX=3, NATIVE=False, TORCHTRT_C_TUNE="full"):
        assert settings.get("TUNE_MAX") == "3" and settings.get("NATIVE") == "0" and settings.get("TUNE") == "full"
        assert settings.overrides() == {"TUNE_MAX": "3", "NATIVE": "0", "TUNE": "full"}
        assert settings.effective()["TORCHTRT_C_TUNE_MAX"] == "3"
        with settings.override(TUNE_MAX=None):   # None: unset, whatever the environment says
            assert not settings.get("TUNE_MAX") and "TORCHTRT_C_TUNE_MAX" not in settings.effective()
        assert settings.get("TUNE_MAX") == "3"
    assert settings.get("TUNE_MAX") == "7" and settings.overrides() == {} and settings.get("NATIVE") is None


def test_override_changes_the_target():
    """The core's decisions (ttc_target_make) read code's values: native calls and their
    threads, as _C.native_cpu() reports them, and a malformed CHOICE fails naming it."""
    base = _C.native_cpu()
    with settings.override(STEP_THREADS=3):
        assert _C.native_cpu()["step_threads"] == 3
    with settings.override(NATIVE="off"):
        assert _C.native_cpu()["available"] is False
    assert _C.native_cpu()["available"] == base["available"]
    with settings.override(TUNE="fastest"):
        with pytest.raises(Exception, match=r"TORCHTRT_C_TUNE=fastest: expected fast, full or heuristic"):
            _C.native_cpu()
    with settings.override(GEMM_TILE="x1"):
        with pytest.raises(Exception, match=r"TORCHTRT_C_GEMM_TILE=x1: expected an integer in 0\.\.1000"):
            _C.native_cpu()
    _C.native_cpu()


def test_set_lasts_until_reset(monkeypatch):
    monkeypatch.setenv("TORCHTRT_C_NATIVE_GEMM", "dnnl")
    settings.set(NATIVE_GEMM="blas", CACHE_DIR=None)
    assert settings.get("NATIVE_GEMM") == "blas" and settings.get("CACHE_DIR") is None
    assert settings.overrides() == {"NATIVE_GEMM": "blas", "CACHE_DIR": None}
    settings.reset("NATIVE_GEMM")
    assert settings.get("NATIVE_GEMM") == "dnnl" and settings.overrides() == {"CACHE_DIR": None}
    settings.reset()
    assert settings.overrides() == {}


def test_unknown_names_are_refused():
    with pytest.raises(KeyError, match="NATIVE_GEM: not a torchtrt_c setting .*did you mean NATIVE_GEMM"):
        with settings.override(NATIVE_GEM="blas"):
            pass
    with pytest.raises(KeyError, match="NOPE"):
        _C.knob_set("TORCHTRT_C_NOPE", "1")
    assert settings.overrides() == {}


def test_python_settings_follow_override():
    """The Python side's settings go through the same table."""
    from torchtrt_c.dynamo import _capture
    import contextlib
    with settings.override(LAZY_FX=0):
        assert isinstance(_capture._lazy_graph_modules(), contextlib.nullcontext)
    assert settings.integer("BACKEND_SHAPES", 8) == int(os.environ.get("TORCHTRT_C_BACKEND_SHAPES") or 8)
    with settings.override(BACKEND_SHAPES=2):
        assert settings.integer("BACKEND_SHAPES", 8) == 2
    with settings.override(BACKEND_SHAPES="two"):
        with pytest.raises(ValueError, match="TORCHTRT_C_BACKEND_SHAPES=two"):
            settings.integer("BACKEND_SHAPES", 8)
    assert torchtrt_c.settings is settings
