"""The Ray Serve deployment of a saved compiled module (imported only when one is made: it
imports Ray). torchtrt_c.serve.app() configures and binds it; see docs/serving.md.

Each replica loads the file on its own device (ServedModel: rebuilt from the embedded IR where
the engines were built for another device, and said so in the replica's log), checks every
request before it queues, and feeds them to @serve.batch, which gathers requests until their
rows reach the batch limit or the wait runs out; one worker thread runs the module, so the
event loop keeps gathering the next batch meanwhile. A request larger than the limit is cut
into chunks that queue like requests of their own. Ray calls check_health periodically; it
runs the engine (ServedModel.check), and a replica that fails it is replaced.

Only what a model call needs is here; a token-streaming deployment for compiled generators would
sit beside CompiledModel, loading the same way (_load_on_replica) and answering with an async
generator (Ray Serve streams those to handles and to HTTP).
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import logging

from ray import serve
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from torchtrt_c.serve import _wire
from torchtrt_c.serve._model import ServedModel

logger = logging.getLogger("ray.serve")  # Serve's logger: the replica's log file and the driver

# the batch limit when the module's batch dim has no upper bound
DEFAULT_MAX_BATCH = 32


def _rows(requests) -> int:
    """@serve.batch's measure of a batch: the rows of its requests, not their count."""
    return sum(r.rows for r in requests)


def _load_on_replica(path, device) -> ServedModel:
    model = ServedModel(path, device=device)
    logger.info("torchtrt_c.serve: %s loaded on %s (%s); batch rows %s..%s; inputs %s", path,
                model.device["name"], model.device["type"], model.min_rows, model.max_rows,
                "; ".join(s.describe() for s in model.inputs))
    for r in model.rebuilt:
        logger.info("torchtrt_c.serve: engine %s was built for %s and was rebuilt from its IR for %s",
                    r["engine"], r["built_for"]["name"], r["device"]["name"])
    return model


@serve.deployment
class CompiledModel:
    def __init__(self, path: str, device, batching: bool, max_batch_size, batch_wait_timeout_s: float):
        self.model = _load_on_replica(path, device)
        top = self.model.max_rows or DEFAULT_MAX_BATCH
        self.limit = min(max_batch_size, top) if max_batch_size else top
        if max_batch_size and max_batch_size > top:
            logger.warning("torchtrt_c.serve: max_batch_size=%d is beyond the module's batch range; using %d",
                           max_batch_size, top)
        self.batching = batching
        self._batched.set_max_batch_size(self.limit)
        self._batched.set_batch_wait_timeout_s(batch_wait_timeout_s)
        self._pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="torchtrt_c-serve")

    async def _run(self, requests: list) -> list:
        return await asyncio.get_running_loop().run_in_executor(self._pool, self.model.run, requests)

    @serve.batch(max_batch_size=DEFAULT_MAX_BATCH, batch_size_fn=_rows)  # limits set per replica in __init__
    async def _batched(self, requests: list) -> list:
        return await self._run(requests)

    async def infer(self, request):
        parts = self.model.chunks(request, self.limit)
        if self.batching:
            outs = await asyncio.gather(*(self._batched(p) for p in parts))
        else:
            outs = [(await self._run([p]))[0] for p in parts]
        for o in outs:
            if isinstance(o, BaseException):  # this request's call failed (ServedModel.run)
                raise o
        return self.model.join(outs)

    async def __call__(self, *args, **kwargs):
        """From a handle: the module's own arguments (tensors), its own outputs back. From HTTP:
        GET describes the model, POST runs it (_wire.py: JSON or safetensors bytes)."""
        if len(args) == 1 and not kwargs and isinstance(args[0], Request):
            return await self._http(args[0])
        return await self.infer(self.model.request(args, kwargs))

    async def _http(self, http: Request):
        from torchtrt_c import InputError
        if http.method == "GET":
            return JSONResponse(await self.info())
        kind = http.headers.get("content-type", _wire.JSON).split(";")[0].strip().lower()
        body = await http.body()
        try:
            named = _wire.decode_bytes(body) if kind == _wire.BYTES else _wire.decode_json(body, self.model.inputs)
            request = self.model.request((), named)
        except InputError as ex:
            return JSONResponse({"error": str(ex)}, status_code=400)
        out = await self.infer(request)
        if kind == _wire.BYTES:
            return Response(_wire.encode_bytes(out), media_type=_wire.BYTES)
        return Response(_wire.encode_json(out), media_type=_wire.JSON)

    async def check_health(self):
        await asyncio.get_running_loop().run_in_executor(self._pool, self.model.check)

    async def info(self, hold_s: float = 0.0) -> dict:
        """This replica: its model (device, inputs, batch range, engines rebuilt here), its
        counts of requests and module calls, its id and process. Serve sends each call to one
        replica, the less busy of two; to hear from every replica, send several calls at once
        with hold_s > 0, which keeps each call on its replica that long."""
        if hold_s > 0:
            await asyncio.sleep(min(hold_s, 5.0))
        ctx = serve.get_replica_context()
        return dict(self.model.describe(), replica=ctx.replica_id.unique_id, batching=self.batching,
                    max_batch_size=self.limit)
