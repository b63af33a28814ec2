"""What a migration rule sees: :class:`RuleContext`, one per file and rule set.

Alias resolution (``qname``, ``is_torch_value``), the facts the rules share (data flow of
CUDA values, assignment counts per scope), node builders for the device prologue
(``device``, ``device_type``, ``guarded``) and :meth:`RuleContext.fix` /
:meth:`RuleContext.report` / :meth:`RuleContext.drift` to record findings.
:mod:`.transform` holds the traversal that calls the rules with it.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import TypeVar, cast

import libcst as cst

from tensorsight.migrate._bindings import ANY, EMPTY_BINDINGS, Bindings, Key, collect_bindings
from tensorsight.migrate._flow import (
    EMPTY_FLOW,
    USE_KINDS,
    External,
    FlowFacts,
    attribute_alias,
    collect_flow,
    cst_flow_key,
    cst_item,
)
from tensorsight.migrate._resolve import ModuleFacts, dotted_name
from tensorsight.migrate._values import CHAINS
from tensorsight.migrate.model import Safety, Status
from tensorsight.migrate.rule import MigrationRule

__all__ = ["Finding", "RuleContext", "attr_chain", "code_of"]

_EMPTY = cst.Module(body=[])
#: Attributes of a tensor or module that are tensors or modules (``p.data``, ``ddp.module``).
_PARTS = frozenset({"data", "grad", "module", "weight", "bias"})
_N = TypeVar("_N", bound=cst.CSTNode)


def code_of(node: cst.CSTNode) -> str:
    """Source text of one node."""
    return _EMPTY.code_for_node(node)


def attr_chain(dotted: str) -> cst.Name | cst.Attribute:
    """Build ``a.b.c`` as a LibCST expression."""
    first, *rest = dotted.split(".")
    expr: cst.Name | cst.Attribute = cst.Name(first)
    for part in rest:
        expr = cst.Attribute(value=expr, attr=cst.Name(part))
    return expr


@dataclass
class Finding:
    """One fix or report a rule recorded, before it becomes a :class:`~.model.Site`."""

    rule: type[MigrationRule]
    node: cst.CSTNode
    api: str
    status: Status
    safety: Safety
    message: str
    top: int = -1


class RuleContext:
    """What a rule can ask and do while it visits one module.

    Rules never touch files or print; they build nodes with the helpers below and record
    what they did with :meth:`fix` and :meth:`report`.
    """

    def __init__(
        self,
        facts: ModuleFacts,
        *,
        unsafe_fixes: bool,
        target: str,
        tree: ast.Module | None = None,
        external: External | None = None,
    ) -> None:
        self.facts = facts
        self._tree = tree
        self._external = external
        self._flow: FlowFacts | None = None
        self._bindings: Bindings | None = None
        self.unsafe_fixes = unsafe_fixes
        self.target = target
        self.findings: list[Finding] = []
        self.need_device = False
        self.need_torch = False
        self.imports_to_add: list[tuple[str, str | None]] = []
        self.releases: list[cst.CSTNode] = []
        self.added: list[cst.CSTNode] = []
        self.guards: set[int] = set()
        self._claimed: set[int] = set()
        self._weak: list[Finding] = []
        self.device_name = _unique("_device", facts.names)
        self.current_top = -1  # index of the top-level statement being visited
        self._scope: list[str] = []  # names of the def/class statements being visited
        #: Names tested by the ``if name:`` blocks around the node being visited (their
        #: bodies only): a guard on one of them would be redundant.
        self.true_names: list[str] = []
        self._device_refs = 0
        self._torch_refs = 0
        module_alias = next(
            (
                name
                for name, b in facts.bindings.items()
                if b.qualified == "torch"
                and b.module == "torch"
                and name in facts.module_level_imports
            ),
            None,
        )
        torch = facts.bindings.get("torch")
        imported_locally = (
            torch is not None and torch.qualified == "torch" and torch.module == "torch"
        )
        # Expressions use the module-level alias, else the `torch` that functions import
        # locally; the module-level prologue needs a module-level binding.
        self._torch = module_alias or ("torch" if imported_locally else None)
        self.torch_at_module_level = module_alias is not None

    # ---------------------------------------------------------------- questions
    def qname(self, node: cst.CSTNode) -> str | None:
        """Fully qualified name of a Name/Attribute chain after alias resolution."""
        name = dotted_name(node)
        if name is None:
            return None
        root, _, rest = name.partition(".")
        bound = self.facts.bindings.get(root)
        if bound is None:
            return None
        return bound.qualified + ("." + rest if rest else "")

    def is_torch_value(self, node: cst.BaseExpression) -> bool:
        """Whether ``node`` is known to be a tensor or module (its ``.cuda()`` is safe).

        Known: names and ``self.<attr>`` in ``facts.torch_values`` (see :mod:`._values`),
        subscripts of them, their ``.data``/``.grad``/``.module``/``.weight``/``.bias``,
        instances of ``nn.Module`` subclasses (``Net()``), torch calls and tensor/module
        method chains on any of these (``Net().to(d).eval()``).
        """
        if isinstance(node, cst.Name):
            return node.value in self.facts.torch_values
        if isinstance(node, cst.Attribute):
            if (
                isinstance(node.value, cst.Name)
                and f"{node.value.value}.{node.attr.value}" in self.facts.torch_values
            ):
                return True
            return node.attr.value in _PARTS and self.is_torch_value(node.value)
        if isinstance(node, cst.Subscript):
            return self.is_torch_value(node.value)
        if isinstance(node, cst.Call):
            if dotted_name(node.func) in self.facts.builders:  # torchvision.models.resnet50()
                return True
            if isinstance(node.func, cst.Name):
                if node.func.value in self.facts.module_classes:
                    return True
                if node.func.value in self.facts.torch_values:
                    return False
            qualified = self.qname(node.func)
            if qualified is not None:
                if qualified.split(".")[0] in ("tensorflow", "keras", "horovod"):
                    return False
                return not qualified.startswith("torch.cuda.")
            if isinstance(node.func, cst.Attribute) and (
                node.func.attr.value in CHAINS or node.func.attr.value.endswith("_")
            ):  # in-place methods (`random_`) return the tensor too
                return self.is_torch_value(node.func.value)
        return False

    @property
    def flow(self) -> FlowFacts:
        """Where values go through the module's names (:mod:`._flow`), computed on first use."""
        if self._flow is None:
            self._flow = (
                EMPTY_FLOW
                if self._tree is None
                else collect_flow(self._tree, self.bindings, self._external)
            )
        return self._flow

    def flow_key(self, node: cst.BaseExpression | str) -> Key | None:
        """The flow key (:class:`~._flow.FlowFacts`) of ``node`` read in the scope being
        visited; a string is an attribute slot (a dict key, an option's ``dest``)."""
        if isinstance(node, str):
            return ANY, node
        return cst_flow_key(self.bindings, self.scope, node, self.flow.modules)

    def flow_holds(self, kind: str, node: cst.BaseExpression | str | None) -> bool:
        """Whether the key of ``node`` is in the prepass's set ``kind`` (``"backend"``,
        ``"device"``, ``"map_location"``, ``"index"``, ``"device_type"``, ``"cuda_string"``,
        ``"indexed"``, ``"index_list"``; an item ``xs[i]`` of an ``index_list`` is an
        ``"index"``): what the value is used for or holds, here or across imports."""
        if node is None:
            return False
        if kind == "index" and isinstance(node, cst.Subscript):  # device_ids[0]
            item = cst_item(node)
            return item is not None and self.flow_holds("index_list", item)
        key = self.flow_key(node)
        if key is None:
            return False
        keys: frozenset[Key] = getattr(self.flow, kind)
        if key in keys:
            return True
        alias = attribute_alias(key)  # a field used as `cfg.x`: a use of the field too
        return alias is not None and kind in USE_KINDS and alias in keys

    def used_where(self, kind: str, node: cst.BaseExpression | str) -> str:
        """``"in this file"``, or ``"in <file>:<line>"`` when ``node`` is used that way only
        in another module of the project."""
        key = self.flow_key(node)
        for k in (key, None if key is None else attribute_alias(key)):
            if k is not None and k in getattr(self.flow, kind):
                where = self.flow.elsewhere.get((kind, k))
                return f"in {where}" if where else "in this file"
        return "in this file"

    @property
    def scope(self) -> tuple[str, ...]:
        """Names of the ``def``/``class`` statements around the node being visited."""
        return tuple(self._scope)

    def assigned(self, node: cst.BaseExpression) -> tuple[int, ...]:
        """Lines of the assignments of the name, ``self`` attribute or slot ``node`` refers
        to in the scope being visited (:mod:`._bindings`); two or more: not a single value."""
        return self.bindings.assigned(self.scope, node)

    @property
    def bindings(self) -> Bindings:
        """How often each name of the module is assigned, per scope (:mod:`._bindings`),
        computed on first use."""
        if self._bindings is None:
            self._bindings = EMPTY_BINDINGS if self._tree is None else collect_bindings(self._tree)
        return self._bindings

    def is_claimed(self, node: cst.CSTNode) -> bool:
        """Whether an earlier rule already reported ``node``."""
        return id(node) in self._claimed

    # ---------------------------------------------------------------- node builders
    def torch_attr(self, dotted: str) -> cst.Name | cst.Attribute:
        """``torch.<dotted>`` spelled with the module's own alias (``T.accelerator...``)."""
        if self._torch is None:
            self.need_torch = True
            self._torch_refs += 1
        return attr_chain(f"{self._torch or 'torch'}.{dotted}")

    def device(self) -> cst.Name:
        """The prologue's device object (``_device``); adds the prologue."""
        self.need_device = True
        self._device_refs += 1
        return cst.Name(self.device_name)

    def device_type(self) -> cst.Attribute:
        """``_device.type``: the device string (``"cuda"``, ``"npu"``, ``"cpu"``...)."""
        return cst.Attribute(value=self.device(), attr=cst.Name("type"))

    def indexed_device(self, index: cst.BaseExpression) -> cst.Call:
        """``torch.device(_device.type, index)``."""
        return cst.Call(
            func=self.torch_attr("device"),
            args=[cst.Arg(self.device_type()), cst.Arg(index)],
        )

    def guarded(self, expr: cst.BaseExpression, default: cst.BaseExpression) -> cst.IfExp:
        """``expr if torch.accelerator.is_available() else default``.

        Used for accelerator-only calls (memory queries, ``set_device_index``) so that the
        code still runs on the CPU; as a whole statement with ``default`` ``None`` it
        becomes an ``if`` block.
        """
        test = cst.Call(func=self.torch_attr("accelerator.is_available"))
        node = cst.IfExp(
            test=test, body=expr, orelse=default, lpar=[cst.LeftParen()], rpar=[cst.RightParen()]
        )
        self.guards.add(id(node))
        return node

    def discard(self, node: cst.CSTNode | str) -> None:
        """Forget a built node that will not be used (so it adds no prologue or import)."""
        code = node if isinstance(node, str) else code_of(node)
        self._device_refs -= len(re.findall(rf"\b{self.device_name}\b", code))
        if self._torch is None:
            self._torch_refs -= len(re.findall(r"\btorch\b", code))

    def add_import(self, module: str, obj: str | None = None) -> None:
        """Add ``import module`` / ``from module import obj`` unless already there."""
        self.imports_to_add.append((module, obj))

    # ---------------------------------------------------------------- recording
    def fix(
        self,
        rule: MigrationRule,
        original: cst.CSTNode,
        replacement: _N,
        *,
        message: str,
        updated: _N | None = None,
        api: str | None = None,
        safety: Safety = "safe",
        why_unsafe: str = "",
    ) -> _N:
        """Apply (or, for an unsafe fix without ``--unsafe-fixes``, only report) a fix.

        Args:
            rule: The rule making the fix.
            original: The original node (position and import clean-up come from it).
            replacement: The new node.
            message: What the fix does, e.g. "Use the device-neutral accelerator API.".
            updated: The node as updated so far, returned when the fix is not applied.
            api: The fully qualified API (defaults to the qualified name of the callee).
            safety: ``safe`` or ``unsafe``.
            why_unsafe: For unsafe fixes, why the fix may change behaviour.

        Returns:
            The node to put in the tree: ``replacement`` when applied, else ``updated``
            (or ``original``).
        """
        new_code = code_of(replacement)
        api = api or self._api_of(original)
        if safety == "safe" or self.unsafe_fixes:
            note = f" (unsafe fix: {why_unsafe})" if safety == "unsafe" else ""
            self._record(
                rule, original, api, "rewritten", safety, f"{message} Now: `{new_code}`{note}."
            )
            self.releases.append(original)
            self.added.append(replacement)
            return replacement
        self.discard(new_code)
        text = (
            f"{message} Unsafe fix, not applied because {why_unsafe}: `{new_code}`; "
            "apply it by hand or pass --unsafe-fixes."
        )
        self._record(rule, original, api, "manual", "unsafe", text)
        return updated if updated is not None else cast(_N, original)

    def report(
        self,
        rule: MigrationRule,
        original: cst.CSTNode,
        *,
        status: Status,
        message: str,
        api: str | None = None,
        safety: Safety = "none",
        weak: bool = False,
    ) -> None:
        """Record a site without changing code (manual, unsupported, kept or a warning).

        A ``weak`` report is dropped when a later (enclosing) node's rule claims the node
        with :meth:`claim` or reports the node itself, so that a fix of the whole call does
        not also list its parts.
        """
        if weak:
            api = api or self._api_of(original)
            self._weak.append(
                Finding(type(rule), original, api, status, safety, message, self.current_top)
            )
            return
        self._record(rule, original, api or self._api_of(original), status, safety, message)

    def drift(
        self, rule: MigrationRule, original: cst.CSTNode, message: str, *, api: str | None = None
    ) -> None:
        """Record that an applied rewrite of ``original`` can change numbers or behaviour
        on some device: a ``kept`` row whose ``message`` (starting "Drift:") spells out the
        difference. Call it only when the fix was applied."""
        self._record(rule, original, api or self._api_of(original), "kept", "none", message)

    def claim(self, node: cst.CSTNode) -> None:
        """Mark ``node`` as handled, which drops weak reports about it."""
        self._claimed.add(id(node))

    def all_findings(self) -> list[Finding]:
        """Findings in recording order, weak ones only when nobody claimed their node.

        A weak report of a string literal is also dropped when the string lies inside a
        node that has a finding of its own (``torch.device("cuda")`` rewritten as a whole).
        """
        weak = [f for f in self._weak if id(f.node) not in self._claimed]
        if any(isinstance(f.node, _STRINGS) for f in weak):
            inside: set[int] = set()
            for f in self.findings:
                if not isinstance(f.node, cst.Module):
                    _descendants(f.node, inside)
            weak = [f for f in weak if not isinstance(f.node, _STRINGS) or id(f.node) not in inside]
        return self.findings + weak

    def _api_of(self, node: cst.CSTNode) -> str:
        target = node.func if isinstance(node, cst.Call) else node
        return self.qname(target) or dotted_name(target) or type(node).__name__

    def _record(
        self,
        rule: MigrationRule,
        node: cst.CSTNode,
        api: str,
        status: Status,
        safety: Safety,
        message: str,
    ) -> None:
        self._claimed.add(id(node))
        top = -1 if isinstance(node, cst.Module) else self.current_top
        self.findings.append(Finding(type(rule), node, api, status, safety, message, top))


_STRINGS = (cst.SimpleString, cst.FormattedString)


def _descendants(node: cst.CSTNode, out: set[int]) -> None:
    for child in node.children:
        if id(child) not in out:
            out.add(id(child))
            _descendants(child, out)


def _unique(base: str, taken: frozenset[str]) -> str:
    name, n = base, 1
    while name in taken:
        name, n = f"{base}_{n}", n + 1
    return name
