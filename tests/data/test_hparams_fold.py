"""Folding add_hparams sub-runs and merging hparams records (tensorsight.data.hparams)."""

from __future__ import annotations

from tensorsight.data.hparams import fold_hparams_runs, is_hparams_subrun, merge_hparams
from tensorsight.summary.records import HParamsRecord


def test_timestamp_names():
    assert is_hparams_subrun("train/bf16/1796149522.2775037")
    assert is_hparams_subrun("1796149522.27")
    assert not is_hparams_subrun("train/bf16")
    assert not is_hparams_subrun("train/1.5")  # a version number, not a timestamp
    assert not is_hparams_subrun("train/1796149522")


def test_fold_only_a_single_subrun_with_hparams():
    runs = ["a", "a/1796149522.1", "b/1796149522.1", "b/1796149523.2", "c/1796149522.1", "."]
    folds = fold_hparams_runs(runs, lambda r: not r.startswith("c/"))
    assert folds["a"] == ("a", "a/1796149522.1")
    assert "b/1796149522.1" in folds  # a sweep stays split
    assert "b/1796149523.2" in folds
    assert folds["c/1796149522.1"] == ("c/1796149522.1",)  # no hparams: not folded
    assert folds["."] == (".",)
    # a parent without event files of its own appears through its sub-run
    assert fold_hparams_runs(["x/1796149522.5"], lambda r: True) == {"x": ("x/1796149522.5",)}
    assert fold_hparams_runs(["1796149522.5"], lambda r: True) == {".": ("1796149522.5",)}


def test_merge_reads_values_metrics_domains_and_lineage():
    recs = [
        HParamsRecord(0, 5.0, "session_end", status=1),
        HParamsRecord(0, 3.0, "session_start", {"lr": 0.1, "opt": "sgd", "skip": None}),
        HParamsRecord(
            0, 2.0, "experiment", {"opt": {"type": 1, "values": ["sgd", "adam"]}}, ("hp/acc",)
        ),
    ]
    hp = merge_hparams("r", recs)
    assert hp is not None
    assert dict(hp.hparams) == {"lr": 0.1, "opt": "sgd"}
    assert hp.metrics == ("hp/acc",)
    assert dict(hp.domains) == {"opt": ("sgd", "adam")}
    assert hp.wall_time == 5.0
    lineage = merge_hparams(
        "ms",
        [HParamsRecord(0, 1.0, "eval_lineage", {"metric": {"acc": 0.9}, "epoch": 3})],
    )
    assert lineage is not None
    assert dict(lineage.hparams) == {"metric.acc": 0.9, "epoch": 3.0}
    assert merge_hparams("none", [HParamsRecord(0, 1.0, "session_end", status=1)]) is None
