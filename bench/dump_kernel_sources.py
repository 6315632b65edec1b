"""Dumps the OpenCL source of every engine the zoo models (tiny) and the op harness build, one
file per engine, so that a restructure of the C core can be checked to leave every generated
kernel byte-identical (issue 31):

    python3 bench/dump_kernel_sources.py /tmp/before            # on the old tree
    TORCHTRT_C_KERNELS=gpu python3 bench/dump_kernel_sources.py /tmp/before-gpu
    ... change, rebuild ...
    python3 bench/dump_kernel_sources.py /tmp/after && diff -r /tmp/before /tmp/after

Every engine built through `_C.Engine.build` / `deserialize` is recorded (`Engine.info()
["source"]`), named by the case that built it and its order within the case. A case that fails
(an op the device cannot run, a tolerance) still dumps the engines it built and is listed in
`FAILED`. The module cache is turned off so that every case builds its own engines, and GEMM
tiles come from the heuristic (TORCHTRT_C_TUNE=heuristic unless set: tuning's timed choice
varies from run to run). Engines
are built, not run (a generated source does not depend on a run; --run runs and checks each
case as the tests do, which on PoCL with TORCHTRT_C_KERNELS=gpu takes hours).
-k SUBSTRING keeps the cases whose id contains it. Runs on whatever device is the default
(PoCL in CI); the settings in the environment apply (TORCHTRT_C_KERNELS=gpu: the GPU kernel
families on PoCL).
"""
import argparse
import os
import pathlib
import re
import sys
import traceback

os.environ["TORCHTRT_C_MODULE_CACHE"] = "0"
# GEMM tuning (optimization_level 3) times candidates: its tile choice follows the machine's
# load, so two runs of one tree may differ in a GEMM's tile defines. The heuristic times nothing.
os.environ.setdefault("TORCHTRT_C_TUNE", "heuristic")
ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "device")]

import torch  # noqa: E402

from torchtrt_c import _C  # noqa: E402


class _Recorder:
    """Stands in for _C.Engine (an immutable type): build/deserialize record the engine made."""

    def __init__(self, real):
        self.real, self.made = real, []

    def __getattr__(self, name):
        return getattr(self.real, name)

    def build(self, *a, **k):
        e = self.real.build(*a, **k)
        self.made.append(e)
        return e

    def deserialize(self, *a, **k):
        e = self.real.deserialize(*a, **k)
        self.made.append(e)
        return e


def _cases(run_them):
    """(id, callable) for every zoo model and every op-harness case."""
    import convtest
    import opcase
    import torchtrt_c
    import zoo
    from test_op_harness import ALL

    if not run_them:  # check_op builds, then runs and compares: the outputs stand in for the run
        convtest.run = lambda engine, args, out_like: list(out_like)

    def model_case(name):
        def run():
            m, make = zoo.build(name, size="tiny")
            x = make(batch=2)
            with torch.no_grad():
                trt = torchtrt_c.compile(m, arg_inputs=[x])
                if run_them:
                    trt(x)
        return run

    def compile_case(case):  # opcase.ModelCase.run without the run
        def run():
            ins = case.inputs()
            torchtrt_c.compile(opcase._Fn(case.fn).eval(), arg_inputs=list(ins), **{"min_block_size": 1, **case.settings})
        return run

    out = [(f"zoo/{name}", model_case(name)) for name in zoo.MODELS]
    for op in sorted(ALL):
        for i, (_, case) in enumerate(ALL[op]):
            if isinstance(case, opcase.ModelCase) and not run_them:
                out.append((f"op/{op}-{i}", compile_case(case)))
            else:
                out.append((f"op/{op}-{i}", (lambda c=case, o=op: c.run(o))))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", help="folder to write (created; existing files are overwritten)")
    ap.add_argument("-k", default="", help="only cases whose id contains one of these (comma-separated)")
    ap.add_argument("--run", action="store_true", help="run and check each case too (slow)")
    args = ap.parse_args()
    out = pathlib.Path(args.out)
    rec = _Recorder(_C.Engine)
    _C.Engine = rec
    failed = []
    n = 0
    for cid, run in _cases(args.run):
        if args.k and not any(k in cid for k in args.k.split(",")):
            continue
        rec.made.clear()
        torch.manual_seed(0)
        try:
            run()
        except Exception as ex:  # the engines built so far are still dumped
            failed.append(f"{cid}: {type(ex).__name__}: {str(ex).splitlines()[0] if str(ex) else ''}")
            if os.environ.get("DUMP_TRACEBACK"):
                traceback.print_exc()
        for j, e in enumerate(rec.made):
            path = out / (re.sub(r"[^A-Za-z0-9_.\-/]", "_", cid) + f"__{j}.cl")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(e.info()["source"])
            n += 1
        rec.made.clear()
    out.mkdir(parents=True, exist_ok=True)
    (out / "FAILED").write_text("".join(f + "\n" for f in failed))
    print(f"{n} engine sources in {out}; {len(failed)} case(s) failed (listed in {out / 'FAILED'})")


if __name__ == "__main__":
    main()
