"""The user docs hold together: README.md stays a short guide, every relative link in it, in
docs/ and in bench/README.md points at a file that exists, and every page of docs/ is linked
from the README."""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def _pages():
    pages = ["README.md", "bench/README.md", "bench/RESULTS.md"]
    pages += [f"docs/{n}" for n in sorted(os.listdir(os.path.join(ROOT, "docs"))) if n.endswith(".md")]
    return pages


def test_readme_is_a_short_guide():
    n = len(open(os.path.join(ROOT, "README.md")).read().splitlines())
    assert n < 250, f"README.md has {n} lines: move details to docs/ and link them"


def test_relative_links_resolve():
    broken = []
    for page in _pages():
        text = open(os.path.join(ROOT, page)).read()
        for target in LINK.findall(text):
            if "://" in target or target.startswith("mailto:"):
                continue
            path = os.path.normpath(os.path.join(ROOT, os.path.dirname(page), target))
            if not os.path.exists(path):
                broken.append(f"{page}: {target}")
    assert not broken, "links to missing files:\n" + "\n".join(broken)


def test_every_doc_is_linked_from_the_readme():
    readme = open(os.path.join(ROOT, "README.md")).read()
    linked = {os.path.normpath(t) for t in LINK.findall(readme)}
    missing = [p for p in _pages()[3:] if p not in linked]
    assert not missing, f"README.md links none of: {missing}"
