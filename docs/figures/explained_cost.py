"""Work per layer of self-attention and of a recurrence, measured, as the sequence grows.

Table 1 of the paper: self-attention costs O(n^2 d), a recurrent layer O(n d^2). Both are
measured here with PyTorch's FLOP counter on meta tensors (shapes only, nothing is computed):
self-attention counts the two n x n products (the scores Q K^T and the weighted sum of the
values), the recurrence h_t = tanh(h_{t-1} W + x_t U) two d x d products per step. The lines
cross where n = d, as section 4 of the paper says.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import torch
from torch.utils.flop_counter import FlopCounterMode

D_MODEL = 512
LENGTHS = [2**k for k in range(4, 13)]  # 16 ... 4096


def measured_flops(fn, *args) -> int:
    with FlopCounterMode(display=False) as counter:
        fn(*args)
    return counter.get_total_flops()


def self_attention(x: torch.Tensor) -> torch.Tensor:
    """The two products that mix positions: scores, then the weighted sum of the values."""
    return (x @ x.T).softmax(-1) @ x


def recurrence(x: torch.Tensor, w: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """h_t = tanh(h_{t-1} W + x_t U), one step after the other."""
    h = torch.zeros(1, x.size(1), device=x.device)
    for t in range(x.size(0)):
        h = torch.tanh(h @ w + x[t : t + 1] @ u)
    return h


def costs(d: int = D_MODEL, lengths: list[int] = LENGTHS) -> dict[str, list[int]]:
    """Measured FLOPs of both layers for each length, on meta tensors."""
    w = torch.empty(d, d, device="meta")
    u = torch.empty(d, d, device="meta")
    attention, recurrent = [], []
    for n in lengths:
        x = torch.empty(n, d, device="meta")
        attention.append(measured_flops(self_attention, x))
        recurrent.append(measured_flops(recurrence, x, w, u))
    return {"self-attention": attention, "recurrence": recurrent}


def draw() -> plt.Figure:
    measured = costs()
    fig, ax = plt.subplots(figsize=(7, 4.4))
    ax.plot(LENGTHS, measured["self-attention"], "o-", color="#d62728", lw=2,
            label=r"self-attention, $4n^2d$")
    ax.plot(LENGTHS, measured["recurrence"], "s-", color="#1f77b4", lw=2,
            label=r"recurrence, $4nd^2$")
    ax.axvline(D_MODEL, color="#888888", lw=1, ls="--")
    ax.annotate(f"n = d = {D_MODEL}:\nequal cost", xy=(D_MODEL, 5.4e8),
                xytext=(D_MODEL * 1.25, 1.2e7), fontsize=11,
                arrowprops={"arrowstyle": "->", "color": "#555555"})
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("sequence length n (d_model = 512)")
    ax.set_ylabel("FLOPs per layer (measured)")
    ax.set_title("Self-attention is cheaper while n < d")
    ax.legend(loc="upper left", fontsize=11)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig
