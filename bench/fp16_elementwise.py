"""fp16 elementwise A/B: one memory-bound fused chain in an fp16 engine, half arithmetic vs
float arithmetic over half storage (TORCHTRT_C_HALF_COMPUTE=0), in one process, back to back.

    python bench/fp16_elementwise.py [--n 16777216] [--runs 50] [--models resnet18,bert_base]

--models also compiles those zoo models (tests/zoo.py, tiny) in fp16 on each path and prints
the max relative error against fp32 eager.

Times are Engine.benchmark (inputs resident in device buffers, launches + one clFinish). Prints
median ms, effective GB/s (bytes read + written once) and the ratio half/float per chain.
"""
import argparse
import os
import statistics

import torch
import torch.nn as nn
import torch.nn.functional as F

import torchtrt_c
import torchtrt_c._C as C


class Cheap(nn.Module):
    """Only half-arithmetic ops (add/mul/clamp/relu/hardswish)."""

    def forward(self, x, y):
        a = x * 1.5 + y
        b = torch.clamp(a, -2.0, 3.0) - 0.25 * y
        return F.hardswish(F.relu(b) * x + a)


class Mixed(nn.Module):
    """Half ops around a libm op (sigmoid stays float)."""

    def forward(self, x, y):
        a = x * 1.5 + y
        return torch.sigmoid(a) * x + F.hardswish(a) / 2.0


def engine_for(m, args, half):
    if half:
        os.environ.pop("TORCHTRT_C_HALF_COMPUTE", None)
    else:
        os.environ["TORCHTRT_C_HALF_COMPUTE"] = "0"
    trt = torchtrt_c.compile(m, inputs=list(args), min_block_size=1, enabled_precisions={torch.float16})
    blob = bytes(trt._run_on_acc_0.engine.numpy())
    e = C.Engine.deserialize(blob, cache_dir="")   # rebuilt here under the env setting
    os.environ.pop("TORCHTRT_C_HALF_COMPUTE", None)
    return e


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1 << 24)
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--models", default="")
    a = ap.parse_args()
    dev = C.devices()[C.default_device()]
    print(f"device: {dev['name']} ({dev['platform']}), n = {a.n}")
    x = (torch.rand(a.n) * 4 - 2).half()
    y = (torch.rand(a.n) * 4 - 2).half()
    ins = [x.numpy(), y.numpy()]
    nbytes = 3 * a.n * 2
    for name, m in (("cheap", Cheap()), ("mixed", Mixed())):
        res = {}
        for half in (False, True, False, True):   # interleaved: drift shows as disagreement
            e = engine_for(m.eval(), (x, y), half)
            t = statistics.median(e.benchmark(ins, runs=a.runs, warmup=5))
            res.setdefault(e.info()["compute"], []).append(t)
        for k, ts in res.items():
            print(f"{name:6s} {k:28s} median ms {['%.3f' % v for v in ts]}  {nbytes / min(ts) / 1e6:.1f} GB/s")
        vals = list(res.values())
        if len(vals) == 2:
            print(f"{name:6s} ratio half/float (best of each): {min(vals[1]) / min(vals[0]):.3f}")
    for name in filter(None, a.models.split(",")):
        check_model(name)


def check_model(name):
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
    from zoo import build
    m, make = build(name, size="tiny")
    x = make(batch=2)
    with torch.no_grad():
        ref = m.eval()(x)
        ref = ref[0] if isinstance(ref, (tuple, list)) else ref
    for half in (False, True):
        if not half:
            os.environ["TORCHTRT_C_HALF_COMPUTE"] = "0"
        trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1, enabled_precisions={torch.float16})
        os.environ.pop("TORCHTRT_C_HALF_COMPUTE", None)
        e = C.Engine.deserialize(bytes(trt._run_on_acc_0.engine.numpy()), cache_dir="")
        with torch.no_grad():
            out = trt(x)
        out = out[0] if isinstance(out, (tuple, list)) else out
        err = float((out.float() - ref.float()).abs().max() / ref.float().abs().max())
        print(f"model {name:12s} {e.info()['compute']:28s} max rel err {err:.2e}")


if __name__ == "__main__":
    main()
