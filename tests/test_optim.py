"""fmlib's Adam takes the same steps as torch.optim.Adam(fused=True), without torch._dynamo."""

from __future__ import annotations

import subprocess
import sys

import torch

from fmlib.optim import Adam


def loss(params):
    return (params[0] ** 3).sum() + params[1].sin().sum()


def test_steps_equal_torch_fused_adam_with_groups_and_missing_gradients():
    """Two groups (L2 on one), a parameter without gradient in some steps: bit-identical weights."""
    torch.manual_seed(0)
    ours = [torch.nn.Parameter(torch.randn(5, 3)), torch.nn.Parameter(torch.randn(4))]
    theirs = [torch.nn.Parameter(p.detach().clone()) for p in ours]
    optimizers = [
        opt([{"params": ps[:1], "weight_decay": 0.1}, {"params": ps[1:]}], lr=0.01, **kw)
        for opt, ps, kw in ((Adam, ours, {}), (torch.optim.Adam, theirs, {"fused": True}))
    ]
    for step in range(6):
        for params, opt in zip((ours, theirs), optimizers):
            opt.zero_grad()
            (loss(params) if step % 3 else (params[0] ** 3).sum()).backward()  # every third: no grad for params[1]
            opt.step()
    assert all(torch.equal(a, b) for a, b in zip(ours, theirs))
    assert not torch.equal(ours[1], torch.zeros(4))


def test_training_does_not_import_torch_dynamo():
    """Training with fmlib's Adam never imports torch._dynamo (torch.optim.Optimizer does, ~1 s)."""
    code = (
        "import sys; from fmlib.data import synthetic, split; from fmlib.models import build_model; "
        "from fmlib.train import TrainConfig, fit; "
        "data = split(synthetic.make(synthetic.block_R(4), n_samples=600, cardinality=6, dim=2, seed=0)); "
        "fit(build_model('fm', data.schema, dim=2), data.train, data.valid, TrainConfig(epochs=1, batch_size=64)); "
        "print(sorted(m for m in ('torch._dynamo', 'scipy', 'optuna') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
