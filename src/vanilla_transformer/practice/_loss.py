r"""The label-smoothing step: the target distribution and the summed KL divergence of
[`LabelSmoothing`][vanilla_transformer.training.loss.LabelSmoothing].

For a row whose correct class is $y$ the reference's target puts $1 - \epsilon$ on $y$, 0 on the
padding class and $\epsilon / (V - 2)$ on each of the other $V - 2$ classes; rows whose target is
padding get an all-zero target. The loss is the sum of $t (\log t - x)$ over the entries where
$t > 0$.
"""

from __future__ import annotations

import random
from typing import Any, ClassVar

import torch

from ..training.loss import LabelSmoothing
from ._core import Case, Mistake, Outputs, Step
from ._inputs import shape

__all__ = ["LabelSmoothingStep"]


def _ls_variant(case: Case, *, over: str = "V-2", pad_column: bool = True, pad_rows: bool = True,
                confidence: bool = True, mean: bool = False) -> Outputs:
    x, target = case.data["x"], case.data["target"]
    size, pad, eps = case.data["size"], case.data["padding_idx"], case.data["smoothing"]
    denominator = {"V-2": size - 2, "V-1": size - 1, "V": size}[over]
    t = torch.full_like(x, eps / denominator)
    t.scatter_(1, target.unsqueeze(1), (1 - eps) if confidence else 1.0)
    if pad_column:
        t[:, pad] = 0
    if pad_rows:
        t[target == pad] = 0
    positive = t > 0
    loss = torch.where(positive, t * (t.clamp_min(1e-30).log() - x), 0.0).sum()
    if mean:
        loss = loss / x.size(0)
    return {"true_dist": t, "loss": loss}


class LabelSmoothingStep(Step):
    name, obj, kind = "label_smoothing", "LabelSmoothing", "class"
    summary = ("LabelSmoothing(size, padding_idx, smoothing=0.0); forward(x, target) -> "
               "summed KL divergence, keeps true_dist")
    stages: ClassVar[dict[str, str]] = {"true_dist": "the smoothed target distribution, self.true_dist",
              "loss": "the summed KL divergence"}
    optional = frozenset({"true_dist"})
    mistakes = (
        Mistake("ε spread over V classes instead of V − 2",
                "The correct class gets 1 − ε and padding gets nothing, so ε is shared by "
                "the other size − 2 classes: fill with smoothing / (size - 2).",
                lambda c: _ls_variant(c, over="V")),
        Mistake("ε spread over V − 1 classes instead of V − 2",
                "Padding gets no share either: fill with smoothing / (size - 2).",
                lambda c: _ls_variant(c, over="V-1")),
        Mistake("padding rows not excluded",
                "A row whose target is padding_idx must contribute nothing: zero its whole "
                "target row (true_dist[target == padding_idx] = 0).",
                lambda c: _ls_variant(c, pad_rows=False)),
        Mistake("the padding class not zeroed",
                "No row may put probability on the padding token: "
                "true_dist[:, padding_idx] = 0.", lambda c: _ls_variant(c, pad_column=False)),
        Mistake("the correct class gets 1 instead of 1 − ε",
                "Put confidence = 1 - smoothing on the correct class, so each row sums to 1.",
                lambda c: _ls_variant(c, confidence=False)),
        Mistake("the loss averaged over rows instead of summed",
                "Return the sum over every entry (nn.KLDivLoss(reduction='sum')); the caller "
                "divides by the number of tokens.", lambda c: _ls_variant(c, mean=True)),
    )

    def cases(self, seed: int) -> list[Case]:
        rng, g = random.Random(seed), torch.Generator().manual_seed(seed)
        cases = []
        for i in range(30):
            size, rows = rng.randint(3, 10), rng.randint(1, 8)
            pad = rng.randrange(size)
            smoothing = [0.1, 0.4, 0.0][i % 3]
            x = torch.log_softmax(2 * torch.randn(rows, size, generator=g), dim=-1)
            target = torch.randint(0, size, (rows,), generator=g)
            if rows > 1:
                target[-1] = pad  # at least one padding row
            text = (f"size={size}, padding_idx={pad}, smoothing={smoothing}, {shape('x', x)}, "
                    f"target {target.tolist()}")
            cases.append(Case(text, x.numel(), {"x": x, "target": target, "size": size,
                                                "padding_idx": pad, "smoothing": smoothing}))
        return cases

    def _run(self, module: Any, case: Case) -> Outputs:
        loss = module(case.data["x"], case.data["target"])
        out: Outputs = {}
        dist = getattr(module, "true_dist", None)
        if isinstance(dist, torch.Tensor):
            out["true_dist"] = dist
        out["loss"] = loss
        return out

    def expected(self, case: Case) -> Outputs:
        d = case.data
        return self._run(LabelSmoothing(d["size"], d["padding_idx"], d["smoothing"]), case)

    def run(self, implementation: Any, case: Case) -> Outputs:
        d = case.data
        return self._run(implementation(d["size"], d["padding_idx"], d["smoothing"]), case)
