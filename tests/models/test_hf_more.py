"""Slow tier: the Hugging Face architectures of hf_more_cases (56 beyond the model tier's:
encoders, decoders, task heads, encoder-decoders, HF vision), each compiled with default
settings and dynamic Input ranges, checked against eager at three shapes within 1e-5 of each
output's largest value (fp32), and one engine with no torch segment except the models SPLIT
names (those keep at least one engine).

    PYTHONPATH=$PWD python3 -m pytest tests/models/test_hf_more.py -q -m slow
"""
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
pytest.importorskip("transformers")

import torchtrt_c  # noqa: E402
from model_check import check_close, segments  # noqa: E402

from hf_more_cases import ALL, SPLIT, specs_inputs  # noqa: E402


@pytest.mark.slow
@pytest.mark.parametrize("name", list(ALL))
def test_hf_more(name):
    torch.manual_seed(0)
    try:
        model = ALL[name]().eval()
    except AttributeError as ex:   # an older transformers without this architecture
        pytest.skip(f"transformers lacks {name}: {ex}")
    specs, inputs = specs_inputs(name)
    gm = torchtrt_c.compile(model, kwarg_inputs=specs)
    for kw in inputs:
        with torch.no_grad():
            check_close(gm(**kw), model(**kw), what=f"{name} at {[tuple(v.shape) for v in kw.values()]}")
    eng, tor = segments(gm)
    if name in SPLIT:
        assert eng >= 1, f"{name}: no engine ({SPLIT[name]})"
    else:
        assert (eng, tor) == (1, 0), f"{name}: {eng} engine(s), {tor} torch segment(s)"
