"""The checking engine: run a learner's step on many inputs, compare it with the reference, and
say precisely what differs.

A step is a [`Step`][vanilla_transformer.practice._core.Step]: it makes seeded inputs
([`Case`][vanilla_transformer.practice._core.Case]s), runs the reference and the learner's
implementation on each, and returns their outputs stage by stage (for attention: the weights,
then the output). The engine sorts the inputs smallest first, so the input a failure message
shows is the smallest one that shows the difference, and it compares each failing output with
the step's classic mistakes, so a known mistake is named with its fix.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch

from ._attribution import error_sentence

__all__ = ["Outputs", "Case", "Mistake", "Step", "CheckResult", "tensor_difference", "run_step"]

Outputs = dict[str, Any]
"""A step's outputs, stage by stage in the order they are computed; the last is the result."""

WIDTH = 78
"""Messages are wrapped to this width."""


@dataclass
class Case:
    """One input of a step.

    Attributes:
        description: the input in words and shapes, as a failure message shows it.
        size: how big the input is; the smallest failing input is the one reported.
        data: what the step needs to run the reference and the learner (tensors, modules).
    """

    description: str
    size: int
    data: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Mistake:
    """A classic mistake: what a learner's code gives when it makes it, and how to fix it.

    Attributes:
        name: a short name, as the message prints it.
        fix: how to fix it, in one or two sentences.
        outputs: the outputs the mistaken code gives on a case (the stages it knows).
    """

    name: str
    fix: str
    outputs: Callable[[Case], Outputs]


class Step:
    """A step of the path: what the learner writes, how it is run and what it is compared with.

    Subclasses set the class attributes and implement `cases`, `expected` and `run`.

    Attributes:
        name: the step's name, as `check` takes it.
        obj: the name of the function or class the learner writes (and the CLI looks up).
        kind: `"function"`, `"class"` or `"module"`.
        summary: one line on what it computes.
        stages: a description of each stage, by key.
        mistakes: the classic mistakes this step recognises.
        tolerance: `(rtol, atol)` for every float comparison, or `None` for the dtype's own
            (the positional table is float32 whatever the input's dtype, so its step uses
            float32's).
        optional: stages the learner's code may lack (not a module that must be called).
    """

    name = ""
    obj = ""
    kind = "function"
    summary = ""
    stages: ClassVar[dict[str, str]] = {}
    mistakes: tuple[Mistake, ...] = ()
    tolerance: tuple[float, float] | None = None
    optional: frozenset[str] = frozenset()

    def cases(self, seed: int) -> list[Case]:
        """The inputs, made from `seed` (every case has its own reference weights)."""
        raise NotImplementedError

    def expected(self, case: Case) -> Outputs:
        """The reference's outputs on `case`."""
        raise NotImplementedError

    def run(self, implementation: Any, case: Case) -> Outputs:
        """The learner's outputs on `case` (the stages it exposes, and always the last)."""
        raise NotImplementedError

    def prepare(self, implementation: Any) -> str | None:
        """A message if `implementation` is not the kind of object this step needs."""
        if self.kind == "class" and not isinstance(implementation, type):
            return (f"{self.name} takes the class {self.obj} itself (not an instance or a "
                    f"function), got {_what(implementation)}")
        if self.kind == "function" and (isinstance(implementation, type)
                                        or not callable(implementation)):
            return f"{self.name} takes the function {self.obj}, got {_what(implementation)}"
        return None


def _what(value: object) -> str:
    name = getattr(value, "__name__", None)
    return f"{type(value).__name__} {name}" if name else type(value).__name__


@dataclass
class CheckResult:
    """What [`check`][vanilla_transformer.practice.check] found.

    Attributes:
        step: the step checked.
        passed: whether every input gave the reference's result.
        message: what `check` printed.
        inputs: how many inputs were tried.
        failed: how many of them gave a different result (or raised).
        stage: the first stage that differs on the smallest failing input, if any.
        mistake: the name of the classic mistake recognised, if any.
        case: the smallest failing input's data (tensors and modules), to run again by hand.
    """

    step: str
    passed: bool
    message: str
    inputs: int = 0
    failed: int = 0
    stage: str | None = None
    mistake: str | None = None
    case: dict[str, Any] | None = None

    def __str__(self) -> str:
        return self.message


def _fmt(x: float) -> str:
    if x != x:  # NaN
        return "nan"
    if x in (float("inf"), float("-inf")):
        return "inf" if x > 0 else "-inf"
    if x == int(x) and abs(x) < 1e15:
        return str(int(x))
    return f"{x:.4g}"


def _index(flat: int, shape: Sequence[int]) -> list[int]:
    index = []
    for size in reversed(shape):
        index.append(flat % size if size else 0)
        flat = flat // size if size else 0
    return index[::-1]


def _tolerance(dtype: torch.dtype) -> tuple[float, float]:
    if dtype == torch.float64:
        return 1e-7, 1e-9
    if dtype in (torch.float16, torch.bfloat16):
        return 1e-2, 1e-3
    return 1e-4, 2e-5


def tensor_difference(expected: Any, got: Any, name: str = "output",
                      tolerance: tuple[float, float] | None = None) -> str | None:
    """How `got` differs from `expected`, in one sentence, or `None` if they agree.

    Floats agree within a tolerance of their dtype (float32: relative 1e-4, absolute 2e-5);
    NaN agrees only with NaN. Booleans and integers must be equal. The sentence names the first
    differing value by its index, then how many values differ.

    Args:
        expected: the reference's tensor (or a Python value).
        got: the learner's.
        name: what to call the tensor.
        tolerance: `(rtol, atol)`, or `None` for the dtype's.

    Returns:
        `None`, or a sentence such as
        `"weights[0, 1, 0]: expected 0.5, got 0.3775 (2 of 4 values differ, by up to 0.245)"`.

    Example:
        >>> tensor_difference(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.5]), "y")
        'y[1]: expected 2, got 2.5 (1 of 2 values differ, by up to 0.5)'
    """
    if not isinstance(expected, torch.Tensor):
        if isinstance(got, torch.Tensor) and got.numel() == 1:
            got = got.item()
        if expected == got:
            return None
        return f"{name}: expected {expected!r}, got {got!r}"
    if not isinstance(got, torch.Tensor):
        return (f"{name}: expected a tensor of shape {tuple(expected.shape)}, got "
                f"{type(got).__name__} {_short(got)}")
    if got.shape != expected.shape:
        return f"{name}: expected shape {tuple(expected.shape)}, got shape {tuple(got.shape)}"
    exp, out = expected.detach().cpu(), got.detach().cpu()
    if exp.dtype == torch.bool or not exp.is_floating_point():
        if exp.dtype == torch.bool:
            out = out != 0
        elif out.is_floating_point():
            return f"{name}: expected integers ({exp.dtype}), got {out.dtype}"
        differ = exp != out
    else:
        if not out.is_floating_point():
            return f"{name}: expected floats ({exp.dtype}), got {out.dtype}"
        rtol, atol = tolerance or _tolerance(exp.dtype)
        e64, o64 = exp.double(), out.double()
        differ = ~torch.isclose(o64, e64, rtol=rtol, atol=atol, equal_nan=True)
    count = int(differ.sum())
    if count == 0:
        return None
    flat = int(differ.reshape(-1).nonzero()[0])
    where = _index(flat, tuple(exp.shape))
    e, o = exp.reshape(-1)[flat].item(), out.reshape(-1)[flat].item()
    at = f"{name}[{', '.join(map(str, where))}]" if where else name
    text = f"{at}: expected {_fmt(float(e))}, got {_fmt(float(o))}"
    if exp.numel() > 1:
        text += f" ({count} of {exp.numel()} values differ"
        if exp.is_floating_point():
            gap = (out.double() - exp.double()).abs()[differ]
            finite = gap[torch.isfinite(gap)]
            if finite.numel():
                text += f", by up to {_fmt(float(finite.max()))}"
        text += ")"
    return text


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


NEVER_CALLED = "never called"
"""The text of a stage that the learner's code did not reach, while a later stage differs."""


def _first_difference(expected: Outputs, got: Outputs,
                      tolerance: tuple[float, float] | None = None,
                      optional: frozenset[str] = frozenset()) -> tuple[str, str] | None:
    """The first stage of `expected` that differs in `got`, with the sentence.

    A stage missing from `got` (a module never called) is skipped while the later stages
    agree; if a later one differs, the missing stage is the one reported, as never called,
    unless it is `optional` (a stage the learner's code may legitimately lack)."""
    missing = None
    for stage, value in expected.items():
        if stage not in got:
            if missing is None and stage not in optional:
                missing = stage
            continue
        text = tensor_difference(value, got[stage], stage, tolerance)
        if text is not None:
            if missing is not None:
                return missing, f"{NEVER_CALLED}; later, {text}"
            return stage, text
    return None


@dataclass
class _Failure:
    case: Case
    expected: Outputs
    got: Outputs | None = None
    error: BaseException | None = None
    difference: tuple[str, str] | None = None


def _matches(mistake: Mistake, failures: Sequence[_Failure], passes: Sequence[_Failure],
             tolerance: tuple[float, float] | None) -> bool:
    """Whether the mistake gives the learner's outputs on the first failing inputs, and on the
    first inputs where the learner was right (so "always post-norm" is not taken for "the two
    arrangements swapped")."""
    failing = [f for f in failures if f.got is not None][:4]
    if not failing:
        return False
    for failure in [*failing, *passes[:3]]:
        try:
            outputs = mistake.outputs(failure.case)
        except Exception:  # noqa: BLE001 - a mistake that cannot run on this input is not it
            return False
        shared = {k: v for k, v in outputs.items() if k in (failure.got or {})}
        if not shared or _first_difference(shared, failure.got or {}, tolerance) is not None:
            return False
    return True


def _paragraph(label: str, text: str) -> str:
    return textwrap.fill(f"{label}{text}", WIDTH, initial_indent="  ", subsequent_indent="    ",
                         break_on_hyphens=False)


def run_step(step: Step, implementation: Any, seed: int = 0) -> CheckResult:
    """Run `implementation` on every input of `step` and describe the result.

    Args:
        step: the step.
        implementation: the learner's function, class or module.
        seed: makes the inputs and the reference weights.

    Returns:
        The [`CheckResult`][vanilla_transformer.practice._core.CheckResult]; nothing is printed.
    """
    problem = step.prepare(implementation)
    if problem is not None:
        message = textwrap.fill(f"{step.name}: not checked. {problem}.", WIDTH)
        return CheckResult(step.name, False, message)
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(seed)
        cases = sorted(step.cases(seed), key=lambda c: c.size)
        failures: list[_Failure] = []
        passes: list[_Failure] = []
        for case in cases:
            expected = step.expected(case)
            try:
                got = step.run(implementation, case)
            except NotImplementedError:
                message = textwrap.fill(f"{step.name}: not written yet: {step.obj} (or something "
                                        "it calls) still raises NotImplementedError. Replace that "
                                        "line with your code.", WIDTH)
                return CheckResult(step.name, False, message, len(cases), len(cases))
            except Exception as error:  # noqa: BLE001 - the learner's code may raise anything
                failures.append(_Failure(case, expected, error=error))
                continue
            difference = _first_difference(expected, got, step.tolerance, step.optional)
            if difference is not None:
                failures.append(_Failure(case, expected, got, difference=difference))
            elif len(passes) < 3:
                passes.append(_Failure(case, expected, got))
        if not failures:
            message = f"{step.name}: passed, on all {len(cases)} inputs."
            return CheckResult(step.name, True, message, len(cases), 0)
        mistake = next((m for m in step.mistakes if _matches(m, failures, passes, step.tolerance)), None)
    return _failed(step, cases, failures, mistake, implementation)


def _failed(step: Step, cases: Sequence[Case], failures: Sequence[_Failure],
            mistake: Mistake | None, implementation: Any) -> CheckResult:
    first = failures[0]
    lines = [f"{step.name}: FAILED on {len(failures)} of {len(cases)} inputs.",
             _paragraph("Smallest input that shows it: ", first.case.description + ".")]
    stage = None
    if first.error is not None:
        lines.append(_paragraph(*error_sentence(first.error, implementation, step.obj)))
    elif first.difference is not None:
        stage, text = first.difference
        where = step.stages.get(stage)
        named = f"{stage} ({where})" if where else stage
        if text.startswith(NEVER_CALLED):
            lines.append(_paragraph("First stage that differs: ",
                                    f"{named}: your code never called it."))
            text = text.removeprefix(f"{NEVER_CALLED}; later, ")
        elif len(first.expected) > 1:
            lines.append(_paragraph("First stage that differs: ", f"{named}."))
        lines.append(_paragraph("First value that differs: ", text + "."))
    if mistake is not None:
        lines.append(_paragraph("Classic mistake: ", f"{mistake.name}. {mistake.fix}"))
    message = "\n".join(lines)
    return CheckResult(step.name, False, message, len(cases), len(failures), stage,
                       None if mistake is None else mistake.name, first.case.data)
