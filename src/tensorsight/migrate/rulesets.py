"""The rule-set registry: target name -> :class:`RuleSet`.

Built-in rule sets are registered as lazy ``"module:attribute"`` strings; third parties add
theirs through the entry-point group ``tensorsight.rulesets`` (the value must point at a
:class:`RuleSet`). A rule set that fails to import is listed as unavailable.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tensorsight._registry import Registry
from tensorsight.errors import RegistryError, UsageError
from tensorsight.migrate.rule import MigrationRule

__all__ = ["RULESETS", "RuleSet", "load_ruleset"]


@dataclass(frozen=True)
class RuleSet:
    """The ordered rules for one migration target.

    Attributes:
        name: Target name (``accelerator``, ``npu``, ...): a public, stable key.
        version: Bumped whenever a rule's output changes; recorded in every report.
        description: One line for ``--help`` and the docs.
        rules: Rule classes in application order.
        side_effect_imports: Modules the rule set imports only for their side effects
            (e.g. ``torch_npu``); the self-check does not count them as unused.
    """

    name: str
    version: str
    description: str
    rules: tuple[type[MigrationRule], ...]
    side_effect_imports: tuple[str, ...] = field(default=())

    def instantiate(self) -> list[MigrationRule]:
        """One instance of each rule, in order."""
        return [rule() for rule in self.rules]

    @property
    def triggers(self) -> tuple[str, ...]:
        """Substrings of which a file must contain one for any rule to matter."""
        out: list[str] = []
        for rule in self.rules:
            out.extend(t for t in rule.TRIGGERS if t not in out)
        return tuple(out)


RULESETS: Registry[RuleSet] = Registry("migration target", entry_point_group="tensorsight.rulesets")
RULESETS.add("accelerator", "tensorsight.migrate.rules.accelerator:RULESET")
RULESETS.add("npu", "tensorsight.migrate.rules.npu:RULESET")
RULESETS.add("xpu", "tensorsight.migrate.rules.xpu:RULESET")
RULESETS.add("mps", "tensorsight.migrate.rules.mps:RULESET")


def load_ruleset(name: str) -> RuleSet:
    """The rule set called ``name``.

    Raises:
        UsageError: ``name`` is unknown (the message lists the choices) or broken.
    """
    try:
        ruleset = RULESETS.get(name)
    except RegistryError as exc:
        msg = str(exc)
        raise UsageError(msg) from exc
    if not isinstance(ruleset, RuleSet):  # a third-party entry point may point anywhere
        msg = f"Migration target {name!r} is not a RuleSet (got {type(ruleset).__name__})."  # type: ignore[unreachable]
        raise UsageError(msg)
    return ruleset
