"""``--metric-script path.py:func``: a user's function as one more metric and report column."""

from __future__ import annotations

import csv
import json
import math
import pickle

import numpy as np
import pytest

from tensorsight import cli
from tensorsight.compare.metrics import BUILTIN_KEYS, METRICS, MetricSpec
from tensorsight.compare.metrics import script as script_mod
from tensorsight.compare.metrics.script import ScriptMetric, load_metric_script
from tensorsight.errors import CompareError, UsageError

torch = pytest.importorskip("torch")

SCRIPT = '''
import numpy as np


def abs_gap(bench, target):
    """Largest |target - bench| in float64: the kernel's max_abs_err, recomputed."""
    return np.abs(target.astype(np.float64) - bench.astype(np.float64)).max()


def mean_shift(bench, target):
    return float(target.astype(np.float64).mean() - bench.astype(np.float64).mean())


def broken(bench, target):
    raise RuntimeError("no good")


def not_a_number(bench, target):
    return "high"
'''


@pytest.fixture(scope="module")
def dumps(tmp_path_factory):
    """One step of a small MLP and of a copy whose last Linear is scaled by 1.05."""
    from tensorsight.capture import dump

    root = tmp_path_factory.mktemp("script_dumps")
    for name, scale in (("bench", 1.0), ("target", 1.05)):
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4))
        with torch.no_grad():
            model[2].weight.mul_(scale)
        x = torch.randn(4, 8, generator=torch.Generator().manual_seed(1))
        with dump(root / name, mode="tensor", steps=[0], overwrite=True):
            model(x).sum().backward()
    return str(root / "bench"), str(root / "target")


@pytest.fixture
def script(tmp_path, monkeypatch):
    """The metrics file, with METRICS restored after the test."""
    monkeypatch.setattr(METRICS, "_entries", dict(METRICS._entries))
    monkeypatch.setattr(METRICS, "_loaded", dict(METRICS._loaded))
    path = tmp_path / "my_metrics.py"
    path.write_text(SCRIPT, encoding="utf-8")
    return path


def test_the_cli_reports_the_function_as_one_more_column(dumps, script, tmp_path):
    bench, target = dumps
    out = tmp_path / "report"
    args = ["compare", bench, target, "-o", str(out), "--format", "csv,html,json", "-q"]
    code = cli.main([*args, "--metric-script", f"{script}:abs_gap"])
    assert code == 1  # the planted bug
    with (out / "comparison.csv").open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0])[-1] == "abs_gap"  # after every built-in column
    measured = [r for r in rows if r["mode"] == "tensor" and r["max_abs_err"] not in ("", "nan")]
    assert measured
    for r in measured:  # the same float64 maximum as the kernel's, so equal to the last bit
        assert float(r["abs_gap"]) == float(r["max_abs_err"]), r["op"]
    assert any(float(r["abs_gap"]) > 0 for r in measured)
    assert "<th>abs_gap</th>" in (out / "comparison.html").read_text(encoding="utf-8")
    doc = json.loads((out / "comparison.json").read_text(encoding="utf-8"))
    assert sum("abs_gap" in r for r in doc["rows"]) == len(measured)


def test_bench_comes_first_and_metrics_keep_their_selection(dumps, script):
    from tensorsight.compare import compare

    key = load_metric_script(f"{script}:mean_shift").key
    result = compare(*dumps, metrics=["cosine", key])
    rows = [r for r in result.rows if r.mode == "tensor" and r.mean_target is not None]
    assert rows
    assert all(r.kl_div is None for r in rows)  # only the chosen built-ins are reported
    for r in rows:
        expected = r.mean_target - r.mean_bench
        assert math.isclose(r.custom[key], expected, rel_tol=1e-9, abs_tol=1e-12), r.key
    assert any(abs(r.custom[key]) > 1e-6 for r in rows)  # the bug shifts some means


def test_a_script_metric_pickles_and_loads_the_file_again(script, monkeypatch):
    spec = load_metric_script(f"{script}:abs_gap")
    assert isinstance(spec.func, ScriptMetric)
    assert spec.doc.startswith("Largest |target - bench|")
    monkeypatch.setattr(script_mod, "_MODULES", {})  # as in a fresh worker process
    again = pickle.loads(pickle.dumps(spec))
    assert again.func(np.zeros(3), np.array([1.0, -4.0, 2.0])) == 4.0
    assert load_metric_script(f"{script}:abs_gap") is spec  # loading twice is harmless


def test_rank_pairs_on_worker_processes_compute_it(tmp_path_factory, script):
    from tensorsight.compare import compare
    from tests.compare._ranks import BUG_RANK, make_rank_dumps

    d = make_rank_dumps(tmp_path_factory.mktemp("script_ranks"))
    key = load_metric_script(f"{script}:abs_gap").key
    result = compare(d["bench"], d["target"], metrics=[*BUILTIN_KEYS, key], executor="local:2")
    rows = [r for r in result.rows if r.mode == "tensor" and r.max_abs_err is not None]
    assert {r.rank for r in rows} == {0, 1, 2, 3}
    assert all(r.custom[key] == r.max_abs_err for r in rows if not math.isnan(r.max_abs_err))
    assert {r.rank for r in rows if r.custom[key] > 0} == {BUG_RANK}


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("my_metrics.py", "expected path/to/file.py:function"),
        ("{script}:not valid", "expected path/to/file.py:function"),
        ("{dir}/nope.py:abs_gap", "no such file"),
        ("{script}:missing", "has no function 'missing'. Expected one of: abs_gap, broken,"),
    ],
)
def test_bad_specs_say_what_is_wrong(script, spec, expected):
    with pytest.raises(UsageError, match=r"Metric script|--metric-script") as info:
        load_metric_script(spec.format(script=script, dir=script.parent))
    assert expected in str(info.value)


def test_a_key_that_exists_is_refused(script, tmp_path):
    clash = tmp_path / "clash.py"
    clash.write_text("def cosine(bench, target):\n    return 0.0\n", encoding="utf-8")
    with pytest.raises(UsageError, match=r"metric 'cosine' already exists\. Rename the function"):
        load_metric_script(f"{clash}:cosine")


@pytest.mark.parametrize("func", ["verdict", "op", "reason", "within_1e_3"])
def test_a_report_column_is_refused_as_a_key(script, tmp_path, func):
    # a function named verdict would overwrite every row's verdict in the reports
    clash = tmp_path / "clash.py"
    clash.write_text(f"def {func}(bench, target):\n    return 1.0\n", encoding="utf-8")
    with pytest.raises(UsageError, match=rf"{func!r} is a report column already"):
        load_metric_script(f"{clash}:{func}")
    assert func not in METRICS._entries


def test_a_custom_key_that_is_a_column_is_not_a_second_header(dumps, script):
    from tensorsight.compare import compare

    METRICS.add("mechanism", MetricSpec("mechanism", False, _peak_ratio, "a clash"))
    result = compare(*dumps, metrics=["max_abs_err", "mechanism"])
    head = result.to_csv().splitlines()[0].split(",")
    assert len(head) == len(set(head))


def test_a_file_that_fails_to_import_is_a_usage_error(tmp_path, script):
    bad = tmp_path / "bad.py"
    bad.write_text("import no_such_module_xyz\n", encoding="utf-8")
    with pytest.raises(UsageError, match="importing it raised ModuleNotFoundError"):
        load_metric_script(f"{bad}:f")


@pytest.mark.parametrize(
    ("func", "expected"),
    [
        ("broken", "raised RuntimeError: no good"),
        ("not_a_number", "returned str. Expected a float"),
    ],
)
def test_a_failing_function_is_one_line_on_the_cli(dumps, script, func, expected, capsys):
    code = cli.main(["compare", *dumps, "-q", "--metric-script", f"{script}:{func}"])
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: Metric script")
    assert expected in err
    assert "\n" not in err
    with pytest.raises(CompareError):  # the API raises the same error
        load_metric_script(f"{script}:{func}").func(np.zeros(1), np.zeros(1))


def test_merge_refuses_the_option(tmp_path, script, capsys):
    code = cli.main(["compare", "--merge", str(tmp_path), "--metric-script", f"{script}:abs_gap"])
    assert code == 2
    assert "takes no --metric-script" in capsys.readouterr().err


def _peak_ratio(bench, target):
    """max|target| / max|bench|."""
    return float(np.abs(target).max() / np.abs(bench).max())


#: What CONTRIBUTING.md's "Adding a metric" has a new file hold; the test below adds its
#: registry line.
PEAK_RATIO = MetricSpec("peak_ratio", False, _peak_ratio, "max|target| / max|bench|.")


def test_one_registry_line_adds_a_metric(dumps, script):
    from tensorsight.compare import compare

    METRICS.add("peak_ratio", f"{__name__}:PEAK_RATIO")  # the line, lazily imported
    result = compare(*dumps, metrics=["max_abs_err", "peak_ratio"])
    rows = [r for r in result.rows if r.mode == "tensor" and r.max_abs_err is not None]
    assert rows
    assert all("peak_ratio" in r.custom for r in rows)
    assert any(r.custom["peak_ratio"] != 1.0 for r in rows)  # the scaled Linear's outputs
    assert "peak_ratio" in result.to_csv().splitlines()[0].split(",")
