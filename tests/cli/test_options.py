"""Model options are generated from ModelConfig: every field, in every command, the same way."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from vanilla_transformer import ModelConfig
from vanilla_transformer.cli import build_parser
from vanilla_transformer.cli.copy_task import add_task_arguments, task_config_from_args
from vanilla_transformer.cli.options import add_config_arguments, config_values
from vanilla_transformer.training import COPY_MODEL, CopyTaskConfig

FIELDS = [f.name for f in dataclasses.fields(ModelConfig)]


def option_dests(parser: argparse.ArgumentParser) -> set[str]:
    return {a.dest for a in parser._actions}


def subparser(name: str) -> argparse.ArgumentParser:
    action = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices[name]


def test_every_field_is_an_option_of_every_command():
    task = argparse.ArgumentParser()
    add_task_arguments(task)
    assert set(FIELDS) <= option_dests(subparser("params"))
    # the copy task sets both vocabularies from --vocab
    assert set(FIELDS) - {"src_vocab", "tgt_vocab"} <= option_dests(subparser("copy-task"))
    assert set(FIELDS) - {"src_vocab", "tgt_vocab"} <= option_dests(task)
    helps = {a.dest: a.help for a in subparser("params")._actions}
    assert all(helps[name] for name in FIELDS)  # taken from ModelConfig's docstring


@pytest.mark.parametrize("argv, expected", [
    ([], {}),
    (["-N", "3", "--d-model", "32", "--dropout", "0.25"], dict(N=3, d_model=32, dropout=0.25)),
    (["--tie-weights", "--no-generator-bias"], dict(tie_weights=True, generator_bias=False)),
    (["--no-tie-weights"], dict(tie_weights=False)),
    (["--post-norm", "--final-norm"], dict(norm_first=False, final_norm=True)),
    (["--no-final-norm", "--layer-norm", "torch"], dict(final_norm=False, layer_norm="torch")),
])
def test_parsed_options_are_the_config_fields_given(argv, expected):
    parser = argparse.ArgumentParser()
    add_config_arguments(parser)
    assert config_values(parser.parse_args(argv)) == expected
    ModelConfig(5, 5, **expected)  # and they are valid values


def test_defaults_fill_every_field_and_types_are_the_fields():
    parser = argparse.ArgumentParser()
    add_config_arguments(parser, ModelConfig(9, 9, N=2, d_model=32, h=4, dropout=0.0))
    values = config_values(parser.parse_args([]))
    # final_norm=None stays "not given"; everything else has its default
    assert ModelConfig(**values) == ModelConfig(9, 9, N=2, d_model=32, h=4, dropout=0.0)
    assert isinstance(config_values(parser.parse_args(["--dropout", "0"]))["dropout"], float)
    with pytest.raises(SystemExit):
        parser.parse_args(["--layer-norm", "rms"])
    with pytest.raises(SystemExit):
        parser.parse_args(["--d-model", "1.5"])


def test_copy_task_options_build_the_copy_task_config():
    parser = argparse.ArgumentParser()
    add_task_arguments(parser)
    assert task_config_from_args(parser.parse_args([])) == CopyTaskConfig()
    config = task_config_from_args(parser.parse_args(
        ["--vocab", "13", "--N", "2", "--post-norm", "--tie-weights", "--steps", "7"]))
    assert config == CopyTaskConfig(
        vocab=13, model=COPY_MODEL.replace(N=2, norm_first=False, tie_weights=True), steps=7)
    assert (config.model.src_vocab, config.model.tgt_vocab) == (13, 13)


@pytest.mark.parametrize("cls, data, known", [
    ("TranslationConfig", {"max_step": 10, "seed": 1}, "'max_steps'"),
    ("CopyTaskConfig", {"step": 5, "d_model": 16}, "'steps'"),
])
def test_from_dict_refuses_unknown_keys(cls, data, known):
    from vanilla_transformer.training import copy_task, translation

    config_class = getattr(translation, cls, None) or getattr(copy_task, cls)
    bad = sorted(set(data) - {f.name for f in dataclasses.fields(config_class)} - {"d_model"})
    with pytest.raises(ValueError, match=rf"unknown {cls} settings \{bad}; expected some "
                                         rf"of \[.*{known}"):
        config_class.from_dict(data)
    good = {k: v for k, v in data.items() if k not in bad}
    # CopyTaskConfig takes the model's keywords (here d_model) in replace(), not in __init__
    expected = (CopyTaskConfig().replace(**good) if config_class is CopyTaskConfig
                else config_class(**good))
    assert config_class.from_dict(good) == expected
    assert config_class.from_dict(config_class().to_dict()) == config_class()


def test_every_config_field_has_help():
    from vanilla_transformer.training.copy_task import CopyTaskConfig
    from vanilla_transformer.training.translation import TranslationConfig

    for config_class in (CopyTaskConfig, TranslationConfig):
        for f in dataclasses.fields(config_class):
            assert f.metadata["help"] and not f.metadata["help"].endswith("."), f.name
