r"""The learning-rate schedule of paper section 5.3, with Adam. Taught in the lesson
[Training][recipe]; used on the [Training the copy task][training-guide] page.
"""

from __future__ import annotations

import torch
from torch import nn

from .._checks import check_positive_int
from ..config.model import check_int, check_number

__all__ = ['rate', 'make_optimizer']


def rate(step: int, model_size: int, factor: float, warmup: int) -> float:
    r"""The learning rate of paper section 5.3 at optimizer step `step`, times `factor`.

    $$lrate = factor \cdot d_{model}^{-0.5} \cdot \min(step^{-0.5},\ step \cdot warmup^{-1.5})$$

    It peaks at `step == warmup`, at `factor / sqrt(model_size * warmup)`. `LambdaLR` asks for
    step `0` before the first update, which is treated as step `1`; give the optimizer a base
    learning rate of `1.0` so that `LambdaLR`'s multiplier *is* the rate.

    Args:
        step: the optimizer step, an int >= 0.
        model_size: `d_model`.
        factor: the Annotated Transformer's extra scale (`1` is the paper's formula).
        warmup: warm-up steps (the paper's 4000).

    Returns:
        The learning rate.

    Raises:
        TypeError: for a wrong type. ValueError: for a negative `step`, or a `model_size`,
            `factor` or `warmup` that is not positive.

    Examples:
        >>> from vanilla_transformer.training import rate
        >>> round(rate(4000, model_size=512, factor=1.0, warmup=4000), 7)
        0.0006988
        >>> rate(0, 512, 1.0, 4000) == rate(1, 512, 1.0, 4000)
        True
    """
    check_int("step", step, 0)
    check_positive_int("model_size", model_size)
    factor = check_number("factor", factor)
    check_positive_int("warmup", warmup)
    step = max(step, 1)  # LambdaLR starts at step 0, where step ** -0.5 is undefined
    return factor * model_size**-0.5 * min(step**-0.5, step * warmup**-1.5)


def make_optimizer(
    model: nn.Module, d_model: int, *, factor: float = 1.0, warmup: int = 4000
) -> tuple[torch.optim.Adam, torch.optim.lr_scheduler.LambdaLR]:
    r"""The paper's optimizer (section 5.3): Adam with $\beta_1 = 0.9$, $\beta_2 = 0.98$,
    $\epsilon = 10^{-9}$, and the [`rate`][vanilla_transformer.training.schedule.rate] schedule.

    Call `scheduler.step()` after every `optimizer.step()` (`run_epoch` does).

    Args:
        model: the module to train.
        d_model: the width the schedule uses.
        factor: the schedule's extra scale (`1` is the paper's rate).
        warmup: the schedule's warm-up steps.

    Returns:
        `(optimizer, scheduler)`.

    Raises:
        ValueError: if `d_model`, `factor` or `warmup` is not positive. TypeError: if one of
            them has the wrong type.

    Examples:
        >>> from vanilla_transformer.training import make_optimizer, rate
        >>> optimizer, scheduler = make_optimizer(nn.Linear(4, 4), d_model=512, warmup=4000)
        >>> optimizer.param_groups[0]["lr"] == rate(1, 512, 1.0, 4000)
        True
    """
    rate(1, d_model, factor, warmup)  # checks the arguments now, not at the first step
    optimizer = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: rate(step, d_model, factor, warmup)
    )
    return optimizer, scheduler
