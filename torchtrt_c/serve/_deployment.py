"""The Ray Serve deployment of a saved compiled module (imported only when one is made: it
imports Ray). torchtrt_c.serve.app() configures and binds it; see docs/serving.md.

Each replica loads the file on its own device (ServedModel: rebuilt from the embedded IR where
the engines were built for another device, and said so in the replica's log), checks every
request before it queues, and feeds them to @serve.batch, which gathers requests until their
rows reach the batch limit or the wait runs out; one worker thread runs the module, so the
event loop keeps gathering the next batch meanwhile. A request larger than the limit is cut
into chunks that queue like requests of their own. Ray calls check_health periodically; it
runs the engine (ServedModel.check), and a replica that fails it is replaced.

CompiledGenerator serves a generator saved by torchtrt_c.compile_llm(...).save(): each request is
one generate() call whose new tokens stream back step by step (an async generator for handles,
newline-delimited JSON over HTTP). Requests are not batched together: continuous batching is out
of scope.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging

from ray import serve
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

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


class _TokenQueue:
    """A transformers streamer (put/end, as generate() calls it from its thread) feeding an
    asyncio queue: the first put is the prompt, each later one the batch's new tokens [B]."""

    def __init__(self, loop):
        self.loop, self.queue, self.prompt_seen = loop, asyncio.Queue(), False

    def put(self, value):
        if not self.prompt_seen:
            self.prompt_seen = True
            return
        self.loop.call_soon_threadsafe(self.queue.put_nowait, value.detach().to("cpu").reshape(-1))

    def end(self):
        self.loop.call_soon_threadsafe(self.queue.put_nowait, None)


@serve.deployment
class CompiledGenerator:
    """A generator saved with CompiledCausalLM.save (torchtrt_c.compile_llm), streaming tokens:
    each request is one generate() call (its own batch of prompts; no continuous batching), and
    the answer streams one tensor of new token ids [B] per step. Generations run one at a time
    on a worker thread, so the event loop keeps streaming."""

    def __init__(self, path: str, max_new_tokens_limit: int):
        import torchtrt_c
        self.gen = torchtrt_c.load_llm(path)
        self.limit = max_new_tokens_limit
        self._pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="torchtrt_c-generate")
        logger.info("torchtrt_c.serve: generator %s loaded", path)

    async def __call__(self, http: Request):
        """HTTP: POST {"input_ids": [[...]], "attention_mask": [[...]], "max_new_tokens": N}
        streams one JSON line {"tokens": [...]} per step; a bad request gets status 400, an
        error after the stream began a last line {"error": ...}."""
        import torch
        try:
            doc = json.loads(await http.body())  # read before the response starts streaming
            ids = torch.tensor(doc["input_ids"], dtype=torch.long)
            mask = torch.tensor(doc["attention_mask"], dtype=torch.long) if "attention_mask" in doc else None
            new = int(doc.get("max_new_tokens", 32))
        except (ValueError, KeyError, TypeError) as ex:
            return JSONResponse({"error": f'a request is {{"input_ids": [[...]], "max_new_tokens": N}} ({ex})'},
                                status_code=400)
        return StreamingResponse(self._lines(ids, mask, new), media_type="application/x-ndjson")

    async def stream(self, input_ids, attention_mask=None, max_new_tokens: int = 32, **generate_kwargs):
        """From a handle: handle.options(stream=True).stream.remote(ids, max_new_tokens=N)
        yields the [B] new token ids of each step as generate() makes them."""
        async for step in self.generate(input_ids, attention_mask, max_new_tokens, **generate_kwargs):
            yield step

    async def generate(self, input_ids, attention_mask, max_new_tokens, **generate_kwargs):
        import torch
        from torchtrt_c import InputError
        if not isinstance(input_ids, torch.Tensor) or input_ids.dim() != 2:
            raise InputError("input_ids: a [batch, prompt] tensor of token ids")
        if not 1 <= max_new_tokens <= self.limit:
            raise InputError(f"max_new_tokens={max_new_tokens}: 1..{self.limit} (the deployment's limit)")
        loop = asyncio.get_running_loop()
        stream = _TokenQueue(loop)
        done = loop.run_in_executor(self._pool, lambda: self.gen.generate(
            input_ids, attention_mask=attention_mask, max_new_tokens=max_new_tokens, streamer=stream,
            **generate_kwargs))
        while True:
            getter = asyncio.ensure_future(stream.queue.get())
            await asyncio.wait([getter, done], return_when=asyncio.FIRST_COMPLETED)
            if not getter.done():  # generate() ended (or raised) without end(): say why
                getter.cancel()
                done.result()
                return
            step = getter.result()
            if step is None:
                await done  # raises what generate() raised
                return
            yield step

    async def _lines(self, ids, mask, new):
        from torchtrt_c import InputError
        try:
            async for step in self.generate(ids, mask, new):
                yield json.dumps({"tokens": step.tolist()}) + "\n"
        except InputError as ex:
            yield json.dumps({"error": str(ex)}) + "\n"
