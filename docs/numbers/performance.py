"""Numbers of the Performance guide, read from the recorded benchmark results.

Every figure the page's prose quotes comes from a file under `benchmarks/results/`; nothing here
times anything. Where a sentence draws a verdict from the figures ("faster at every length",
"within the noise"), an assert below checks it, so a new run that changes the verdict stops the
build instead of leaving the sentence wrong.
"""

from __future__ import annotations

import ast
import json
import statistics
from math import log
from pathlib import Path
from typing import Any

RESULTS = Path("benchmarks/results")
GIB = 2**30


def _load(name: str) -> Any:
    return json.loads((RESULTS / f"{name}.json").read_text())


def _pct(fraction: float) -> int:
    """A fraction as a whole number of per cent."""
    return round(100 * fraction)


def _exponent(xs: list[int], ys: list[float]) -> float:
    """The slope of log(y) against log(x): y grows like x to this power."""
    return statistics.linear_regression([log(x) for x in xs], [log(y) for y in ys]).slope


def _recipes(v: dict[str, Any]) -> None:
    res = _load("performance")
    steps = res["training_step"]
    lengths = sorted(int(n) for n in steps)
    assert len(lengths) == 3
    v["vocab"] = res["config"]["vocab"]
    v["rounds"] = res["config"]["rounds"]
    v["mid_len"] = lengths[1]
    short, mid, long = lengths
    pairs = {
        "post": "paper / torch-post",
        "nodrop": "paper / torch-post-nodrop",
        "ff": "paper-ff-dropout / paper",
        "ann": "annotated / torch-pre",
    }
    for n in lengths:
        row = steps[str(n)]
        v[f"batch_{n}"] = row["batch"]
        for key, pair in pairs.items():
            v[f"{key}_{n}"] = row["ratios"][pair]
    post = [steps[str(n)]["ratios"][pairs["post"]] for n in lengths]
    nodrop = [steps[str(n)]["ratios"][pairs["nodrop"]] for n in lengths]
    ann = [steps[str(n)]["ratios"][pairs["ann"]] for n in lengths]
    assert max(post) < 1  # "trains faster than nn.Transformer at every length"
    v["post_less_short"] = _pct(1 - post[0])
    assert 0.45 < post[2] < 0.55  # "about half the time"
    v["nodrop_within"] = _pct(max(abs(r - 1) for r in nodrop))
    assert v["nodrop_within"] <= 5  # "about as fast as nn.Transformer with no dropout"
    spread = max(
        max(times) / min(times) for row in steps.values() for times in row["times_s"].values()
    )
    v["spread_pct"] = _pct(spread - 1)
    assert max(abs(r - 1) for r in ann) < spread - 1  # "less than the noise of three rounds"
    ff = [steps[str(n)]["ratios"][pairs["ff"]] for n in lengths]
    assert max(ff) - 1 < spread - 1  # "more than that price"

    # the Annotated recipe alone, seven rounds
    alone = _load("annotated_recipe")
    v["alone_rounds"] = alone["config"]["rounds"]
    for n in lengths:
        r = alone["lengths"][str(n)]
        v[f"alone_ann_{n}"] = r["ratio_of_medians"]["annotated / torch-pre"]
        v[f"alone_paired_{n}"] = r["median_paired_ratio"]["annotated / torch-pre"]
        v[f"alone_paper_{n}"] = r["ratio_of_medians"]["paper / torch-post"]
    for n in (short, long):  # "to within 1 % at lengths 64 and 1024"
        assert abs(v[f"alone_ann_{n}"] - 1) < 0.01 and abs(v[f"alone_paired_{n}"] - 1) < 0.01
    v["alone_ann_less_mid"] = _pct(1 - v[f"alone_ann_{mid}"])
    assert v["alone_ann_less_mid"] > 0

    # scaling with length
    for impl in ("paper", "annotated", "torch-post", "torch-post-nodrop"):
        slope = _exponent(lengths, [steps[str(n)]["median_s"][impl] for n in lengths])
        v["exp_" + impl.replace("-", "_")] = slope
    # "recipes that write the attention weights grow faster than those that do not"
    assert min(v["exp_annotated"], v["exp_torch_post"]) > max(v["exp_paper"], v["exp_torch_post_nodrop"])
    decoding = res["decoding"]
    counts = sorted(int(n) for n in decoding)
    assert len(counts) == 5  # "over the five output lengths"
    v["dec_first"], v["dec_last"] = counts[0], counts[-1]
    v["dec_128"] = counts[3]  # the fourth output length, 128 tokens
    for run in ("greedy-recompute", "greedy-cache", "beam4-cache"):
        slope = _exponent(counts, [decoding[str(n)]["median_s"][run] for n in counts])
        v["exp_" + run.replace("-", "_")] = slope
    assert 1 < v["exp_greedy_recompute"] < 2  # "less than either n^2 or n^3"
    assert 0.85 < v["exp_greedy_cache"] < 1.15  # "about linearly"

    # how close to the machine
    fraction = res["fraction_of_peak"]
    for n in lengths:
        for impl, f in fraction[str(n)].items():
            v[f"peak_{impl.replace('-', '_')}_{n}"] = _pct(f)
        row = fraction[str(n)]
        assert row["annotated"] < min(row["paper"], row["paper-ff-dropout"])  # "less at every length"

    # memory
    now, first = res["peak_memory"], res["peak_memory_first_run"]
    for impl, r in now.items():
        key = impl.replace("-", "_")
        v[f"mem_peak_{key}"] = r["peak_bytes"] / GIB
        v[f"mem_step_{key}"] = r["step_bytes"] / GIB
    third = now["paper"]["peak_bytes"] / now["torch-post"]["peak_bytes"]
    assert 0.3 < third < 0.37  # "a third of nn.Transformer's memory"
    assert abs(now["annotated"]["peak_bytes"] / now["torch-post"]["peak_bytes"] - 1) < 0.1
    saved = {impl: (first[impl]["step_bytes"] - now[impl]["step_bytes"]) / GIB for impl in now}
    v["mem_saved_annotated"] = saved["annotated"]
    v["mem_saved_expected"] = 32 * 2048 * (2 * 512) * 4 / GIB
    v["mem_others_moved"] = max(abs(s) for impl, s in saved.items() if impl != "annotated")
    # "the rest is within the noise": what the fast path does not explain moved the others as much
    assert abs(v["mem_saved_annotated"] - v["mem_saved_expected"]) <= v["mem_others_moved"]
    assert abs(v["mem_saved_annotated"] - v["mem_saved_expected"]) < 0.1

    # decoding
    for n in counts:
        for run, t in decoding[str(n)]["tokens_per_s"].items():
            v[f"dec_{run.replace('-', '_')}_{n}"] = t
        tps = decoding[str(n)]["tokens_per_s"]
        v[f"dec_speedup_{n}"] = tps["greedy-cache"] / tps["greedy-recompute"]
    speedups = [v[f"dec_speedup_{n}"] for n in counts]
    assert speedups == sorted(speedups)  # "grows with the output"
    assert v["dec_speedup_128"] >= 4  # the cache pays more the longer the output
    beam = [decoding[str(n)]["tokens_per_s"]["beam4-cache"] / decoding[str(n)]["tokens_per_s"]["greedy-cache"]
            for n in counts]
    v["beam_share_min"], v["beam_share_max"] = _pct(min(beam)), _pct(max(beam))

    # where the time goes
    for p in res["profile"]:
        key = f"{p['impl'].replace('-', '_')}_{p['length']}"
        v[f"prof_s_{key}"] = p["total_self_s"]
        shares = {op["op"].removeprefix("aten::"): op["share"] for op in p["top_ops"]}
        v[f"prof_mm_{key}"] = _pct(shares["mm"])
        v[f"prof_addmm_{key}"] = _pct(shares["addmm"])
        v[f"prof_bern_{key}"] = _pct(shares["bernoulli_"])
        v[f"prof_sdpa_bw_{key}"] = _pct(shares["_scaled_dot_product_flash_attention_for_cpu_backward"])
        v[f"prof_sdpa_{key}"] = _pct(shares["_scaled_dot_product_flash_attention_for_cpu"])
        v[f"prof_matmul_{key}"] = _pct(shares["mm"] + shares["addmm"])
        if p["impl"] == "paper" and p["length"] == long:
            assert shares["_scaled_dot_product_flash_attention_for_cpu_backward"] > 0.25  # "over a quarter"
    for n in (short, long):
        v[f"prof_less_{n}"] = _pct(1 - v[f"prof_s_paper_{n}"] / v[f"prof_s_paper_ff_dropout_{n}"])


def _fast_paths(v: dict[str, Any]) -> None:
    cells: dict[str, dict[str, list[float]]] = {}  # variant -> run -> ratios
    for run in ("cpu", "cpu_gpu_host", "cuda"):
        res = _load(f"fast_paths_{run}")
        for row in res["lengths"].values():
            for variant, ratio in row["ratio_to_package"].items():
                cells.setdefault(variant, {}).setdefault(run, []).append(ratio)
    for variant, by_run in cells.items():
        if variant == "package":
            continue
        every = [r for ratios in by_run.values() for r in ratios]
        key = variant.replace("-", "_")
        v[f"fp_{key}_cells"] = len(every)
        v[f"fp_{key}_median"] = statistics.median(every)
        v[f"fp_{key}_low"] = min(every)
        v[f"fp_{key}_high"] = max(every)
    gpu = cells["reference"]["cuda"]
    assert min(gpu) > 1.1  # the fused kernel earns its place on a GPU
    v["fp_ref_gpu_low"], v["fp_ref_gpu_high"] = _pct(min(gpu) - 1), _pct(max(gpu) - 1)
    cpu = _load("fast_paths_cpu")["lengths"]
    v["fp_ref_cpu_long"] = _pct(cpu["1024"]["ratio_to_package"]["reference"] - 1)
    short_mid = [cpu[n]["ratio_to_package"]["reference"] for n in ("64", "256")]
    v["fp_ref_cpu_short_mid_within"] = _pct(max(abs(r - 1) for r in short_mid))
    assert v["fp_ref_cpu_short_mid_within"] <= 3  # "about as long at 64 and 256"
    versions = {run: _load(f"fast_paths_{run}")["machine"]["torch"].split("+")[0]
                for run in ("cpu", "cpu_gpu_host", "cuda")}
    assert versions["cpu_gpu_host"] == versions["cuda"]  # "both with torch ..."
    v["fp_torch_cpu"] = versions["cpu"].rpartition(".")[0]
    v["fp_torch_gpu"] = versions["cuda"].rpartition(".")[0]
    assert min(r for ratios in cells["reference-layernorm"].values() for r in ratios) > 1.05
    norm = cells["reference-layernorm"]["cpu"]
    assert min(norm) > 1.05  # "longer in every cell of the new run"
    v["fp_norm_low"], v["fp_norm_high"] = _pct(min(norm) - 1), _pct(max(norm) - 1)
    backward = [r for ratios in cells["layernorm-backward"].values() for r in ratios]
    assert max(backward) < 1  # "less time in every cell"
    v["fp_bw_low"], v["fp_bw_high"] = _pct(1 - max(backward)), _pct(1 - min(backward))
    others = ("sdpa-only", "fused-qkv", "fill-all-true", "cheap-dropout", "no-mask", "torch-dropout")
    v["fp_others_max"] = _pct(max(abs(r - 1) for o in others for ratios in cells[o].values() for r in ratios))
    sdpa = cpu["1024"]["ratio_to_package"]["sdpa-only"]
    v["fp_sdpa_cpu_long"] = _pct(sdpa - 1)
    assert all(abs(cpu[n]["ratio_to_package"]["sdpa-only"] - 1) < 0.02 for n in ("64", "256"))
    fill = cells["fill-all-true"]["cpu"]
    v["fp_fill_max"] = _pct(max(abs(r - 1) for r in fill))
    assert max(fill) == cpu["1024"]["ratio_to_package"]["fill-all-true"]  # "(at length 1024)"
    fused = [r for ratios in cells["fused-qkv"].values() for r in ratios]
    v["fp_fused_faster"], v["fp_fused_slower"] = _pct(1 - min(fused)), _pct(max(fused) - 1)
    cheap = cells["cheap-dropout"]["cpu"]
    assert max(cheap) < 1  # "faster in every cell"
    v["fp_cheap_low"], v["fp_cheap_high"] = _pct(1 - max(cheap)), _pct(1 - min(cheap))
    assert max(cells["torch-dropout"]["cpu_gpu_host"]) <= 1  # "nn.Dropout as fast or faster"


def _gpu(v: dict[str, Any]) -> None:
    res = _load("compile_cuda")
    ms = {
        int(n): {variant: r["median_s"] * 1e3 for variant, r in row.items()}
        for n, row in res["lengths"].items()
    }
    v["gpu_vocab"] = res["config"]["vocab"]
    assert res["machine"]["gpu"].startswith("NVIDIA H100")  # "on one H100"
    v["gpu_torch"] = res["machine"]["torch"].split("+")[0].rpartition(".")[0]
    for n, row in ms.items():
        for variant, t in row.items():
            v[f"gpu_{variant.replace('-', '_')}_{n}"] = t
    every = [t for row in ms.values() for t in row.values()]
    v["gpu_ms_low"], v["gpu_ms_high"] = min(every), max(every)
    change = {n: row["compiled"] / row["eager"] - 1 for n, row in ms.items()}
    paid = sum(c < 0 for c in change.values())
    assert paid == 2  # "compiling paid at two lengths out of three"
    # "bf16 autocast was slower than float32 at every length, eager and compiled"
    assert all(r["eager-bf16"] > r["eager"] and r["compiled-bf16"] > r["compiled"] for r in ms.values())
    lengths = sorted(ms)
    v["gpu_compile_saved_short"] = _pct(-change[lengths[0]])
    v["gpu_compile_saved_long"] = _pct(-change[lengths[2]])
    v["gpu_compile_cost_mid"] = _pct(change[lengths[1]])
    assert change[lengths[1]] > 0
    v["gpu_first_step_s"] = max(r["first_step_s"] for row in res["lengths"].values() for r in row.values())


def _paper_batch(v: dict[str, Any]) -> None:
    import torch  # noqa: F401 - the calculator below needs it installed

    from vanilla_transformer import PRESETS, ModelConfig
    from vanilla_transformer.analysis import forward_flops_for, parameter_count_for

    res = _load("paper_batch_cpu")
    cfg = res["config"]
    batch, length, vocab = cfg["batch"], cfg["length"], cfg["vocab"]
    v["pb_batch"], v["pb_length"] = batch, length
    config = ModelConfig(vocab, vocab, **PRESETS["paper-base"])
    flops = forward_flops_for(config, batch=batch, src_len=length, tgt_len=length)
    share = {c.name: c.subtotal / flops.total for c in flops.components}
    scores = sum(s for name, s in share.items() if name.endswith("_scores"))
    assert scores < 0.01  # "under 1 %"
    v["pb_times"] = batch * length / _load("performance")["config"]["tokens_per_batch"]
    v["pb_tflop"] = flops.training_total / 1e12
    v["pb_generator_pct"] = _pct(share["generator"])
    v["pb_log_probs_gib"] = batch * length * vocab * 4 / GIB
    v["pb_params_m"] = round(parameter_count_for(config).total / 1e6)
    tree = ast.parse(Path("benchmarks/paper_batch.py").read_text())
    constants = {
        t.id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
        for t in node.targets
        if isinstance(t, ast.Name)
    }
    v["pb_h100_tflops"] = constants["H100_BF16_TFLOPS"]
    v["pb_load"] = res["machine"]["load_average_before"][0]
    runs = res["runs"]
    eager, compiled = runs["eager"]["bf16"], runs["compiled"]["bf16"]
    v["pb_ratio_eager"] = eager["paper / torch-post"]
    v["pb_ratio_compiled"] = compiled["paper / torch-post"]
    spreads = {
        (mode, impl): max(r["times_s"]) / min(r["times_s"])
        for mode, row in (("eager", eager), ("compiled", compiled))
        for impl, r in row.items()
        if isinstance(r, dict)
    }
    v["pb_eager_spread"] = max(s for (mode, _), s in spreads.items() if mode == "eager")
    v["pb_torch_compiled_spread"] = _pct(spreads["compiled", "torch-post"] - 1)
    v["pb_compiled_of_eager_paper"] = compiled["paper"]["median_s"] / eager["paper"]["median_s"]
    v["pb_compiled_of_eager_torch"] = compiled["torch-post"]["median_s"] / eager["torch-post"]["median_s"]
    v["pb_mfu_eager"], v["pb_mfu_compiled"] = _pct(eager["paper"]["mfu"]), _pct(compiled["paper"]["mfu"])
    for impl, key in (("paper", "paper"), ("torch-post", "torch")):
        v[f"pb_mem_eager_{key}"] = eager[impl]["step_memory_bytes"] / GIB
        v[f"pb_mem_compiled_{key}"] = compiled[impl]["step_memory_bytes"] / GIB
        v[f"pb_compile_s_{key}"] = round(compiled[impl]["compile_s"])
    assert compiled["paper"]["graph_breaks"] == 0 and compiled["torch-post"]["graph_breaks"] == 2


def _loss_and_data(v: dict[str, Any]) -> None:
    res = _load("loss")
    v["loss_rounds"] = res["rounds"]
    shapes = res["shapes"].values()
    fused = [r["time_ratio_to_cross_entropy"]["label_smoothed_kl"] for r in shapes]
    cls = [r["time_ratio_to_cross_entropy"]["LabelSmoothing"] for r in shapes]
    cls_mem = [r["memory_ratio_to_cross_entropy"]["LabelSmoothing"] for r in shapes]
    fused_mem = [r["memory_ratio_to_cross_entropy"]["label_smoothed_kl"] for r in shapes]
    assert all(abs(m - 1) < 0.05 for m in fused_mem)  # "the same memory"
    v["loss_fused_low"], v["loss_fused_high"] = min(fused), max(fused)
    v["loss_class_low"], v["loss_class_high"] = min(cls), max(cls)
    v["loss_class_mem_low"], v["loss_class_mem_high"] = min(cls_mem), max(cls_mem)

    runs = _load("streaming")["runs"]
    results: dict[tuple[str, str], dict[str, Any]] = {}
    for run in runs:
        for pairs, row in run["pairs"].items():
            for variant, r in row.items():
                if variant != "tsv_mb":
                    results[pairs, variant] = r
    big = max(int(p) for p, _ in results)
    last = runs[-1]
    v["st_pairs"] = big
    v["st_pairs_small"] = min(int(p) for p, _ in results)
    v["st_max_tokens"] = last["max_tokens"]
    v["st_tsv_mb"] = round(last["pairs"][str(big)]["tsv_mb"])
    v["st_sample_pairs"] = last["streaming_tokenizer_sample_pairs"]
    stream = results[str(big), "streaming"]
    assert stream["first_optimizer_step_s"] < 120  # "within two minutes"

    train = _load("translate_train_2m")
    v["tt_pairs"] = train["corpus"]["pairs"]


def _table(header: tuple[str, ...], rows: list[tuple[Any, ...]], right: str) -> str:
    """A Markdown table; `right` has an "r" for each right-aligned (numeric) column."""
    rule = ["---:" if a == "r" else "---" for a in right]
    lines = [header, rule, *rows]
    return "\n".join("| " + " | ".join(str(c) for c in line) + " |" for line in lines)


def _machine_table(v: dict[str, Any]) -> None:
    """The machine of the main run, as the page's table; checks what the prose says of it."""
    from vanilla_transformer import PRESETS

    # "the decoding and profile sections time the paper's recipe, which uses nn.LayerNorm"
    assert PRESETS["paper-base"]["layer_norm"] == "torch"
    res = _load("performance")
    m, again = res["machine"], res["machine"]["rerun"]
    assert res["config"] == {"vocab": 1000, "tokens_per_batch": 2048, "rounds": 3}
    assert m["threads"] == 1 and m["cores"] == 2  # "on one thread", "the machine's second core"
    assert again["lengths"] == sorted(int(n) for n in res["training_step"])  # "all three lengths"
    assert max(m["load_average_rerun"]) < m["load_average"]  # "on a quieter machine"
    rerun_load = ", ".join(f"{x:.1f}" for x in m["load_average_rerun"])
    rows = [
        ("processor", f"{m['cpu']}, {m['cores']} cores, {m['threads']} thread used"),
        ("software", f"Python {m['python']}, torch {m['torch']}"),
        ("first run", res["date"]),
        ("matrix-multiply peak", f"{res['matmul_peak']['peak_flop_s'] / 1e9:.0f} GFLOP/s"),
        ("load average, start and end", f"{m['load_average']:.1f}, {m['load_average_after']:.1f}"),
        ("training steps again", f"{again['date']}, lengths "
         + ", ".join(str(n) for n in again["lengths"]) + f", load average {rerun_load}"),
        ("peak memory again", m["memory_rerun"]),
    ]
    v["machine_table"] = _table(("", "this run"), rows, "ll")


def _alone_table(v: dict[str, Any]) -> None:
    res = _load("annotated_recipe")
    assert res["config"] == {"tokens_per_batch": 2048, "rounds": 7}
    assert res["machine"]["threads"] == 1  # "on one thread"
    pair = "annotated / torch-pre"
    rows = [(n, r["batch"], f"{r['ratio_of_medians'][pair]:.3f}", f"{r['median_paired_ratio'][pair]:.3f}",
             f"{r['ratio_of_medians']['paper / torch-post']:.2f}") for n, r in res["lengths"].items()]
    header = ("length", "batch", "Annotated / pre-norm, medians", "round by round",
              "paper / post-norm")
    v["alone_table"] = _table(header, rows, "rrrrr")


def _scaling_table(v: dict[str, Any]) -> None:
    rows = [(f"training step, {name}", "length", f"{v['exp_' + key]:.2f}") for name, key in (
        ("paper's recipe", "paper"), ("Annotated recipe", "annotated"),
        ("`nn.Transformer` post-norm", "torch_post"),
        ("`nn.Transformer` post-norm, no dropout", "torch_post_nodrop"))]
    rows += [(f"decoding, {name}", "tokens generated", f"{v['exp_' + key]:.2f}") for name, key in (
        ("greedy, recompute", "greedy_recompute"), ("greedy, cache", "greedy_cache"),
        ("beam 4, cache", "beam4_cache"))]
    v["scaling_table"] = _table(("time of", "x", "grows like x to the power"), rows, "llr")


def _paper_batch_table(v: dict[str, Any]) -> None:
    """Every recorded run of the paper's batch (the CPU one, and a GPU one once recorded)."""
    names = {"paper": "paper-base", "torch-post": "nn.Transformer"}
    rows, notes = [], []
    for device in ("cpu", "cuda"):
        if not (RESULTS / f"paper_batch_{device}.json").exists():
            assert device == "cuda"  # "no GPU run of it is recorded yet"
            continue
        res = _load(f"paper_batch_{device}")
        cfg, m, runs = res["config"], res["machine"], res["runs"]
        assert cfg["preset"] == "paper-base" and cfg["vocab"] == 37000
        assert (cfg["batch"], cfg["length"]) == (1000, 25)
        assert cfg["target_tokens_per_step"] == cfg["tokens"] == 25000
        where = m.get("gpu") or f"{m['cpu']}, {m['cores']} cores, {m['threads']} threads"
        load = m["load_average_before"][0], m["load_average_after"][0]
        notes.append(f"{device}: {where}, torch {m['torch']}, run on {res['date']}; load average "
                     f"{load[0]:.1f} before and {load[1]:.1f} after; bf16 peak "
                     + ", ".join(f"{p['flop_s'] / 1e12:.2f} TFLOP/s" for p in res["peak"].values()))
        for mode, by_dtype in runs.items():
            assert "skipped" not in by_dtype, (device, mode)
            for dtype, row in by_dtype.items():
                for impl, name in names.items():
                    r = row[impl]
                    compile_s = (f"{r['compile_s']:.0f} s, {r['graph_breaks']} breaks"
                                 if "compile_s" in r else "")
                    rows.append((f"{name}, {mode}, {dtype}", f"{r['median_s']:.1f} s",
                                 f"{r['tokens_per_s']:.0f}", f"{r['step_memory_bytes'] / GIB:.1f} GiB",
                                 f"{r['mfu']:.0%}".replace("%", " %"),
                                 f"{max(r['times_s']) / min(r['times_s']):.2f}", compile_s))
    header = ("run", "step", "tokens/s", "memory", "of peak", "spread", "compiling")
    v["pb_table"] = _table(header, rows, "lrrrrrl")
    v["pb_runs"] = "<br>".join(notes)


def _loss_and_data_tables(v: dict[str, Any]) -> None:
    res = _load("loss")
    v["loss_threads"] = res["machine"]["threads"]
    v["loss_load"] = res["machine"]["load_before"][0]
    rows = []
    for shape, r in res["shapes"].items():
        t, m = r["time_ratio_to_cross_entropy"], r["memory_ratio_to_cross_entropy"]
        assert r["relative_difference_vs_LabelSmoothing"] < 1e-5  # "agreed to within 1e-5"
        assert r["max_abs_gradient_difference_vs_LabelSmoothing"] == 0.0  # "the gradients exactly"
        rows.append((shape.replace("x", " x "), f"{t['label_smoothed_kl']:.2f}", f"{t['LabelSmoothing']:.2f}",
                     f"{m['label_smoothed_kl']:.2f}", f"{m['LabelSmoothing']:.2f}"))
    header = ("logits", "time, `label_smoothed_kl`", "time, `LabelSmoothing`",
              "memory, `label_smoothed_kl`", "memory, `LabelSmoothing`")
    v["loss_table"] = _table(header, rows, "lrrrr")

    runs = _load("streaming")["runs"]
    results: dict[tuple[str, str], dict[str, Any]] = {}
    for run in runs:
        for pairs, row in run["pairs"].items():
            for variant, r in row.items():
                if variant != "tsv_mb":
                    results[pairs, variant] = r  # the last run of each wins
    big = str(v["st_pairs"])
    both = ("in-memory", "streaming")
    memory = {k: results[big, k]["peak_mb"] for k in both}
    cpu = {k: sum(results[big, k]["cpu_phases"].values()) for k in both}
    assert results[big, "streaming"]["peak_mb"] < 3 * 1024
    assert memory["streaming"] < memory["in-memory"] / 10  # "under a tenth of the memory"
    assert cpu["streaming"] < cpu["in-memory"] / 5  # "under a fifth of the CPU time"
    reuse = results[big, "streaming-reuse"]["first_optimizer_step_s"]
    assert reuse < 60  # "started in seconds"
    for key, r in results.items():  # "wall times several times the CPU seconds"
        if key[0] == big and key[1] != "streaming-reuse":
            assert r["first_optimizer_step_s"] > 2 * sum(r["cpu_phases"].values()), key
    rows = [(k, f"{results[big, k]['first_optimizer_step_s']:.0f} s",
             f"{sum(results[big, k]['cpu_phases'].values()):.0f} s",
             f"{results[big, k]['peak_mb'] / 1024:.1f} GB")
            for k in ("in-memory", "streaming", "streaming-reuse")]
    v["streaming_table"] = _table(("variant", "first step", "CPU seconds", "peak memory"), rows, "lrrr")
    v["st_tokenize_s"] = round(results[big, "streaming"]["cpu_phases"]["tokenize_s"])

    train = _load("translate_train_2m")["runs"]
    assert train["after"]["first_step_s"] < 120 and train["after"]["max_rss_gb"] < 3
    rows = [(name, f"{train[name]['first_step_s']:.1f} s", f"{train[name]['max_rss_gb']:.2f} GB")
            for name in ("before", "after")]
    v["train_table"] = _table(("run", "first step", "peak memory"), rows, "lrr")


def values() -> dict[str, Any]:
    v: dict[str, Any] = {}
    _recipes(v)
    _fast_paths(v)
    _gpu(v)
    _paper_batch(v)
    _loss_and_data(v)
    _machine_table(v)
    _alone_table(v)
    _scaling_table(v)
    _paper_batch_table(v)
    _loss_and_data_tables(v)
    return v
