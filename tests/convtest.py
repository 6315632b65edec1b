"""Differential harness for converters: one-op IR graph -> Engine -> compare with torch eager.

    from convtest import check_op, Const
    check_op("aten.add.Tensor", [x, y, 1], tol=1e-6)            # tensors become engine inputs
    check_op("aten.linear.default", [x, Const(w), Const(b)])   # Const(t): a weight in the graph

Arguments follow the ATen schema order (as the importer fills them in). Tensors are engine
inputs unless wrapped in Const; ints/floats/bools/None/str/lists become prim constants.
`check_op` computes the reference with torch.ops.aten.<op>, builds and runs the engine and
asserts max |a - b| <= atol + rtol * |b| elementwise, reporting the worst element.
"""
import numpy as np
import torch

import torchtrt_c._C as C

DTYPES = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16", torch.int64: "int64",
          torch.int32: "int32", torch.bool: "bool", torch.uint8: "uint8", torch.int8: "int8"}


class Const:
    def __init__(self, t):
        self.t = t


def rand(*shape, dtype=torch.float32, low=-2.0, high=2.0, seed=None):
    """Random values, never exactly zero (so that wrong-zero results cannot pass)."""
    g = torch.Generator().manual_seed(hash((shape, seed)) & 0xFFFFFFFF)
    t = torch.rand(shape, generator=g) * (high - low) + low
    t = torch.where(t.abs() < 1e-3, torch.full_like(t, 0.5), t)
    return t.to(dtype)


def aten_op(name):
    _, op, overload = name.split(".")
    return getattr(getattr(torch.ops.aten, op), overload)


def call_aten(name, args):
    """Calls the ATen overload with args in schema order (kwarg-only ones passed by name)."""
    fn = aten_op(name)
    pos, kw = [], {}
    for a, sa in zip(args, fn._schema.arguments):
        if sa.kwarg_only:
            kw[sa.name] = a
        else:
            pos.append(a)
    return fn(*pos, **kw)


def _ttype(t, shape=None):
    return ("tensor", DTYPES[t.dtype], list(t.shape) if shape is None else shape)


def _add_arg(g, a, i, dyn):
    if isinstance(a, Const):
        t = a.t.contiguous()
        return g.add_tensor_constant(f"c{i}", DTYPES[t.dtype], list(t.shape), to_np(t))
    if isinstance(a, torch.Tensor):
        shape = list(a.shape)
        if dyn and a.dim() > 0:
            shape[0] = "s0"
        return g.add_input(f"in{i}", ("tensor", DTYPES[a.dtype], shape))
    return g.add_constant(a)


class Node:
    """An inner node used as an argument: its output `index` feeds the node under test."""

    def __init__(self, op, args, out_types, index=0):
        self.op, self.args, self.out_types, self.index = op, list(args), list(out_types), index


def build(op, args, outs, dynamic=None, precision="fp32", keep=None, device=None):
    """The one-op graph and its engine (on OpenCL device `device`, None: the default).
    dynamic=(min, opt, max) makes dim 0 of every tensor input and output the symbol s0; keep:
    indices of the op outputs that are graph outputs."""
    g = C.Graph()
    if dynamic:
        g.add_symbol("s0", *dynamic)
    names = [_add_arg(g, a, i, bool(dynamic)) for i, a in enumerate(args)]
    otypes = []
    for o in outs:
        shape = list(o.shape)
        if dynamic and o.dim() > 0:
            shape[0] = "s0"
        otypes.append(("tensor", DTYPES[o.dtype], shape))
    res = g.add_node(op, names, otypes, name="op")
    g.set_outputs([res[i] for i in (keep if keep is not None else range(len(res)))])
    return g, C.Engine.build(g, name="test_" + op, device=device, precision=precision, cache_dir="")


def to_np(t):
    """A numpy view of t; bfloat16 (no numpy dtype) as its bits in int16, as the engine takes it."""
    t = t.detach().contiguous()
    return t.view(torch.int16).numpy() if t.dtype == torch.bfloat16 else t.numpy()


def run(engine, args, out_like):
    ins = [to_np(a) for a in args if isinstance(a, torch.Tensor)]
    outs = [np.empty(tuple(o.shape), dtype=to_np(o).dtype) for o in out_like]
    engine.execute(ins, outs)
    return [torch.from_numpy(o).view(torch.bfloat16) if r.dtype == torch.bfloat16 else torch.from_numpy(o)
            for o, r in zip(outs, out_like)]


def run_cuda(engine, args, out_like, ordinal):
    """The engine's kernels through the CUDA launch path (torch's stream, the tensors' own
    memory; csrc/backend/cuda/exec_cuda.h) on CUDA device `ordinal`, called twice on the same
    memory (the second call with the same pointers is recorded as a CUDA graph: docs/cuda.md),
    the outputs NaN-filled before each: (the outputs of each call on the host, the launch
    statistics). Raises naming why the path refused the engine or a call (no silent fallback
    to another path)."""
    dev = torch.device("cuda", ordinal)
    got = []
    with torch.cuda.device(dev):
        cap, why = C.cuda_launch_new(engine, ordinal)
        assert cap is not None, f"the CUDA launch path refused the engine: {why}"
        ins = [a.detach().to(dev).contiguous() for a in args if isinstance(a, torch.Tensor)]
        shapes = [tuple(t.shape) for t in ins]
        outs = [torch.empty(tuple(o.shape), dtype=o.dtype, device=dev) for o in out_like]
        nb = C.cuda_launch_arena(cap, shapes)
        arena = torch.empty(max(nb, 1), dtype=torch.uint8, device=dev)
        for _ in range(2):
            for o in outs:
                if o.is_floating_point():
                    o.fill_(float("nan"))
            why = C.cuda_launch_run(cap, [t.data_ptr() for t in ins], shapes, [o.data_ptr() for o in outs],
                                    arena.data_ptr(), nb, torch.cuda.current_stream(dev).cuda_stream)
            assert why is None, f"the CUDA launch path refused the call: {why}"
            torch.cuda.synchronize(dev)
            got.append([o.cpu() for o in outs])
        stats = C.cuda_launch_stats(cap)
    return got, stats


def assert_close(got, ref, atol, rtol, what=""):
    assert got.shape == ref.shape, f"{what}: shape {tuple(got.shape)} != {tuple(ref.shape)}"
    if ref.dtype in (torch.bool, torch.int64, torch.int32, torch.uint8, torch.int8):
        bad = (got != ref)
        assert not bad.any(), f"{what}: {int(bad.sum())} elements differ, first at {bad.nonzero()[0].tolist()}"
        return
    g, r = got.double(), ref.double()
    err = (g - r).abs()
    lim = atol + rtol * r.abs()
    nan_ok = torch.isnan(g) == torch.isnan(r)
    assert nan_ok.all(), f"{what}: NaN pattern differs"
    err = torch.where(torch.isnan(r), torch.zeros_like(err), err)
    bad = err > lim
    if bad.any():
        i = int((err - lim).argmax())
        raise AssertionError(f"{what}: max error {float(err.max()):.3g} (limit atol={atol} rtol={rtol}); worst at flat "
                             f"index {i}: got {float(g.flatten()[i])}, expected {float(r.flatten()[i])}")


# bfloat16 keeps 8 significant bits: one rounding of a value moves it by at most 2^-8 of itself
BF16_ROUND = 2.0 ** -8


def assert_bf16_close(got, ref_bf16, ref_f32, what=""):
    """A bfloat16 model's outputs (any pytree) against eager: the structure and dtypes of eager
    bfloat16's, each float leaf within 2^-5 of its largest magnitude of eager bfloat16's, and no
    further from float32 eager on the same values (the model cast to float32) than eager
    bfloat16 is, plus 2^-7 of that magnitude: engines compute in float and round outputs once,
    eager rounds every intermediate. Non-float leaves equal eager bfloat16's."""
    from torch.utils._pytree import tree_flatten
    g, gs = tree_flatten(got)
    b, bs = tree_flatten(ref_bf16)
    r, _ = tree_flatten(ref_f32)
    assert str(gs) == str(bs), f"{what}: output structure differs: {gs} vs {bs}"
    for i, (x, y, z) in enumerate(zip(g, b, r)):
        if not isinstance(y, torch.Tensor):
            assert x == y, f"{what} output {i}: {x!r} vs {y!r}"
            continue
        assert x.dtype == y.dtype and x.shape == y.shape, \
            f"{what} output {i}: {x.dtype}{tuple(x.shape)} vs eager {y.dtype}{tuple(y.shape)}"
        if not y.is_floating_point() or not y.numel():
            assert torch.equal(x, y), f"{what} output {i}: {int((x != y).sum())} element(s) differ"
            continue
        scale = float(z.float().abs().max())
        e_eager = float((x.float() - y.float()).abs().max())
        e_ours, e_theirs = float((x.float() - z.float()).abs().max()), float((y.float() - z.float()).abs().max())
        assert e_eager <= 2.0 ** -5 * scale, \
            f"{what} output {i}: max |got - eager bf16| {e_eager:.3g} > 2^-5 of its magnitude {scale:.3g}"
        assert e_ours <= e_theirs + 2.0 ** -7 * scale, \
            f"{what} output {i}: {e_ours:.3g} from float32 eager, eager bf16 is {e_theirs:.3g} (magnitude {scale:.3g})"


def check_op_bf16(op, args, tol=1e-5, rtol=None, dynamic=None, ref=None, keep=None, float_ref=True):
    """check_op for bfloat16 args (inputs and Const weights): the engine computes in float and
    rounds its outputs to bfloat16 once, so each float output must be torch's float32 result on
    the same (bfloat16-valued) arguments within one rounding (BF16_ROUND relative) plus the
    op's own tol; and it must be eager bfloat16's result (which rounds every intermediate too)
    within 2^-5 relative and 2^-5 of the output's largest magnitude. Other outputs (indices,
    masks) must equal eager bfloat16's. Some of torch's kernels round a Python float argument
    to bfloat16 first (fmod's divisor): the float32 result with such arguments rounded counts
    too. float_ref=False: the eager bfloat16 comparison only (the op's result depends on the
    dtype beyond its values: rms_norm's default eps). Returns the engine."""
    targs = [a.t if isinstance(a, Const) else a for a in args]
    up = [a.float() if isinstance(a, torch.Tensor) and a.dtype == torch.bfloat16 else a for a in targs]
    up_rounded = [float(torch.tensor(a).to(torch.bfloat16)) if type(a) is float else a for a in up]
    f = ref or (lambda *a: call_aten(op, list(a)))
    with torch.no_grad():
        rb, r32, r32r = f(*targs), f(*up), f(*up_rounded)
    listed = [list(r) if isinstance(r, (tuple, list)) else [r] for r in (rb, r32, r32r)]
    _, e = build(op, args, listed[0], dynamic=dynamic, keep=keep)
    if keep is not None:
        listed = [[r[i] for i in keep] for r in listed]
    refs, refs32, refs32r = listed
    got = run(e, args, refs)
    rt = tol if rtol is None else rtol
    for i, (g, b, r, rr) in enumerate(zip(got, refs, refs32, refs32r)):
        if not b.is_floating_point():
            assert_close(g, b, 0, 0, f"{op} output {i} (bfloat16)")
            continue
        try:
            if float_ref:
                assert_close(g.float(), r.float(), tol, rt + BF16_ROUND, f"{op} output {i} against float32 eager")
        except AssertionError:
            if not any(type(a) is float for a in up):
                raise
            assert_close(g.float(), rr.float(), tol, rt + BF16_ROUND,
                         f"{op} output {i} against float32 eager (float arguments rounded to bfloat16)")
        scale = float(b.float().abs().nan_to_num(0, 0, 0).max()) if b.numel() else 0.0
        assert_close(g.float(), b.float(), tol + 2.0 ** -5 * scale, rt + 2.0 ** -5, f"{op} output {i} against bfloat16 eager")
    return e


def check_op(op, args, tol=1e-5, rtol=None, dynamic=None, precision="fp32", ref=None, keep=None):
    """Builds op over args, runs it, compares the outputs (all, or those in keep) with torch
    eager. Returns the engine."""
    targs = [a.t if isinstance(a, Const) else a for a in args]
    with torch.no_grad():
        r = ref(*targs) if ref else call_aten(op, targs)
    refs = list(r) if isinstance(r, (tuple, list)) else [r]
    _, e = build(op, args, refs, dynamic=dynamic, precision=precision, keep=keep)
    if keep is not None:
        refs = [refs[i] for i in keep]
    got = run(e, args, refs)
    for i, (a, b) in enumerate(zip(got, refs)):
        assert_close(a, b, tol, tol if rtol is None else rtol, f"{op} output {i}")
    return e


# float16: one rounding moves a value by at most 2^-11 of itself; an fp16 engine keeps its
# intermediates in half (and computes in half where the device does: NVIDIA), so a one-op
# engine's result may carry a few roundings, of intermediates larger than the result too
F16_RTOL = 2.0 ** -9
F16_ATOL = 2.0 ** -9


def half_args(args):
    """args with every float32 tensor in float16: inputs, and Const weights where a float32
    input is among them (a model's data in half takes its weights along; the float32 scales of
    a quantized layer over integer inputs stay float32)."""
    out = []
    data = any(isinstance(a, torch.Tensor) and a.dtype == torch.float32 for a in args)
    for a in args:
        t = a.t if isinstance(a, Const) else a
        if isinstance(t, torch.Tensor) and t.dtype == torch.float32 and (data or not isinstance(a, Const)):
            t = t.half()
            a = Const(t) if isinstance(a, Const) else t
        out.append(a)
    return out


def check_op_paths(op, args, runs, tol=1e-5, rtol=None, dynamic=None, precision="fp32", ref=None, keep=None,
                   half=False, float_ref=True, device=None):
    """check_op on an execution path: the engine built once on OpenCL device `device` (the
    caller has set the build's knobs), then run by each of `runs` ("host": Engine.execute on host
    arrays; ("cuda", ordinal): the CUDA launch path), each result checked against eager.

    half: every float32 tensor of args (inputs and weights) in float16, in an fp16 engine; each
    float output is checked against torch's float32 result on the same (half-valued) arguments
    within tol + F16_ATOL of the output's largest magnitude, rtol + F16_RTOL (the engine's
    outputs and intermediates round to half), its dtype against eager float16's; other outputs
    equal. Some of torch's kernels round a Python float argument to the tensors' dtype first
    (fmod's divisor): the float32 result with such arguments rounded counts too. float_ref=False
    (the op's result depends on the dtype beyond its values, rms_norm's default eps): eager
    float16 is the reference instead, within tol + 2^-6 of the largest magnitude.
    Returns (engine, {run: launch statistics for "cuda" runs}).
    """
    rt = tol if rtol is None else rtol
    if not half:
        targs = [a.t if isinstance(a, Const) else a for a in args]
        with torch.no_grad():
            r = ref(*targs) if ref else call_aten(op, targs)
        refs = list(r) if isinstance(r, (tuple, list)) else [r]
        _, e = build(op, args, refs, dynamic=dynamic, precision=precision, keep=keep, device=device)
        if keep is not None:
            refs = [refs[i] for i in keep]
        checks = [(refs, tol, rt, None)]
        out_like = refs
    else:
        args = half_args(args)
        targs = [a.t if isinstance(a, Const) else a for a in args]
        up = [a.float() if isinstance(a, torch.Tensor) and a.dtype == torch.float16 else a for a in targs]
        up_rounded = [float(torch.tensor(a).half()) if type(a) is float else a for a in up]
        f = ref or (lambda *a: call_aten(op, list(a)))
        with torch.no_grad():
            try:
                rh = f(*targs)
            except (RuntimeError, NotImplementedError) as ex:   # no CPU half kernel in torch
                if float_ref:
                    rh = None
                else:
                    raise AssertionError(f"{op}: eager float16 (the reference of this case) failed: {ex}")
            r32, r32r = f(*up), f(*up_rounded)
        listed = [list(r) if isinstance(r, (tuple, list)) else [r] for r in (r32, r32r)]
        if rh is None:   # eager float16's dtypes: float32 results of float16 operands are float16
            dts = [t.dtype if not t.is_floating_point() else torch.float16 for t in listed[0]]
        else:
            rh = list(rh) if isinstance(rh, (tuple, list)) else [rh]
            dts = [t.dtype for t in rh]
        out_like = [t.to(dt) for t, dt in zip(listed[0], dts)]
        _, e = build(op, args, out_like, dynamic=dynamic, precision="fp16", keep=keep, device=device)
        if keep is not None:
            listed = [[r[i] for i in keep] for r in listed]
            out_like = [out_like[i] for i in keep]
            rh = [rh[i] for i in keep] if rh is not None else None
        if float_ref:
            checks = [(listed[0], tol, rt + F16_RTOL, F16_ATOL)]
            if any(type(a) is float for a in up):
                checks.append((listed[1], tol, rt + F16_RTOL, F16_ATOL))
        else:
            checks = [(rh, tol, rt + 2.0 ** -6, 2.0 ** -6)]
    stats, results = {}, []
    for how in runs:
        if how == "host":
            results.append(("", run(e, args, out_like)))
        else:
            calls, stats[how] = run_cuda(e, args, out_like, how[1])
            results += [(f" (CUDA launch, call {k + 1})", got) for k, got in enumerate(calls)]
    for where, got in results:
        for i, (g, o) in enumerate(zip(got, out_like)):
            assert g.dtype == o.dtype, f"{op} output {i}{where}: dtype {g.dtype}, expected {o.dtype}"
        err = None
        for refs, atol, rtol_, scale_atol in checks:
            try:
                for i, (g, b) in enumerate(zip(got, refs)):
                    if not b.is_floating_point() or scale_atol is None:
                        assert_close(g, b, atol, rtol_, f"{op} output {i}{where}")
                        continue
                    scale = float(b.float().abs().nan_to_num(0, 0, 0).max()) if b.numel() else 0.0
                    assert_close(g.float(), b.float(), atol + scale_atol * scale, rtol_,
                                 f"{op} output {i}{where} against float32 eager on the same float16 values")
                err = None
                break
            except AssertionError as ex:
                err = err or ex
        if err is not None:
            raise err
    return e, stats
