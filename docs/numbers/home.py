"""Numbers of the home page: the size of the trained translator that runs in the page."""

from vanilla_transformer import count_parameters
from vanilla_transformer.training.translation import load_translator


def values() -> dict[str, int]:
    model, _ = load_translator("docs/assets/translator")
    return {"translator_parameters": count_parameters(model).total}
