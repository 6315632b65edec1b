"""Writes docs/settings.md from the settings table (csrc/target/knobs.def through
torchtrt_c.settings.markdown()); --check only says whether the file is up to date.

    python tools/gen_settings_md.py [--check]
"""
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from torchtrt_c import settings  # noqa: E402

DOC = ROOT / "docs" / "settings.md"


def main(argv):
    text = settings.markdown()
    if "--check" in argv:
        ok = DOC.exists() and DOC.read_text() == text
        print(f"{DOC}: {'up to date' if ok else 'differs from the table: run python tools/gen_settings_md.py'}")
        return 0 if ok else 1
    DOC.write_text(text)
    print(f"wrote {DOC} ({len(settings.TABLE)} settings)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
