"""The KV-cache operator in engines: what the engine writes into the caches (the caller's
tensors, in place) and what it returns, against the op's torch implementation on copies, on
every path a call can take here: plain contiguous CPU tensors (the FastCall on the tensors'
memory), CPU tensors that need a copy (non-contiguous caches: the written data must come back),
and CUDA tensors where there is a GPU. Cases: tests/device/op_cases_kv.py."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import pytest  # noqa: E402
import torch  # noqa: E402

import torchtrt_c  # noqa: E402
from op_cases_kv import kv_args, reference  # noqa: E402


class Op(torch.nn.Module):
    def __init__(self, scale, window, softcap):
        super().__init__()
        self.a = (scale, window, softcap)

    def forward(self, q, k, v, kc, vc, slots, km):
        return torch.ops.torchtrt_c.kv_attention(q, k, v, kc, vc, slots, km, *self.a)


def _compile(args, dtype):
    m = Op(*args[7:]).eval()
    trt = torchtrt_c.compile(m, inputs=args[:7], min_block_size=1,
                             enabled_precisions={dtype})
    assert [n for n, _ in trt.named_children()] == ["_run_on_acc_0"]
    return trt


SHAPES = [  # (B, Hq, Hkv, S, E, L, slots, window, softcap, pad)
    (2, 4, 2, 3, 16, 37, [5, 6, 7], 0, 0.0, 2),
    (1, 6, 3, 1, 24, 61, [60], 9, 0.0, 0),
    (2, 2, 1, 5, 8, 29, [0, 1, 2, 3, 4], 0, 3.0, 1),
]


def _check(trt, args, dtype, device="cpu", noncontig=False):
    tol = 1e-5 if dtype == torch.float32 else 2e-3
    a = [x.to(device) if isinstance(x, torch.Tensor) else x for x in args]
    ref_args = [x.float() if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in a]
    want = reference(*ref_args)
    want_kc, want_vc = ref_args[3].clone(), ref_args[4].clone()
    import torchtrt_c.llm._kv_op as kv
    kv.reference(*[x.clone() if isinstance(x, torch.Tensor) else x for x in ref_args[:3]], want_kc, want_vc,
                 *ref_args[5:])
    kc, vc = a[3], a[4]
    if noncontig:  # caches the runtime must copy: [B, H, L, E] views of a [B, H, L, E + 1] buffer
        def widen(t):
            w = torch.zeros(*t.shape[:-1], t.shape[-1] + 1, dtype=t.dtype, device=t.device)
            w[..., :-1] = t
            return w[..., :-1]
        kc, vc = widen(kc), widen(vc)
        assert not kc.is_contiguous()
    got = trt(a[0], a[1], a[2], kc, vc, a[5], a[6])
    assert (got.float() - want).abs().max().item() <= tol * max(1.0, want.abs().max().item())
    assert (kc.float() - want_kc).abs().max().item() <= tol
    assert (vc.float() - want_vc).abs().max().item() <= tol


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_caches_written_in_place(shape, dtype):
    B, Hq, Hkv, S, E, L, slots, window, softcap, pad = shape
    args = kv_args(B, Hq, Hkv, S, E, L, slots, window=window, softcap=softcap, pad=pad, seed=7, dtype=dtype)
    trt = _compile(args, dtype)
    _check(trt, args, dtype)                   # first call: the general path
    _check(trt, args, dtype)                   # later calls: the FastCall on the tensors' memory
    _check(trt, args, dtype, noncontig=True)   # copies: the written data comes back
    if torch.cuda.is_available():
        _check(trt, args, dtype, device="cuda")
        _check(trt, args, dtype, device="cuda", noncontig=True)


def test_engine_reports_written_inputs():
    from torchtrt_c.runtime import EngineMeta
    args = kv_args(1, 2, 2, 2, 8, 16, [0, 1])
    trt = _compile(args, torch.float32)
    meta = EngineMeta.from_json(trt._run_on_acc_0.meta)
    assert sorted(meta.inputs[i][0] for i in meta.written) == ["kc", "vc"]


def test_bad_slot_is_an_error_not_a_write():
    args = kv_args(1, 2, 2, 1, 8, 16, [3])
    trt = _compile(args, torch.float32)
    kc = args[3].clone()
    with pytest.raises(torchtrt_c.InputError, match="index out of range"):
        trt(args[0], args[1], args[2], kc, args[4].clone(), torch.tensor([16]), args[6])
    assert torch.equal(kc, args[3])


# Both CPU forms of the attention (the native step, backend/cpu/native_kv.c, where native calls
# run; the OpenCL kernel with TORCHTRT_C_NATIVE_ATTN=0) against the op's torch implementation:
# head dims that are not a multiple of the native step's 16 lanes, more keys than one chunk
# (128), grouped heads, a prompt of several rows, windows, soft-capping, int32 slots. fp32,
# tolerances as _check's.
NATIVE_SHAPES = [  # (B, Hq, Hkv, S, E, L, slots, window, softcap, pad)
    (1, 8, 8, 1, 64, 264, [200], 0, 0.0, 0),             # a small Llama's decode step
    (2, 6, 2, 1, 20, 301, [300], 0, 0.0, 7),             # 3 key chunks, padding, E % 16 = 4
    (1, 3, 1, 9, 33, 140, list(range(120, 129)), 50, 0.0, 0),
    (3, 4, 4, 2, 7, 19, [0, 1], 0, 2.5, 1),
]


@pytest.mark.parametrize("native", [True, False], ids=["native", "opencl"])
@pytest.mark.parametrize("shape", NATIVE_SHAPES, ids=str)
def test_native_and_opencl_forms(shape, native):
    from torchtrt_c import settings
    settings.set(NATIVE_ATTN=native)
    B, Hq, Hkv, S, E, L, slots, window, softcap, pad = shape
    args = kv_args(B, Hq, Hkv, S, E, L, slots, window=window, softcap=softcap, pad=pad, seed=11)
    trt = _compile(args, torch.float32)
    _check(trt, args, torch.float32)
    args32 = list(args)
    args32[5] = args[5].to(torch.int32)
    _check(_compile(args32, torch.float32), args32, torch.float32)


@pytest.mark.parametrize("native", [True, False], ids=["native", "opencl"])
def test_masked_rows_and_nan(native):
    """A row whose every key is masked is 0; a NaN query scores no key: its row is 0 too, as
    the reference's nan_to_num makes it."""
    from torchtrt_c import settings
    settings.set(NATIVE_ATTN=native)
    args = kv_args(2, 2, 2, 1, 16, 24, [5], seed=3)
    args[6][1, :6] = False            # row b=1 sees no key at or before its slot
    args[0][0, 1, 0, 3] = float("nan")
    trt = _compile(args, torch.float32)
    got = trt(*[a.clone() for a in args[:7]])
    want = reference(*args)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-4, equal_nan=True)
    assert (got[0, 1] == 0).all() and (got[0, 0] != 0).any()
    assert (got[1] == 0).all()


class HeadsJoined(torch.nn.Module):
    """The op's result with its heads joined as a decoder joins them for o_proj (transpose(1, 2),
    then a reshape that copies; or times `scale_out` first where it is not 1), then o_proj (8
    outputs)."""

    def __init__(self, scale, window, softcap, scale_out, width, dtype):
        super().__init__()
        self.a = (scale, window, softcap)
        self.scale_out = scale_out
        w = torch.randn(8, width, generator=torch.Generator().manual_seed(9)) * width ** -0.5
        self.o_proj = torch.nn.Linear(width, 8, bias=False).to(dtype)
        with torch.no_grad():
            self.o_proj.weight.copy_(w)

    def forward(self, q, k, v, kc, vc, slots, km):
        o = torch.ops.torchtrt_c.kv_attention(q, k, v, kc, vc, slots, km, *self.a)
        o = o.transpose(1, 2)
        if self.scale_out != 1:   # on the transposed view: the reshape then needs no copy
            o = o * self.scale_out
        return self.o_proj(o.reshape(o.shape[0], o.shape[1], -1))


def _kernels(trt):
    acc = trt._run_on_acc_0
    entry = acc.__dict__.get("_ttc_entry")
    engine = acc.__dict__["_deferred"] if acc.__dict__.get("_deferred") is not None else entry.engine
    return engine.info()


# The GPU kernel families (forced here: TORCHTRT_C_KERNELS=gpu): one kernel writes the new keys
# and values into both caches, and the split attention's reduction writes its result with the
# heads transposed, so that the copy joining the heads (or an elementwise op on it) is no kernel
# of its own. Results against the op's torch implementation, tolerances as _check's.
@pytest.mark.parametrize("scale_out", [1.0, 1.5], ids=["copy", "scaled"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_gpu_families_one_slot_write_and_transposed_reduce(shape, dtype, scale_out):
    B, Hq, Hkv, S, E, L, slots, window, softcap, pad = shape
    args = kv_args(B, Hq, Hkv, S, E, L, slots, window=window, softcap=softcap, pad=pad, seed=5, dtype=dtype)
    with torchtrt_c.settings.override(KERNELS="gpu"):
        m = HeadsJoined(*args[7:], scale_out, Hq * E, dtype).eval()
        trt = torchtrt_c.compile(m, inputs=args[:7], min_block_size=1, enabled_precisions={dtype})
        info = _kernels(trt)
        assert info["gpu_kernels"]
        kinds = [d.split(" ", 1)[1] for d in info["kernels"]]
        assert sum(d.startswith("slot_write:") for d in kinds) == 1, kinds
        assert [d.split(":")[0] for d in kinds] == ["slot_write", "kv_attention", "kv_reduce", "gemm"], kinds
        ref_args = [x.float() if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in args]
        want = (reference(*ref_args).transpose(1, 2).reshape(B, S, -1) * scale_out) @ m.o_proj.weight.float().t()
        want_kc, want_vc = ref_args[3].clone(), ref_args[4].clone()
        import torchtrt_c.llm._kv_op as kv
        kv.reference(*[x.clone() for x in ref_args[:3]], want_kc, want_vc, *ref_args[5:])
        kc, vc = args[3].clone(), args[4].clone()
        got = trt(args[0], args[1], args[2], kc, vc, args[5], args[6])
    tol = 1e-5 if dtype == torch.float32 else 2e-3
    assert got.shape == want.shape
    err = (got.float() - want).abs().max().item()
    assert err <= tol * max(1.0, want.abs().max().item())
    assert (kc.float() - want_kc).abs().max().item() <= tol
    assert (vc.float() - want_vc).abs().max().item() <= tol


def test_gpu_families_bad_slot_writes_neither_cache():
    args = kv_args(1, 2, 2, 1, 8, 16, [3])
    with torchtrt_c.settings.override(KERNELS="gpu"):
        trt = _compile(args, torch.float32)
        from torchtrt_c.runtime import EngineMeta
        meta = EngineMeta.from_json(trt._run_on_acc_0.meta)
        assert sorted(meta.inputs[i][0] for i in meta.written) == ["kc", "vc"]
        kc, vc = args[3].clone(), args[4].clone()
        with pytest.raises(torchtrt_c.InputError, match="index out of range"):
            trt(args[0], args[1], args[2], kc, vc, torch.tensor([16]), args[6])
    assert torch.equal(kc, args[3]) and torch.equal(vc, args[4])
