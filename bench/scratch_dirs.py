"""Scratch directories the bench scripts remove when they exit: engine and module caches of
whole models are hundreds of MB each, and the scripts' tempfile.mkdtemp dirs once filled the
development machine's disk (84 cold-compile caches of 475 MB).
    d = scratch_dir("ttc-bench-cache-")"""
import atexit
import shutil
import tempfile


def scratch_dir(prefix: str = "ttc-", dir=None) -> str:
    d = tempfile.mkdtemp(prefix=prefix, dir=dir)
    atexit.register(shutil.rmtree, d, True)
    return d
