"""OpenCL devices, as the runtime sees them.

    torchtrt_c.devices()        # [Device(index=0, name='pthread-haswell...', type='cpu', ...)]
    torchtrt_c.Device("gpu")    # first GPU; Device(0); Device("pthread") (name substring)

With no OpenCL platform installed, devices() raises OpenCLError saying so (and how to get
PoCL), instead of returning an empty list that would fail later and less clearly.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Device:
    index: int
    name: str = ""
    type: str = ""
    platform: str = ""
    vendor: str = ""
    info: dict = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(cls, spec) -> "Device":
        if isinstance(spec, Device):
            return spec
        return _to_device(find_device(spec))

    def __str__(self):
        return f"{self.index}: {self.name} ({self.type}, {self.platform})"


def _to_device(d: dict) -> Device:
    return Device(index=d["index"], name=str(d.get("name", "")), type=str(d.get("type", "")),
                  platform=str(d.get("platform", "")), vendor=str(d.get("vendor", "")), info=dict(d))


def _raw_devices() -> list:
    from torchtrt_c import OpenCLError, _C
    devs = list(_C.devices())
    if not devs:
        raise OpenCLError("no OpenCL device found: install an OpenCL platform (on Debian/Ubuntu "
                          "`apt-get install pocl-opencl-icd` gives a CPU device) and check `clinfo -l`")
    return devs


def devices() -> list:
    """The OpenCL devices of every installed platform."""
    return [_to_device(d) for d in _raw_devices()]


def default_device() -> Device:
    from torchtrt_c import _C
    idx = _C.default_device()
    return next(d for d in devices() if d.index == idx)


def find_device(spec) -> dict:
    """spec: an index, 'cpu', 'gpu', a name substring, or a Device. Returns the device dict."""
    devs = _raw_devices()
    if hasattr(spec, "index") and not isinstance(spec, (int, str)):
        spec = spec.index
    if isinstance(spec, int) and not isinstance(spec, bool):
        for d in devs:
            if d["index"] == spec:
                return d
        raise ValueError(f"device index {spec} out of range: {len(devs)} OpenCL device(s)")
    if isinstance(spec, str):
        s = spec.strip().lower()
        if s.isdigit():
            return find_device(int(s))
        for d in devs:
            if s in ("cpu", "gpu", "accelerator") and str(d.get("type", "")).lower() == s:
                return d
        for d in devs:
            if s in str(d.get("name", "")).lower() or s in str(d.get("platform", "")).lower():
                return d
        raise ValueError(f"no OpenCL device matches {spec!r}; devices: "
                         + "; ".join(f"{d['index']}: {d.get('name')}" for d in devs))
    raise TypeError(f"cannot read a device from {spec!r}")
