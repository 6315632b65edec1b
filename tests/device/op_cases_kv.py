"""Differential cases for the KV-cache operator torchtrt_c.kv_attention (torchtrt_c/llm/_kv_op.py):
the new keys/values are written into the cache inputs at their slots, then each new query
attends over its cache up to its own slot, with the padding mask, a sliding window and score
soft-capping. The reference (the op's torch implementation) runs on copies of the caches, so the
engine's attention reads what its own writes put there. Shapes are odd where they can be (cache
length 37/61, head dims 8/24/40, 1..3 query heads per k/v head); slots cover a prompt from 0, a
decode step deep in the cache and a chunk in the middle. fp32: atol 1e-5, rtol 1e-4; fp16:
2e-3 against the fp32 result rounded to half.

tests/device/test_kv_attention.py checks the caches themselves and the engine paths."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from convtest import rand  # noqa: E402
from opcase import Case  # noqa: E402

import torchtrt_c.llm._kv_op as kv  # noqa: E402

KV = "torchtrt_c.kv_attention.default"


def kv_args(B, Hq, Hkv, S, E, L, slots, window=0, softcap=0.0, seed=0, dtype=torch.float32, pad=0):
    """The op's arguments: random q/k/v/caches, the given slots, a key mask with `pad` padded
    leading slots in the last row."""
    q = rand(B, Hq, S, E, seed=seed, dtype=dtype)
    k = rand(B, Hkv, S, E, seed=seed + 1, dtype=dtype)
    v = rand(B, Hkv, S, E, seed=seed + 2, dtype=dtype)
    kc = rand(B, Hkv, L, E, seed=seed + 3, dtype=dtype)
    vc = rand(B, Hkv, L, E, seed=seed + 4, dtype=dtype)
    km = torch.ones(B, L, dtype=torch.bool)
    if pad:
        km[-1, :pad] = False
    return [q, k, v, kc, vc, torch.tensor(slots, dtype=torch.int64), km, E ** -0.5, window, softcap]


def reference(*a):
    """The op on copies of the caches (the engine gets the originals)."""
    a = list(a)
    a[3], a[4] = a[3].clone(), a[4].clone()
    return kv.reference(*a)


def _ref_half(*a):
    a = [x.float() if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in a]
    return reference(*a).half()


# the engine writes the caches in place, in their own dtype: float32 or float16 (a bfloat16
# engine computes in float and would have to write bfloat16 back into the caller's tensor)
NO_BF16 = "inputs written in place are float32/float16"


def case(*shape, slots, **kw):
    return Case(lambda: kv_args(*shape, slots, **kw), tol=1e-5, rtol=1e-4, ref=reference, bf16_skip=NO_BF16)


def case_fp16(*shape, slots, **kw):
    return Case(lambda: kv_args(*shape, slots, dtype=torch.float16, **kw), tol=2e-3, rtol=2e-3, ref=_ref_half,
                precision="fp16")


CASES = {
    KV: [
        case(1, 4, 2, 5, 16, 37, slots=list(range(5))),                              # a prompt from slot 0
        case(2, 6, 2, 1, 24, 61, slots=[44], pad=3),                                 # a decode step, padding
        case(2, 3, 3, 4, 8, 37, slots=[20, 21, 22, 23], window=6),                  # a chunk, sliding window
        case(1, 4, 1, 3, 40, 37, slots=[9, 10, 11], softcap=5.0),                   # MQA, soft-capping
        case(3, 2, 2, 1, 16, 300, slots=[290], window=280),                          # more than one key chunk
        case_fp16(2, 4, 2, 3, 16, 37, slots=[30, 31, 32], pad=2),
        case_fp16(1, 8, 2, 1, 64, 129, slots=[128]),
    ],
}


# torchtrt_c.index_copy_into(self, dim, index, source): what a program's index_copy_ into one of
# its inputs becomes (torchtrt_c/dynamo/_mutations.py); the engine writes self in place and
# returns its new value. The reference writes a copy, so the engine's input stays the original
# until the engine writes it. Distinct indices (torch leaves duplicates unspecified).
ICI = "torchtrt_c.index_copy_into.default"


def ici_args(shape, dim, index, seed=0, dtype=torch.float32):
    src_shape = list(shape)
    src_shape[dim] = len(index)
    return [rand(*shape, seed=seed, dtype=dtype), dim, torch.tensor(index, dtype=torch.int64),
            rand(*src_shape, seed=seed + 1, dtype=dtype)]


def ici_reference(self, dim, index, source):
    return self.clone().index_copy_(dim, index, source)


def ici_case(shape, dim, index, dtype=torch.float32):
    fp16 = dtype == torch.float16
    return Case(lambda: ici_args(shape, dim, index, dtype=dtype), tol=0.0, rtol=0.0, ref=ici_reference,
                precision="fp16" if fp16 else "fp32", bf16_skip=NO_BF16)


CASES[ICI] = [
    ici_case((7, 5), 0, [6, 0, 3]),                          # rows, out of order
    ici_case((2, 3, 11, 5), 2, [10]),                        # one cache slot of a [B, H, L, E] cache
    ici_case((3, 4, 9), -1, [1, 2, 8, 0]),                   # the last dim
    ici_case((2, 3, 13, 8), 2, [4, 5, 6], dtype=torch.float16),
]
