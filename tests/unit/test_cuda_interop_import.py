"""The CUDA-interop runtime module imports without CUDA or a device, and its switches parse."""
import os
import subprocess
import sys


def test_imports_and_reports_no_call_yet():
    # a fresh process: other tests in this one may have made CUDA calls
    code = ("from torchtrt_c.runtime import _cuda_interop as m, cuda_path; "
            "print(cuda_path() == {'path': None, 'reason': 'no CUDA call yet'}, m.ENABLED)")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHTRT_C_CUDA_INTEROP")}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "True"], out.stdout + out.stderr


def test_environment_switches():
    code = ("from torchtrt_c.runtime import _cuda_interop as m; "
            "print(m.ENABLED, m.DEVICE_WAIT)")
    env = dict(os.environ, TORCHTRT_C_CUDA_INTEROP="0", TORCHTRT_C_CUDA_INTEROP_WAIT="host")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"], out.stdout + out.stderr
