"""Helpers the steps share: describing inputs, loading reference weights into a learner's module,
and reading intermediate outputs with forward hooks."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import nn

__all__ = ["shape", "mask_text", "load_reference", "tapped", "FixedDropout", "random_mask",
           "distinct_weights", "StructureError", "fix_dropout", "TRAINING"]

TRAINING = ("in training mode, every nn.Dropout replaced by a fixed one that zeroes the last "
            "entry of each row and doubles the others")
"""How a case in training mode is described."""


class StructureError(ValueError):
    """The learner's module is built differently from the reference (a parameter missing,
    misnamed, misshapen or shared): said as it is, not as an error the learner's code raised."""


def shape(name: str, x: torch.Tensor) -> str:
    """`"query (2, 3, 4)"`, with the dtype when it is not float32 or an integer type."""
    text = f"{name} {tuple(x.shape)}"
    if x.is_floating_point() and x.dtype != torch.float32:
        text += f" {str(x.dtype).removeprefix('torch.')}"
    return text


def mask_text(name: str, mask: torch.Tensor | None) -> str:
    """A mask's shape, and its values as 0/1 rows when it is small enough to read."""
    if mask is None:
        return f"{name} None"
    text = f"{name} {tuple(mask.shape)}"
    if mask.numel() <= 16:
        text += " " + str(mask.int().tolist()).replace(" ", "")
    if mask.dim() >= 2 and mask.size(-1) > 0:
        blocked = (mask == 0).all(-1).reshape(-1, mask.size(-2)).any(0).nonzero().flatten()
        if blocked.numel():
            rows = ", ".join(map(str, blocked.tolist()))
            text += (f" (query row{'s' if blocked.numel() > 1 else ''} {rows} fully masked: "
                     "no key may be attended)")
    return text


def random_mask(generator: torch.Generator, lead: Sequence[int], q_len: int, k_len: int,
                kind: str) -> torch.Tensor | None:
    """A keep-mask broadcastable to `(*lead, q_len, k_len)`.

    `kind` is `"none"`, `"padding"` (each row keeps a prefix of at least one key,
    `(*lead, 1, k_len)`), `"subsequent"` (needs `q_len == k_len`) or `"rows"` (random, with the
    first query row fully masked).
    """
    if kind == "none":
        return None
    if kind == "padding":
        lengths = torch.randint(1, k_len + 1, tuple(lead) + (1, 1), generator=generator)
        return torch.arange(k_len) < lengths
    if kind == "subsequent":
        return torch.ones(*[1 for _ in lead], q_len, k_len, dtype=torch.bool).tril()
    mask = torch.rand(*lead, q_len, k_len, generator=generator) < 0.6
    mask[..., 0, :] = False
    return mask


def _is_table(name: str) -> bool:
    """The positional table is computed, not learned: the learner's own is kept."""
    return name == "pe" or name.endswith(".pe")


def distinct_weights(module: nn.Module, generator: torch.Generator) -> None:
    """Give every learned matrix and bias of `module` its own random values (scaled by
    1/sqrt(fan_in)), so that no two projections or layers are alike and using one for another
    shows. LayerNorm gains and biases are left to `randomise_norms`."""
    with torch.no_grad():
        for name, p in module.named_parameters():
            if ".norm." in f".{name}" or name.endswith(("a_2", "b_2")):
                continue
            fan_in = p.shape[-1] if p.dim() > 1 else 1
            p.copy_(torch.randn(p.shape, generator=generator, dtype=p.dtype) / fan_in ** 0.5)


def _shared(module: nn.Module) -> list[list[str]]:
    """The groups of parameter names that are one and the same tensor."""
    groups: dict[int, list[str]] = {}
    for name, p in module.named_parameters(remove_duplicate=False):
        groups.setdefault(id(p), []).append(name)
    return [names for names in groups.values() if len(names) > 1]


def _check_sharing(learner: nn.Module, reference: nn.Module, what: str) -> None:
    alone = {frozenset(g) for g in _shared(reference)}
    for names in _shared(learner):
        if frozenset(names) in alone:
            continue
        owners = sorted({n.rsplit(".", 1)[0] for n in names})
        raise StructureError(
            f"in your {what}, {' and '.join(owners[:3])} are one and the same module (their "
            f"parameters {', '.join(names[:3])} are one tensor), where the reference has "
            "separate ones: make independent copies (copy.deepcopy each one, as clones does), "
            "not several references to one module")


def load_reference(learner: nn.Module, reference: nn.Module, what: str) -> None:
    """Copy the reference's weights into the learner's module, by name.

    Raises:
        StructureError: naming the missing, extra, misshapen or shared parameters.
    """
    if not isinstance(learner, nn.Module):
        raise TypeError(f"{what}(...) must build an nn.Module, got {type(learner).__name__}")
    want = {k: v for k, v in reference.state_dict().items() if not _is_table(k)}
    have = {k: v for k, v in learner.state_dict().items() if not _is_table(k)}
    missing = [k for k in want if k not in have]
    extra = [k for k in have if k not in want]
    if missing or extra:
        parts = []
        if missing:
            parts.append("it lacks " + ", ".join(missing[:4]) + (" ..." if len(missing) > 4 else ""))
        if extra:
            parts.append("it has " + ", ".join(extra[:4]) + (" ..." if len(extra) > 4 else "")
                         + " which the reference does not")
        raise StructureError(f"{what}'s parameters are not named as the reference's: "
                         + "; ".join(parts) + " (weights are loaded by name, so the names matter)")
    for k, v in want.items():
        if tuple(have[k].shape) != tuple(v.shape):
            raise StructureError(f"{what}'s parameter {k} has shape {tuple(have[k].shape)}, "
                             f"the reference's {tuple(v.shape)}")
    _check_sharing(learner, reference, what)
    learner.load_state_dict(want, strict=False)


def tapped(module: nn.Module, taps: Sequence[tuple[str, str, bool]],
           call: Callable[[], Any], last: str = "output") -> dict[str, Any]:
    """Run `call()` and collect intermediate results with forward hooks.

    Args:
        module: the module whose submodules are tapped.
        taps: `(stage, submodule path, read the input instead of the output)`; a path the
            module does not have is skipped.
        call: runs the module.
        last: the key of `call()`'s result.

    Returns:
        The stages in the order of `taps` (the first call of each submodule), then `last`.
    """
    seen: dict[str, Any] = {}
    handles = []
    for stage, path, use_input in taps:
        try:
            sub = module.get_submodule(path)
        except AttributeError:
            continue

        def hook(_: nn.Module, args: tuple[Any, ...], result: Any, stage: str = stage,
                 use_input: bool = use_input) -> None:
            if stage not in seen:
                seen[stage] = args[0] if use_input and args else result

        handles.append(sub.register_forward_hook(hook))
    try:
        result = call()
    finally:
        for handle in handles:
            handle.remove()
    out = {stage: seen[stage] for stage, _, _ in taps if stage in seen}
    out[last] = result
    return out


class FixedDropout(nn.Module):
    """A dropout that is the same on every call: it zeroes the last entry of each row and doubles
    the others, so a check can see where dropout was applied. Its `p`, 0.5, is the rate
    whose scaling (1 / (1 - p) = 2) it applies, for code that reads `dropout.p`."""

    p = 0.5

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x * 2
        y[..., -1] = 0
        return y


def fix_dropout(module: nn.Module, train: bool) -> nn.Module:
    """Put `module` in training or eval mode; in training mode replace every `nn.Dropout` in it
    by a [`FixedDropout`][vanilla_transformer.practice._inputs.FixedDropout], so that the
    learner's module and the reference drop the same entries wherever dropout is applied."""
    if train:
        for name, child in list(module.named_modules()):
            if isinstance(child, nn.Dropout) and name:
                parent, _, attribute = name.rpartition(".")
                setattr(module.get_submodule(parent) if parent else module, attribute,
                        FixedDropout())
    return module.train(train)
