"""Partitioner speed: synthetic graphs of 1k to 100k nodes, fast and global strategies.

A random DAG (each node reads one or two of the last 64 values; lgamma, about a tenth of
the nodes, has no converter), built through the binding from IR text. The time is that
of g.partition() (best of --repeat): capability through the converter registry,
segmentation and fix-ups, and building the Python result dict.

    python bench/bench_partition.py [--sizes 1000,10000,100000] [--repeat 3]
"""
import argparse
import platform
import random
import time

from torchtrt_c import _C

UNARY = ["aten.relu.default", "aten.exp.default", "aten.sigmoid.default", "aten.neg.default", "aten.lgamma.default",
         "aten.tanh.default"]
BINARY = ["aten.mul.Tensor", "aten.maximum.default"]


def graph_text(n, seed=0):
    rng = random.Random(seed)
    lines, vals = [], ["x0", "x1"]
    for i in range(n):
        a = vals[-1 - rng.randrange(min(64, len(vals)))]
        if rng.random() < 0.6:
            lines.append(f"  %v{i} : Float(8) = {rng.choice(UNARY)}(%{a})")
        else:
            b = vals[-1 - rng.randrange(min(64, len(vals)))]
            lines.append(f"  %v{i} : Float(8) = {rng.choice(BINARY)}(%{a}, %{b})")
        vals.append(f"v{i}")
    return "graph(%x0 : Float(8), %x1 : Float(8)):\n" + "\n".join(lines) + f"\n  return (%{vals[-1]})\n"


def run(sizes=(1000, 3000, 10000, 30000, 100000), repeat=3, echo=False):
    """Rows of dict(nodes, strategy, seconds, us_per_node, segments, opencl_nodes)."""
    rows = []
    if echo:
        print(f"# partitioner timing, {platform.processor() or platform.machine()}, {time.strftime('%Y-%m-%d')}")
        print(f"{'nodes':>8} {'strategy':>8} {'seconds':>9} {'us/node':>8} {'segments':>9} {'opencl nodes':>13}")
    for n in sizes:
        g = _C.Graph.parse(graph_text(n))
        for strategy in ("fast", "global"):
            best, r = float("inf"), None
            for _ in range(repeat):
                t0 = time.perf_counter()
                r = g.partition({"strategy": strategy, "min_block_size": 5})
                best = min(best, time.perf_counter() - t0)
            on = sum(1 for v in r["nodes"].values() if v["target"] == "opencl")
            rows.append({"nodes": n, "strategy": strategy, "seconds": round(best, 4),
                         "us_per_node": round(best / n * 1e6, 2), "segments": len(r["segments"]), "opencl_nodes": on})
            if echo:
                print(f"{n:>8} {strategy:>8} {best:>9.4f} {best / n * 1e6:>8.2f} {len(r['segments']):>9} {on:>13}")
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,3000,10000,30000,100000")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    run([int(s) for s in args.sizes.split(",")], args.repeat, echo=True)


if __name__ == "__main__":
    main()
