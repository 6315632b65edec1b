"""tests/thirdparty.py: torchvision/timm from ./run.sh's side directory (or as installed) import
in the process that asks for them, and transformers keeps working in that process whichever
imports first; until it asks, the side directory stays off sys.path. Each case runs in a fresh
interpreter, since imports are once per process."""
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent.parent
pytest.importorskip("transformers")


def _run(code):
    r = subprocess.run([sys.executable, "-c", code], cwd=TESTS.parent, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, f"exit {r.returncode}:\n{r.stdout[-2000:]}\n{r.stderr[-4000:]}"
    return r.stdout


PRELUDE = f"import sys; sys.path.insert(0, {str(TESTS)!r}); import thirdparty, torch\n"
VISION = """
try:
    tv = thirdparty.load_torchvision(); timm = thirdparty.load_timm()
except ImportError as e:
    print("SKIP:", e); sys.exit(0)
m = tv.models.get_model("squeezenet1_0", weights=None).eval()
t = timm.create_model("resnet10t", pretrained=False).eval()
with torch.no_grad():
    assert m(torch.randn(1, 3, 64, 64)).shape == (1, 1000)
    assert t(torch.randn(1, 3, 64, 64)).shape == (1, 1000)
"""
TRANSFORMERS = """
import transformers
from transformers import BertConfig, BertModel, ViTConfig, ViTModel
b = BertModel(BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                         intermediate_size=32)).eval()
v = ViTModel(ViTConfig(image_size=32, patch_size=8, hidden_size=16, num_hidden_layers=1,
                       num_attention_heads=2, intermediate_size=32)).eval()
with torch.no_grad():
    b(input_ids=torch.ones(1, 4, dtype=torch.long))
    v(pixel_values=torch.randn(1, 3, 32, 32))
print("torchvision for transformers:", transformers.utils.is_torchvision_available())
"""


@pytest.mark.parametrize("order", ["vision_first", "transformers_first"])
def test_transformers_beside_vision(order):
    # transformers first is how a pytest worker runs (test_hf_models imports it at collection);
    # until a vision import asks, the side directory stays off sys.path
    untouched = "assert str(thirdparty.SIDE_DIR) not in sys.path, sys.path\n"
    body = VISION + TRANSFORMERS if order == "vision_first" else TRANSFORMERS + untouched + VISION
    out = _run(PRELUDE + body)
    if "SKIP:" in out:
        pytest.skip(out[out.index("SKIP:") + 6:].strip()[:300])
