"""torchtrt_c's settings: one table of every TORCHTRT_C_<NAME> setting (csrc/target/knobs.def,
listed by _C.knobs(); docs/settings.md is generated from it), each set from the environment or
from code:

    import torchtrt_c
    with torchtrt_c.settings.override(NATIVE_GEMM="blas", TUNE_MAX=4):
        trt = torchtrt_c.compile(model, inputs=[x])    # engines built with these settings
    torchtrt_c.settings.get("NATIVE_GEMM")             # code's value, else the environment's, else None

Code's values win over the environment's, for the whole process (every thread) while the
context is open (set(...) keeps them until reset()); engines take the settings when they are
built (a few, said in the table, are read on every call or when torchtrt_c is imported). Build
worker processes the core starts see code's values; other processes do not. Names go with or
without TORCHTRT_C_; an unknown name raises KeyError naming it.

    python tools/gen_settings_md.py          # writes docs/settings.md from the table
"""
from __future__ import annotations

import contextlib
import os
from typing import Dict, List, NamedTuple, Optional

from torchtrt_c import _C

PREFIX = "TORCHTRT_C_"
_OFF = ("0", "off", "false")


class Knob(NamedTuple):
    name: str       # without the prefix
    type: str       # FLAG, CHOICE, WORD, INT, COUNT, TILE, TEXT (knobs.def says what each reads)
    values: str     # CHOICE/WORD: "a|b|c"; INT: "lo..hi"
    default: str    # as the docs state it
    doc: str
    level: str      # "user" or "debug"

    @property
    def env(self) -> str:
        return PREFIX + self.name


TABLE: Dict[str, Knob] = {r["name"]: Knob(r["name"], r["type"], r["values"], r["default"], r["doc"], r["level"])
                          for r in _C.knobs()}


def _bare(name: str) -> str:
    bare = name[len(PREFIX):] if name.startswith(PREFIX) else name
    if bare not in TABLE:
        import difflib
        close = difflib.get_close_matches(bare, TABLE, n=1)
        raise KeyError(f"{name}: not a torchtrt_c setting" + (f" (did you mean {close[0]}?)" if close else "")
                       + "; docs/settings.md lists them")
    return bare


def get(name: str) -> Optional[str]:
    """The setting's value as set: code's (override), else the environment's; None if unset."""
    return _C.knob_get(_bare(name))


def flag(name: str, default: bool = True) -> bool:
    """A FLAG setting: off for 0/off/false, on for any other value, default when unset or empty."""
    v = get(name)
    return default if not v else v not in _OFF


def integer(name: str, default: int) -> int:
    """An integer setting; default when unset or empty; ValueError naming it when malformed."""
    v = get(name)
    if not v:
        return default
    try:
        return int(v)
    except ValueError:
        raise ValueError(f"{PREFIX}{_bare(name)}={v}: expected an integer") from None


def _as_text(v) -> Optional[str]:
    if v is None:
        return None   # unset, whatever the environment says
    if isinstance(v, bool):
        return "1" if v else "0"
    return str(v)


def set(**values) -> None:
    """Sets settings from code for the rest of the process (or until reset()):
    set(NATIVE=False, TUNE="full"). True/False are 1/0, numbers their decimal text, None unset
    (whatever the environment says)."""
    names = {_bare(k): _as_text(v) for k, v in values.items()}
    for k, v in names.items():
        _C.knob_set(k, v)


def reset(*names: str) -> None:
    """These settings (all, without names) are the environment's again."""
    for k in (names and [_bare(n) for n in names]) or list(_C.knob_overrides()):
        _C.knob_clear(k)


@contextlib.contextmanager
def override(**values):
    """set(**values) while the context is open; the previous values (code's or the
    environment's) come back on exit."""
    names = {_bare(k): _as_text(v) for k, v in values.items()}
    before = _C.knob_overrides()
    try:
        for k, v in names.items():
            _C.knob_set(k, v)
        yield
    finally:
        for k in names:
            if k in before:
                _C.knob_set(k, before[k])
            else:
                _C.knob_clear(k)


def overrides() -> Dict[str, Optional[str]]:
    """The settings code has set, name (without the prefix) -> value (None: unset)."""
    return dict(_C.knob_overrides())


def effective() -> Dict[str, str]:
    """Every TORCHTRT_C_* value in force: the environment's, with code's on top (full names;
    code's unset values left out). Cache keys read it."""
    out = {k: v for k, v in os.environ.items() if k.startswith(PREFIX)}
    for k, v in _C.knob_overrides().items():
        if v is not None:
            out[PREFIX + k] = v
        else:
            out.pop(PREFIX + k, None)
    return out


def _values_text(k: Knob) -> str:
    if k.type == "FLAG":
        return "0/off/false, 1"
    if k.type in ("CHOICE", "WORD"):
        return ", ".join(f"`{w}`" for w in k.values.split("|"))
    if k.type == "INT":
        return f"integer {k.values}"
    if k.type == "COUNT":
        return "integer"
    if k.type == "TILE":
        return "`<warps>x<keys>`"
    return "text"


def markdown() -> str:
    """docs/settings.md: the table, users' settings first."""
    lines = [
        "# Settings",
        "",
        "<!-- Generated from csrc/target/knobs.def by `python tools/gen_settings_md.py`;"
        " tests/unit/test_knobs.py checks it. Edit the table, not this file. -->",
        "",
        "Every setting is `TORCHTRT_C_<NAME>`, read from the environment or set from code, which wins:",
        "",
        "```python",
        "import torchtrt_c",
        "with torchtrt_c.settings.override(NATIVE_GEMM=\"blas\", TUNE_MAX=4):",
        "    trt = torchtrt_c.compile(model, inputs=[x])",
        "```",
        "",
        "Engines take the settings when they are built, unless the text says when it is read. A FLAG",
        "is off for `0`, `off` or `false` and on for any other value; a CHOICE or INT outside its",
        "values is an error naming the setting; a WORD outside its values counts as unset; an empty",
        "value is unset. `torchtrt_c.settings.effective()` gives the values in force.",
        "",
    ]
    for level, title in (("user", "For users"), ("debug", "For A/B runs and tests")):
        lines += [f"## {title}", "", "| Setting | Values | Default | What it does |", "|---|---|---|---|"]
        for k in TABLE.values():
            if k.level == level:
                lines.append(f"| `{k.env}` | {_values_text(k)} | {k.default} | {k.doc} |")
        lines.append("")
    return "\n".join(lines)
