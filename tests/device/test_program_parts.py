"""Engine programs built in parts by parallel threads (TORCHTRT_C_BUILD_THREADS; csrc/backend/
program_parts.c, engine/build.c): the same kernels and the same results as one program, the
parts' binaries round-trip through engine blobs and the on-disk program cache, and damage to a
blob is still refused. Runs on any OpenCL device (PoCL in CI: the split is forced with the knob)."""
import numpy as np
import pytest
import torch

import torchtrt_c
import torchtrt_c._C as C
from zoo import build
from torchtrt_c import settings


def _compile(monkeypatch, tmp_path, model, x, threads, binaries=None, tag=""):
    settings.set(BUILD_THREADS=str(threads))
    if binaries is not None:
        settings.set(PROGRAM_BINARIES=binaries)
    cache = tmp_path / f"progs{threads}{tag}"
    settings.set(CACHE_DIR=str(cache))
    gm = torchtrt_c.compile(model, inputs=[x], min_block_size=1, optimization_level=1,
                            engine_cache_dir=str(tmp_path / f"eng{threads}{tag}"))
    builds = [e["build"] for e in gm._torchtrt_c_profile.engines if e.get("build")]
    return gm, builds


def _engines(gm):
    from torchtrt_c.runtime import EngineModule
    return [m for _, m in gm.named_children() if isinstance(m, EngineModule)]


@pytest.mark.parametrize("name", ["resnet18", "bert_base"])
def test_parts_give_the_same_results(monkeypatch, tmp_path, name):
    model, make = build(name, "tiny")
    model = model.eval()
    x = make(2)
    with torch.inference_mode():
        ref = model(x)
        g1, b1 = _compile(monkeypatch, tmp_path, model, x, 1)
        y1 = g1(x)
        g4, b4 = _compile(monkeypatch, tmp_path, model, x, 4)
        y4 = g4(x)
    assert b1 and b4
    assert all(b["programs"] == 1 for b in b1), [b["programs"] for b in b1]
    # one part per distinct kernel up to the thread count
    for b in b4:
        assert b["programs"] == min(4, b["unique_kernels"]), (b["programs"], b["unique_kernels"])
    assert any(b["programs"] > 1 for b in b4)
    assert [b["kernels"] for b in b1] == [b["kernels"] for b in b4]
    y1 = y1[0] if isinstance(y1, (tuple, list)) else y1
    y4 = y4[0] if isinstance(y4, (tuple, list)) else y4
    ref = ref[0] if isinstance(ref, (tuple, list)) else ref
    # the same kernels compiled in other program objects: bit for bit the same
    assert torch.equal(y1, y4), f"max difference {(y1 - y4).abs().max().item():.3e}"
    torch.testing.assert_close(y4, ref, atol=2e-3, rtol=2e-3)


def test_part_binaries_round_trip_and_cache(monkeypatch, tmp_path):
    """With binaries kept (GPUs' default; forced here), the engine blob carries every part's
    binary: loading it builds nothing from source; a second engine of the same model finds
    every part in the program cache; a damaged blob is refused (checksum), and one whose
    checksum was forged either loads (rebuilt from its IR) or raises a torchtrt_c error."""
    model, make = build("resnet18", "tiny")
    model = model.eval()
    x = make(1)
    with torch.inference_mode():
        gm, builds = _compile(monkeypatch, tmp_path, model, x, 3, binaries="1")
        want = gm(x)
        (eng,) = _engines(gm)
        from torchtrt_c.runtime import ENGINES
        e, _ = ENGINES.get(eng.engine_meta.id, eng.engine)
    assert builds[0]["programs"] == 3
    blob = e.serialize()
    before = C.program_stats()
    e2 = C.Engine.deserialize(blob)
    after = C.program_stats()
    assert e2.build_profile()["program_origin"] == "blob"
    assert after["compiled"] == before["compiled"], "loading a blob with part binaries compiled from source"
    assert after["from_binary"] - before["from_binary"] == 3
    xs = [x.numpy()]
    out1 = np.empty(tuple(want.shape), np.float32)
    out2 = np.empty(tuple(want.shape), np.float32)
    e.execute(xs, [out1])
    e2.execute(xs, [out2])
    np.testing.assert_array_equal(out1, out2)
    np.testing.assert_allclose(out2, want.numpy(), rtol=1e-5, atol=1e-5)

    # the same engine built again: each part from the on-disk program cache
    settings.set(BUILD_THREADS="3")
    with torch.inference_mode():
        gm2 = torchtrt_c.compile(model, inputs=[x], min_block_size=1, optimization_level=1,
                                 engine_cache_dir=str(tmp_path / "eng-again"))
    b2 = gm2._torchtrt_c_profile.engines[0]["build"]
    assert b2["programs"] == 3 and b2["program_origin"] == "cache", b2

    # damage inside the part binaries: refused by the checksum
    bad = bytearray(blob)
    bad[len(bad) // 2] ^= 0x40
    with pytest.raises(torchtrt_c.Error, match="checksum"):
        C.Engine.deserialize(bytes(bad))
    # damage with the checksum forged: the binary seal no longer matches, so the program is
    # built again from the stored IR, or the damage is reported; never a crash
    container = blob.find(b"TTCPMUL1")
    assert container > 0
    for off in (container + 3, container + 9, container + 40, len(blob) - 200):
        bad = bytearray(blob)
        bad[off] ^= 0x5A
        bad[-8:] = C.hash64(bytes(bad[:-8])).to_bytes(8, "little")
        try:
            e3 = C.Engine.deserialize(bytes(bad))
        except torchtrt_c.Error:
            continue
        out3 = np.empty(tuple(want.shape), np.float32)
        e3.execute(xs, [out3])
        np.testing.assert_allclose(out3, want.numpy(), rtol=1e-4, atol=1e-4)


def test_build_threads_knob_in_target(monkeypatch):
    settings.set(BUILD_THREADS="5")
    g = C.Graph()
    x = g.add_input("x", ("tensor", "float32", [3, 4]))
    (y,) = g.add_node("aten.relu.default", [x], [("tensor", "float32", [3, 4])], name="r")
    g.set_outputs([y])
    e = C.Engine.build(g, cache_dir="")
    # one distinct kernel: one program whatever the knob says
    assert e.build_profile()["programs"] == 1
    out = np.empty((3, 4), np.float32)
    xin = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    e.execute([xin], [out])
    np.testing.assert_array_equal(out, np.maximum(xin, 0))
