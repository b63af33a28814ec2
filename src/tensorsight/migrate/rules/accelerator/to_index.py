"""``accelerator/to-index``: integer device indices in device slots.

``.to(0)`` and ``device=0`` mean "CUDA device 0"; the fix names the device type.
``.to(local_rank)`` (a name that looks like a device index) is an unsafe fix: the same
call with a dtype or device variable must not change; it is safe when every assignment
of the name in the file is an integer (``local_rank = int(os.environ["LOCAL_RANK"])``,
see :mod:`tensorsight.migrate._flow`), also when the name is a parameter of a script's
function every call of which passes an integer (the ``mp.spawn`` target's first
parameter is the process index), for integer arithmetic of such names (``rank * 2``),
and for an item of a list of such integers (``device_ids[0]`` after ``device_ids =
list(range(a, b))``).

Example::

    x.to(0)                 x.to(torch.device(_device.type, 0))
    x.to(local_rank)        x.to(torch.device(_device.type, local_rank))   # unsafe
"""

from __future__ import annotations

import ast
import re

import libcst as cst

from tensorsight.migrate._flow import ast_item, collect_flow, cst_is_index, slot_of
from tensorsight.migrate.context import RuleContext
from tensorsight.migrate.model import Safety
from tensorsight.migrate.rule import MigrationRule, Need
from tensorsight.migrate.rules.accelerator.tables import INDEX_NAME_HINTS

RULE_ID = "accelerator/to-index"
DESCRIPTION = "x.to(int) and device=int -> torch.device(_device.type, int)."

#: A device slot (``device=`` or the first argument of ``to(``) holding a number or a name
#: with an index hint; backslash continuations and parentheses may come between.
_SLOT = (
    r"(?:\bdevice[\s\\]*=|\bto\b[\s()\\]*\()[\s(*\\]*"
    r"(?:\d|(?i:[\w.\s\\]*(?:" + "|".join(map(re.escape, INDEX_NAME_HINTS)) + r")))"
)

#: A device slot holding any name: fixed when every assignment of the name is an integer.
_NAMED_SLOT = r"(?:\bdevice[\s\\]*=|\bto\b[\s()\\]*\()[\s(*\\]*[^\W\d]"


#: The name chain in a device slot (``self.gpu_id`` in ``.to(self.gpu_id)``) and what follows.
_SLOT_NAME = re.compile(r"(?:\bdevice[\s\\]*=|\bto\b[\s()\\]*\()[\s(*\\]*([^\W\d][\w.]*)\s*(\[?)")


_ASSIGN = r"\s*(?::[^=\n]*)?[-+*/%]?=(?!=)\s*[-+(\s]*"
_INT_SOURCE = r"(?:\d|(?:\w+\.)*(?:int|get_rank|get_local_rank|current_device\w*)\s*\()"
#: Ways a name ``{n}`` is given an integer directly: ``n = 0``, ``n = int(...)``, ``f(n=0)``,
#: ``n: int``, a dict key ``"n": 0``; and ways only the prepass follows (loops, ``with ... as``,
#: walrus, argparse options): taken as integers here. ``{n}`` is an alternation of names.
_DIRECT = (
    r"\b(?:{n})\b(?:"
    + _ASSIGN
    + _INT_SOURCE
    + r"|\s*:\s*int\b|\s*:=)"
    + r"|for\s+\(?(?:{n})\b|as\s+\(?(?:{n})\b|dest\s*=\s*[\"'](?:{n})\b"
    + r"|[\"'](?:-+(?:{n})[\"']|(?:{n})[\"']\s*:\s*[-+(\s]*"
    + _INT_SOURCE
    + r")"
)
#: ``n = a.b.m`` (a copy) or ``n = m * 2`` (arithmetic): ``n`` is an integer if ``m`` is;
#: the group is ``m``. Searched as a lookahead, so overlapping assignments all count.
_COPY = r"(?=\b(?:{n})\b" + _ASSIGN + r"(?:\w+\.)*(\w+)(?![ \t]*[\w.(\[]))"


#: Names in slots that are never integers (``device=None``).
_CONSTANTS = frozenset({"None", "True", "False"})


def _could_be_index(text: str) -> bool:
    """A cheap superset of what :meth:`ReplaceDeviceIndexRule.leave_Call` fixes by data
    flow, on the raw text (comments and strings only add candidates): some name in a device
    slot is, by name, given an integer directly or through copies and arithmetic of such
    names, or bound in a way only the prepass follows; or the file has an ``if __name__ ==
    "__main__":`` block (parameters then take their call sites' values).

    The search goes backwards from the slots' names (a few) to what they are copied from,
    so each round is one regular expression over the text naming those few names; a search
    for every assignment of every name costs ten times more on a real project.
    """
    names = set()
    for m in _SLOT_NAME.finditer(text):
        if m.group(2):
            return True  # a subscript: the slot is its key (args["rank"])
        names.add(m.group(1).rsplit(".", 1)[-1])
    names -= _CONSTANTS
    if not names:
        return False
    if "__main__" in text:
        return True
    seen = set(names)
    while names:
        alternation = "|".join(map(re.escape, sorted(names)))
        if re.search(_DIRECT.format(n=alternation), text, re.M):
            return True
        names = set(re.findall(_COPY.format(n=alternation), text, re.M)) - seen
        seen |= names
    return False


def _has_index_names(text: str) -> bool:
    """Whether some device slot of the file (``.to(x)``, ``device=x``) holds a name the
    flow prepass knows to be an integer, or integer arithmetic of such names (what
    :meth:`ReplaceDeviceIndexRule.leave_Call` fixes as safe); true when the file does not
    parse (the parser then reports it)."""
    if not _could_be_index(text):
        return False
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return True
    flow = collect_flow(tree)
    index, lists = flow.index_slots, flow.index_list_slots
    if not index and not lists:
        return False
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        slots = [k.value for k in node.keywords if k.arg == "device"]
        if isinstance(node.func, ast.Attribute) and node.func.attr == "to" and node.args:
            slots.append(node.args[0])
        if any(_ast_is_index(v, index, lists) for v in slots):
            return True
    return False


def _ast_is_index(
    node: ast.expr, index: frozenset[str], lists: frozenset[str] = frozenset()
) -> bool:
    """:func:`~tensorsight.migrate._flow.cst_is_index` on Python's ``ast`` (a superset:
    any operator, a starred value, slots compared by name)."""
    if isinstance(node, ast.Starred):
        node = node.value
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.BinOp):
        return _ast_is_index(node.left, index, lists) and _ast_is_index(node.right, index, lists)
    if isinstance(node, ast.Subscript) and (item := ast_item(node)) is not None:
        return slot_of(item) in lists
    slot = slot_of(node)
    return slot is not None and slot in index


class ReplaceDeviceIndexRule(MigrationRule):
    """Rewrites integer device indices passed where a device is expected."""

    RULE_ID = RULE_ID
    DESCRIPTION = DESCRIPTION
    TRIGGERS = ("to(", "device")
    TOKENS = (Need(code=_SLOT), Need(code=_NAMED_SLOT, confirm=_has_index_names))

    def leave_Call(
        self, original: cst.Call, updated: cst.Call, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        if len(original.args) != len(updated.args):
            return None  # an earlier rule changed the arguments; it owns this call
        is_to = isinstance(original.func, cst.Attribute) and original.func.attr.value == "to"
        args = list(updated.args)
        changed = False
        for i, (old, new) in enumerate(zip(original.args, updated.args, strict=True)):
            name = old.keyword.value if old.keyword is not None else None
            if not ((is_to and i == 0 and name is None) or name == "device"):
                continue
            value = old.value
            safety: Safety
            if isinstance(value, cst.Integer):
                safety = "safe"
            elif isinstance(
                value, cst.Name | cst.Attribute | cst.BinaryOperation | cst.Subscript
            ) and (cst_is_index(value, lambda n: ctx.flow_holds("index", n))):
                safety = "safe"  # every value of the name is an integer, or of the list
            elif isinstance(value, cst.Name | cst.Attribute) and _looks_like_index(value):
                safety = "unsafe"
            else:
                continue
            fixed = ctx.fix(
                self,
                old.value,
                ctx.indexed_device(new.value),
                message="An integer device means a CUDA device; name the device type.",
                api=".to(int)" if name is None else "device=int",
                safety=safety,
                why_unsafe="the variable may hold a dtype or a device rather than an index",
            )
            args[i] = new.with_changes(value=fixed)
            changed = True
        return updated.with_changes(args=args) if changed else None


def _looks_like_index(node: cst.Name | cst.Attribute) -> bool:
    name = (node.value if isinstance(node, cst.Name) else node.attr.value).lower()
    return any(hint in name for hint in INDEX_NAME_HINTS)
