"""Per-call overhead of the runtime path, on a model whose kernels take almost no time.

    python bench/overhead.py                      # Linear(16, 16) at batch 1, default device
    python bench/overhead.py --model conv1x1 --runs 3000
    python bench/overhead.py --model chain10      # ten kernels (softmax/cumsum alternate, no fusion)

Prints median microseconds per call (and p10-p90) of:
  module        the compiled module called end to end (a one-engine module: straight to the
                runtime; else fx GraphModule -> EngineModule -> op); for a small engine on
                PoCL's caller thread, the same on PoCL's worker threads (launches held, as in
                session 7); and through its fx graph on the workers with launches not held
                (as before issue 13's item 4)
  op            torch.ops.torchtrt_c.execute_engine(inputs, blob, meta) (torch dispatcher)
  op impl       the op's Python body without the dispatcher (runtime._execute.run_engine, which
                EngineModule calls directly in plain eager mode)
  FastCall.run  the one C call that the module's steady state makes (input checks, torch.empty
                outputs, the engine on the tensors' memory)
  execute       _C.Engine.execute(numpy inputs, preallocated numpy outputs): C entry + enqueue/finish
  resident      Engine.benchmark: kernel sequence only, inputs already in OpenCL buffers
  kernels       Engine.profile: the kernels' own device time, summed (median of 7 profiles; end
                to end minus this is the per-call overhead issue 13 item 4 counts)
and the pieces of the general Python path one by one (meta lookup, binding/validation, engine
cache lookup, host staging, output allocation, numpy views) and the shortcut's guards, so the
differences between the rows above can be attributed. Rows are timed round robin (one call of
each per round), so a busy machine slows all of them alike: compare ratios and p10s rather than
absolute medians. Rows on PoCL's worker threads are timed round robin in a block of their own
after the others: the workers run on for a while after a call and slowed the next row (the
module's median read ~9 us high beside them on the 2-core box).
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch

import torchtrt_c
from torchtrt_c.runtime import _execute
from torchtrt_c.runtime._shapes import EngineMeta


def _model(name):
    if name == "linear":
        return torch.nn.Linear(16, 16).eval(), torch.randn(1, 16)
    if name == "conv1x1":
        return torch.nn.Conv2d(4, 4, 1).eval(), torch.randn(1, 4, 4, 4)
    if name == "chain10":
        return _Chain10().eval(), torch.randn(4, 64)
    raise SystemExit(f"unknown model {name!r} (linear, conv1x1, chain10)")


class _Chain10(torch.nn.Module):
    """Ten kernels: softmax and cumsum alternate (reductions do not fuse with each other)."""

    def forward(self, x):
        for _ in range(5):
            x = torch.cumsum(torch.softmax(x, -1), -1)
        return x


def _time_us(fn, runs):
    ts = []
    for _ in range(runs):
        t0 = time.perf_counter_ns()
        fn()
        ts.append((time.perf_counter_ns() - t0) / 1e3)
    return ts


def _loadavg():
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "?"


def _kernel_us(eng, np_in, reps=7):
    """The kernels' device time per call (us): the median over reps profiles of the sum of each
    kernel's mean time. One profile's means take a preemption whole (a loaded machine once gave
    275 us for 14 us of kernels)."""
    return statistics.median(sum(ms for _, ms in eng.profile(np_in, runs=20)) for _ in range(reps)) * 1e3


def _stats(ts):
    ts = sorted(ts)
    q = lambda p: ts[min(len(ts) - 1, int(p * len(ts)))]  # noqa: E731
    return statistics.median(ts), q(0.1), q(0.9)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="linear")
    ap.add_argument("--runs", type=int, default=2000)
    ap.add_argument("--cuda", action="store_true",
                    help="also time calls with CUDA tensors: the CUDA-driver launch path, the shared-memory "
                         "path (OpenCL, no host copy) and the host path (pinned staging), each end to end")
    args = ap.parse_args(argv)

    torch.manual_seed(0)
    m, x = _model(args.model)
    trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
    accs = [mod for name, mod in trt.named_children() if name.startswith("_run_on_acc_")]
    if len(accs) != 1:
        raise SystemExit(f"expected one engine, got {len(accs)}")
    acc = accs[0]
    meta = EngineMeta.from_json(acc.meta)
    eng, lock = _execute.ENGINES.get(meta.id, acc.engine)
    with torch.no_grad():
        ref = m(x)
    torch.testing.assert_close(trt(x)[0] if isinstance(trt(x), (tuple, list)) else trt(x), ref,
                               rtol=1e-4, atol=1e-4)

    op = torch.ops.torchtrt_c.execute_engine
    impl = getattr(_execute, "run_engine", None)  # absent before the fast path existed
    xin = [x]
    np_in = [x.numpy()]
    out_shapes = meta.output_shapes(meta.bind_inputs([tuple(x.shape)]))
    np_out = [torch.empty(s, dtype=_execute.torch_dtype(dt)).numpy()
              for s, (_, dt, _) in zip(out_shapes, meta.outputs)]
    shapes = [tuple(x.shape)]
    dtypes = [_execute.dtype_name(x.dtype)]

    rows = [("module", lambda: trt(x))]
    # rows on PoCL's worker threads are timed in a block of their own: the workers keep
    # running for a while after a call returns and slow whichever row comes next
    worker_rows = []
    # the same module on the engine as it was before: on PoCL's worker threads, launches held
    # (TORCHTRT_C_CALLER_THREAD=0: session 7), and as before issue 13's overhead work, through
    # its fx graph (no one-engine shortcut) with launches not held (TORCHTRT_C_BATCH_LAUNCH=0
    # too: session 5); the switch costs two dict stores per call
    direct = trt.__dict__.get("_ttc_direct_plan")
    plan = _execute._PLANS.get(acc.meta)
    eng_w = eng_nb = None
    if direct is not None and plan is not None:
        import os

        def load_with(**knobs):
            old = {k: os.environ.get(k) for k in knobs}
            os.environ.update(knobs)
            try:
                return torchtrt_c._C.Engine.deserialize(acc.engine.numpy().tobytes())
            finally:
                for k, v in old.items():
                    if v is None:
                        del os.environ[k]
                    else:
                        os.environ[k] = v

        eng_w = load_with(TORCHTRT_C_CALLER_THREAD="0")
        eng_nb = load_with(TORCHTRT_C_CALLER_THREAD="0", TORCHTRT_C_BATCH_LAUNCH="0")

        def on_old(engine, fx):  # a runtime without FastCalls (for before/after figures)
            def call():
                trt.__dict__["_ttc_direct_plan"], plan.engine = (trt._code, None) if fx else direct, engine
                try:
                    return trt(x)
                finally:
                    trt.__dict__["_ttc_direct_plan"], plan.engine = direct, eng
            return call

        def on(engine, fx):
            if not hasattr(_execute, "fast_call"):
                return on_old(engine, fx)
            # the FastCalls (the plan's, and the one-engine shortcut's) run their own engine:
            # this engine gets its own for the call, made as the runtime makes them
            n_out = len(plan.out_dtypes)
            plan_fast = _execute.fast_call(engine, plan.in_dtypes, plan.out_dtypes, xin, 1, [0], range(n_out), "list")
            d = direct[1]
            mod_fast = None
            if not fx and d is not None and d.fast is not None:
                run = _execute.fast_call(engine, plan.in_dtypes, plan.out_dtypes, (x,), d.n_args, d.arg_idx,
                                         d.out_idx, "single" if d.leaf else "tuple")
                mod_fast = (run, *d.fast[1:]) if run else None

            def call():
                saved = plan.engine, plan.fast, plan.fasts, d.fast if d is not None else None
                trt.__dict__["_ttc_direct_plan"] = (trt._code, None) if fx else direct
                plan.engine, plan.fast, plan.fasts = engine, plan_fast, {}
                if d is not None:
                    d.fast = mod_fast
                try:
                    return trt(x)
                finally:
                    trt.__dict__["_ttc_direct_plan"] = direct
                    plan.engine, plan.fast, plan.fasts = saved[:3]
                    if d is not None:
                        d.fast = saved[3]
            return call

        if eng.info().get("caller_thread"):
            worker_rows.append(("module, PoCL workers (session 7)", on(eng_w, False)))
        worker_rows.append(("module, fx graph + launches not held", on(eng_nb, True)))
    rows.append(("op (dispatcher)", lambda: op(xin, acc.engine, acc.meta)))
    if impl is not None:
        rows.append(("op impl (no dispatcher)", lambda: impl(xin, acc.engine, acc.meta)))
    d = direct[1] if direct is not None else None
    if getattr(d, "fast", None) is not None:
        fast_run, fast_args = d.fast[0], (x,)
        rows.append(("FastCall.run (checks, outputs, engine)", lambda: fast_run(fast_args)))
    rows += [
        ("Engine.execute", lambda: eng.execute(np_in, np_out)),
    ]
    if eng_w is not None and eng.info().get("caller_thread"):
        worker_rows.append(("Engine.execute, PoCL workers", lambda: eng_w.execute(np_in, np_out)))
    if eng_nb is not None:
        worker_rows.append(("Engine.execute, workers, not held", lambda: eng_nb.execute(np_in, np_out)))
    rows += [
        ("  meta lookup (from_json)", lambda: EngineMeta.from_json(acc.meta)),
    ]
    if hasattr(_execute, "_plan"):
        rows.append(("  plan lookup + cached shapes",
                     lambda: _execute._plan(acc.meta, acc.engine).shapes_for(xin)))
    if getattr(d, "fast", None) is not None:
        from torchtrt_c.dynamo import _compiled_module
        rows.append(("  shortcut guards (hooks, modes)", lambda: _compiled_module._plain(trt, acc)))
    if getattr(trt, "_ttc_specs", None) is not None:
        rows.append(("  CompiledModule user-input check", lambda: trt._ttc_check(trt._ttc_specs, (x,), {})))
    rows += [
        ("  bind_inputs(check) + output_shapes",
         lambda: meta.output_shapes(meta.bind_inputs(shapes, dtypes, check=True))),
        ("  engine cache lookup", lambda: _execute.ENGINES.get(meta.id, acc.engine)),
        ("  host staging (.to(cpu).contiguous)", lambda: x.detach().to("cpu").contiguous()),
        ("  output alloc (torch.empty)", lambda: torch.empty(out_shapes[0], dtype=torch.float32)),
        ("  numpy view (Tensor.numpy)", lambda: x.numpy()),
        ("  lock acquire+release", lambda: (lock.acquire(), lock.release())),
    ]
    if args.cuda:
        from torchtrt_c.runtime import _cuda_interop
        trt_cuda = trt.to("cuda")
        xc = x.to("cuda")
        sync_c = torch.cuda.current_stream().synchronize
        plan = _execute._plan(acc.meta, acc.engine)

        def cuda_call(path):
            def call():
                # launch: the PTX through the CUDA driver; shared / host: the OpenCL paths, with
                # the plan's loaded engine set aside for the call (and kept: loading is per engine)
                saved = plan.cuda_launch
                if path != "launch":
                    plan.cuda_launch = False
                _cuda_interop.ENABLED = path != "host"
                try:
                    trt_cuda(xc)
                    sync_c()  # a call is done when its outputs are
                finally:
                    if path != "launch":
                        plan.cuda_launch = saved
                    _cuda_interop.ENABLED = True
            return call

        for path in ("launch", "shared"):
            cuda_call(path)()
            st = torchtrt_c.runtime.cuda_path()
            print(f"# CUDA path asked {path}: ran {st['path']}{' (' + st['reason'] + ')' if st['reason'] else ''}")
        cuda_rows = [("module, CUDA in/out, CUDA launch", cuda_call("launch")),
                     ("module, CUDA in/out, shared memory", cuda_call("shared")),
                     ("module, CUDA in/out, host staging", cuda_call("host"))]
    else:
        cuda_rows = []
    acc_ts = {name: [] for name, _ in rows + worker_rows + cuda_rows}
    load0 = _loadavg()  # absolute times follow the machine's load: report it with them
    for _, fn in rows:  # warm up
        _time_us(fn, 50)
    # round robin, one call of each row per round: load from other processes hits all rows alike
    clock = time.perf_counter_ns
    for _ in range(args.runs):
        for name, fn in rows:
            t0 = clock()
            fn()
            acc_ts[name].append((clock() - t0) / 1e3)
    for _, fn in worker_rows:
        _time_us(fn, 50)
    for _ in range(args.runs):
        for name, fn in worker_rows:
            t0 = clock()
            fn()
            acc_ts[name].append((clock() - t0) / 1e3)
    rows += worker_rows
    # CUDA rows each in a block of its own: on a GPU OpenCL device, a CUDA call right after
    # OpenCL work (any other row) pays the GPU's switch between the two contexts (~0.3 ms)
    for name, fn in cuda_rows:
        _time_us(fn, 50)
        for _ in range(args.runs):
            t0 = clock()
            fn()
            acc_ts[name].append((clock() - t0) / 1e3)
    rows += cuda_rows
    res = eng.benchmark(np_in, runs=max(20, args.runs // 10), warmup=5)
    dev = torchtrt_c._C.default_device() if hasattr(torchtrt_c._C, "default_device") else None

    print(f"# per-call overhead: {args.model}, input {tuple(x.shape)}, {args.runs} runs"
          + (f", device {dev}" if dev is not None else "")
          + f", load average {load0} at the start, {_loadavg()} at the end")
    print(f"{'path':40s} {'median us':>10s} {'p10':>8s} {'p90':>8s} {'x execute':>10s}")
    base = _stats(acc_ts["Engine.execute"])[0]
    for name, _ in rows:
        med, p10, p90 = _stats(acc_ts[name])
        print(f"{name:40s} {med:10.1f} {p10:8.1f} {p90:8.1f} {med / base:10.2f}")
    med = statistics.median(res) * 1e3
    print(f"{'Engine.benchmark (resident)':40s} {med:10.1f} {min(res) * 1e3:8.1f} {max(res) * 1e3:8.1f} "
          f"{med / base:10.2f}")
    if hasattr(eng, "profile"):
        kern = _kernel_us(eng, np_in)
        print(f"{'kernels (Engine.profile sum, median)':40s} {kern:10.1f}")
        mod = _stats(acc_ts["module"])[0]
        where = "the caller's thread" if eng.info().get("caller_thread") else "the device's queue"
        print(f"per-call overhead: module - kernels {mod - kern:.1f} us, "
              f"Engine.execute - kernels {base - kern:.1f} us ({eng.info()['n_kernels']} kernels on {where})")
        if "module, PoCL workers (session 7)" in acc_ts:
            kern_w = _kernel_us(eng_w, np_in)
            old = _stats(acc_ts["module, PoCL workers (session 7)"])[0]
            print(f"  on PoCL's workers (session 7): kernels {kern_w:.1f} us, module - kernels {old - kern_w:.1f} us")
        if "module, fx graph + launches not held" in acc_ts:
            kern_w = _kernel_us(eng_nb, np_in)
            old = _stats(acc_ts["module, fx graph + launches not held"])[0]
            print(f"  as in session 5 (fx graph, workers, launches not held): module - kernels {old - kern_w:.1f} us")


if __name__ == "__main__":
    main()
