"""Save a compiled module (exported-program format, engines embedded) and load it back in a
fresh Python process that does not have the model's class.

    python examples/save_load.py [path]
"""
import subprocess
import sys
import tempfile

import torch
import torch.nn as nn

import torchtrt_c


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1, self.l2 = nn.Linear(16, 32), nn.Linear(32, 4)

    def forward(self, x):
        return torch.softmax(self.l2(torch.relu(self.l1(x))), dim=-1)


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else tempfile.mktemp(suffix=".ep")
    torch.manual_seed(0)
    model = Net().eval()
    spec = torchtrt_c.Input(min_shape=(1, 16), opt_shape=(8, 16), max_shape=(64, 16))
    trt = torchtrt_c.compile(model, inputs=[spec], min_block_size=1)
    torchtrt_c.save(trt, path)          # keeps the dynamic batch range of `spec`
    print("saved", path)
    x = torch.randn(5, 16)
    torch.save({"x": x, "y": model(x).detach()}, path + ".io")
    code = (f"import torch, torchtrt_c; m = torchtrt_c.load({path!r}); io = torch.load({path + '.io'!r}); "
            "print('fresh process, max abs error:', (m(io['x']) - io['y']).abs().max().item())")
    subprocess.run([sys.executable, "-c", code], check=True)


if __name__ == "__main__":
    main()
