"""Engine blobs taken apart and put back together, to make blobs "from another device" and
other variants of real blobs in tests. Layout (csrc/engine/serialize.c):

    "TTCENGN1" | u32 abi | u32 n_sections | (u32 tag | u64 length | payload)* | u64 checksum (C.hash64)
    DEVICE (tag 2) = three u32-length-prefixed strings: platform, device name, driver
    TUNING (tag 9) = u32 count, then u32 tile choice per kernel op

    blob2 = rewrite(blob, device=("Platform", "Device", "driver"))   # checksum fixed
    from_another_device(compiled_module, ("Platform", "Device", "driver"))   # before torchtrt_c.save
"""
import struct

import torch

import torchtrt_c._C as C

SEC_DEVICE, SEC_TUNING = 2, 9


def _checksum(data, seed=0):
    return C.hash64(data, seed)   # the C core's hash (csrc/common/status.c)


def parse(blob):
    assert blob[:8] == b"TTCENGN1"
    abi, n = struct.unpack_from("<II", blob, 8)
    off, secs = 16, []
    for _ in range(n):
        tag, ln = struct.unpack_from("<IQ", blob, off)
        off += 12
        secs.append((tag, bytes(blob[off:off + ln])))
        off += ln
    assert off == len(blob) - 8
    return abi, secs


def assemble(abi, secs):
    out = bytearray(b"TTCENGN1") + struct.pack("<II", abi, len(secs))
    for tag, p in secs:
        out += struct.pack("<IQ", tag, len(p)) + p
    return bytes(out + _checksum(bytes(out)).to_bytes(8, "little"))


def strings(payload):
    out, off = [], 0
    while off < len(payload):
        (n,) = struct.unpack_from("<I", payload, off)
        out.append(payload[off + 4:off + 4 + n].decode())
        off += 4 + n
    return out


def pack_strings(ss):
    return b"".join(struct.pack("<I", len(s.encode())) + s.encode() for s in ss)


def rewrite(blob, device=None, tile=None):
    """device: (platform, name, driver) to store; tile: every stored tile choice set to it."""
    abi, secs = parse(blob)
    out = []
    for tag, p in secs:
        if tag == SEC_DEVICE and device is not None:
            p = pack_strings(device)
        if tag == SEC_TUNING and tile is not None:
            (n,) = struct.unpack_from("<I", p, 0)
            p = struct.pack("<I", n) + struct.pack(f"<{n}I", *([tile] * n))
        out.append((tag, p))
    return assemble(abi, out)


def from_another_device(module, device) -> int:
    """Rewrites the device identity (platform, name, driver) in every engine blob of a compiled
    module, as if it had been built on that device; torchtrt_c.save then writes such a file.
    Returns the number of engines."""
    from torchtrt_c.runtime import EngineModule
    n = 0
    for acc in module.modules():
        if isinstance(acc, EngineModule):
            blob = rewrite(acc.blob().numpy().tobytes(), device=device)
            acc._buffers["engine"] = torch.frombuffer(bytearray(blob), dtype=torch.uint8)
            n += 1
    return n
