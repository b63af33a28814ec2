"""The migration report's data model: sites, file results and the report itself.

This module is the spec of every migration report tensorsight writes (JSON, CSV,
Markdown, SARIF); it imports no LibCST, so reports can be read without the ``migrate``
extra.

A **site** is one place in a source file that uses a CUDA-specific API. Each site has a
``status``:

- ``rewritten``: the rule changed the code (the message says to what);
- ``manual``: a fix exists but was not applied (an unsafe fix without ``--unsafe-fixes``)
  or needs a human decision; the message names the concrete fix;
- ``unsupported``: the target has no equivalent; the message says what to do instead;
- ``kept``: the code stays as it is on purpose (e.g. a cuDNN knob that is harmless on
  other devices), or a semantic-drift warning about a rewrite.

and a ``safety`` (ruff's fix-safety levels): ``safe`` fixes are applied by default,
``unsafe`` ones only with ``--unsafe-fixes``, ``none`` means there is no automatic fix.

A **file result** is one of :class:`Changed`, :class:`Unchanged`, :class:`Skipped` or
:class:`Failed` (the LibCST runner's union of frozen dataclasses): the runner never
raises for one bad file.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Literal

__all__ = [
    "SCHEMA_VERSION",
    "Changed",
    "Failed",
    "FileResult",
    "MigrationReport",
    "Safety",
    "Site",
    "Skipped",
    "Status",
    "Unchanged",
    "VerifyResult",
]

SCHEMA_VERSION = 1  # 1 also covers ``files[].sites`` of failed files (added, optional)

Status = Literal["rewritten", "manual", "unsupported", "kept"]
Safety = Literal["safe", "unsafe", "none"]
STATUSES: tuple[Status, ...] = ("rewritten", "manual", "unsupported", "kept")


@dataclass(frozen=True)
class Site:
    """One use of a CUDA-specific API, with what was (or should be) done about it.

    Attributes:
        file: Path relative to the migrated root, with ``/`` separators.
        line: 1-based line in the original file.
        column: 1-based column in the original file.
        api: Fully qualified API after alias resolution, e.g. ``torch.cuda.synchronize``.
        rule_id: The rule that found it, e.g. ``accelerator/synchronize``.
        status: ``rewritten``, ``manual``, ``unsupported`` or ``kept``.
        safety: ``safe``, ``unsafe`` or ``none`` (no automatic fix).
        message: One or two sentences naming the concrete fix.
        doc_url: Link to the rule's section of the rule reference.
    """

    file: str
    line: int
    column: int
    api: str
    rule_id: str
    status: Status
    safety: Safety
    message: str
    doc_url: str


@dataclass(frozen=True)
class Changed:
    """A file whose code the rules changed.

    Attributes:
        path: Path relative to the migrated root.
        sites: Every site found, in source order.
        old_code: The original text.
        new_code: The migrated text (same encoding and line endings).
        check_problems: Problems the self-check found in ``new_code`` that were not in
            ``old_code`` (undefined names, unused imports); empty when clean.
        encoding: The file's text encoding, kept when it is written.
    """

    path: str
    sites: tuple[Site, ...]
    old_code: str
    new_code: str
    check_problems: tuple[str, ...] = ()
    encoding: str = "utf-8"
    kind: Literal["changed"] = "changed"


@dataclass(frozen=True)
class Unchanged:
    """A file the rules read but did not change (it may still have manual sites)."""

    path: str
    sites: tuple[Site, ...] = ()
    kind: Literal["unchanged"] = "unchanged"


@dataclass(frozen=True)
class Skipped:
    """A file that was not migrated on purpose (a non-Python source listed for review)."""

    path: str
    reason: str
    kind: Literal["skipped"] = "skipped"


@dataclass(frozen=True)
class Failed:
    """A file that could not be read, parsed or migrated; it is not written.

    Attributes:
        path: Path relative to the migrated root.
        error: One sentence naming the cause.
        sites: The sites the rules found when the file parsed but its migrated code was
            refused (it did not compile): none was applied, so fixes are listed as
            ``manual`` with the reason; empty for a file that could not be read or parsed.
    """

    path: str
    error: str
    sites: tuple[Site, ...] = ()
    kind: Literal["failed"] = "failed"


FileResult = Changed | Unchanged | Skipped | Failed


@dataclass(frozen=True)
class VerifyResult:
    """Outcome of the ``--verify`` command run against the migrated code."""

    command: str
    cwd: str
    returncode: int
    output_tail: str

    @property
    def ok(self) -> bool:
        """Whether the command exited with status 0."""
        return self.returncode == 0


@dataclass(frozen=True)
class MigrationReport:
    """Everything one migration found and did.

    Attributes:
        root: The migrated file or folder, as given.
        target: The rule set name, e.g. ``accelerator``.
        tool_version: tensorsight's version.
        ruleset_version: The rule set's version.
        mode: ``dry-run``, ``output`` (``-o``) or ``write`` (in place).
        files: One result per file, sorted by path.
        output_dir: Where the migrated copy went (``-o`` mode), else ``None``.
        unsafe_fixes: Whether unsafe fixes were applied.
        verify: The ``--verify`` outcome, if one was asked for.
        extra_sites: Findings that are not rule sites of a Python file (e.g. TensorFlow
            scripts), already in :class:`Site` form.
        schema_version: :data:`SCHEMA_VERSION` of this shape.
    """

    root: str
    target: str
    tool_version: str
    ruleset_version: str
    mode: Literal["dry-run", "output", "write"]
    files: tuple[FileResult, ...]
    output_dir: str | None = None
    unsafe_fixes: bool = False
    verify: VerifyResult | None = None
    extra_sites: tuple[Site, ...] = ()
    schema_version: int = field(default=SCHEMA_VERSION)

    @property
    def sites(self) -> tuple[Site, ...]:
        """All sites of all files, in file then source order."""
        out: list[Site] = []
        for result in self.files:
            if isinstance(result, Changed | Unchanged | Failed):
                out.extend(result.sites)
        out.extend(self.extra_sites)
        return tuple(out)

    @property
    def changed(self) -> tuple[Changed, ...]:
        """The files whose code changed."""
        return tuple(r for r in self.files if isinstance(r, Changed))

    @property
    def failed(self) -> tuple[Failed, ...]:
        """The files that could not be read or parsed."""
        return tuple(r for r in self.files if isinstance(r, Failed))

    @property
    def check_problems(self) -> tuple[str, ...]:
        """Self-check problems of all changed files, each prefixed with its path."""
        return tuple(f"{c.path}: {p}" for c in self.changed for p in c.check_problems)

    def counts(self) -> dict[str, int]:
        """Summary counts: files per kind and sites per status."""
        kinds = Counter(r.kind for r in self.files)
        statuses = Counter(s.status for s in self.sites)
        out = {f"files_{k}": kinds.get(k, 0) for k in ("changed", "unchanged", "skipped", "failed")}
        out.update({s: statuses.get(s, 0) for s in STATUSES})
        return out

    @property
    def needs_attention(self) -> bool:
        """True when manual or unsupported sites remain (``--strict`` exits 1 then)."""
        return any(s.status in ("manual", "unsupported") for s in self.sites)

    def diff(self) -> str:
        """Unified diff of every changed file (``a/`` = original, ``b/`` = migrated)."""
        import difflib

        parts: list[str] = []
        for c in self.changed:
            parts.extend(
                difflib.unified_diff(
                    c.old_code.splitlines(keepends=True),
                    c.new_code.splitlines(keepends=True),
                    fromfile=f"a/{c.path}",
                    tofile=f"b/{c.path}",
                )
            )
        return "".join(p if p.endswith("\n") else p + "\n" for p in parts)
