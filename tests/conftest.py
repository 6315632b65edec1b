"""Test tiers, chosen by directory (README "Tests"):

    tests/unit/    no OpenCL device needed (IR, parser, passes, partitioner, settings, reports)
    tests/device/  any OpenCL device (PoCL in CI): kernels, converters, engines, compile
    tests/models/  whole models (the zoo in tests/zoo.py, examples, transformers)
    tests/gpu/     only on a GPU OpenCL device

The device is detected once per process: the default device of torchtrt_c._C (the first GPU,
else the first device; TORCHTRT_C_DEVICE overrides). Tests under device/, models/ and gpu/ get
the markers `device`, `model` and `gpu` from their directory and are skipped, with the reason,
when there is no device (or no GPU for gpu/). Tests that depend on what the device is (kernel
families, fp16, tiles) read it from the engine or `_C`, never from the tier they are in.

The shared helper modules (zoo, convtest, convtest_data, opcase) live in tests/ and are
importable by name from every tier because this file puts tests/ on sys.path.
"""
import os
import pathlib
import sys

import pytest

TESTS = pathlib.Path(__file__).resolve().parent
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

# tier directory -> markers its tests get
_TIERS = {"unit": (), "device": ("device",), "models": ("device", "model"), "gpu": ("device", "gpu")}


def _detect():
    """(device dict or None, why there is none). A TORCHTRT_C_DEVICE that selects nothing is a
    usage error, not a reason to skip: the run asked for a device and must not pass without it."""
    try:
        import torchtrt_c._C as C
    except ImportError as e:
        return None, f"torchtrt_c._C does not import ({e}); build it first"
    try:
        devs = C.devices()
    except Exception as e:  # OpenCLError: no platform / ICD
        return None, f"no OpenCL device ({e})"
    if not devs:
        return None, "no OpenCL device"
    try:
        return devs[C.default_device()], None
    except Exception as e:
        if os.environ.get("TORCHTRT_C_DEVICE"):
            raise pytest.UsageError(f"TORCHTRT_C_DEVICE={os.environ['TORCHTRT_C_DEVICE']!r}: {e}")
        return None, f"no default OpenCL device ({e})"


DEVICE, NO_DEVICE_REASON = _detect()


def pytest_report_header(config):
    if DEVICE is None:
        return f"torchtrt_c device: none ({NO_DEVICE_REASON}); device/models/gpu tiers skipped"
    return f"torchtrt_c device: {DEVICE['name']} ({DEVICE['type']}, {DEVICE['platform']})"


def _tier(item):
    try:
        rel = pathlib.Path(str(item.path)).resolve().relative_to(TESTS)
    except ValueError:
        return None
    return rel.parts[0] if len(rel.parts) > 1 and rel.parts[0] in _TIERS else None


def pytest_collection_modifyitems(config, items):
    no_device = pytest.mark.skip(reason=NO_DEVICE_REASON or "")
    no_gpu = pytest.mark.skip(reason="needs a GPU OpenCL device (default device is "
                              f"{DEVICE['type'] if DEVICE else 'none'})")
    for item in items:
        tier = _tier(item)
        if tier is None:
            continue
        for m in _TIERS[tier]:
            item.add_marker(getattr(pytest.mark, m))
        if tier != "unit" and DEVICE is None:
            item.add_marker(no_device)
        elif tier == "gpu" and DEVICE["type"] != "gpu":
            item.add_marker(no_gpu)


@pytest.fixture(scope="session")
def ocl_device():
    """The default OpenCL device as _C.devices() describes it (skips when there is none)."""
    if DEVICE is None:
        pytest.skip(NO_DEVICE_REASON)
    return DEVICE


@pytest.fixture(autouse=True)
def _fp32_convolutions_without_tf32():
    """Compiles read torch's TF32 switches as their default policy, and cuDNN's is on by
    default: fp32 convolutions with enough work would take TF32 tensor cores on NVIDIA and miss
    the fp32 tolerances (1e-5 relative for models). Tests run with it off; those about TF32
    ask for it explicitly (settings, Engine.build(tf32_conv=...), TORCHTRT_C_CONV_MMA=tf32)."""
    try:
        import torch
    except ImportError:
        yield
        return
    saved = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cudnn.allow_tf32 = saved


@pytest.fixture(autouse=True)
def _settings_back_to_environment():
    """Settings a test sets from code (torchtrt_c.settings.set, docs/settings.md) end with the
    test, as monkeypatch.setenv's do."""
    yield
    mod = sys.modules.get("torchtrt_c.settings")
    if mod is not None and mod.overrides():
        mod.reset()
