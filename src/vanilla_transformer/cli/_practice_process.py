"""`practice check` runs the learner's code in a child process, so that a check always ends.

The parent starts `python -c ...` with the step, the file and a time limit, and reads back what
the learner's code printed (capped), a result file the child writes when the check finishes,
and the stack `faulthandler` dumps when the limit passes or the child crashes. Only a result
file that says "passed" makes a pass: `exit()`, `sys.exit`, `os._exit`, a crash and the time
limit are failures, each said in words, naming the learner's call where it is known.

The parent imports no PyTorch; the child imports the package from the same folder as the parent.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

__all__ = ["OUTPUT_LINES", "OUTPUT_CHARS", "Outcome", "run_child", "child_main"]

OUTPUT_LINES = 40
"""At most this many lines of what the learner's code prints are passed through."""
OUTPUT_CHARS = 4000
"""And at most this many characters."""
_WIDTH = 78
_GRACE = 20.0  # seconds after the limit before the parent kills a child that did not stop

_CHILD = """\
import faulthandler, sys
dump = open(sys.argv[1], "w")
faulthandler.dump_traceback_later(float(sys.argv[2]), exit=True, file=dump)
faulthandler.enable(file=dump)
sys.path.insert(0, sys.argv[3])
from vanilla_transformer.cli._practice_process import child_main
child_main(sys.argv[4:])
"""


@dataclass
class Outcome:
    """What a checked child process came to.

    Attributes:
        code: the exit status `practice check` returns: 0 passed, 1 failed, 2 not checked.
        message: what to print after the learner's output.
        printed: what the learner's code printed, capped.
        error: whether `message` goes to standard error (a file that does not load).
    """

    code: int
    message: str
    printed: str = ""
    error: bool = False


class _Capped:
    """Reads a pipe to its end, keeping the first lines and counting the rest."""

    def __init__(self, pipe: IO[bytes]) -> None:
        self.kept = bytearray()
        self.dropped_lines = 0
        self.dropped = False
        self._thread = threading.Thread(target=self._read, args=(pipe,), daemon=True)
        self._thread.start()

    def _read(self, pipe: IO[bytes]) -> None:
        while chunk := pipe.read1(65536) if hasattr(pipe, "read1") else pipe.read(65536):
            room = OUTPUT_CHARS - len(self.kept)
            lines_left = OUTPUT_LINES - self.kept.count(b"\n")
            if room > 0 and lines_left > 0:
                take = chunk[:room]
                cut = _nth_newline(take, lines_left)
                take = take[:cut]
                self.kept += take
                chunk = chunk[len(take):]
            if chunk:
                self.dropped = True
                self.dropped_lines += chunk.count(b"\n")

    def text(self) -> str:
        self._thread.join(timeout=5)
        text = self.kept.decode("utf-8", errors="replace")
        if self.dropped:
            text = text.rstrip("\n") + (f"\n... (the rest of your output, {self.dropped_lines} "
                                        f"more lines, left out: the first {OUTPUT_LINES} lines "
                                        f"or {OUTPUT_CHARS} characters are shown)\n")
        return text


def _nth_newline(data: bytes, n: int) -> int:
    """The length of the first `n` lines of `data` (all of it if it has fewer)."""
    at = -1
    for _ in range(n):
        at = data.find(b"\n", at + 1)
        if at < 0:
            return len(data)
    return at + 1


def run_child(step: str, file: str, *, seed: int, timeout: float,
              folder: str | None = None) -> Outcome:
    """Check `step` of `file` in a child process that is stopped after `timeout` seconds.

    Args:
        step: the step's name.
        file: the learner's `.py` file.
        seed: makes the inputs.
        timeout: seconds the child may run, its start included.
        folder: for the translator step, the trained weights (`None`: the default).

    Returns:
        The `Outcome`.
    """
    with tempfile.TemporaryDirectory(prefix="practice-") as scratch:
        dump, result = Path(scratch) / "stack.txt", Path(scratch) / "result.json"
        package_root = str(Path(__file__).resolve().parents[2])
        argv = [sys.executable, "-c", _CHILD, str(dump), str(timeout), package_root,
                step, file, str(seed), str(result), folder or ""]
        child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT)
        assert child.stdout is not None
        output = _Capped(child.stdout)
        killed = False
        try:
            child.wait(timeout + _GRACE)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
            killed = True
        printed = output.text()
        stack = dump.read_text(errors="replace") if dump.is_file() else ""
        if result.is_file() and not killed:
            data = json.loads(result.read_text(encoding="utf-8"))
            return Outcome(int(data["code"]), str(data["message"]), printed,
                           bool(data.get("error", False)))
    message = _ended(step, file, child.returncode, stack, timeout, killed)
    return Outcome(1, textwrap.fill(message, _WIDTH, break_on_hyphens=False), printed)


def _ended(step: str, file: str, status: int, stack: str, timeout: float, killed: bool) -> str:
    """The message for a child that ended without a result."""
    frames = _dumped_learner_frames(stack, file)
    where = _where(frames)
    if killed or stack.startswith("Timeout"):
        text = (f"{step}: FAILED: the check did not finish within {timeout:g} seconds, so it "
                "was stopped.")
        text += (f" The call that did not return: {where}." if where else
                 " Your code was still running (no line of your folder was on the stack).")
        return text + (" If your code is only slow, give it longer with --timeout SECONDS; if "
                       "it loops forever, look for a loop whose condition never changes.")
    if status < 0:
        name = signal.Signals(-status).name if -status in signal.valid_signals() else str(-status)
        text = f"{step}: FAILED: the check's process crashed ({name})"
        return text + (f" in {where}." if where else ".")
    return (f"{step}: FAILED: your code ended the check's process (exit status {status}) "
            "before the check finished, with os._exit() or a crash of a library it calls. "
            "A step must return its result: remove the call that ends the process.")


_FRAME = re.compile(r'^\s*File "(?P<file>.*)", line (?P<line>\d+) in (?P<name>.*)$')


def _dumped_frames(stack: str) -> list[list[tuple[str, int, str]]]:
    """`(file, line, function)` of each thread in a faulthandler dump, outermost first."""
    threads: list[list[tuple[str, int, str]]] = []
    for line in stack.splitlines():
        if line.startswith(("Thread ", "Current thread ")):
            threads.append([])
        match = _FRAME.match(line)
        if match and threads:
            threads[-1].insert(0, (match["file"], int(match["line"]), match["name"].strip()))
    return threads


def _dumped_learner_frames(stack: str, file: str) -> list[tuple[str, int, str]]:
    """The learner's frames of the first thread that runs the learner's code."""
    for frames in _dumped_frames(stack):
        mine = _learner_frames(frames, file)
        if mine:
            return mine
    return []


def _learner_frames(frames: list[tuple[str, int, str]], file: str) -> list[tuple[str, int, str]]:
    """The frames in the learner's folder, outermost first."""
    folder = Path(file).resolve().parent
    mine = []
    for path, line, name in frames:
        try:
            inside = Path(path).resolve().parent == folder
        except (OSError, ValueError):
            inside = False
        if inside:
            mine.append((path, line, name))
    return mine


def _where(frames: list[tuple[str, int, str]]) -> str:
    """`"attention (attention.py, line 4: while True:)"`, with the innermost line if it is
    in another function."""
    if not frames:
        return ""
    texts = []
    for path, line, name in (frames[0], frames[-1])[: 1 if len(frames) == 1 else 2]:
        place = f"{Path(path).name}, line {line}{_source(path, line)}"
        texts.append(f"{Path(path).name} as it loads (line {line}{_source(path, line)})"
                     if name == "<module>"
                     else f"{name} ({place})")
    return ", then ".join(texts)


def _source(path: str, line: int) -> str:
    try:
        source = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()[line - 1]
    except (OSError, IndexError):
        return ""
    source = " ".join(source.split())
    return f": {source[:60]}" if source else ""


def child_main(argv: list[str]) -> None:
    """The child's side: load the file, run the check, write the result file.

    Args:
        argv: step, file, seed, result file, trained weights' folder (or "").
    """
    step, file, seed, result, folder = argv
    try:
        data = _check(step, file, int(seed), folder or None)
    except SystemExit as stop:
        frames = _learner_frames(_traceback_frames(stop), file)
        where = _where(frames) or "your code"
        data = {"code": 1, "message": (
            f"{step}: FAILED: {where} called exit() or sys.exit({_status(stop.code)}), which "
            "ends the check before it can finish. A step must return its result: remove the "
            "call.")}
    except BaseException as error:  # noqa: BLE001 - the child reports everything it can
        frames = _learner_frames(_traceback_frames(error), file)
        text = " ".join(traceback.format_exception_only(type(error), error)[-1].split())
        where = f" in {_where(frames)}" if frames else " (raised by the check, not by your code)"
        data = {"code": 2 if not frames else 1, "error": not frames,
                "message": f"{step}: not checked: {text}{where}."}
    if data["code"] != 0 and not data.get("error") and "\n" not in data["message"]:
        data["message"] = textwrap.fill(data["message"], _WIDTH, break_on_hyphens=False)
    sys.stdout.flush()
    sys.stderr.flush()
    Path(result + ".part").write_text(json.dumps(data), encoding="utf-8")
    os.replace(result + ".part", result)


def _status(code: object) -> str:
    return "" if code is None else repr(code)


def _traceback_frames(error: BaseException) -> list[tuple[str, int, str]]:
    return [(f.filename, f.lineno or 0, f.name) for f in traceback.extract_tb(error.__traceback__)]


def _check(step: str, file: str, seed: int, folder: str | None) -> dict[str, Any]:
    from ..practice import OBJECTS, check
    from ..practice._starters import LoadError, load_file

    try:
        module = load_file(file)
    except LoadError as error:
        return {"code": 2, "message": str(error), "error": True}
    if step == "translator":
        implementation: Any = module
    else:
        name = OBJECTS[step]
        if not hasattr(module, name):
            return {"code": 2, "error": True,
                    "message": f"{file} has no {name}: the {step} step checks the function "
                               f"or class named {name}"}
        implementation = getattr(module, name)
    result = check(step, implementation, seed=seed, quiet=True, folder=folder)
    return {"code": 0 if result.passed else 1, "message": result.message}
