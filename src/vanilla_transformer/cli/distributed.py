"""The `torchrun` entry point: train the copy task with `DistributedDataParallel`.

```console
torchrun --standalone --nproc_per_node=2 -m vanilla_transformer.cli.distributed --steps 100
```

It takes the options of the `copy-task` subcommand's training (see
[`add_task_arguments`][vanilla_transformer.cli.copy_task.add_task_arguments]), with
`--batch-size` per rank. Explained on the [Training the copy task][training-guide] page.
"""

from __future__ import annotations

import argparse
import os

from ..config import DEFAULT_TIMEOUT
from .copy_task import add_task_arguments, task_config_from_args
from .options import check_threads

__all__ = ['DEFAULT_TIMEOUT', 'main']


def main(argv: list[str] | None = None) -> int:
    """The `torchrun` entry point: `python -m vanilla_transformer.cli.distributed [options]`.

    Every rank trains; rank 0 prints the loss. With `--out DIR` each rank also writes its
    losses and final weights to `DIR/rank<r>.pt`.

    Args:
        argv: the options (default: `sys.argv[1:]`); see `--help`.

    Returns:
        The exit status, `0`.

    Raises:
        RuntimeError: if the environment does not describe a distributed job (no `torchrun`).
        SystemExit: with status 2 and one line on stderr for a bad option, before any rank
            joins the process group.

    Examples:
        ```console
        torchrun --standalone --nproc_per_node=2 -m vanilla_transformer.cli.distributed --steps 100
        ```
    """
    parser = argparse.ArgumentParser(
        prog="torchrun --standalone --nproc_per_node=2 -m vanilla_transformer.cli.distributed",
        description="Train the copy task with DistributedDataParallel.")
    add_task_arguments(parser)
    parser.add_argument("--backend", choices=("gloo", "nccl"), default=None,
                        help="process-group backend (default: nccl with CUDA, else gloo)")
    parser.add_argument("--out", metavar="DIR", help="write each rank's result to DIR/rank<r>.pt")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                        help="how long a rank waits for the others before the job fails "
                        "(default %(default)s; PyTorch's own is 1800)")
    args = parser.parse_args(argv)
    import torch

    from ..training.checkpoints import save_rank_result
    from ..training.copy_task import train_distributed
    from ..training.ranks import check_fits_memory, check_timeout

    try:
        check_threads(args.threads)
        config = task_config_from_args(args)
        if not 0 < args.timeout <= 10**9:  # NaN and infinity included
            raise ValueError(f"--timeout must be a positive, finite number of seconds, got "
                             f"{args.timeout}")
        check_timeout(args.timeout)
        check_fits_memory(config.model, torch.device("cpu"))
        if args.out:
            os.makedirs(args.out, exist_ok=True)
    except (ValueError, TypeError, OSError) as error:  # before joining the group: one line
        parser.exit(2, f"{parser.prog}: error: {' '.join(str(error).split())}\n")
    torch.set_num_threads(args.threads)
    run = train_distributed(config, backend=args.backend, progress=not args.no_progress,
                            timeout=args.timeout)
    if args.out:
        save_rank_result(args.out, run.rank, losses=run.losses,
                         state_dict=run.model.state_dict(), train_state=vars(run.train_state))
    if run.rank == 0:
        print(f"{run.world_size} ranks ({run.backend}), {config.batch_size} sequences each; "
              f"final loss: {run.losses[-1]:.6f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
