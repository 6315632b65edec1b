"""The shared kernel preludes (csrc/kernels/ptx.cl, mathfn.cl, rowred.cl: included ahead of many
kernels of one program) hold no token that reads like a kernel's name ("k" and digits, e.g. a
"k16" in a comment or a PTX string): codegen_dedupe.c compares kernels with each one's own name
replaced, so such a token in a prelude made the kernel of that name differ from its identical
copies, and it compiled twice."""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
TOKEN = re.compile(r"(?<![A-Za-z0-9_])k[0-9]+(?![0-9])")


def test_preludes_hold_no_kernel_name_tokens():
    found = {}
    for name in ("ptx.cl", "mathfn.cl", "rowred.cl"):
        text = (ROOT / "csrc" / "kernels" / name).read_text()
        hits = [f"line {text.count(chr(10), 0, m.start()) + 1}: {m.group(0)}" for m in TOKEN.finditer(text)]
        if hits:
            found[name] = hits
    assert not found, found
