"""Checkpoints: a round trip, errors, and the files saved by version 0.1.0."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from vanilla_transformer import data_gen, make_model, subsequent_mask
from vanilla_transformer.training import load_checkpoint, save_checkpoint

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
V = 7


def tiny_model(seed: int = 0, vocab: int = V) -> nn.Module:
    torch.manual_seed(seed)
    return make_model(vocab, vocab, N=1, d_model=16, d_ff=32, h=2, dropout=0.0)


# --------------------------------------------------------------------------- checkpoints


def test_checkpoint_round_trip_gives_the_same_outputs(tmp_path):
    model = tiny_model(seed=3).eval()
    path = tmp_path / "m.pt"
    save_checkpoint(path, model, steps=5, note="hello")
    again, meta = load_checkpoint(path)
    assert meta == {"steps": 5, "note": "hello"}
    assert not again.training and again.config == model.config
    b = next(data_gen(V, 3, 1, seq_len=5, seed=0))
    with torch.no_grad():
        torch.testing.assert_close(again(b.src, b.tgt, b.src_mask, b.tgt_mask),
                                   model(b.src, b.tgt, b.src_mask, b.tgt_mask), rtol=0, atol=0)


def test_checkpoint_errors(tmp_path):
    bare = nn.Linear(2, 2)
    with pytest.raises(ValueError, match="config"):
        save_checkpoint(tmp_path / "x.pt", bare)
    torch.save({"weights": torch.zeros(1)}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="not a checkpoint"):
        load_checkpoint(tmp_path / "other.pt")


@pytest.mark.parametrize("name, tied, norm_first", [
    ("checkpoint-0.1.0-prenorm.pt", False, True),
    ("checkpoint-0.1.0-postnorm-tied.pt", True, False),
])
def test_checkpoints_of_version_0_1_0_reproduce_their_outputs(name, tied, norm_first):
    model, meta = load_checkpoint(FIXTURES / name)
    assert not model.training
    assert (model.config.tie_weights, model.config.norm_first) == (tied, norm_first)
    if tied:  # one matrix, shared after loading too
        assert model.generator.proj.weight is model.src_embed[0].lut.weight
    src = meta["src"]
    keep = torch.ones(src.size(0), 1, src.size(1), dtype=torch.bool)
    with torch.no_grad():
        logp = model.generator(model(src, src, keep, subsequent_mask(src.size(1))))
    torch.testing.assert_close(logp, meta["logp"], rtol=0, atol=1e-5)


# --------------------------------------------------------------------------- data safety


def test_a_save_killed_halfway_leaves_the_previous_checkpoint_intact(tmp_path, monkeypatch):
    path = tmp_path / "m.pt"
    save_checkpoint(path, tiny_model(seed=1), steps=1)
    before = path.read_bytes()
    real_save = torch.save

    def dies_halfway(obj, f, *args, **kwargs):
        real_save(obj, f, *args, **kwargs)
        f.seek(f.tell() // 2)
        f.truncate()  # half the bytes are on disk ...
        raise KeyboardInterrupt("killed mid-save")  # ... when the process is stopped

    monkeypatch.setattr(torch, "save", dies_halfway)
    with pytest.raises(KeyboardInterrupt):
        save_checkpoint(path, tiny_model(seed=2), steps=2)
    monkeypatch.undo()
    assert path.read_bytes() == before
    _, meta = load_checkpoint(path)
    assert meta == {"steps": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["m.pt"]  # no temporary file left behind


@pytest.mark.parametrize("value, names", [
    (Path("/data/wmt14"), r"metadata 'data_dir' is a pathlib\.\w*Path"),
    ({"paths": [1, Path("x")]}, r"metadata 'data_dir'\['paths'\]\[1\] is a pathlib"),
    (frozenset({1}), r"metadata 'data_dir' is a builtins\.frozenset"),
    (range(3), r"metadata 'data_dir' is a builtins\.range"),
])
def test_metadata_that_cannot_be_loaded_back_is_refused_before_writing(tmp_path, value, names):
    path = tmp_path / "m.pt"
    with pytest.raises(TypeError, match=names):
        save_checkpoint(path, tiny_model(), data_dir=value)
    assert not path.exists()


def test_plain_metadata_round_trips(tmp_path):
    meta = dict(data_dir="/data", sizes=(1, 2), tags={"a"}, dtype=torch.float16,
                nested={"x": [None, True, 1.5, b"raw", torch.arange(3)]})
    save_checkpoint(tmp_path / "m.pt", tiny_model(), **meta)
    _, again = load_checkpoint(tmp_path / "m.pt")
    assert again.keys() == meta.keys() and again["tags"] == {"a"}
    assert torch.equal(again["nested"]["x"][4], torch.arange(3))


@pytest.mark.parametrize("content, says", [
    (b"hello\n", "not a checkpoint written by save_checkpoint: torch.load failed"),
    (b"", "not a checkpoint written by save_checkpoint"),
])
def test_files_that_are_not_checkpoints_give_one_clear_error(tmp_path, content, says):
    (tmp_path / "bad.pt").write_bytes(content)
    with pytest.raises(ValueError, match=says):
        load_checkpoint(tmp_path / "bad.pt")
    path = tmp_path / "m.pt"
    save_checkpoint(path, tiny_model())
    path.write_bytes(path.read_bytes()[:1000])  # truncated
    with pytest.raises(ValueError, match="not a checkpoint"):
        load_checkpoint(path)
    with pytest.raises(FileNotFoundError):
        load_checkpoint(tmp_path / "missing.pt")


def test_weights_that_do_not_fit_the_config_are_a_value_error(tmp_path):
    path = tmp_path / "m.pt"
    model = tiny_model()
    save_checkpoint(path, model)
    data = torch.load(path, weights_only=True)
    data["config"]["d_ff"] = 64
    torch.save(data, path)
    with pytest.raises(ValueError, match="do not fit the saved configuration"):
        load_checkpoint(path)


def test_a_missing_folder_fails_before_writing(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        save_checkpoint(tmp_path / "missing" / "m.pt", tiny_model())


def test_the_sinusoid_table_is_recomputed_not_saved(tmp_path):
    model = make_model(V, V, N=1, d_model=16, d_ff=32, h=2, max_len=5000)
    save_checkpoint(tmp_path / "m.pt", model)
    saved = torch.load(tmp_path / "m.pt", weights_only=True)["state_dict"]
    assert not any(name.endswith(".pe") for name in saved)
    again, _ = load_checkpoint(tmp_path / "m.pt")
    for name, tensor in model.state_dict().items():  # the table too, recomputed
        assert torch.equal(again.state_dict()[name], tensor), name
    torch.save({"state_dict": model.state_dict()}, tmp_path / "with-table.pt")
    assert (tmp_path / "m.pt").stat().st_size < (tmp_path / "with-table.pt").stat().st_size / 2


def test_a_config_larger_than_its_weights_fails_before_building(tmp_path):
    import time

    save_checkpoint(tmp_path / "m.pt", tiny_model())
    data = torch.load(tmp_path / "m.pt", weights_only=True)
    data["config"]["N"] = 10_000
    torch.save(data, tmp_path / "m.pt")
    start = time.perf_counter()
    with pytest.raises(ValueError, match="N=10000 but the weights hold 1 encoder layers"):
        load_checkpoint(tmp_path / "m.pt")
    assert time.perf_counter() - start < 2


def test_a_checkpoint_with_code_keeps_torchs_warning(tmp_path):
    torch.save({"call": print}, tmp_path / "evil.pt")
    with pytest.raises(ValueError, match="arbitrary code execution"):
        load_checkpoint(tmp_path / "evil.pt")


def test_a_process_result_is_one_tagged_format(tmp_path):
    from vanilla_transformer.training.checkpoints import load_rank_result, save_rank_result

    model = make_model(5, 5, N=1, d_model=16, d_ff=32, h=2)
    path = save_rank_result(tmp_path, 1, losses=[2.0, 1.5], state_dict=model.state_dict(),
                            train_state={"step": 2})
    assert path.name == "rank1.pt"
    back = load_rank_result(tmp_path, 1)
    assert back["losses"] == [2.0, 1.5] and back["train_state"] == {"step": 2}
    assert torch.equal(back["state_dict"]["generator.proj.weight"],
                       model.state_dict()["generator.proj.weight"])
    torch.save({"losses": [1.0]}, tmp_path / "rank0.pt")  # untagged: refused, named
    with pytest.raises(ValueError, match=r"rank0\.pt' is not a process's result"):
        load_rank_result(tmp_path, 0)


def test_a_training_checkpoint_is_named_by_its_step_and_read_back_whole(tmp_path):
    from vanilla_transformer.training.checkpoints import (
        CHECKPOINT_NAME,
        TrainCheckpoint,
        checkpoint_paths,
    )
    from vanilla_transformer.training.ranks import random_state

    model = make_model(5, 5, N=1, d_model=16, d_ff=32, h=2)
    checkpoint = TrainCheckpoint(
        step=42, seconds=1.5, losses=torch.ones(42, dtype=torch.float64),
        config=model.config.to_dict(), model=model.state_dict(),
        optimizer={"state": {}, "param_groups": []}, scheduler={}, epoch=1, position=3,
        rng=random_state(torch.device("cpu")), callbacks={"checkpoints": {"history": []}})
    (tmp_path / "checkpoints").mkdir()
    path = checkpoint.save(tmp_path)
    assert path.name == CHECKPOINT_NAME.format(step=42) == "step-0000042.pt"
    assert checkpoint_paths(tmp_path) == [path]
    back = TrainCheckpoint.read(path)
    assert (back.step, back.epoch, back.position, back.callbacks) == (42, 1, 3, checkpoint.callbacks)
    assert torch.equal(back.rng["torch"], checkpoint.rng["torch"])
    path.rename(tmp_path / "checkpoints" / "step-0000043.pt")
    with pytest.raises(ValueError, match="holds step 42, not the step its name says"):
        TrainCheckpoint.read(tmp_path / "checkpoints" / "step-0000043.pt")


def test_the_random_state_round_trips():
    from vanilla_transformer.training.ranks import random_state, set_random_state

    cpu = torch.device("cpu")
    saved = random_state(cpu)
    first = torch.rand(3)
    set_random_state(saved, cpu)
    assert torch.equal(torch.rand(3), first)
