"""The C core's rooms and the arrows between them (issue 13): the kernel IR and the code
generator never include anything from the engine, the conversion or the partitioner above them;
the engine holds no OpenCL type and includes no OpenCL header (the backend does); environment
knobs are read in csrc/backend/ (target.c) and nowhere in the engine."""
import pathlib
import re

import pytest

CSRC = pathlib.Path(__file__).resolve().parents[2] / "csrc"
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)


def sources(room):
    files = sorted(p for p in (CSRC / room).glob("*") if p.suffix in (".c", ".h", ".inc"))
    assert files, f"csrc/{room} has no sources"
    return files


def code(path):
    """The file's text without comments (comments may name other rooms)."""
    return COMMENT.sub(" ", path.read_text())


@pytest.mark.parametrize("room,above", [
    ("kir", ("engine/", "convert/", "partition/", "codegen/", "python/")),
    ("codegen", ("engine/", "convert/", "partition/", "python/")),
    ("backend", ("engine/", "convert/", "codegen/", "kir/", "python/")),
])
def test_no_include_upwards(room, above):
    bad = [f"{p.name}: #include \"{inc}\"" for p in sources(room) for inc in INCLUDE.findall(code(p))
           if any(a in inc for a in above)]
    assert not bad, f"csrc/{room} includes from a room above it: {bad}"


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


def test_engine_reads_no_environment():
    bad = [p.name for p in sources("engine") if re.search(r"\b(secure_)?getenv\s*\(", code(p))]
    assert not bad, f"getenv in csrc/engine (knobs are read in csrc/backend/target.c): {bad}"
