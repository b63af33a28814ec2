"""The registry, rule metadata, and the rule reference in docs/migrate.md."""

import re

import pytest

from tensorsight.errors import UsageError
from tensorsight.migrate.rulesets import RULESETS, RuleSet, load_ruleset
from tests.conftest import ROOT

DOC = (ROOT / "docs" / "migrate.md").read_text(encoding="utf-8")


def test_builtin_targets_load():
    assert RULESETS.names()[:4] == ["accelerator", "npu", "xpu", "mps"]
    assert all(status.available for status in RULESETS.status())


@pytest.mark.parametrize("name", ["accelerator", "npu", "xpu", "mps"])
def test_rule_metadata_and_docs(name):
    ruleset = load_ruleset(name)
    assert isinstance(ruleset, RuleSet)
    ids = [rule.RULE_ID for rule in ruleset.rules]
    assert len(ids) == len(set(ids)), "a rule appears twice"
    for rule in ruleset.rules:
        assert re.fullmatch(r"[a-z]+/[a-z0-9-]+", rule.RULE_ID), rule
        assert rule.DESCRIPTION
        assert rule.__doc__
        assert rule.TRIGGERS
        assert f"### `{rule.RULE_ID}`" in DOC, f"docs/migrate.md has no section for {rule.RULE_ID}"
        anchor = rule.doc_url().rsplit("#", 1)[1]
        assert anchor == rule.RULE_ID.replace("/", "")


def test_unknown_target_lists_choices():
    with pytest.raises(
        UsageError, match=r"Did you mean 'mps'\?.*Choices: accelerator, npu, xpu, mps"
    ):
        load_ruleset("msp")


def test_vendor_rule_sets_extend_accelerator():
    from tensorsight.migrate.rules.accelerator import RULES, TF_RULES

    base = load_ruleset("accelerator").rules[: len(RULES)]
    assert base == RULES
    # the TensorFlow rules are the accelerator target's only (vendors report TF scripts)
    assert load_ruleset("accelerator").rules[len(RULES) :] == TF_RULES
    for name in ("npu", "xpu", "mps"):
        assert not set(TF_RULES) & set(load_ruleset(name).rules)
        assert load_ruleset(name).rules[: len(base)] == base
