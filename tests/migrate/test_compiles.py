"""Every written file compiles: rules that add arguments merge with the caller's, and a file
whose migrated code would not compile is a failed result naming the rule, never written."""

import json
from dataclasses import replace

import libcst as cst
import pytest

from tensorsight.migrate import migrate, runner
from tensorsight.migrate.model import Changed, Failed
from tensorsight.migrate.report import to_json, to_markdown
from tensorsight.migrate.rule import MigrationRule
from tensorsight.migrate.rules.accelerator import RULESET
from tensorsight.migrate.selfcheck import compile_problem
from tests.migrate._util import run


@pytest.mark.parametrize(
    ("before", "expected"),
    [
        # the caller's device stays: no second device= (timm's data loaders)
        ("s = torch.cuda.Stream(device=d)", "s = torch.Stream(device=d)"),
        ("s = torch.cuda.Stream(device=d, priority=-1)", "s = torch.Stream(device=d, priority=-1)"),
        (
            "e = torch.cuda.Event(enable_timing=True,)",
            "e = torch.Event(enable_timing=True, device=_device,)",
        ),
        # map_location is not added next to **kwargs, which may hold it
        ('t = torch.load("a.pt", **kw)', 't = torch.load("a.pt", **kw)'),
        ('t = torch.load("a.pt", *rest)', 't = torch.load("a.pt", *rest)'),
        # positional .cuda(device, non_blocking) -> .to(device, non_blocking=...)
        ("y = torch.ones(1).cuda(0, True)", "non_blocking=True"),
        ("y = torch.ones(1).cuda(*a)", "y = torch.ones(1).cuda(*a)"),
        # torch.cuda.amp.autocast(enabled, dtype): torch.autocast's positions differ
        (
            "c = torch.cuda.amp.autocast(False, torch.bfloat16)",
            "c = torch.autocast(_device.type, enabled=False, dtype=torch.bfloat16)",
        ),
    ],
)
def test_added_arguments_merge_and_compile(before, expected):
    out = run("accelerator", f"import torch\n{before}\n")
    assert compile_problem(out.new_code) is None, out.new_code
    assert expected in out.new_code, out.new_code
    assert out.sites, "every CUDA site is listed, rewritten or not"


def test_custom_fwd_keyword_goes_after_positional_arguments():
    out = run(
        "accelerator",
        """\
        import torch
        def fwd(ctx, x):
            return x
        g = torch.cuda.amp.custom_fwd(fwd)
        @torch.cuda.amp.custom_fwd(cast_inputs=torch.float32)
        def h(ctx, x):
            return x
        """,
    )
    assert compile_problem(out.new_code) is None, out.new_code
    assert "@torch.amp.custom_fwd(device_type=_device.type, cast_inputs=torch.float32)" in (
        out.new_code
    )


def test_stream_with_device_runs_on_cpu():
    out = run(
        "accelerator", "import torch\nd = torch.device('cpu')\ns = torch.cuda.Stream(device=d)\n"
    )
    namespace: dict[str, object] = {}
    exec(compile(out.new_code, "t.py", "exec"), namespace)
    assert namespace["s"].device.type == "cpu"  # type: ignore[attr-defined]


class _RepeatKeywordRule(MigrationRule):
    """A broken rule: appends a second ``device=`` to every ``torch.zeros`` call."""

    RULE_ID = "test/repeat-keyword"
    DESCRIPTION = "planted bug"
    TRIGGERS = ("zeros",)

    def leave_Call(self, original, updated, ctx):
        if ctx.qname(original.func) != "torch.zeros":
            return None
        args = [*updated.args, cst.Arg(cst.Name("d"), keyword=cst.Name("device"))]
        args[-2] = args[-2].with_changes(comma=cst.Comma())
        return ctx.fix(self, original, updated.with_changes(args=args), message="planted")


def test_code_that_does_not_compile_is_failed_naming_the_rule_and_not_written(
    tmp_path, monkeypatch
):
    broken = replace(RULESET, rules=(*RULESET.rules, _RepeatKeywordRule))
    monkeypatch.setattr(runner, "_ruleset", lambda name: broken)
    src = tmp_path / "src"
    src.mkdir()
    bad = (
        "import torch\nok = torch.cuda.is_available()\nx = torch.zeros(2, device=d)\n"
        'sd = torch.load("m.pt")\n'
    )
    good = "import torch\nok = torch.cuda.is_available()\n"
    (src / "bad.py").write_text(bad)
    (src / "good.py").write_text(good)
    report = migrate(src, output=tmp_path / "out", workers=1)
    by_path = {r.path: r for r in report.files}
    assert isinstance(by_path["good.py"], Changed)
    failed = by_path["bad.py"]
    assert isinstance(failed, Failed)
    assert "keyword argument repeated" in failed.error
    assert "rule test/repeat-keyword" in failed.error
    assert "accelerator/availability" not in failed.error  # the innocent rule is not blamed
    assert (tmp_path / "out" / "bad.py").read_text() == bad  # the original, not the broken code
    # its sites stay in the report, none of them applied; drift of unapplied rewrites is not said
    rows = [(s.line, s.rule_id, s.status) for s in failed.sites]
    assert rows == [
        (2, "accelerator/availability", "manual"),
        (3, "test/repeat-keyword", "manual"),
        (4, "accelerator/map-location", "manual"),
    ]
    assert all(s.message.startswith("Not applied: the file was not written") for s in failed.sites)
    assert set(failed.sites) <= set(report.sites)
    assert report.counts()["rewritten"] == 1  # good.py's only
    assert "Its 3 site(s) are listed below, not applied." in to_markdown(report)
    entry = next(f for f in json.loads(to_json(report))["files"] if f["path"] == "bad.py")
    assert entry == {"path": "bad.py", "kind": "failed", "error": failed.error, "sites": 3}


def test_healthy_file_is_changed_not_failed(tmp_path):
    path = tmp_path / "t.py"
    path.write_text("import torch\ns = torch.cuda.Stream(device=torch.device('cuda'))\n")
    result = runner.migrate_file(runner.Job(str(path), "t.py"), "accelerator", False)
    assert isinstance(result, Changed), result
    assert compile_problem(result.new_code) is None
