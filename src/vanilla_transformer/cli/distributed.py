r"""Data-parallel training with `DistributedDataParallel`, launched by `torchrun`.

The paper trained on 8 GPUs (section 5.2). Data parallelism is the simplest way to use several
devices: every process (a *rank*) holds a full copy of the model, takes a different slice of each
batch, and after `backward()` the ranks average their gradients, so every copy makes the same
update. With equal slices, that update is the one a single process would make on the whole batch.

[`train_distributed`][vanilla_transformer.training.distributed.train_distributed] trains the copy task this
way with the unchanged [`run_epoch`][vanilla_transformer.training.loop.run_epoch]: only the model is
wrapped in `DistributedDataParallel`, and the data is sharded by
[`shard_batches`][vanilla_transformer.training.distributed.shard_batches]. The backend is NCCL when CUDA
is available and gloo on CPU. Run it with

```console
torchrun --standalone --nproc_per_node=2 -m vanilla_transformer.cli.distributed --steps 100
```

or, without `torchrun`, in local CPU processes with
[`run_local`][vanilla_transformer.training.distributed.run_local].

Explained on the *Training the copy task* page.
"""

from __future__ import annotations

import argparse
import os

import torch

from ..training.copy_task import CopyTaskConfig
from ..training.distributed import train_distributed

__all__ = ['main']


def main(argv: list[str] | None = None) -> int:
    """The `torchrun` entry point: `python -m vanilla_transformer.cli.distributed [options]`.

    Every rank trains; rank 0 prints the loss. With `--out DIR` each rank also writes its
    losses and final weights to `DIR/rank<r>.pt`.

    Args:
        argv: the options (default: `sys.argv[1:]`); see `--help`.

    Returns:
        The exit status, `0`.

    Examples:
        ```console
        torchrun --standalone --nproc_per_node=2 -m vanilla_transformer.cli.distributed --steps 100
        ```
    """
    d = CopyTaskConfig()
    parser = argparse.ArgumentParser(
        prog="torchrun --standalone --nproc_per_node=2 -m vanilla_transformer.cli.distributed",
        description="Train the copy task with DistributedDataParallel.")
    parser.add_argument("--steps", type=int, default=d.steps, help="optimizer steps")
    parser.add_argument("--batch-size", type=int, default=d.batch_size, help="sequences per rank")
    parser.add_argument("--seed", type=int, default=d.seed)
    parser.add_argument("--N", type=int, default=d.N)
    parser.add_argument("--d-model", type=int, default=d.d_model)
    parser.add_argument("--d-ff", type=int, default=d.d_ff)
    parser.add_argument("--h", type=int, default=d.h)
    parser.add_argument("--dropout", type=float, default=d.dropout)
    parser.add_argument("--warmup", type=int, default=d.warmup)
    parser.add_argument("--factor", type=float, default=d.factor)
    parser.add_argument("--backend", choices=("gloo", "nccl"), default=None)
    parser.add_argument("--threads", type=int, default=1, help="PyTorch threads per rank")
    parser.add_argument("--out", metavar="DIR", help="write each rank's result to DIR/rank<r>.pt")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    config = d.replace(steps=args.steps, batch_size=args.batch_size, seed=args.seed, N=args.N,
                       d_model=args.d_model, d_ff=args.d_ff, h=args.h, dropout=args.dropout,
                       warmup=args.warmup, factor=args.factor)
    run = train_distributed(config, backend=args.backend, progress=not args.no_progress)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        torch.save({"losses": run.losses, "state_dict": run.model.state_dict(),
                    "train_state": vars(run.train_state)},
                   os.path.join(args.out, f"rank{run.rank}.pt"))
    if run.rank == 0:
        print(f"{run.world_size} ranks ({run.backend}), {config.batch_size} sequences each; "
              f"final loss: {run.losses[-1]:.6f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
