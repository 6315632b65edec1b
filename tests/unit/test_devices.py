"""_C.devices() / default_device() and device selection for engines."""
import os
import subprocess
import sys

import pytest

import torchtrt_c
import torchtrt_c._C as C


def test_devices_or_clear_error():
    try:
        devs = C.devices()
    except torchtrt_c.OpenCLError as e:
        assert "OpenCL" in str(e) and e.code != 0
        assert e.device_error.startswith("OpenCL CL_") and e.device_error.endswith(f"({e.code})"), e.device_error
        return
    assert devs
    for i, d in enumerate(devs):
        assert d["index"] == i
        assert d["backend"] == "OpenCL"
        assert d["type"] in ("cpu", "gpu", "other")
        for k in ("platform", "name", "vendor", "version", "driver"):
            assert isinstance(d[k], str)
    assert 0 <= C.default_device() < len(devs)
    gpus = [d["index"] for d in devs if d["type"] == "gpu"]
    if gpus:
        assert C.default_device() == gpus[0]


def test_device_error_carries_the_backend_code_and_name(tmp_path):
    """With the OpenCL drivers hidden, listing devices fails as a device error (DeviceError is
    OpenCLError) whose .code is OpenCL's and .device_error names it, and the text says what to
    install."""
    assert torchtrt_c.DeviceError is torchtrt_c.OpenCLError
    code = ("import torchtrt_c\n"
            "try:\n    torchtrt_c._C.devices()\n    print('still visible')\n"
            "except torchtrt_c.DeviceError as e:\n    print(e.code, e.device_error, str(e), sep='|')\n")
    env = dict(os.environ, OCL_ICD_VENDORS=str(tmp_path), TORCHTRT_C_DEVICE="")
    env.pop("OCL_ICD_FILENAMES", None)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    if "still visible" in r.stdout:
        pytest.skip("this machine's OpenCL driver cannot be hidden with OCL_ICD_VENDORS")
    err_code, name, text = r.stdout.split("|", 2)
    assert int(err_code) != 0 and name.startswith("OpenCL CL_") and name.endswith(f"({err_code})"), r.stdout
    assert "install" in text, r.stdout


def test_env_selects_device_and_bad_spec_is_an_error():
    try:
        devs = C.devices()
    except torchtrt_c.OpenCLError:
        pytest.skip("no OpenCL device")
    code = "import torchtrt_c._C as C; print(C.default_device())"
    env = dict(os.environ, TORCHTRT_C_DEVICE=str(len(devs) - 1))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert int(out.stdout) == len(devs) - 1
    env["TORCHTRT_C_DEVICE"] = "no-such-device-xyz"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode != 0 and "TORCHTRT_C_DEVICE" in out.stderr


def test_engine_device_argument():
    try:
        devs = C.devices()
    except torchtrt_c.OpenCLError:
        pytest.skip("no OpenCL device")
    g = C.Graph.parse("graph(%x : Float(2, 3)):\n  %y : Float(2, 3) = aten.relu.default(%x)\n  return (%y)\n")
    e = C.Engine.build(g, device=0, cache_dir="")
    assert e.device["name"] == devs[0]["name"]
    e = C.Engine.build(g, device=devs[0]["name"][:5], cache_dir="")
    assert e.device["index"] == 0
    with pytest.raises(torchtrt_c.Error, match="matches no OpenCL device"):
        C.Engine.build(g, device="no-such-device-xyz")
