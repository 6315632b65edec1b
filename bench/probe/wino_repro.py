"""One compile + a few calls of torchvision ResNet-18 b1 with TORCHTRT_C_CONV_WINOGRAD=1."""
import os, sys
os.environ.setdefault("TORCHTRT_C_CONV_WINOGRAD", "1")
ROOT = os.getcwd()
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests"), os.path.join(ROOT, "bench")]
import torch, torchtrt_c
import torchtrt_c._C as C
from vision_models import build_vision
m, mk = build_vision("tv_resnet18")
x = mk(int(os.environ.get("B", "1")))
with torch.no_grad():
    ref = m(x)
    t = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
    for i in range(int(os.environ.get("CALLS", "3"))):
        y = t(x)
print("ok", C.native_cpu()["conv_winograd_primitives"], "maxerr", (y - ref).abs().max().item())
