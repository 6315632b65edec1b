"""save/load: exported-program files with embedded engines; loading in a fresh process without
the model's class; corrupt files raise SerializationError on load."""
import os
import subprocess
import sys
import textwrap

import pytest
import torch
import torch.nn as nn

import torchtrt_c
from zoo import assert_tree_close



class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1, self.l2 = nn.Linear(6, 12), nn.Linear(12, 3)

    def forward(self, x):
        h = torch.relu(self.l1(x))
        return self.l2(torch.lgamma(h + 1)), h.sum(-1)


def _compiled(dynamic=False):
    torch.manual_seed(0)
    m = Net().eval()
    inp = (torchtrt_c.Input(min_shape=(1, 6), opt_shape=(4, 6), max_shape=(16, 6)) if dynamic
           else torch.randn(4, 6))
    trt = torchtrt_c.compile(m, inputs=[inp], min_block_size=1, torch_executed_ops={"aten::lgamma"})
    return m, trt


def test_save_load_same_process(tmp_path):
    m, trt = _compiled(dynamic=True)
    p = tmp_path / "net.ep"
    torchtrt_c.save(trt, p)
    back = torchtrt_c.load(p)
    for b in (1, 4, 16):
        x = torch.randn(b, 6)
        assert_tree_close(back(x), m(x))
    # torch.export's guards (or else the engine's own check) name the input
    with pytest.raises((torchtrt_c.InputError, AssertionError), match=r"x.size\(\)\[0\] <= 16|input 'x'"):
        back(torch.randn(17, 6))


def test_load_in_fresh_process_without_model_class(tmp_path):
    m, trt = _compiled()
    p = tmp_path / "net.ep"
    torchtrt_c.save(trt, p, inputs=[torch.randn(4, 6)])
    x = torch.randn(4, 6)
    torch.save({"x": x, "want": m(x)}, tmp_path / "io.pt")
    script = textwrap.dedent(f"""
        import torch, torchtrt_c
        io = torch.load({str(tmp_path / 'io.pt')!r})
        mod = torchtrt_c.load({str(p)!r})
        got = mod(io["x"])
        for a, b in zip(got, io["want"]):
            err = (a - b).abs().max().item()
            assert err < 1e-4, err
        print("fresh-process-ok")
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ), cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr[-3000:]
    assert "fresh-process-ok" in r.stdout


def test_corrupt_files_raise_on_load(tmp_path):
    junk = tmp_path / "junk.ep"
    junk.write_bytes(os.urandom(4096))
    with pytest.raises(torchtrt_c.SerializationError, match="junk.ep"):
        torchtrt_c.load(junk)
    _, trt = _compiled()
    good = tmp_path / "good.ep"
    torchtrt_c.save(trt, good)
    cut = tmp_path / "cut.ep"
    cut.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    with pytest.raises(torchtrt_c.SerializationError):
        torchtrt_c.load(cut)
    # A well-formed archive whose engine bytes are garbage: the engine check catches it.
    with torch.no_grad():
        trt._run_on_acc_0.engine.copy_(torch.randint(0, 255, trt._run_on_acc_0.engine.shape, dtype=torch.uint8))
    bad = tmp_path / "bad_engine.ep"
    torchtrt_c.save(trt, bad)
    with pytest.raises(torchtrt_c.SerializationError):
        torchtrt_c.load(bad)
    with pytest.raises(FileNotFoundError):
        torchtrt_c.load(tmp_path / "missing.ep")
