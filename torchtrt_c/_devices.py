"""OpenCL devices, as the runtime sees them.

    torchtrt_c.devices()        # [Device(index=0, name='pthread-haswell...', type='cpu', ...)]
    torchtrt_c.Device("gpu")    # first GPU; Device(0); Device("pthread") (name substring)
    torchtrt_c.Device.of("cuda:0")  # the OpenCL device that is torch's CUDA device 0 (same UUID)

With no OpenCL platform installed, devices() raises OpenCLError saying so (and how to get
PoCL), instead of returning an empty list that would fail later and less clearly.
"""
from __future__ import annotations

import re
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


def _listing(devs) -> str:
    return "; ".join(f"{d['index']}: {d.get('name')} ({d.get('type')}, {d.get('platform')})" for d in devs)


def _no_device(msg: str, devs):
    from torchtrt_c import DeviceNotFoundError
    return DeviceNotFoundError(f"{msg}; OpenCL devices here: {_listing(devs)}")


def find_device(spec) -> dict:
    """spec: an OpenCL device index, 'cpu', 'gpu', a name substring, a Device, or a CUDA device
    ('cuda', 'cuda:N', torch.device('cuda', N): the OpenCL device that is torch's CUDA device N,
    cuda_device()), or torch.device('cpu') (an OpenCL CPU device). Returns the device dict;
    raises DeviceNotFoundError (a ValueError) naming the devices there are when spec names none
    of them: never another device instead."""
    devs = _raw_devices()
    torch_device = _as_torch_device(spec)
    if torch_device is not None:
        if torch_device.type == "cuda":
            return cuda_device(torch_device.index, devs)
        if torch_device.type == "cpu":
            spec = "cpu"
        else:
            raise _no_device(f"device {torch_device}: torchtrt_c runs engines on OpenCL devices and takes "
                             "torch devices 'cpu' and 'cuda[:N]'", devs)
    elif hasattr(spec, "index") and not isinstance(spec, (int, str)):
        spec = spec.index
    if isinstance(spec, int) and not isinstance(spec, bool):
        for d in devs:
            if d["index"] == spec:
                return d
        raise _no_device(f"device index {spec} out of range: {len(devs)} OpenCL device(s)", devs)
    if isinstance(spec, str):
        s = spec.strip().lower()
        if s.isdigit():
            return find_device(int(s))
        for d in devs:
            if s in ("cpu", "gpu", "accelerator") and str(d.get("type", "")).lower() == s:
                return d
        for d in devs:
            if s not in ("cpu", "gpu", "accelerator") and (s in str(d.get("name", "")).lower()
                                                          or s in str(d.get("platform", "")).lower()):
                return d
        raise _no_device(f"no OpenCL device matches {spec!r}", devs)
    raise TypeError(f"cannot read a device from {spec!r}: give an OpenCL device index, 'cpu', 'gpu', a name "
                    "substring, a torchtrt_c.Device, 'cuda[:N]' or a torch.device")


def _as_torch_device(spec):
    """spec as a torch.device where it is one or spells one of torch's ('cuda', 'cuda:1', 'cpu'
    are; an OpenCL name substring is not), else None."""
    import torch
    if isinstance(spec, torch.device):
        return spec
    if isinstance(spec, str) and re.fullmatch(r"\s*cuda(:\d+)?\s*", spec.lower()):
        return torch.device(spec.strip().lower())
    return None


def cuda_device(index, devs=None) -> dict:
    """The OpenCL device that is CUDA device `index` (None: torch's current one), found by the
    UUID both drivers report, else by PCI address, else by name where only one device has it.
    Raises DeviceNotFoundError when there is no such CUDA device or no OpenCL device is it."""
    import torch

    from torchtrt_c import _C
    devs = devs if devs is not None else _raw_devices()
    have_torch = torch.cuda.is_available()
    if index is None:
        index = torch.cuda.current_device() if have_torch else 0
    uuid, why = _C.cuda_device_uuid(index)
    n_torch = torch.cuda.device_count() if have_torch else 0
    if uuid is None and index >= n_torch:
        torch_says = (f"torch sees {n_torch} CUDA device(s)" if have_torch else
                      f"torch {torch.__version__} sees no CUDA device (CUDA build: {torch.version.cuda})")
        raise _no_device(f"device cuda:{index} does not exist: {torch_says}; CUDA driver: {why}", devs)
    if uuid is not None:
        for d in devs:
            if d.get("uuid") == uuid:
                return d
    props = torch.cuda.get_device_properties(index) if index < n_torch else None
    if props is not None and getattr(props, "pci_bus_id", None) is not None:
        bus = (f"{getattr(props, 'pci_domain_id', 0):04x}:{props.pci_bus_id:02x}:"
               f"{getattr(props, 'pci_device_id', 0):02x}.0")
        for d in devs:
            if d.get("pci_bus_id") == bus:
                return d
    name = props.name if props is not None else None
    if name:
        same = [d for d in devs if str(d.get("name", "")) == name]
        twins = sum(torch.cuda.get_device_name(i) == name for i in range(n_torch))
        # by name only where it is not a guess: one OpenCL device and one CUDA device of that name
        if len(same) == 1 and twins == 1 and not any(d.get("uuid") for d in same):
            return same[0]
    what = f"cuda:{index}" + (f" ({name})" if name else "") + (f" UUID {uuid}" if uuid else "")
    raise _no_device(f"device {what} has no matching OpenCL device (matched by UUID, PCI address, then name; "
                     "the NVIDIA OpenCL driver, libnvidia-opencl, makes the GPU an OpenCL device)", devs)
