"""`python -m vanilla_transformer.cli ...`: the `vanilla-transformer` command."""

from . import main

if __name__ == "__main__":
    raise SystemExit(main())
