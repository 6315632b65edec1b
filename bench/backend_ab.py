"""torch.compile(backend="torchtrt_c") beside torchtrt_c.compile and eager, one process, same
device, round robin: per-call medians (p10-p90) in ms, the engines / torch segments of each
compiled graph, and the max error against eager (issue 37).

    PYTHONPATH=$PWD python3 bench/backend_ab.py --models tv_mnasnet0_5,tv_resnet18,hf_gpt2 --batch 1
    PYTHONPATH=$PWD python3 bench/backend_ab.py --device cuda --size full      # on a GPU machine

Models: tv_<torchvision name> (random weights, 224x224 full / 64x64 tiny) and bench/hf_models.py's
hf_bert, hf_gpt2, hf_llama (sequence 128 full / 16 tiny).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _build(name, size):
    import torch
    if name.startswith("hf_"):
        from hf_models import build_hf
        return build_hf(name, size)
    from thirdparty import load_torchvision, randomize_constant_init
    tv = load_torchvision()
    torch.manual_seed(0)
    m = randomize_constant_init(getattr(tv.models, name[3:])().eval())
    hw = 224 if size == "full" else 64
    return m, (lambda batch=1: torch.randn(batch, 3, hw, hw))


def _segments(gm):
    names = [n for n, _ in gm.named_children()]
    return (sum(n.startswith("_run_on_acc_") for n in names), sum(n.startswith("_run_on_gpu_") for n in names))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="tv_mnasnet0_5,tv_resnet18,hf_gpt2,hf_bert")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--size", default="tiny", choices=["tiny", "full"])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iters", type=int, default=20)
    args = ap.parse_args(argv)
    # bench/kernels.py shadows the `kernels` package that transformers looks for when its
    # activations load: load them before bench/ is on the path (python puts it first)
    bench = os.path.join(ROOT, "bench")
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != bench]
    try:
        import transformers.activations  # noqa: F401
    except ImportError:
        pass
    sys.path += [ROOT, bench, os.path.join(ROOT, "tests")]
    import torch
    import torchtrt_c
    import torchtrt_c.dynamo._compiler as comp
    real = comp.compile_module
    seen = []
    comp.compile_module = lambda *a, **k: seen.append(real(*a, **k)) or seen[-1]
    print(f"device {args.device}; torch {torch.__version__}; OpenCL {torchtrt_c._C.devices()[torchtrt_c._C.default_device()]['name']}; "
          f"load {os.getloadavg()[0]:.1f}")
    print("| model | batch | eager ms | torchtrt_c.compile ms | torch.compile backend ms | backend / eager | "
          "engines/torch segs (compile; backend) | max err backend | compile s (compile; backend) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in [m for m in args.models.split(",") if m]:
        model, make = _build(name, args.size)
        model = model.to(args.device)
        x = make(batch=args.batch).to(args.device)
        with torch.no_grad():
            ref = model(x)
            seen.clear()
            t = time.perf_counter()
            trt = torchtrt_c.compile(model, inputs=[x])
            t_trt = time.perf_counter() - t
            seg_trt = _segments(trt)
            torch._dynamo.reset()
            seen.clear()
            fast = torch.compile(model, backend="torchtrt_c")
            t = time.perf_counter()
            out = fast(x)
            t_be = time.perf_counter() - t
            seg_be = [_segments(g) for g in seen]
            err = (out - ref).abs().max().item()
            fns = {"eager": model, "compile": trt, "backend": fast}
            times = {k: [] for k in fns}
            for f in fns.values():
                f(x)
            sync = torch.cuda.synchronize if args.device.startswith("cuda") else (lambda: None)
            for _ in range(args.rounds):
                for k, f in fns.items():
                    for _ in range(args.iters):
                        sync()
                        t = time.perf_counter()
                        f(x)
                        sync()
                        times[k].append((time.perf_counter() - t) * 1e3)

        def fmt(v):
            q = statistics.quantiles(v, n=10)
            return f"{statistics.median(v):.3f} ({q[0]:.3f}-{q[-1]:.3f})"
        med = {k: statistics.median(v) for k, v in times.items()}
        print(f"| {name} | {args.batch} | {fmt(times['eager'])} | {fmt(times['compile'])} | {fmt(times['backend'])} | "
              f"{med['backend'] / med['eager']:.2f} | {seg_trt}; {seg_be} | {err:.1e} | {t_trt:.1f}; {t_be:.1f} |",
              flush=True)
        torch._dynamo.reset()


if __name__ == "__main__":
    main()
