"""The C core's 64-bit hash (csrc/common/status.c: engine blob checksums, program cache keys)
against a Python transcription of its definition, at every length around the 8- and 32-byte
steps and from unaligned addresses, and its speed on a large buffer (the byte-wise FNV-1a it
replaced took about a second per 440 MB engine blob)."""
import os
import time

import torchtrt_c._C as C

M = 0xFFFFFFFFFFFFFFFF
K1, K2, K3 = 0x9e3779b185ebca87, 0xc2b2ae3d27d4eb4f, 0x165667b19e3779f9


def rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & M


def lane(v, w):
    return (rotl((v + w * K2) & M, 31) * K1) & M


def ref_hash64(data: bytes, seed: int = 0) -> int:
    n, i = len(data), 0
    word = lambda j: int.from_bytes(data[j:j + 8], "little")  # noqa: E731
    if n >= 32:
        v = [(seed + K1 + K2) & M, (seed + K2) & M, seed, (seed - K1) & M]
        while i + 32 <= n:
            v = [lane(v[j], word(i + 8 * j)) for j in range(4)]
            i += 32
        h = (rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18)) & M
        for j in range(4):
            h = ((h ^ lane(0, v[j])) * K1 + K3) & M
    else:
        h = (seed + K3) & M
    h = (h + n) & M
    while i + 8 <= n:
        h = (rotl(h ^ lane(0, word(i)), 27) * K1 + K3) & M
        i += 8
    while i < n:
        h = (rotl(h ^ ((data[i] * K3) & M), 11) * K1) & M
        i += 1
    h ^= h >> 33
    h = (h * K2) & M
    h ^= h >> 29
    h = (h * K3) & M
    h ^= h >> 32
    return h


def test_matches_definition_all_small_lengths_and_offsets():
    buf = os.urandom(200)
    for n in list(range(0, 80)) + [95, 96, 97, 127, 128, 129, 199]:
        for off in (0, 1, 3, 7):
            if off + n > len(buf):
                continue
            piece = buf[off:off + n]
            for seed in (0, 7, 0x5bd1e995, M):
                got = C.hash64(memoryview(buf)[off:off + n], seed)
                assert got == ref_hash64(piece, seed), f"length {n} offset {off} seed {seed:#x}: {got:#x}"


def test_every_bit_matters():
    """Flipping any single bit of a 100-byte message (lanes and tail) changes the hash."""
    base = bytearray(os.urandom(100))
    h0 = C.hash64(bytes(base))
    for i in range(len(base)):
        for b in range(8):
            base[i] ^= 1 << b
            assert C.hash64(bytes(base)) != h0, f"bit {b} of byte {i} did not change the hash"
            base[i] ^= 1 << b
    assert C.hash64(b"") != C.hash64(b"\0")
    assert C.hash64(b"\0" * 32) != C.hash64(b"\0" * 33)


def test_large_buffer_is_fast():
    """Within a small factor of copying the same bytes (best of 3 each, so machine load hits
    both): byte-wise FNV-1a ran 10-20x a copy."""
    data = bytearray(256 << 20)
    data[12345] = 1
    dst = bytearray(len(data))
    t_copy = t_hash = 1e9
    for _ in range(3):
        t = time.perf_counter()
        dst[:] = data
        t_copy = min(t_copy, time.perf_counter() - t)
        t = time.perf_counter()
        h = C.hash64(data)
        t_hash = min(t_hash, time.perf_counter() - t)
    assert h != C.hash64(bytes(256 << 20))
    assert t_hash < 6 * t_copy + 0.05, f"hashing 256 MiB took {t_hash:.3f}s, copying it {t_copy:.3f}s"
