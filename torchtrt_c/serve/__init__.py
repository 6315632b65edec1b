"""Serving compiled modules with Ray Serve (`pip install torchtrt_c[serve]`; docs/serving.md).

    import torchtrt_c.serve as ttc_serve

    ttc_serve.start_local()                                   # or ray.init(address=...) for a cluster
    handle = ttc_serve.run("model.ep", replicas=2, name="model", route_prefix="/model")
    y = ttc_serve.call(handle, x)                            # or handle.remote(x).result()
    # HTTP: POST http://127.0.0.1:8000/model  {"inputs": {"x": [[...]]}}  (or safetensors bytes)

    python -m torchtrt_c.serve model.ep --replicas 2        # the same from the shell

ttc_serve.app(...) is the Ray Serve application itself, for serve.run or a larger Serve graph.
    handle = ttc_serve.run_llm("llm.ttc", name="llm", route_prefix="/llm")   # torchtrt_c.compile_llm
    for step in handle.options(stream=True).stream.remote(ids, max_new_tokens=32):
        ...                                                   # [B] new token ids per step

Importing this module does not import Ray; the functions do. Generation streams each request's
own generate() call; continuous batching is out of scope.
"""
from __future__ import annotations

import os

from torchtrt_c import Error

__all__ = ["DeploymentError", "app", "call", "llm_app", "run", "run_llm", "start_local"]

# a small footprint by default: the machines we test on are shared
LOCAL_OBJECT_STORE_MB = 128


def app(path, *, replicas: int = 1, device=None, num_gpus: float = 0, num_cpus: float = 1,
        batching: bool = True, max_batch_size: int | None = None, batch_wait_timeout_s: float = 0.005,
        max_ongoing_requests: int | None = None, health_check_period_s: float = 10.0,
        max_constructor_retry_count: int = 3, name: str = "CompiledModel"):
    """A Ray Serve application serving the module saved at path (torchtrt_c.save) with
    `replicas` replicas; pass it to ray.serve.run.

    device: the OpenCL device each replica loads on ("cpu", "gpu", an index or a name); by
      default "gpu" when num_gpus > 0 (the GPU Ray gives the replica: NVIDIA's OpenCL follows
      CUDA_VISIBLE_DEVICES, which Ray sets), else "cpu" (PoCL).
    batching: gather concurrent requests into one module call (@serve.batch) along dim 0, up to
      max_batch_size rows (default: the top of the module's batch range), waiting at most
      batch_wait_timeout_s for a batch to fill; off, each request runs alone.
    max_ongoing_requests: requests a replica takes at once (default: 4 batches' worth), which also
      bounds how many requests can meet in a batch.
    max_constructor_retry_count: replica starts Ray tries before the deployment fails (a file that
      does not load fails every time, with the loader's error).
    The path must be readable where each replica runs (a shared or copied file on a cluster).
    """
    from torchtrt_c.serve._deployment import DEFAULT_MAX_BATCH, CompiledModel
    path = os.path.abspath(os.fspath(path))
    if not os.path.isfile(path):
        raise FileNotFoundError(f"torchtrt_c.serve: no model file {path}")
    if replicas < 1:
        raise ValueError(f"replicas={replicas}: at least 1")
    if max_batch_size is not None and max_batch_size < 1:
        raise ValueError(f"max_batch_size={max_batch_size}: at least 1")
    if device is None:
        device = "gpu" if num_gpus else "cpu"
    ongoing = max_ongoing_requests or 4 * (max_batch_size or DEFAULT_MAX_BATCH)
    dep = CompiledModel.options(
        name=name, num_replicas=replicas, max_ongoing_requests=ongoing,
        ray_actor_options={"num_cpus": num_cpus, "num_gpus": num_gpus},
        health_check_period_s=health_check_period_s, max_constructor_retry_count=max_constructor_retry_count)
    return dep.bind(path, device, batching, max_batch_size, batch_wait_timeout_s)


class DeploymentError(Error):
    """A served model's replicas could not start; the message carries their error."""


def llm_app(path, *, replicas: int = 1, device=None, num_gpus: float = 0, num_cpus: float = 1,
            max_new_tokens_limit: int = 256, max_ongoing_requests: int = 8,
            max_constructor_retry_count: int = 3, name: str = "CompiledGenerator"):
    """A Ray Serve application streaming tokens from a generator saved by
    torchtrt_c.compile_llm(...).save(path): each request is one generate() call (a batch of
    prompts of its own, up to the generator's max_batch_size; no continuous batching) whose new
    tokens stream back per step. device: as app()'s (the replica's TORCHTRT_C_DEVICE)."""
    from torchtrt_c.serve._deployment import CompiledGenerator
    path = os.path.abspath(os.fspath(path))
    if not os.path.isdir(path):
        raise FileNotFoundError(f"torchtrt_c.serve: no saved generator {path} (CompiledCausalLM.save makes a folder)")
    if device is None:
        device = "gpu" if num_gpus else "cpu"
    dep = CompiledGenerator.options(
        name=name, num_replicas=replicas, max_ongoing_requests=max_ongoing_requests,
        ray_actor_options={"num_cpus": num_cpus, "num_gpus": num_gpus,
                           "runtime_env": {"env_vars": {"TORCHTRT_C_DEVICE": str(device)}}},
        max_constructor_retry_count=max_constructor_retry_count)
    return dep.bind(path, max_new_tokens_limit)


def run(path, *, name: str = "model", route_prefix: str = "/", **options):
    """Deploys app(path, **options) as Serve application `name` at HTTP route_prefix and
    returns its handle once every replica runs. Where replicas cannot start (a file that does
    not load, a device that is not there), raises DeploymentError with the replicas' error,
    which Serve keeps in its status rather than in the exception serve.run raises."""
    return _deploy(app(path, **options), path, name, route_prefix)


def run_llm(path, *, name: str = "llm", route_prefix: str = "/llm", **options):
    """run() for llm_app(path, **options)."""
    return _deploy(llm_app(path, **options), path, name, route_prefix)


def _deploy(application, path, name, route_prefix):
    from ray import serve
    try:
        return serve.run(application, name=name, route_prefix=route_prefix)
    except RuntimeError as ex:
        st = serve.status().applications.get(name)
        why = [st.message] if st is not None and st.message else []
        for dep in (st.deployments.values() if st is not None else ()):
            if dep.message:
                why.append(dep.message)
        raise DeploymentError(f"{path}: the deployment {name!r} did not start: "
                              + ("\n".join(why) or str(ex))) from ex


def start_local(num_cpus: int | None = None, object_store_mb: int = LOCAL_OBJECT_STORE_MB,
                host: str = "127.0.0.1", port: int = 8000, **ray_init):
    """Starts Ray on this machine with a small footprint (no dashboard, an object store of
    object_store_mb), and Serve's HTTP proxy on host:port. Already running: nothing is done."""
    import ray
    from ray import serve
    if not ray.is_initialized():
        ray.init(num_cpus=num_cpus, object_store_memory=object_store_mb * 1024 * 1024,
                 include_dashboard=False, **ray_init)
    serve.start(http_options={"host": host, "port": port})


def call(handle, *args, retries: int = 2, timeout_s: float | None = None, **kwargs):
    """handle.remote(*args, **kwargs).result(), sent again (at most `retries` times) when the
    replica that held it died before answering: a model call has no side effects, so a retry is
    safe. Any other error, or the last one, is raised as it came."""
    from ray.exceptions import RayActorError
    for attempt in range(retries + 1):
        try:
            return handle.remote(*args, **kwargs).result(timeout_s=timeout_s)
        except RayActorError:
            if attempt == retries:
                raise
