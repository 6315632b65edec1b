"""Builds torchtrt_c and its C extension torchtrt_c._C.

The C core (csrc/, everything but csrc/tests) is compiled into the extension; OpenCL is
loaded at run time (dlopen), so the package builds and imports without an OpenCL driver.
Set TTC_SANITIZE=1 to build with AddressSanitizer + UBSan, TTC_DEBUG=1 for -O0 -g.
"""
import os
import pathlib
import sys

from setuptools import Extension, setup

ROOT = pathlib.Path(__file__).resolve().parent
CSRC = ROOT / "csrc"
sys.path.insert(0, str(CSRC / "kernels"))
import embed  # noqa: E402

CORE_DIRS = ["common", "ir", "target", "passes", "partition", "kir", "convert", "codegen", "engine", "backend", "backend/opencl",
             "backend/cuda", "backend/cpu",
             "kernels", "python"]


def sources():
    gen = CSRC / "kernels" / "embedded.c"
    embed.write_if_changed(gen, embed.generate(CSRC / "kernels"))
    out = []
    for d in CORE_DIRS:
        out += sorted(str(p.relative_to(ROOT)) for p in (CSRC / d).glob("*.c"))
    return out


cflags = ["-std=c11", "-Wall", "-Wextra", "-Wno-unused-parameter", "-Wno-missing-field-initializers",
          "-Wno-format-truncation", "-fvisibility=hidden", "-D_GNU_SOURCE"]
ldflags = []
if os.environ.get("TTC_DEBUG"):
    cflags += ["-O0", "-g"]
else:
    cflags += ["-O2"]
if os.environ.get("TTC_SANITIZE"):
    san = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-fno-sanitize-recover=undefined"]
    cflags += san + ["-g"]
    ldflags += san

ext = Extension(
    "torchtrt_c._C",
    sources=sources(),
    include_dirs=[str(CSRC)],
    libraries=["dl", "m", "pthread"],
    extra_compile_args=cflags,
    extra_link_args=ldflags,
)

setup(ext_modules=[ext])
