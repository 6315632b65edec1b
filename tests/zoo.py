"""Model definitions shared by the model tests and bench/: ResNet-, MobileNetV2-, ViT-, BERT- and
GPT-2-style networks written from scratch (no downloads), each with a size.

    model, make_input = build("resnet18", size="tiny")   # small config for tests
    model, make_input = build("resnet50", size="full")   # ResNet-50 at 224x224 for bench
    x = make_input(batch=8)                              # a tensor (or token ids)

Names: resnet18, resnet50, mobilenet_v2, vit_b16, bert_base, gpt2. size="tiny" keeps the
architecture (the same op mix) with few channels/layers so a test compiles in seconds.
"""
from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


# ---------------------------------------------------------------- ResNet
class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, cin, c, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, c, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)
        self.down = None
        if stride != 1 or cin != c:
            self.down = nn.Sequential(nn.Conv2d(cin, c, 1, stride, bias=False), nn.BatchNorm2d(c))

    def forward(self, x):
        idt = x if self.down is None else self.down(x)
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + idt)


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, cin, c, stride=1):
        super().__init__()
        out = c * 4
        self.conv1 = nn.Conv2d(cin, c, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)
        self.conv3 = nn.Conv2d(c, out, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out)
        self.down = None
        if stride != 1 or cin != out:
            self.down = nn.Sequential(nn.Conv2d(cin, out, 1, stride, bias=False), nn.BatchNorm2d(out))

    def forward(self, x):
        idt = x if self.down is None else self.down(x)
        y = F.relu(self.bn1(self.conv1(x)))
        y = F.relu(self.bn2(self.conv2(y)))
        y = self.bn3(self.conv3(y))
        return F.relu(y + idt)


class ResNet(nn.Module):
    def __init__(self, block, layers, width=64, num_classes=1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, width, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        cin, stages = width, []
        for i, n in enumerate(layers):
            c = width * 2 ** i
            blocks = []
            for j in range(n):
                blocks.append(block(cin, c, 2 if (j == 0 and i > 0) else 1))
                cin = c * block.expansion
            stages.append(nn.Sequential(*blocks))
        self.layer1, self.layer2, self.layer3, self.layer4 = stages
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(cin, num_classes)

    def forward(self, x):
        x = self.maxpool(F.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


# ---------------------------------------------------------------- MobileNetV2
class InvertedResidual(nn.Module):
    def __init__(self, cin, cout, stride, expand):
        super().__init__()
        hid = cin * expand
        layers = []
        if expand != 1:
            layers += [nn.Conv2d(cin, hid, 1, bias=False), nn.BatchNorm2d(hid), nn.ReLU6()]
        layers += [nn.Conv2d(hid, hid, 3, stride, 1, groups=hid, bias=False), nn.BatchNorm2d(hid), nn.ReLU6(),
                   nn.Conv2d(hid, cout, 1, bias=False), nn.BatchNorm2d(cout)]
        self.conv = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.conv(x) if self.residual else self.conv(x)


class MobileNetV2(nn.Module):
    # (expand, channels, repeats, stride)
    FULL = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]
    TINY = [(1, 8, 1, 1), (4, 12, 2, 2), (4, 16, 2, 2)]

    def __init__(self, cfg=FULL, stem=32, last=1280, num_classes=1000):
        super().__init__()
        feats = [nn.Sequential(nn.Conv2d(3, stem, 3, 2, 1, bias=False), nn.BatchNorm2d(stem), nn.ReLU6())]
        cin = stem
        for t, c, n, s in cfg:
            for i in range(n):
                feats.append(InvertedResidual(cin, c, s if i == 0 else 1, t))
                cin = c
        feats.append(nn.Sequential(nn.Conv2d(cin, last, 1, bias=False), nn.BatchNorm2d(last), nn.ReLU6()))
        self.features = nn.Sequential(*feats)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(last, num_classes))

    def forward(self, x):
        x = self.features(x)
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.classifier(x)


# ---------------------------------------------------------------- transformer pieces
class SelfAttention(nn.Module):
    def __init__(self, dim, heads, causal=False, fused_qkv=False):
        super().__init__()
        self.heads, self.causal = heads, causal
        self.fused = fused_qkv
        if fused_qkv:
            self.qkv = nn.Linear(dim, 3 * dim)
        else:
            self.q, self.k, self.v = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, mask=None):
        b, t, d = x.shape
        h = self.heads
        if self.fused:
            q, k, v = self.qkv(x).split(d, dim=2)
        else:
            q, k, v = self.q(x), self.k(x), self.v(x)
        q, k, v = (z.view(b, t, h, d // h).transpose(1, 2) for z in (q, k, v))
        att = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(d // h))
        if self.causal:
            att = att.masked_fill(mask[:, :, :t, :t] == 0, float("-inf"))
        elif mask is not None:
            att = att + mask
        att = torch.softmax(att, dim=-1)
        y = torch.matmul(att, v).transpose(1, 2).reshape(b, t, d)
        return self.proj(y)


class ViTBlock(nn.Module):
    def __init__(self, dim, heads, mlp):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = SelfAttention(dim, heads, fused_qkv=True)
        self.mlp = nn.Sequential(nn.Linear(dim, mlp), nn.GELU(), nn.Linear(mlp, dim))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class ViT(nn.Module):
    def __init__(self, image=224, patch=16, dim=768, depth=12, heads=12, mlp=3072, num_classes=1000):
        super().__init__()
        self.patch = nn.Conv2d(3, dim, patch, patch)
        n = (image // patch) ** 2
        self.cls = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        self.pos = nn.Parameter(torch.randn(1, n + 1, dim) * 0.02)
        self.blocks = nn.Sequential(*[ViTBlock(dim, heads, mlp) for _ in range(depth)])
        self.ln = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, x):
        x = self.patch(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        x = self.ln(self.blocks(x))
        return self.head(x[:, 0])


class BertLayer(nn.Module):
    def __init__(self, dim, heads, inter):
        super().__init__()
        self.attn = SelfAttention(dim, heads)
        self.ln1, self.ln2 = nn.LayerNorm(dim, eps=1e-12), nn.LayerNorm(dim, eps=1e-12)
        self.inter, self.out = nn.Linear(dim, inter), nn.Linear(inter, dim)

    def forward(self, x, mask):
        x = self.ln1(x + self.attn(x, mask))
        return self.ln2(x + self.out(F.gelu(self.inter(x))))


class Bert(nn.Module):
    def __init__(self, vocab=30522, dim=768, layers=12, heads=12, inter=3072, max_pos=512, types=2):
        super().__init__()
        self.word = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(max_pos, dim)
        self.token_type = nn.Embedding(types, dim)
        self.ln = nn.LayerNorm(dim, eps=1e-12)
        self.layers = nn.ModuleList([BertLayer(dim, heads, inter) for _ in range(layers)])
        self.pool = nn.Linear(dim, dim)

    def forward(self, input_ids):
        t = input_ids.shape[1]
        pos = torch.arange(t, device=input_ids.device).unsqueeze(0)
        x = self.word(input_ids) + self.pos(pos) + self.token_type(torch.zeros_like(input_ids))
        x = self.ln(x)
        for layer in self.layers:
            x = layer(x, None)
        return x, torch.tanh(self.pool(x[:, 0]))


class GPT2Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = SelfAttention(dim, heads, causal=True, fused_qkv=True)
        self.fc, self.proj = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)

    def forward(self, x, mask):
        x = x + self.attn(self.ln1(x), mask)
        return x + self.proj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT2(nn.Module):
    def __init__(self, vocab=50257, dim=768, layers=12, heads=12, n_pos=1024):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, dim), nn.Embedding(n_pos, dim)
        self.blocks = nn.ModuleList([GPT2Block(dim, heads) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(dim)
        self.register_buffer("mask", torch.tril(torch.ones(n_pos, n_pos)).view(1, 1, n_pos, n_pos),
                             persistent=False)

    def forward(self, idx):
        t = idx.shape[1]
        pos = torch.arange(t, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for b in self.blocks:
            x = b(x, self.mask)
        return F.linear(self.ln_f(x), self.wte.weight)   # tied LM head


# ---------------------------------------------------------------- factory
def _image(n, c=3):
    return lambda batch=1: torch.randn(batch, c, n, n)


def _tokens(vocab, t):
    return lambda batch=1: torch.randint(0, vocab, (batch, t))


def build(name: str, size: str = "tiny", seed: int = 0):
    """(model in eval mode, make_input(batch)) for a named architecture and size."""
    if size not in ("tiny", "full"):
        raise ValueError(f"size must be 'tiny' or 'full', got {size!r}")
    torch.manual_seed(seed)
    full = size == "full"
    if name == "resnet18":
        m = ResNet(BasicBlock, [2, 2, 2, 2]) if full else ResNet(BasicBlock, [1, 1, 1, 1], width=8, num_classes=10)
        inp = _image(224 if full else 32)
    elif name == "resnet50":
        m = ResNet(Bottleneck, [3, 4, 6, 3]) if full else ResNet(Bottleneck, [1, 1, 1, 1], width=8, num_classes=10)
        inp = _image(224 if full else 32)
    elif name == "mobilenet_v2":
        m = MobileNetV2() if full else MobileNetV2(MobileNetV2.TINY, stem=8, last=32, num_classes=10)
        inp = _image(224 if full else 32)
    elif name == "vit_b16":
        m = ViT() if full else ViT(image=32, patch=8, dim=32, depth=2, heads=2, mlp=64, num_classes=10)
        inp = _image(224 if full else 32)
    elif name == "bert_base":
        m = Bert() if full else Bert(vocab=100, dim=32, layers=2, heads=2, inter=64, max_pos=64)
        inp = _tokens(30522 if full else 100, 128 if full else 16)
    elif name == "gpt2":
        m = GPT2() if full else GPT2(vocab=100, dim=32, layers=2, heads=2, n_pos=64)
        inp = _tokens(50257 if full else 100, 128 if full else 16)
    else:
        raise ValueError(f"unknown model {name!r}; known: {', '.join(MODELS)}")
    m.eval()
    if not full:
        _randomize_bn(m)
    return m, inp


def _randomize_bn(m):
    # Fresh BatchNorm stats are identity; random ones make the test check the folding.
    g = torch.Generator().manual_seed(1)
    for mod in m.modules():
        if isinstance(mod, nn.BatchNorm2d):
            with torch.no_grad():
                mod.running_mean.copy_(torch.randn(mod.num_features, generator=g) * 0.1)
                mod.running_var.copy_(torch.rand(mod.num_features, generator=g) + 0.5)
                mod.weight.copy_(torch.rand(mod.num_features, generator=g) + 0.5)
                mod.bias.copy_(torch.randn(mod.num_features, generator=g) * 0.1)


MODELS = ["resnet18", "resnet50", "mobilenet_v2", "vit_b16", "bert_base", "gpt2"]


# ---------------------------------------------------------------- helpers for the tests
def submodules(gm, prefix: str) -> list:
    """Names of a compiled module's direct submodules starting with prefix
    ("_run_on_acc_" for engines, "_run_on_gpu_" for torch segments)."""
    return [n for n, _ in gm.named_children() if n.startswith(prefix)]


def record_compiles(monkeypatch) -> list:
    """Records every compile the pipeline makes (torch.compile's backend calls it per graph):
    a list that grows by (module compiled, its Input specs, the compiled module) per compile."""
    import torchtrt_c.dynamo._compiler as comp
    calls = []
    real = comp.compile_module

    def record(module, arg_inputs, *a, **k):
        gm = real(module, arg_inputs, *a, **k)
        calls.append((module, list(arg_inputs), gm))
        return gm
    monkeypatch.setattr(comp, "compile_module", record)
    return calls


class Logits(nn.Module):
    """A transformers causal LM called as users call it, m(input_ids=ids, use_cache=False),
    returning its logits: a module of one tensor input and output to compile."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, ids):
        return self.m(input_ids=ids, use_cache=False).logits


def ops_in(mod) -> set:
    """The aten ops (as 'aten.add.Tensor') called by a torch segment."""
    return {str(n.target) for n in mod.graph.nodes if n.op == "call_function"
            and isinstance(n.target, torch._ops.OpOverload)}


def assert_tree_close(got, want, atol=1e-4, rtol=1e-4):
    """Compares outputs leaf by leaf, saying which leaf differed and by how much."""
    from torch.utils._pytree import tree_flatten
    g, gs = tree_flatten(got)
    w, ws = tree_flatten(want)
    assert gs == ws, f"output structure differs: {gs} vs {ws}"
    for i, (a, b) in enumerate(zip(g, w)):
        if isinstance(b, torch.Tensor):
            assert isinstance(a, torch.Tensor), f"output {i}: expected a tensor, got {type(a).__name__}"
            assert a.shape == b.shape, f"output {i}: shape {tuple(a.shape)} vs {tuple(b.shape)}"
            assert a.dtype == b.dtype, f"output {i}: dtype {a.dtype} vs {b.dtype}"
            if a.dtype.is_floating_point:
                err = (a.float() - b.float()).abs().max().item() if a.numel() else 0.0
                tol = atol + rtol * (b.float().abs().max().item() if b.numel() else 0.0)
                assert err <= tol, f"output {i}: max abs error {err:.3g} > {tol:.3g}"
            else:
                assert torch.equal(a, b), f"output {i}: {int((a != b).sum())} element(s) differ"
        else:
            assert a == b, f"output {i}: {a!r} vs {b!r}"
