"""torchtrt_c.serve behind a real Ray Serve on this machine (localhost only, bounded in requests
and time, stopping by itself): a 2-replica deployment of a saved CNN (torchvision ResNet-18,
its engines saved as if built on another device, so each replica rebuilds them) and of a saved
transformer (Hugging Face BERT, small config, keyword inputs); 200 concurrent requests of mixed
batch sizes each, every answer equal to eager's; batching happens (module calls < requests);
HTTP with JSON and safetensors bytes; one replica killed (SIGKILL) mid-load: every request
succeeds after a retry or fails with a clear error, and the deployment is back to 2 replicas;
a corrupt file and a program without engines fail the deployment's start with the loader's
error; the command line serves a model and stops on SIGINT; a tiny Llama compiled with
torchtrt_c.compile_llm streams eager's greedy tokens to a handle and over HTTP.

One Ray instance serves the whole module (2 CPUs, a 100 MB object store, no dashboard); with
pytest-xdist the tests stay in one worker (xdist_group; ./run.sh passes --dist loadgroup).
Without Ray installed the module is skipped (./run.sh installs ray[serve]). Under .ci/run's ASan
pass Ray's processes inherit LD_PRELOAD (the ASan and UBSan runtimes): its own binaries run with
them, and the replicas load the instrumented extension like the test process (22 passed under
the preload with this file and tests/device/test_serve_model.py, 326 s at load average ~14)."""
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor, wait

import pytest
import torch

import torchtrt_c

# Serve's router asks replicas for their queue lengths before routing and skips one that does
# not answer within 0.1 s; on this loaded 2-core machine a replica's answers can miss that for
# minutes, so calls never reach it (info() bursts then never hear from it). Read at import.
os.environ.setdefault("RAY_SERVE_QUEUE_LENGTH_RESPONSE_DEADLINE_S", "2")
os.environ.setdefault("RAY_SERVE_MAX_QUEUE_LENGTH_RESPONSE_DEADLINE_S", "4")
serve = pytest.importorskip("ray.serve", reason="Ray Serve is not installed (pip install 'ray[serve]'; "
                            "./run.sh installs it)")
import ray  # noqa: E402

import torchtrt_c.serve as ts  # noqa: E402
from engine_blob import from_another_device  # noqa: E402
from thirdparty import import_torchvision, randomize_constant_init  # noqa: E402

pytestmark = pytest.mark.xdist_group("ray_serve")

TOL = dict(rtol=1e-4, atol=1e-4)
N_REQUESTS = 200
FAR = ("Imaginary Platform", "Imaginary Accelerator 9000", "0.0-test")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def replica() -> dict:
    """Replicas on the test device: on a GPU each takes a share of it from Ray (Ray hides the
    GPUs from actors that take none); on the CPU a share of the 2 CPUs."""
    gpu = torchtrt_c.default_device().type == "gpu"
    return dict(num_cpus=0.25, num_gpus=0.25 if gpu else 0, device="gpu" if gpu else "cpu")


@pytest.fixture(scope="module")
def port(replica):
    p = _free_port()
    ts.start_local(num_cpus=2, num_gpus=1 if replica["num_gpus"] else 0, object_store_mb=100, port=p,
                   log_to_driver=False)
    yield p
    serve.shutdown()
    ray.shutdown()


@pytest.fixture(scope="module")
def cnn(tmp_path_factory, port, replica):
    tv = import_torchvision()
    torch.manual_seed(0)
    model = randomize_constant_init(tv.models.resnet18(num_classes=10)).eval()
    trt = torchtrt_c.compile(model, inputs=[torchtrt_c.Input(min_shape=(1, 3, 32, 32), opt_shape=(8, 3, 32, 32),
                                                             max_shape=(16, 3, 32, 32))])
    assert from_another_device(trt, FAR)   # as if saved on another machine's device
    path = tmp_path_factory.mktemp("serve") / "resnet18.ep"
    torchtrt_c.save(trt, path)
    del trt
    handle = ts.run(path, replicas=2, batch_wait_timeout_s=0.02, name="cnn", route_prefix="/cnn", **replica)
    return model, handle, path


@pytest.fixture(scope="module")
def bert(tmp_path_factory, port, replica):
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    model = transformers.BertModel(transformers.BertConfig(
        vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=37,
        max_position_embeddings=32)).eval()
    I = torchtrt_c.Input
    spec = {k: I(min_shape=(1, 2), opt_shape=(4, 8), max_shape=(16, 16), dtype=torch.long)
            for k in ("input_ids", "attention_mask")}
    trt = torchtrt_c.compile(model, kwarg_inputs=spec)
    path = tmp_path_factory.mktemp("serve") / "bert.ep"
    torchtrt_c.save(trt, path)
    del trt
    handle = ts.run(path, replicas=2, batch_wait_timeout_s=0.02, name="bert", route_prefix="/bert", **replica)
    return model, handle


def _replica_ids(app: str) -> set:
    """The live replicas of app, by the names Serve gives their actors."""
    prefix = f"SERVE_REPLICA::{app}#"
    return {a["name"].rsplit("#", 1)[1] for a in ray.util.list_named_actors(all_namespaces=True)
            if a["name"].startswith(prefix)}


def _replica_infos(handle, app: str) -> dict:
    """info() of every live replica: Serve routes each call to one replica, so calls go in
    bursts held on their replicas a moment (a busy replica sends the next ones elsewhere) until
    every replica has answered."""
    want, got = _replica_ids(app), {}
    for _ in range(40):
        for r in [handle.info.remote(hold_s=0.3) for _ in range(8)]:
            i = r.result(timeout_s=60)
            got[i["replica"]] = i
        if want <= set(got):
            return {k: got[k] for k in want}
    raise AssertionError(f"{app}: replicas {sorted(want)} did not all answer info(); got {sorted(got)}")


def _totals(infos: dict) -> tuple:
    return sum(i["requests"] for i in infos.values()), sum(i["engine_calls"] for i in infos.values())


def _bert_inputs(g: torch.Generator, rows: int, seq: int) -> dict:
    ids = torch.randint(3, 100, (rows, seq), generator=g)
    mask = torch.ones(rows, seq, dtype=torch.long)
    mask[-1, seq - seq // 3:] = 0   # a right-padded last row
    return {"input_ids": ids, "attention_mask": mask}


def _eager_per_request(fn, requests: list) -> list:
    """fn's outputs for each request (a tuple of tensors batched along dim 0), computed as one
    eager call per shape group: eager is the slow side here (on this shared 2-core machine 200
    small eager calls took minutes), and rows do not interact in these models."""
    groups = {}
    for i, r in enumerate(requests):
        groups.setdefault(tuple(tuple(t.shape[1:]) for t in r), []).append(i)
    out = [None] * len(requests)
    with torch.no_grad():
        for idx in groups.values():
            res = fn(*(torch.cat([requests[i][k] for i in idx]) for k in range(len(requests[idx[0]]))))
            start = 0
            for i in idx:
                n = requests[i][0].shape[0]
                out[i] = torch.utils._pytree.tree_map(lambda t, a=start, b=start + n: t[a:b], res)
                start += n
    return out


def _check_bert(model, kws: list, outs: list):
    wants = _eager_per_request(lambda ids, mask: model(input_ids=ids, attention_mask=mask),
                               [(kw["input_ids"], kw["attention_mask"]) for kw in kws])
    for got, want in zip(outs, wants):
        torch.testing.assert_close(got.last_hidden_state, want.last_hidden_state, **TOL)
        torch.testing.assert_close(got.pooler_output, want.pooler_output, **TOL)


def test_cnn_concurrent_requests_are_batched_and_match_eager(cnn):
    model, handle, _ = cnn
    before = _totals(_replica_infos(handle, "cnn"))
    g = torch.Generator().manual_seed(1)
    xs = [torch.randn(1 + i % 5, 3, 32, 32, generator=g) for i in range(N_REQUESTS)]
    t0 = time.monotonic()
    responses = [handle.remote(x) for x in xs]          # all in flight at once
    outs = [r.result(timeout_s=300) for r in responses]
    took = time.monotonic() - t0
    for y, want in zip(outs, _eager_per_request(model, [(x,) for x in xs])):
        torch.testing.assert_close(y, want, **TOL)
    infos = _replica_infos(handle, "cnn")
    requests, calls = (a - b for a, b in zip(_totals(infos), before))
    print(f"cnn: {N_REQUESTS} requests in {took:.1f} s, {calls} module calls on {len(infos)} replicas")
    assert requests == N_REQUESTS
    assert calls < requests, "no requests were batched together"
    assert all(i["requests"] > 0 for i in infos.values()), "a replica served no request"
    for i in infos.values():   # each replica rebuilt the engines saved for another device
        assert i["device"]["type"] == torchtrt_c.default_device().type
        assert i["rebuilt_engines"] and {r["built_for"]["name"] for r in i["rebuilt_engines"]} == {FAR[1]}


def _post(url, body, content_type):
    req = urllib.request.Request(url, data=body, headers={"Content-Type": content_type})
    with urllib.request.urlopen(req, timeout=120) as r:
        return r.read(), r.headers.get("Content-Type")


def test_cnn_over_http_json_and_bytes(cnn, port):
    from safetensors.torch import load, save
    model, _, _ = cnn
    url = f"http://127.0.0.1:{port}/cnn"
    x = torch.randn(2, 3, 32, 32)
    with torch.no_grad():
        want = model(x)
    body, kind = _post(url, json.dumps({"inputs": {"x": x.tolist()}}).encode(), "application/json")
    assert kind.startswith("application/json")
    torch.testing.assert_close(torch.tensor(json.loads(body)["outputs"]), want, **TOL)
    body, kind = _post(url, save({"x": x}), "application/octet-stream")
    torch.testing.assert_close(load(body)["output"], want, **TOL)
    with pytest.raises(urllib.error.HTTPError) as ei:
        _post(url, json.dumps({"inputs": {"x": [[1.0, 2.0]]}}).encode(), "application/json")
    assert ei.value.code == 400 and "has shape (1, 2)" in json.loads(ei.value.read())["error"]
    with urllib.request.urlopen(url, timeout=60) as r:   # GET: what the replica serves
        info = json.loads(r.read())
    assert info["inputs"] == ["x: float32[1..16, 3, 32, 32]"] and info["batch_rows"] == [1, 16]


def test_bad_request_through_the_handle_is_an_input_error(cnn):
    _, handle, _ = cnn
    with pytest.raises(torchtrt_c.InputError, match="dtype torch.float64"):
        handle.remote(torch.randn(1, 3, 32, 32, dtype=torch.float64)).result(timeout_s=60)


def test_transformer_concurrent_requests_are_batched_and_match_eager(bert):
    model, handle = bert
    before = _totals(_replica_infos(handle, "bert"))
    g = torch.Generator().manual_seed(2)
    kws = [_bert_inputs(g, 1 + i % 4, (8, 12)[i % 3 == 0]) for i in range(N_REQUESTS)]
    responses = [handle.remote(**kw) for kw in kws]
    outs = [r.result(timeout_s=300) for r in responses]
    _check_bert(model, kws, outs)
    infos = _replica_infos(handle, "bert")
    requests, calls = (a - b for a, b in zip(_totals(infos), before))
    print(f"bert: {N_REQUESTS} requests, {calls} module calls on {len(infos)} replicas")
    assert requests == N_REQUESTS and calls < requests
    assert all(not i["rebuilt_engines"] for i in infos.values())   # saved on this device


class _CountingHandle:
    """A handle that counts what is sent through it (to see the retries of ts.call)."""

    def __init__(self, handle):
        self.handle, self.sent = handle, 0

    def remote(self, *args, **kwargs):
        self.sent += 1
        return self.handle.remote(*args, **kwargs)


def test_replica_killed_mid_load_loses_no_request(bert):
    model, handle = bert
    victims = _replica_infos(handle, "bert")
    assert len(victims) == 2
    victim_id, victim = next(iter(victims.items()))
    counting = _CountingHandle(handle)
    g = torch.Generator().manual_seed(3)
    kws = [_bert_inputs(g, 1 + i % 4, 8) for i in range(100)]
    with ThreadPoolExecutor(48) as pool:   # enough in flight that the victim holds some
        futures = [pool.submit(ts.call, counting, retries=2, timeout_s=120, **kw) for kw in kws]
        while sum(f.done() for f in futures) < 10:
            time.sleep(0.01)
        os.kill(victim["pid"], signal.SIGKILL)
        done, pending = wait(futures, timeout=600)
    assert not pending, f"{len(pending)} requests never finished"
    answered = [(kw, f.result()) for kw, f in zip(kws, futures) if f.exception() is None]
    failed = [f.exception() for f in futures if f.exception() is not None]
    _check_bert(model, [kw for kw, _ in answered], [y for _, y in answered])
    ok = len(answered)
    print(f"kill: {ok} answered, {len(failed)} failed, {counting.sent - len(kws)} retries")
    for ex in failed:   # a failure must say what happened, not be a silent loss
        assert isinstance(ex, ray.exceptions.RayError) and str(ex).strip(), repr(ex)
    assert ok + len(failed) == len(kws)
    assert counting.sent > len(kws), "the killed replica held no request: nothing was retried"
    # Serve replaces the dead replica
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        st = serve.status().applications["bert"].deployments["CompiledModel"]
        ids = _replica_ids("bert")
        if st.replica_states.get("RUNNING", 0) == 2 and len(ids) == 2 and victim_id not in ids:
            break
        time.sleep(1)
    else:
        raise AssertionError(f"bert did not recover to 2 replicas: {st.replica_states}, {_replica_ids('bert')}")
    infos = _replica_infos(handle, "bert")
    assert len(infos) == 2 and victim_id not in infos
    kw = _bert_inputs(g, 3, 8)
    _check_bert(model, [kw], [ts.call(handle, timeout_s=120, **kw)])


def _expect_failed_start(path, app, replica):
    t0 = time.monotonic()
    with pytest.raises(ts.DeploymentError) as ei:
        ts.run(path, replicas=1, max_constructor_retry_count=1, name=app, route_prefix=f"/{app}", **replica)
    serve.delete(app)
    print(f"{app}: failed to start in {time.monotonic() - t0:.1f} s")
    return str(ei.value)


def test_corrupt_or_foreign_file_fails_the_start(cnn, tmp_path, replica):
    _, _, good = cnn
    corrupt = tmp_path / "corrupt.ep"
    data = bytearray(good.read_bytes())
    data[len(data) // 2: len(data) // 2 + 64] = b"\xff" * 64   # inside the engine blob
    corrupt.write_bytes(bytes(data))
    msg = _expect_failed_start(corrupt, "corrupt", replica)
    assert "SerializationError" in msg and "cannot load" in msg and str(corrupt) in msg, msg
    foreign = tmp_path / "eager.ep"
    with open(foreign, "wb") as f:   # a torch.export program that torchtrt_c did not compile
        m = torch.nn.Linear(4, 2).eval()
        torch.export.save(torch.export.export(m, (torch.randn(2, 4),)), f)
    msg = _expect_failed_start(foreign, "foreign", replica)
    assert "without torchtrt_c engines" in msg, msg


def test_command_line_serves_and_stops(cnn, port, replica):
    """python -m torchtrt_c.serve joins this Ray instance (--address), serves over HTTP, and on
    SIGINT removes its application."""
    model, _, path = cnn
    address = ray.get_runtime_context().gcs_address
    proc = subprocess.Popen([sys.executable, "-m", "torchtrt_c.serve", str(path), "--replicas", "1",
                             "--num-cpus", str(replica["num_cpus"]), "--num-gpus", str(replica["num_gpus"]),
                             "--name", "cli", "--route", "/cli", "--address", address],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 240
        line = ""
        while time.monotonic() < deadline and "Ctrl-C stops" not in line:
            line = proc.stdout.readline()
            if not line and proc.poll() is not None:
                break
        assert "Ctrl-C stops" in line, f"the command did not come up (exit {proc.poll()})"
        x = torch.randn(3, 3, 32, 32)
        body, _ = _post(f"http://127.0.0.1:{port}/cli", json.dumps({"inputs": [x.tolist()]}).encode(),
                        "application/json")
        with torch.no_grad():
            torch.testing.assert_close(torch.tensor(json.loads(body)["outputs"]), model(x), **TOL)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=120) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "cli" not in serve.status().applications


@pytest.fixture(scope="module")
def llm(tmp_path_factory, port, replica):
    """A tiny Llama compiled for generation (torchtrt_c.compile_llm), saved, served by 1 replica."""
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(transformers.LlamaConfig(
        hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        vocab_size=97, pad_token_id=0, bos_token_id=1, eos_token_id=2)).eval()
    gen = torchtrt_c.compile_llm(model, max_seq_len=48, max_batch_size=2, max_prompt_len=16)
    path = tmp_path_factory.mktemp("serve") / "llama.ttc"
    gen.save(str(path))
    del gen
    handle = ts.run_llm(path, replicas=1, max_new_tokens_limit=24, name="llm", route_prefix="/llm", **replica)
    return model, handle


def _prompts():
    g = torch.Generator().manual_seed(4)
    ids = torch.randint(3, 97, (2, 7), generator=g)
    mask = torch.ones(2, 7, dtype=torch.long)
    ids[1, :3], mask[1, :3] = 0, 0   # left padding: the second prompt is 3 tokens shorter
    return ids, mask


def test_llm_tokens_stream_to_a_handle_and_over_http(llm, port):
    model, handle = llm
    ids, mask = _prompts()
    new = 20
    want = model.generate(ids, attention_mask=mask, do_sample=False, max_new_tokens=new)[:, ids.shape[1]:]
    steps = list(handle.options(stream=True).stream.remote(ids, attention_mask=mask, max_new_tokens=new))
    assert all(s.shape == (2,) for s in steps)
    got = torch.stack(steps, 1)
    assert torch.equal(got, want[:, :got.shape[1]]) and got.shape[1] == want.shape[1], (got, want)
    req = urllib.request.Request(f"http://127.0.0.1:{port}/llm", data=json.dumps(
        {"input_ids": ids.tolist(), "attention_mask": mask.tolist(), "max_new_tokens": new}).encode(),
        headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as r:
        assert r.headers.get("Content-Type").startswith("application/x-ndjson")
        lines = [json.loads(line) for line in r if line.strip()]
    assert torch.equal(torch.tensor([line["tokens"] for line in lines]).T, got)
    with pytest.raises(torchtrt_c.InputError, match="max_new_tokens=25: 1..24"):
        list(handle.options(stream=True).stream.remote(ids, max_new_tokens=25))
