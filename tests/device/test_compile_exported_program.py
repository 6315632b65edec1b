"""torchtrt_c.compile(exported_program), as Torch-TensorRT's dynamo.compile takes one (issue 36:
it failed with "Calling eval() is not supported yet"). The program is compiled as it is: input
specs from its placeholders and range constraints unless inputs= are given (checked against
it), static and dynamic dims, keyword inputs; the user's program is left unchanged and still
runs. Tolerance: 1e-5 relative to max(|eager|, 1) (fp32 models, other summation orders).
"""
import pytest
import torch

import torchtrt_c
from torchtrt_c import InputError

Dim = torch.export.Dim


def _close(got, want, what):
    err = (got.float() - want.float()).abs().max().item()
    scale = max(want.abs().max().item(), 1.0)
    assert err <= 1e-5 * scale, f"{what}: max error {err:.3g} (scale {scale:.3g})"


def _kinds(trt):
    names = [n for n, _ in trt.named_children()]
    return ([n for n in names if n.startswith("_run_on_acc_")], [n for n in names if n.startswith("_run_on_gpu_")])


class CNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.c2 = torch.nn.Conv2d(8, 5, 3, stride=2)
        self.fc = torch.nn.Linear(5, 7)

    def forward(self, x):
        y = torch.relu(self.bn(self.c1(x)))
        y = torch.relu(self.c2(y)).mean(dim=(2, 3))
        return self.fc(y)


def _unchanged(ep, before, x, want):
    """The user's program: same graph text, and it still runs to eager's answer."""
    assert str(ep.graph) == before, "compile changed the user's ExportedProgram"
    with torch.no_grad():
        _close(ep.module()(x), want, "the user's program after compile")


def test_linear_static():
    torch.manual_seed(0)
    m = torch.nn.Linear(6, 3).eval()
    x = torch.randn(5, 6)
    ep = torch.export.export(m, (x,))
    before = str(ep.graph)
    trt = torchtrt_c.compile(ep, min_block_size=1)
    accs, torch_segs = _kinds(trt)
    assert len(accs) == 1 and not torch_segs
    with torch.no_grad():
        want = m(x)
        _close(trt(x), want, "linear")
        with pytest.raises(InputError):
            trt(torch.randn(4, 6))  # static: the program's shape only
    _unchanged(ep, before, x, want)


def test_linear_dynamic_ranges_from_the_program():
    torch.manual_seed(0)
    m = torch.nn.Linear(6, 3).eval()
    ep = torch.export.export(m, (torch.randn(8, 6),), dynamic_shapes=({0: Dim("batch", min=1, max=32)},))
    trt = torchtrt_c.compile(ep, min_block_size=1)
    assert len(_kinds(trt)[0]) == 1
    with torch.no_grad():
        for b in (1, 7, 32):
            x = torch.randn(b, 6)
            _close(trt(x), m(x), f"batch {b}")
        with pytest.raises(InputError):
            trt(torch.randn(33, 6))


def test_unbounded_dim_needs_inputs():
    """Dim.AUTO (no upper bound): an error naming the input and dim, then the same program
    with inputs= compiles to their range."""
    torch.manual_seed(0)
    m = torch.nn.Linear(6, 3).eval()
    ep = torch.export.export(m, (torch.randn(8, 6),), dynamic_shapes=({0: Dim.AUTO},))
    with pytest.raises(InputError, match=r"input 'input' dim 0 .* no upper bound"):
        torchtrt_c.compile(ep, min_block_size=1)
    trt = torchtrt_c.compile(ep, inputs=[torchtrt_c.Input(min_shape=(1, 6), opt_shape=(8, 6), max_shape=(16, 6))],
                             min_block_size=1)
    with torch.no_grad():
        for b in (1, 16):
            x = torch.randn(b, 6)
            _close(trt(x), m(x), f"batch {b}")


def test_inputs_that_do_not_match_the_program():
    m = torch.nn.Linear(6, 3).eval()
    ep = torch.export.export(m, (torch.randn(8, 6),))
    with pytest.raises(InputError, match="static"):
        torchtrt_c.compile(ep, inputs=[torchtrt_c.Input(min_shape=(1, 6), opt_shape=(8, 6), max_shape=(16, 6))])
    with pytest.raises(InputError, match="float16"):
        torchtrt_c.compile(ep, inputs=[torch.randn(8, 6).half()])
    with pytest.raises(InputError, match="positional"):
        torchtrt_c.compile(ep, inputs=[torch.randn(8, 6), torch.randn(8, 6)])


@pytest.mark.parametrize("dynamic", [False, True])
def test_cnn(dynamic):
    torch.manual_seed(0)
    m = CNN().eval()
    with torch.no_grad():
        m.bn.running_mean.uniform_(-0.5, 0.5)
        m.bn.running_var.uniform_(0.5, 1.5)
    x = torch.randn(2, 3, 15, 17)
    dyn = ({0: Dim("batch", min=1, max=8)},) if dynamic else None
    ep = torch.export.export(m, (x,), dynamic_shapes=dyn)
    before = str(ep.graph)
    trt = torchtrt_c.compile(ep, min_block_size=1)
    accs, torch_segs = _kinds(trt)
    assert len(accs) == 1 and not torch_segs, (accs, torch_segs)
    with torch.no_grad():
        want = m(x)
        _close(trt(x), want, "CNN")
        if dynamic:
            for b in (1, 5, 8):
                xb = torch.randn(b, 3, 15, 17)
                _close(trt(xb), m(xb), f"CNN batch {b}")
    _unchanged(ep, before, x, want)


def test_hf_model_with_dynamic_dims():
    """BERT (tiny config, random weights) exported with dynamic batch and sequence, called with
    keyword inputs as users call it; its ranges come from the program."""
    T = pytest.importorskip("transformers")
    torch.manual_seed(0)
    m = T.BertModel(T.BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                 intermediate_size=37, max_position_embeddings=64)).eval()

    def inputs(bb, ss):
        g = torch.Generator().manual_seed(1000 * bb + ss)
        mask = torch.ones(bb, ss, dtype=torch.long)
        if bb > 1:
            mask[-1, -(ss // 3):] = 0  # a right-padded row, so that the mask matters
        return {"input_ids": torch.randint(3, 100, (bb, ss), generator=g), "attention_mask": mask}

    kw = inputs(2, 8)
    b, s = Dim("batch", min=1, max=4), Dim("seq", min=2, max=16)
    ep = torch.export.export(m, (), kw, dynamic_shapes={k: {0: b, 1: s} for k in kw}, strict=False)
    trt = torchtrt_c.compile(ep, min_block_size=1)
    accs, torch_segs = _kinds(trt)
    assert len(accs) == 1 and not torch_segs, (accs, torch_segs)
    with torch.no_grad():
        for bb, ss in [(2, 8), (1, 5), (4, 13)]:
            kw = inputs(bb, ss)
            want, got = m(**kw), trt(**kw)
            _close(got.last_hidden_state, want.last_hidden_state, f"BERT {bb}x{ss} last_hidden_state")
            _close(got.pooler_output, want.pooler_output, f"BERT {bb}x{ss} pooler_output")
