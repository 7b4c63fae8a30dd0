r"""The final model of a run (section 6.1): the element-wise average of its last checkpoints,

$$\theta_{avg} = \frac{1}{k} \sum_{i=1}^{k} \theta_{(i)}$$

of the last `AVERAGE_SPAN` of the run only, or with `keep_best` its best checkpoint.

Explained on the [Training a real translator][translator-guide] page.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import torch
from torch import nn

from ..data.tokenizer import SharedTokenizer
from . import checkpoints as files

__all__ = ["AVERAGE_SPAN", "averaging_window", "average_checkpoints", "write_final_model"]

AVERAGE_SPAN = 0.2
"""The last part of a run whose checkpoints `model.pt` averages: a fifth of its steps. Averaging
helps once the weights move little, as at the end of the paper's long runs; earlier in a short
run it mixes in a weaker model."""



def averaging_window(steps: Sequence[int], average: int) -> list[int]:
    """The steps `model.pt` averages: of the last `average`, those in the run's last
    `AVERAGE_SPAN`.

    Examples:
        >>> averaging_window([500, 877], average=5)  # step 500 is too early to help
        [877]
        >>> averaging_window([800, 900, 1000, 1100, 1200], average=5)
        [1000, 1100, 1200]
    """
    if not steps:
        return []
    kept = sorted(steps)[-average:]
    return [step for step in kept if step >= kept[-1] * (1 - AVERAGE_SPAN)]


def average_checkpoints(paths: Sequence[str | os.PathLike[str]]) -> dict[str, torch.Tensor]:
    r"""The element-wise mean of the models in `paths` (section 6.1), training checkpoints or
    `save_checkpoint` files, in float64 (other tensors the last file's). A `ValueError` if
    `paths` is empty or the files hold different parameters.

    Examples:
        >>> import tempfile, os
        >>> from vanilla_transformer.training.averaging import average_checkpoints
        >>> folder, paths = tempfile.mkdtemp(), []
        >>> for value in (1.0, 3.0):
        ...     paths.append(os.path.join(folder, f"{value}.pt"))
        ...     torch.save({"state_dict": {"w": torch.full((2,), value)}}, paths[-1])
        >>> average_checkpoints(paths)["w"]
        tensor([2., 2.])
    """
    if len(paths) == 0:
        raise ValueError("average_checkpoints needs at least one checkpoint")
    total: dict[str, torch.Tensor] = {}
    last: dict[str, torch.Tensor] = {}
    for path in paths:
        data = files.load_plain(path, f"{os.fspath(path)}: not a readable checkpoint")
        state = data.get("model", data.get("state_dict")) if isinstance(data, dict) else None
        if not isinstance(state, dict):
            raise ValueError(f"{os.fspath(path)}: holds no model state_dict")
        if total and set(state) != set(total):
            raise ValueError(f"{os.fspath(path)} holds different parameters from {paths[0]}")
        for name, tensor in state.items():
            if tensor.is_floating_point():
                total[name] = total.get(name, 0) + tensor.double()
            else:
                total.setdefault(name, tensor)
        last = state
    return {name: (total[name] / len(paths)).to(t.dtype) if t.is_floating_point() else t
            for name, t in last.items()}


def write_final_model(model: nn.Module, folder: Path, tokenizer: SharedTokenizer, step: int,
                       average: int, keep_best: bool, log: Callable[[str], None]
                       ) -> tuple[list[int], str | None]:
    """Load the best or the averaged checkpoints into `model`, and write `model.pt`: `(steps
    it comes from, why it was not written or None)`."""
    best_path = folder / files.CHECKPOINTS / files.BEST_FILE
    if keep_best and best_path.is_file():
        best_model, meta = files.load_checkpoint(best_path)
        model.load_state_dict(best_model.state_dict())
        averaged = [int(meta["steps"])]
    else:
        by_step = {files.step_of(p): p for p in files.checkpoint_paths(folder)}
        averaged = averaging_window(list(by_step), average)
        files.load_model_state(model, average_checkpoints([by_step[s] for s in averaged]),
                               "the averaged checkpoints")
        log(_averaging_line(sorted(by_step)[-average:], averaged))
    if not all(bool(torch.isfinite(p).all()) for p in model.parameters()):
        return averaged, (f"the final model of step {step} holds non-finite weights; "
                          f"{files.MODEL_FILE} was not written")
    files.save_checkpoint(folder / files.MODEL_FILE, model, steps=step, averaged=averaged,
                          tokenizer=tokenizer.tokenizer.to_str())
    return averaged, None


def _averaging_line(kept: list[int], averaged: list[int]) -> str:
    """The line on what `model.pt` averages, or why only the last checkpoint."""
    start = math.ceil(averaged[-1] * (1 - AVERAGE_SPAN))
    steps = ", ".join(map(str, averaged))
    if len(averaged) > 1:
        return (f"{files.MODEL_FILE}: the average of the checkpoints of steps {steps}, the last "
                f"{AVERAGE_SPAN:.0%} of the run (from step {start})")
    older = [step for step in kept if step < start]
    why = (f"step {older[-1]} is before step {start}, where the last "
           f"{AVERAGE_SPAN:.0%} of the run starts" if older else "the only one kept")
    return f"{files.MODEL_FILE}: averaging skipped, the checkpoint of step {steps} alone ({why})"
