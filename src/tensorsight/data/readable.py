"""Which nodes of a computational graph the graph view's "readable" toggle hides.

The toggle hides gradient and optimizer nodes, so that a recorded training step reads like
the model. Three rules, the first two seeding the third:

1. **Names** (MindInsight's convention): a scope segment starting with ``Gradients`` /
   ``gradients`` (MindSpore's backward graph) or ``optimizer`` (``optimizer-Momentum``); an op
   type ending in ``Grad`` (``ReluGrad``, ``BiasAddGrad``) or containing ``Backward`` /
   ``_backward`` (``aten::threshold_backward``).
2. **Parameter updates**: an op that writes a parameter in place: a torch in-place op (op type
   ending in ``_``: ``aten::add_``, ``aten::_foreach_mul_``) or a MindSpore ``Assign*`` /
   ``Apply*`` op, with a ``Parameter`` node among its inputs.
3. **Training step**: when rule 2 finds a parameter update and the graph has outputs
   (``IO Node`` nodes with inputs, e.g. ``output/output.0``), only the *forward part* stays:
   the outputs and every node they depend on. This is what catches the backward and optimizer
   ops whose names say nothing (``aten::mm``, ``aten::t``, ``aten::sum`` computing gradients,
   ``aten::ones_like`` seeding the backward, the ``aten::detach`` of a tensor saved for it,
   the ``aten::zeros_like`` / ``aten::_foreach_lerp_`` of Adam's moment buffers, the
   optimizer's ``profiler::`` markers).
4. **Only feeding hidden nodes**: a node all of whose consumers (data and control) are hidden
   is hidden too, applied until nothing changes. This covers graphs without outputs, such as
   MindSpore's, whose last node consumes everything: its optimizer state and hyper-parameters
   (``moments.*``, ``learning_rate``) and the ``UpdateState`` / ``MakeTuple`` nodes that only
   serve the updates.

Graph inputs and outputs (``IO Node``) are never hidden. A forward-only graph has no node
that rules 1 or 2 hide, so the toggle hides nothing there.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["auxiliary_nodes", "is_gradient_or_optimizer_name", "is_parameter_update"]

_SCOPE_RE = re.compile(r"(^|/)([Gg]radients|[Oo]ptimizer)[^/]*/")
_OP_RE = re.compile(r"Grad$|Backward|_backward")
_CHEAP = ("radients", "ptimizer", "Grad", "ackward")  # one of these is in every name rule 1 hides
_MS_UPDATE_RE = re.compile(r"^(Assign(Add|Sub)?|Apply[A-Z]\w*)$")
_PARAMETER_OPS = frozenset({"Parameter"})
_NEVER_HIDDEN = frozenset({"IO Node"})


def is_gradient_or_optimizer_name(path: str, op: str) -> bool:
    """Rule 1: the node's scoped name or op type says it is a gradient or optimizer node."""
    if not any(c in path or c in op for c in _CHEAP):  # most nodes: no regex needed
        return False
    return bool(_SCOPE_RE.search(path) or _OP_RE.search(op) or _OP_RE.search(path))


def _op_name(op: str) -> str:
    """``aten::add_`` / ``aten.add_.Tensor`` -> ``add_``."""
    name = op.split("::")[-1]
    if name.startswith("aten."):
        name = name.split(".")[1] if name.count(".") >= 1 else name
    return name


def _is_update_op(op: str) -> bool:
    name = _op_name(op)
    in_place = name.endswith("_") and not name.endswith("__") and len(name) > 1
    return in_place or bool(_MS_UPDATE_RE.match(name))


def is_parameter_update(op: str, input_ops: Sequence[str]) -> bool:
    """Rule 2: an in-place op or MindSpore update op with a ``Parameter`` input."""
    return _is_update_op(op) and any(o in _PARAMETER_OPS for o in input_ops)


def auxiliary_nodes(
    paths: Sequence[str],
    ops: Sequence[str],
    inputs: Sequence[Sequence[int]],
    control: Sequence[Sequence[int]],
) -> list[int]:
    """Indices of the nodes the readable toggle hides (see the module docstring).

    Args:
        paths: Scoped name of each node.
        ops: Op type of each node.
        inputs: Producer indices of each node's data inputs.
        control: Producer indices of each node's control inputs.

    Returns:
        Sorted node indices.
    """
    n = len(paths)
    hidden = [False] * n
    live = [0] * n  # consumers not (yet) hidden
    consumers: list[list[int]] = [[] for _ in range(n)]
    producers: list[list[int]] = [[] for _ in range(n)]
    for i in range(n):
        for j in (*inputs[i], *control[i]):
            if 0 <= j < n and j != i:
                consumers[j].append(i)
                producers[i].append(j)
                live[j] += 1
    updates = False
    for i in range(n):
        if ops[i] in _NEVER_HIDDEN:
            continue
        if _is_update_op(ops[i]) and any(
            0 <= j < n and ops[j] in _PARAMETER_OPS for j in inputs[i]
        ):
            hidden[i] = updates = True
        elif is_gradient_or_optimizer_name(paths[i], ops[i]):
            hidden[i] = True
    outputs = [i for i in range(n) if ops[i] in _NEVER_HIDDEN and producers[i]]
    if updates and outputs:  # rule 3: keep the outputs and what they depend on
        forward = [False] * n
        stack = list(outputs)
        while stack:
            i = stack.pop()
            if forward[i]:
                continue
            forward[i] = True
            stack.extend(j for j in producers[i] if not forward[j])
        for i in range(n):
            if not forward[i] and ops[i] not in _NEVER_HIDDEN:
                hidden[i] = True
    queue = [i for i in range(n) if hidden[i]]
    while queue:  # rule 4, from each newly hidden node up to its producers
        i = queue.pop()
        for j in producers[i]:
            live[j] -= 1
            if live[j] == 0 and not hidden[j] and ops[j] not in _NEVER_HIDDEN:
                hidden[j] = True
                queue.append(j)
    return [i for i in range(n) if hidden[i]]
