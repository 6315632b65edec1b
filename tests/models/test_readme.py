"""The README's "Use" snippet runs as written and prints what its comments say.

Each `print(...)` line of the snippet whose comment starts with a list (`# ['_run_on_acc_0']`)
must print exactly that list; one whose comment says "about 1e-7" must print an error below
1e-5. The snippet is taken from README.md itself, so the README cannot drift from what the
code does.
"""
import ast
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def use_snippet() -> str:
    text = open(os.path.join(ROOT, "README.md")).read()
    use = text[text.index("\n## Use\n"):]
    m = re.search(r"```python\n(.*?)```", use, re.S)
    assert m, "README.md: no python block under '## Use'"
    return m.group(1)


def claims(code: str):
    """[(kind, expected)] for each print line, in order: ("list", [...]), ("small", None) or
    (None, None) for a print whose comment claims nothing checkable."""
    out = []
    for line in code.splitlines():
        stripped = line.strip()
        if not stripped.startswith("print("):
            continue
        comment = line.split("#", 1)[1].strip() if "#" in line else ""
        if comment.startswith("["):
            out.append(("list", ast.literal_eval(comment[:comment.index("]") + 1])))
        elif comment.startswith("about 1e-7"):
            out.append(("small", None))
        else:
            out.append((None, None))
    return out


def test_readme_use_snippet_prints_what_it_claims(tmp_path):
    code = use_snippet()
    expected = claims(code)
    assert sum(k == "list" for k, _ in expected) >= 2, "the snippet should state its engines"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                       cwd=tmp_path)
    assert r.returncode == 0, f"README snippet failed:\n{r.stdout[-2000:]}\n{r.stderr[-4000:]}"
    printed = r.stdout.strip().splitlines()
    assert len(printed) == len(expected), f"expected {len(expected)} printed lines, got:\n{r.stdout}"
    for (kind, want), line in zip(expected, printed):
        if kind == "list":
            assert ast.literal_eval(line) == want, f"README says {want}, the snippet printed {line}"
        elif kind == "small":
            assert float(line) < 1e-5, f"README says about 1e-7, the snippet printed {line}"
    assert (tmp_path / "net.ep").exists()
