"""Checks shared by the model tier: segments of a compiled module, the ops that kept a model
from being one engine (from a dry run), and output comparison over whole pytrees (ModelOutput,
caches, dicts) against eager.

    gm = torchtrt_c.compile(model, kwarg_inputs=specs)
    check_one_engine(gm, model, specs, fallback={})     # fails naming the ops that fell back
    err = max_error(gm(**kw), model(**kw))              # max |a - b| / max |b| over all leaves
"""
from __future__ import annotations

import torch
import torch.utils._pytree as pytree

import torchtrt_c

FP32_TOL = 1e-5


def segments(gm) -> tuple:
    """(engines, torch segments) of a compiled module."""
    names = [n for n, _ in gm.named_children()]
    return (sum(n.startswith("_run_on_acc_") for n in names),
            sum(n.startswith("_run_on_gpu_") for n in names))


def dry_run(model, specs: dict, **settings):
    gm = torchtrt_c.compile(model, kwarg_inputs=specs, dryrun=True, **settings)
    return gm.dryrun_report


def fallback_ops(report) -> dict:
    """op -> reasons, for every op the report says runs in torch."""
    return {op: sorted(reasons) for op, (_count, reasons) in report.unsupported.items()}


def check_one_engine(gm, model, specs: dict, fallback: dict, torch_ops=frozenset(), fallback_reason=""):
    """One engine and no torch segment; or, where `fallback` names ops that legitimately stay in
    torch, only those ops fall back; or, where `torch_ops` names supported ops that may run in
    torch segments, one engine and torch segments of those ops only. The failure message lists
    the ops and the partitioner's reasons (from a dry run with the same settings). With
    `fallback_reason`, ops outside `fallback` may fall back where every reason given says it."""
    eng, tor = segments(gm)
    if eng == 1 and tor == 0 and not fallback:
        return
    rep = dry_run(model, specs)
    ops = fallback_ops(rep)
    if torch_ops and not fallback:
        seg_ops = {op for s in rep.torch_segments for op in s.ops}
        assert eng == 1 and not ops and seg_ops <= set(torch_ops), (
            f"{eng} engine(s); torch segments hold {sorted(seg_ops)}, beyond {sorted(torch_ops)}; "
            f"falling back: {ops}")
        return
    if fallback:
        assert eng >= 1, f"no engine; falling back: {ops}"
        unexpected = {k: v for k, v in ops.items() if k not in fallback
                      and not (fallback_reason and all(fallback_reason in r for r in v))}
        assert not unexpected, f"ops fall back beyond the stated ones {sorted(fallback)}: {unexpected}"
        return
    assert False, (f"{eng} engine(s), {tor} torch segment(s), coverage {rep.coverage:.1%}; "
                   f"falling back: {ops}")


def _leaves(x):
    leaves, spec = pytree.tree_flatten(x)
    return [t for t in leaves if isinstance(t, torch.Tensor)], spec


def max_error(out, ref) -> float:
    """Largest max|a - b| / max|b| over the tensor leaves; asserts the same structure, shapes
    and dtypes first."""
    o, os_ = _leaves(out)
    r, rs = _leaves(ref)
    assert type(out) is type(ref), f"returns {type(out).__name__}, eager returns {type(ref).__name__}"
    assert str(os_) == str(rs), f"output structure differs:\n{os_}\nvs eager\n{rs}"
    worst = 0.0
    for k, (a, b) in enumerate(zip(o, r)):
        assert a.shape == b.shape, f"leaf {k}: shape {tuple(a.shape)} vs eager {tuple(b.shape)}"
        assert a.dtype == b.dtype, f"leaf {k}: dtype {a.dtype} vs eager {b.dtype}"
        if not b.numel() or not b.is_floating_point():
            assert torch.equal(a, b), f"leaf {k}: {b.dtype} values differ"
            continue
        scale = b.float().abs().max().item()
        err = (a.float() - b.float()).abs().max().item()
        worst = max(worst, err / max(scale, 1e-6))
    return worst


def check_close(out, ref, tol=FP32_TOL, what="") -> float:
    err = max_error(out, ref)
    assert err <= tol, f"{what}: max error {err:.3g} (relative to each output's max) > {tol}"
    return err


def print_rows(header: list, names, row):
    """The README/RESULTS tables: a markdown header, then row(name) for each name; a model that
    fails gets a FAILS row (its traceback on stderr)."""
    import sys
    import traceback
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for name in names:
        try:
            print(row(name), flush=True)
        except Exception as ex:
            msg = (str(ex).strip().splitlines() or [type(ex).__name__])[-1][:300]
            print(f"| {name} | " + "- | " * (len(header) - 2) + f"FAILS: {type(ex).__name__}: {msg} |", flush=True)
            traceback.print_exc(file=sys.stderr)
