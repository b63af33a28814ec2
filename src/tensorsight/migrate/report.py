"""Render a :class:`~.model.MigrationReport` as Markdown, CSV, JSON or SARIF.

Renderers are pure functions from a report to text; :func:`write_reports` is the only
function here that touches files.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import asdict
from pathlib import Path

from tensorsight.migrate.model import Changed, Failed, MigrationReport, Site, Skipped

__all__ = ["FORMATS", "to_csv", "to_json", "to_markdown", "to_sarif", "write_reports"]

FORMATS = ("md", "csv", "json", "sarif")
COLUMNS = ("file", "line", "column", "api", "rule_id", "status", "safety", "message", "doc_url")
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_SARIF_LEVEL = {"rewritten": "note", "kept": "note", "manual": "warning", "unsupported": "error"}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def to_markdown(report: MigrationReport) -> str:
    """A human-readable report: summary, then one table row per site."""
    counts = report.counts()
    lines = [
        f"# Migration report: `{report.root}` -> target `{report.target}`",
        "",
        f"tensorsight {report.tool_version}, rule set `{report.target}` v{report.ruleset_version},"
        f" mode {report.mode}, unsafe fixes {'on' if report.unsafe_fixes else 'off'}.",
        "",
        "## Summary",
        "",
        "| files changed | unchanged | skipped | failed "
        "| rewritten | manual | unsupported | kept |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        "| {files_changed} | {files_unchanged} | {files_skipped} | {files_failed} | {rewritten} |"
        " {manual} | {unsupported} | {kept} |".format(**counts),
        "",
    ]
    problems = [(r.path, r.error + _not_applied(r)) for r in report.failed]
    problems += [(p, "self-check: " + p) for p in report.check_problems]
    if problems or report.verify is not None:
        lines += ["## Problems", ""]
        lines += [f"- `{path}` {error}" for path, error in problems]
        if report.verify is not None:
            state = "passed" if report.verify.ok else f"FAILED (exit {report.verify.returncode})"
            lines.append(f"- verify `{report.verify.command}` {state}")
        lines.append("")
    skipped = [r for r in report.files if isinstance(r, Skipped)]
    if skipped:
        lines += ["## Listed for review", ""]
        lines += [f"- `{r.path}`: {r.reason}" for r in skipped]
        lines.append("")
    lines += ["## Sites", ""]
    if not report.sites:
        lines += ["No CUDA-specific API found.", ""]
    else:
        lines += [
            "| file:line:col | API | rule | status | safety | what to do |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        for s in report.sites:
            lines.append(
                f"| `{s.file}:{s.line}:{s.column}` | `{_cell(s.api)}` | [{s.rule_id}]({s.doc_url}) "
                f"| {s.status} | {s.safety} | {_cell(s.message)} |"
            )
        lines.append("")
    return "\n".join(lines)


def _not_applied(failed: Failed) -> str:
    n = len(failed.sites)
    return f" Its {n} site(s) are listed below, not applied." if n else ""


def to_csv(report: MigrationReport) -> str:
    """One row per site with the columns of :data:`COLUMNS`."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(COLUMNS)
    for s in report.sites:
        writer.writerow([getattr(s, c) for c in COLUMNS])
    return buf.getvalue()


def to_json(report: MigrationReport) -> str:
    """The whole report (without file contents) as JSON; ``schema_version`` on top."""
    files = []
    for r in report.files:
        entry: dict[str, object] = {"path": r.path, "kind": r.kind}
        if isinstance(r, Changed):
            entry["check_problems"] = list(r.check_problems)
        elif isinstance(r, Failed):
            entry["error"] = r.error
            entry["sites"] = len(r.sites)  # listed in "sites", not applied
        elif isinstance(r, Skipped):
            entry["reason"] = r.reason
        files.append(entry)
    data = {
        "schema_version": report.schema_version,
        "tool": "tensorsight",
        "tool_version": report.tool_version,
        "target": report.target,
        "ruleset_version": report.ruleset_version,
        "root": report.root,
        "mode": report.mode,
        "output_dir": report.output_dir,
        "unsafe_fixes": report.unsafe_fixes,
        "summary": report.counts(),
        "files": files,
        "sites": [asdict(s) for s in report.sites],
        "verify": asdict(report.verify) if report.verify is not None else None,
    }
    return json.dumps(data, indent=2) + "\n"


def _sarif_result(site: Site) -> dict[str, object]:
    return {
        "ruleId": site.rule_id,
        "level": _SARIF_LEVEL[site.status],
        "message": {"text": f"{site.api}: {site.message}"},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": site.file},
                    "region": {"startLine": site.line, "startColumn": site.column},
                }
            }
        ],
        "properties": {"status": site.status, "safety": site.safety},
    }


def to_sarif(report: MigrationReport) -> str:
    """SARIF 2.1.0 for code-scanning UIs: one result per site, one rule per rule id."""
    rule_ids = sorted({s.rule_id for s in report.sites})
    doc = {s.rule_id: s.doc_url for s in report.sites}
    run = {
        "tool": {
            "driver": {
                "name": "tensorsight-migrate",
                "version": report.tool_version,
                "informationUri": "https://github.com/tensorsight/tensorsight",
                "rules": [{"id": r, "helpUri": doc[r]} for r in rule_ids],
            }
        },
        "results": [_sarif_result(s) for s in report.sites],
        "properties": {"target": report.target, "ruleset_version": report.ruleset_version},
    }
    return json.dumps({"version": "2.1.0", "$schema": SARIF_SCHEMA, "runs": [run]}, indent=2) + "\n"


_RENDER = {"md": to_markdown, "csv": to_csv, "json": to_json, "sarif": to_sarif}


def write_reports(report: MigrationReport, path: Path, formats: tuple[str, ...]) -> list[Path]:
    """Write ``report`` in each format; with several formats each gets its own suffix.

    Returns:
        The files written.
    """
    written = []
    for fmt in formats:
        target = path if len(formats) == 1 else path.with_suffix(f".{fmt}")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(_RENDER[fmt](report), encoding="utf-8")
        written.append(target)
    return written
