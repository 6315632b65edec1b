"""A CNN with an op forced to run in PyTorch (torch_executed_ops): the compiled module has
engines before and after it, and a `_run_on_gpu_N` torch segment holding it.

    python examples/cnn_fallback.py
"""
import torch
import torch.nn as nn

import torchtrt_c


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 16, 3, padding=1))
        self.head = nn.Sequential(nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10))

    def forward(self, x):
        y = self.stem(x)
        y = torch.erf(y) + torch.lgamma(y.abs() + 1)    # lgamma: forced to PyTorch below
        return self.head(y)


def main():
    torch.manual_seed(0)
    model = Net().eval()
    x = torch.randn(4, 3, 32, 32)
    trt = torchtrt_c.compile(model, inputs=[x], min_block_size=2,
                             torch_executed_ops={"aten::lgamma"})
    print(trt.graph)
    for name, mod in trt.named_children():
        kind = "engine" if name.startswith("_run_on_acc_") else "torch"
        print(f"{name}: {kind}")
        if kind == "torch":
            print("   ops:", sorted({str(n.target) for n in mod.graph.nodes if n.op == "call_function"}))
    with torch.no_grad():
        err = (trt(x) - model(x)).abs().max().item()
    print(f"max abs error vs eager: {err:.2e}")


if __name__ == "__main__":
    main()
