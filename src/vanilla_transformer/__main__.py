"""`python -m vanilla_transformer ...` runs the command line of
[`cli`][vanilla_transformer.cli] (the same as the `vanilla-transformer` command)."""

from .cli import main

if __name__ == "__main__":
    raise SystemExit(main())
