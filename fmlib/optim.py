"""Adam (Kingma & Ba 2015, Algorithm 1) with L2 added to the gradient, as ``torch.optim.Adam``.

``Adam`` keeps the moments m, v and the step count t of every parameter and runs the same fused
kernel as ``torch.optim.Adam(..., fused=True)`` through torch's functional API
(``torch.optim.adam.adam``), so the two take identical steps. It exists for start-up time:
``torch.optim.Optimizer`` imports ``torch._dynamo`` on first use, about a second of a short
``python -m fmlib train`` before its first epoch; this class does not.

Per step, for a parameter θ with gradient g in a group with learning rate α and L2 λ:
    g ← g + λθ,  m ← β1 m + (1 − β1) g,  v ← β2 v + (1 − β2) g²,  t ← t + 1,
    θ ← θ − α (m / (1 − β1^t)) / (√(v / (1 − β2^t)) + ε).
"""

from __future__ import annotations

import torch
from torch.optim.adam import adam


class Adam:
    """Adam over parameter groups ``[{"params": [...], "lr": α, "weight_decay": λ}, ...]``
    (``lr`` and ``weight_decay`` default to the arguments); ``zero_grad`` and ``step`` as in
    ``torch.optim``."""

    def __init__(self, groups, lr: float, betas=(0.9, 0.999), eps: float = 1e-8):
        self.param_groups = [
            {"params": list(g["params"]), "lr": g.get("lr", lr), "weight_decay": g.get("weight_decay", 0.0)}
            for g in groups
        ]
        self.betas, self.eps = betas, eps
        self.state = {}  # parameter -> (m, v, t)

    def zero_grad(self) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            for p in params:
                if p not in self.state:
                    self.state[p] = (torch.zeros_like(p), torch.zeros_like(p), p.new_zeros((), dtype=torch.float32))
            m, v, t = zip(*(self.state[p] for p in params)) if params else ((), (), ())
            adam(
                params,
                [p.grad for p in params],
                list(m),
                list(v),
                [],
                list(t),
                fused=True,
                amsgrad=False,
                beta1=self.betas[0],
                beta2=self.betas[1],
                lr=group["lr"],
                weight_decay=group["weight_decay"],
                eps=self.eps,
                maximize=False,
            )
