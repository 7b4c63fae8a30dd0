"""A run folder: which folder a run may write, what a new run clears, and how its settings,
its log and its trained model are read back, trusted only as far as its files agree.

One process writes it at a time (`RunLock`); its files' names and formats are
[`checkpoints`][vanilla_transformer.training.checkpoints]'. Explained on the
[Training a real translator][translator-guide] page.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._io import RunLock, atomic_write, is_temporary, remove_entry
from ..data.tokenizer import load_trained_tokenizer
from ..pretrained import resolve_run
from . import checkpoints as files
from .ranks import RefusalError

if TYPE_CHECKING:
    from ..data.tokenizer import SharedTokenizer
    from ..model.encoder_decoder import EncoderDecoder

# RunLock and remove_entry are _io's, imported here for older code
__all__ = ["RunLock", "is_run_folder", "remove_stale_temporaries", "remove_entry",
           "check_folder", "clear_run", "read_run_config", "metrics_writer", "load_translator"]

_RUN_FILES = (files.MODEL_FILE, files.TOKENIZER_FILE, files.CONFIG_FILE, files.METRICS_FILE,
              files.CHECKPOINTS, files.LOCK_FILE)


def is_run_folder(path: str | os.PathLike[str]) -> bool:
    """Whether `path` is a folder holding any file a training run writes.

    Examples:
        >>> import tempfile, pathlib
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> is_run_folder(folder), (folder / "config.json").write_text("{}") > 0
        (False, True)
        >>> is_run_folder(folder)
        True
    """
    folder = Path(os.fspath(path))
    return folder.is_dir() and any((folder / name).exists() for name in _RUN_FILES)


def _temporary(name: str) -> bool:
    """Whether a name is a writer's temporary, or the ids a replacing run staged."""
    return is_temporary(name) or name == files.STAGED_IDS


def remove_stale_temporaries(path: str | os.PathLike[str]) -> list[Path]:
    """Remove the temporary files and folders an interrupted write left in a run folder.

    Call it only while holding the folder's `RunLock`: another writer's temporary is not
    stale.

    Examples:
        >>> import tempfile, pathlib
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (folder / ".model.pt.x1y2.tmp").write_bytes(b"half a file")
        >>> [p.name for p in remove_stale_temporaries(folder)]
        ['.model.pt.x1y2.tmp']
    """
    folder = Path(os.fspath(path))
    removed = []
    for place in (folder, folder / files.CHECKPOINTS):
        if place.is_dir():
            for tmp in sorted(p for p in place.iterdir() if _temporary(p.name)):
                remove_entry(tmp)
                removed.append(tmp)
    return removed


def check_folder(path: Path, *, resume: bool, overwrite: bool) -> None:
    """Refuse, before anything is written, a folder that a new run would clobber.

    Raises:
        ValueError: if `path` is a file, is locked by a live process, is not a run folder
            while `resume`, or holds files while neither `resume` nor `overwrite`.
    """
    if path.exists() and not path.is_dir():
        raise ValueError(f"cannot create output folder {str(path)!r}: a file of that name "
                         "exists")
    lock = RunLock(path)
    holder = lock.holder() if path.is_dir() else None
    if holder is not None and holder != os.getpid():
        lock.acquire()  # raises, naming the holder, if it is still alive
        lock.release()
    if resume:
        if not is_run_folder(path):
            raise ValueError(f"cannot resume: {str(path)!r} is not a run folder (no "
                             f"{files.CONFIG_FILE}, {files.TOKENIZER_FILE} or {files.CHECKPOINTS}/)")
        return
    leftovers = [p.name for p in path.iterdir() if p.name != files.LOCK_FILE
                 and not _temporary(p.name)] if path.is_dir() else []
    if leftovers and not overwrite:
        raise RefusalError(f"output folder {str(path)!r} is not empty (it holds "
                           f"{', '.join(sorted(leftovers)[:4])}); continue its run with resume=True, "
                           "replace it with overwrite=True, or choose another folder",
                           "resume", "overwrite")


def clear_run(folder: Path) -> None:
    """Remove the files of a previous run (for `overwrite`), leaving other files alone."""
    for name in (files.MODEL_FILE, files.TOKENIZER_FILE, files.CONFIG_FILE, files.METRICS_FILE):
        (folder / name).unlink(missing_ok=True)
    for name in (files.CHECKPOINTS, files.IDS_FOLDER, files.TENSORBOARD_FOLDER):
        if (folder / name).is_dir():
            shutil.rmtree(folder / name)


_SHAPE = {"training": dict, "model": dict, "options": dict, "data": dict}


def read_run_config(folder: Path) -> dict[str, Any]:
    """The settings in `config.json`: one `ValueError` naming the file for a wrong shape."""
    path = folder / files.CONFIG_FILE
    if not path.is_file():
        raise RefusalError(f"cannot resume: {str(folder)!r} lacks {files.CONFIG_FILE}, which holds the "
                           "run's settings; start again with overwrite=True", "overwrite")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"cannot resume: {str(path)!r} is not readable JSON ({error})") from None
    if not isinstance(data, dict) or not isinstance(data.get("training"), dict):
        raise ValueError(f"cannot resume: {str(path)!r} holds no 'training' settings")
    for key, kind in _SHAPE.items():
        if key in data and not isinstance(data[key], kind):
            raise ValueError(f"cannot resume: {str(path)!r} holds a {type(data[key]).__name__} "
                             f"as its {key!r}, not the {kind.__name__} a run writes")
    if not isinstance(data.get("preset"), (str, type(None))):
        raise ValueError(f"cannot resume: {str(path)!r} holds a preset that is not a name")
    return data


def metrics_writer(path: Path, keep_up_to: int | None) -> Callable[[dict[str, Any]], None]:
    """Append JSON lines to `path`; on resume first drop the lines after step `keep_up_to`."""
    if keep_up_to is None:
        path.unlink(missing_ok=True)
    elif path.is_file():
        kept = []
        for line in path.read_text(encoding="utf-8").split("\n"):
            with contextlib.suppress(ValueError, AttributeError, TypeError):
                if json.loads(line).get("step", 0) <= keep_up_to:
                    kept.append(line + "\n")
        text = "".join(kept).encode("utf-8")
        atomic_write(path, lambda f: f.write(text))

    def write(entry: dict[str, Any]) -> None:
        with files.naming(path), open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")

    return write


def _same_tokenizer(a: str, b: str) -> bool:
    try:
        return bool(json.loads(a) == json.loads(b))
    except ValueError:
        return a == b


def load_translator(
    run: str | os.PathLike[str], checkpoint: str = "averaged", device: str = "cpu"
) -> tuple[EncoderDecoder, SharedTokenizer]:
    """`(model, tokenizer)` of a run folder, the model in eval mode on `device` (`"cpu"`,
    `"cuda"` or `"auto"`): `model.pt` (`"averaged"`) or the newest checkpoint (`"last"`).

    `run` is a folder, or the name of a translator that ships with the package,
    `"numbers-de"` or `"numbers-fr"` ([`TRANSLATORS`][vanilla_transformer.pretrained.TRANSLATORS]);
    a folder of that name, if one exists, wins.

    Raises:
        ValueError: if `run` is not a trained run folder, or its `tokenizer.json` holds parts
            that training never writes or is not the one `model.pt` holds.
    """
    path = resolve_run(run)
    if checkpoint not in ("averaged", "last"):
        raise ValueError(f"checkpoint must be 'averaged' or 'last', got {checkpoint!r}")
    from .ranks import resolve_device

    target = resolve_device(device)
    if not path.is_dir():
        raise ValueError(f"{str(path)!r} is not a trained model: no such folder")
    if not (path / files.TOKENIZER_FILE).is_file() or not (path / files.MODEL_FILE).is_file():
        raise ValueError(f"{str(path)!r} is not a trained model: it lacks {files.TOKENIZER_FILE} or "
                         f"{files.MODEL_FILE} (a run that has finished training holds both)")
    tokenizer_path, model_path = str(path / files.TOKENIZER_FILE), str(path / files.MODEL_FILE)
    try:
        model, metadata = files.load_checkpoint(path / files.MODEL_FILE)
    except (OSError, ValueError) as error:
        reason = " ".join(str(error).split())
        raise ValueError(f"{model_path!r} is not a model checkpoint ({reason})") from None
    embedded = metadata.get("tokenizer")
    if not isinstance(embedded, str):
        raise ValueError(f"{model_path!r} does not hold the tokenizer it was trained with, so "
                         f"{files.TOKENIZER_FILE} cannot be checked against it")
    tokenizer = load_trained_tokenizer(path / files.TOKENIZER_FILE)
    if not _same_tokenizer(embedded, tokenizer.tokenizer.to_str()):
        raise ValueError(f"{tokenizer_path!r} is not the tokenizer {model_path!r} was trained "
                         "with; restore the run's own tokenizer.json")
    vocab = model.config.src_vocab if model.config is not None else 0
    if tokenizer.vocab_size > vocab:
        raise ValueError(f"{tokenizer_path!r} has {tokenizer.vocab_size} ids but the model "
                         f"only {vocab}")
    if checkpoint == "last":
        paths = files.checkpoint_paths(path)
        if not paths:
            raise ValueError(f"{str(path)!r} has no training checkpoints")
        files.load_model_state(model, files.load_train_state(paths[-1])["model"], str(paths[-1]))
    return model.to(target).eval(), tokenizer
