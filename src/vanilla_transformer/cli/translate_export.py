"""`translate export`: a trained run as ONNX graphs (`interop.onnx`) or a CTranslate2 model
(`interop.ctranslate2`), with its tokenizer, in a folder of its own.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..pretrained import resolve_run
from .outputs import OVERWRITE_HELP, check_folder_outputs, make_folder
from .translate_use import RUN_HELP

__all__ = ["EXPORT_FORMATS", "add_export_arguments", "run_export"]


def add_export_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", metavar="RUN", help=RUN_HELP)
    parser.add_argument("--out", required=True, metavar="DIR",
                        help="the folder to write (not a run folder)")
    parser.add_argument("--checkpoint", choices=("averaged", "last"), default="averaged",
                        help="the averaged final model or the last checkpoint "
                             "(default averaged)")
    parser.add_argument("--max-len", type=int, default=None,
                        help="longest sequence the graphs accept: trims the positional "
                             "table (default: the model's)")
    parser.add_argument("--format", choices=EXPORT_FORMATS, default="onnx",
                        help="onnx: encoder.onnx and a one-step decoder.onnx; ctranslate2: a "
                             "CTranslate2 model folder (default %(default)s)")
    parser.add_argument("--quantization", choices=("int8", "int8_float32", "int16", "float16"),
                        default=None, metavar="TYPE",
                        help="--format ctranslate2 only: store the weights as int8, int8_float32, "
                             "int16 or float16 (default: float32, as trained)")
    parser.add_argument("--overwrite", action="store_true", help=OVERWRITE_HELP)


EXPORT_FORMATS = ("onnx", "ctranslate2")
"""The formats of `translate export --format`; onnx, the first, is the default."""

_EXPORT_FILES = {"onnx": ["encoder.onnx", "decoder.onnx"],
                 "ctranslate2": ["model.bin", "config.json", "shared_vocabulary.json"]}


def run_export(args: argparse.Namespace) -> int:
    from ..training.checkpoints import TOKENIZER_FILE
    from ..training.run_folder import is_run_folder
    from .options import require_modules

    out, run = Path(args.out), resolve_run(args.run)
    if is_run_folder(out) or (out.resolve() == run.resolve()):
        raise ValueError(f"--out {args.out!r} is a run folder; export writes its own "
                         f"{TOKENIZER_FILE} and would replace the run's: choose another folder")
    if args.max_len is not None and args.max_len <= 0:
        raise ValueError(f"--max-len must be positive, got {args.max_len}")
    if args.quantization is not None and args.format != "ctranslate2":
        raise ValueError(f"--quantization {args.quantization} needs --format ctranslate2")
    require_modules([args.format])  # before anything is written
    folder = check_folder_outputs(args.out, [*_EXPORT_FILES[args.format], TOKENIZER_FILE],
                                   args.overwrite)
    from ..training.run_folder import load_translator

    model, tokenizer = load_translator(args.run, args.checkpoint)
    if args.max_len is not None:
        from ..interop.onnx import trim_positions

        model = trim_positions(model, args.max_len)
    created = not folder.exists()
    try:
        if args.format == "ctranslate2":
            from ..interop.ctranslate2 import export_ctranslate2

            paths = export_ctranslate2(model, tokenizer, make_folder(folder),
                                       quantization=args.quantization)
        else:
            from ..interop.onnx import export_onnx

            paths = export_onnx(model, make_folder(folder), attention_weights=True)
    except BaseException:
        if created and folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()  # a refused model leaves no empty folder behind
        raise
    paths["tokenizer"] = tokenizer.save(folder / TOKENIZER_FILE)
    for name, path in paths.items():
        print(f"wrote {path}: {Path(path).stat().st_size:,} bytes ({name})")
    return 0
