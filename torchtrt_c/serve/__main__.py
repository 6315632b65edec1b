"""python -m torchtrt_c.serve MODEL.ep [--replicas N] [options]: serve a saved compiled module
over HTTP (and to Ray handles) until Ctrl-C or SIGTERM. Without --address it starts Ray on this
machine (no dashboard, a small object store) and stops it on exit; with --address it joins that
cluster and removes only its own application on exit. docs/serving.md has the request formats.
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
import threading


def _args(argv):
    p = argparse.ArgumentParser(prog="python -m torchtrt_c.serve", description=__doc__.split("\n\n")[0])
    p.add_argument("model", help="a file saved by torchtrt_c.save")
    p.add_argument("--replicas", type=int, default=1)
    p.add_argument("--device", default=None, help="OpenCL device of each replica: cpu, gpu, an index or a "
                   "name (default: gpu with --num-gpus, else cpu)")
    p.add_argument("--num-gpus", type=float, default=0, help="GPUs each replica takes from Ray")
    p.add_argument("--num-cpus", type=float, default=1, help="CPUs each replica takes from Ray")
    p.add_argument("--no-batching", action="store_true", help="run each request alone")
    p.add_argument("--max-batch-size", type=int, default=None,
                   help="rows per module call (default: the top of the module's batch range)")
    p.add_argument("--batch-wait-timeout-s", type=float, default=0.005)
    p.add_argument("--name", default="model", help="the Serve application's name")
    p.add_argument("--route", default="/", help="HTTP route prefix")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--address", default=None, help="join this Ray cluster instead of starting one")
    p.add_argument("--ray-cpus", type=int, default=None, help="CPUs of the Ray started here (default: all)")
    return p.parse_args(argv)


def main(argv=None) -> int:
    a = _args(argv)
    if not os.path.isfile(a.model):
        print(f"torchtrt_c.serve: no model file {a.model}", file=sys.stderr)
        return 2
    import ray
    from ray import serve

    import torchtrt_c.serve as ttc_serve
    options = dict(replicas=a.replicas, device=a.device, num_gpus=a.num_gpus, num_cpus=a.num_cpus,
                   batching=not a.no_batching, max_batch_size=a.max_batch_size,
                   batch_wait_timeout_s=a.batch_wait_timeout_s)
    own = a.address is None
    if own:
        ttc_serve.start_local(num_cpus=a.ray_cpus, host=a.host, port=a.port)
    else:
        ray.init(address=a.address)
        serve.start(http_options={"host": a.host, "port": a.port})  # the cluster's proxy if it has one
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    try:
        try:
            ttc_serve.run(a.model, name=a.name, route_prefix=a.route, **options)
        except (ttc_serve.DeploymentError, ValueError) as ex:
            print(f"torchtrt_c.serve: {ex}", file=sys.stderr)
            return 1
        print(f"torchtrt_c.serve: {a.model} on {a.replicas} replica(s), application {a.name!r} at route "
              f"{a.route} (HTTP {a.host}:{a.port} unless the cluster's proxy already runs elsewhere); "
              "Ctrl-C stops", flush=True)
        stop.wait()
    finally:
        if own:
            serve.shutdown()
            ray.shutdown()
        else:
            serve.delete(a.name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
