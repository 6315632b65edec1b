"""Serving throughput and latency of a compiled module behind Ray Serve (torchtrt_c.serve):
requests per second and p50/p99 latency at 1 and 2 replicas, with batching on and off.

    python bench/serve.py                                  # CPU (PoCL): tiny ResNet-18, 1-row requests
    python bench/serve.py --model bert --requests 600      # HF BERT (small config), seq 16
    python bench/serve.py --device gpu --num-gpus 1        # one GPU, shared by the replicas

A closed loop: --clients threads each send one request (--rows rows) through the deployment's
handle and wait for its answer, --requests in all after --warmup; latency is the client's wall
time per request (Ray's hops included). Each configuration is a fresh deployment of the same
saved file on one local Ray instance (no dashboard, a 128 MB object store). For reference the
table also gives the compiled module and eager called directly in this process (no Ray) on the
same requests, one at a time. The machine's load average is printed: on a shared machine
compare rows of one run, not runs.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
# bench/kernels.py would stand in for the `kernels` package transformers looks for
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != HERE]
sys.path.insert(0, os.path.join(HERE, "..", "tests"))  # thirdparty.py: torchvision without downloads


def _model(name):
    """(eager model, compile kwargs, request maker: rows -> (args, kwargs))."""
    import torchtrt_c
    torch.manual_seed(0)
    if name == "resnet18":
        from thirdparty import load_torchvision, randomize_constant_init
        m = randomize_constant_init(load_torchvision().models.resnet18(num_classes=10)).eval()
        spec = dict(inputs=[torchtrt_c.Input(min_shape=(1, 3, 32, 32), opt_shape=(8, 3, 32, 32),
                                             max_shape=(16, 3, 32, 32))])
        return m, spec, lambda rows: ((torch.randn(rows, 3, 32, 32),), {})
    if name == "bert":
        import transformers
        m = transformers.BertModel(transformers.BertConfig(
            vocab_size=100, hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128,
            max_position_embeddings=64)).eval()
        inp = torchtrt_c.Input(min_shape=(1, 16), opt_shape=(8, 16), max_shape=(16, 16), dtype=torch.long)
        spec = dict(kwarg_inputs={"input_ids": inp, "attention_mask": inp})
        return m, spec, lambda rows: ((), {"input_ids": torch.randint(3, 100, (rows, 16)),
                                           "attention_mask": torch.ones(rows, 16, dtype=torch.long)})
    raise SystemExit(f"unknown model {name!r} (resnet18, bert)")


def _pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def _load(send, requests, clients):
    """Runs the requests from `clients` threads; (requests per second, latencies in ms)."""
    lat = []

    def one(req):
        t = time.perf_counter()
        send(req)
        lat.append((time.perf_counter() - t) * 1e3)

    t0 = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(one, requests))
    return len(requests) / (time.perf_counter() - t0), lat


def _direct(fn, requests):
    lat = []
    with torch.inference_mode():
        for args, kwargs in requests:
            t = time.perf_counter()
            fn(*args, **kwargs)
            lat.append((time.perf_counter() - t) * 1e3)
    return 1e3 / statistics.median(lat), lat


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="resnet18")
    ap.add_argument("--requests", type=int, default=400)
    ap.add_argument("--warmup", type=int, default=40)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--rows", type=int, default=1, help="rows per request")
    ap.add_argument("--replicas", default="1,2")
    ap.add_argument("--batch-wait-timeout-s", type=float, default=0.005)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--num-gpus", type=float, default=0, help="GPUs of the Ray started here (shared by the replicas)")
    ap.add_argument("--ray-cpus", type=int, default=None)
    a = ap.parse_args()

    import ray

    import torchtrt_c
    import torchtrt_c.serve as ts

    model, spec, make = _model(a.model)
    trt = torchtrt_c.compile(model, **spec)
    tmp = tempfile.mkdtemp(prefix="ttc_serve_bench_")
    path = os.path.join(tmp, f"{a.model}.ep")
    torchtrt_c.save(trt, path)
    requests = [make(a.rows) for _ in range(a.requests)]
    warm = [make(a.rows) for _ in range(a.warmup)]
    dev = torchtrt_c.Device.of(a.device)
    load0 = os.getloadavg()[0]

    rows = []
    for fn, label in ((model, "eager, in process"), (trt, "compiled module, in process")):
        _direct(fn, warm[:5])
        rps, lat = _direct(fn, requests[: min(100, len(requests))])
        rows.append((label, "-", "-", rps, statistics.median(lat), _pct(lat, 0.99)))
    del trt

    ts.start_local(num_cpus=a.ray_cpus, num_gpus=a.num_gpus, log_to_driver=False)
    share = (a.num_gpus / 2) if a.num_gpus else 0
    for replicas in [int(r) for r in a.replicas.split(",")]:
        for batching in (False, True):
            name = f"bench{replicas}{'b' if batching else ''}"
            handle = ts.run(path, name=name, route_prefix=f"/{name}", replicas=replicas, device=a.device,
                            num_gpus=share, num_cpus=0.1, batching=batching,
                            batch_wait_timeout_s=a.batch_wait_timeout_s)
            send = lambda r: handle.remote(*r[0], **r[1]).result(timeout_s=600)  # noqa: E731
            _load(send, warm, a.clients)
            rps, lat = _load(send, requests, a.clients)
            rows.append((f"Ray Serve, {replicas} replica{'s' if replicas > 1 else ''}", "on" if batching else "off",
                         a.clients, rps, statistics.median(lat), _pct(lat, 0.99)))
            ray.serve.delete(name)
            print(f"  {rows[-1][0]}, batching {rows[-1][1]}: {rps:.0f} req/s", flush=True)
    ray.serve.shutdown()
    ray.shutdown()

    print(f"\n{a.model}, {a.rows}-row requests, {a.requests} timed after {a.warmup} warm-up; device {dev.name} "
          f"({dev.type}); load average {load0:.1f} -> {os.getloadavg()[0]:.1f}\n")
    print("| path | batching | clients | req/s | p50 ms | p99 ms |")
    print("|---|---|---|---|---|---|")
    for label, b, c, rps, p50, p99 in rows:
        print(f"| {label} | {b} | {c} | {rps:.0f} | {p50:.2f} | {p99:.2f} |")


if __name__ == "__main__":
    main()
