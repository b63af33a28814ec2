"""Pair the ops of two dumps: user mapping first, then sequence alignment per direction.

Ops are paired per direction (forward ops never pair with backward ones) by aligning the
two execution-order sequences of op keys ``(op, module_path, tensor shapes)`` with a
longest-matching-blocks alignment (:class:`difflib.SequenceMatcher`, no junk heuristic).
This survives what breaks exact name matching: ops inserted or removed on one side
(autocast's ``_to_copy`` casts, an extra call of one op) shift the call counters but not
the alignment (an in-place variant keys as its op: ``add_`` pairs with ``add``, and
``_reshape_alias`` with ``view``, which is what torch runs under a dispatch mode). Inside a
replaced block, ops with the same key (else the same name) are paired in order
(``match="order"``); then leftover ops with identical keys anywhere in the
direction are paired (reordered ops, such as gradient accumulation order). Every op left
over is returned unmatched with a reason, never dropped.

A user mapping (YAML or JSON) pairs groups of ops explicitly, for N:M cases such as one fused
op on one side and its decomposition on the other::

    - bench: "#12"                      # an op by its index
      target: ["#15", "#16", "#17"]     # a group: compare first inputs and last outputs
    - bench: "aten.native_layer_norm.default@Model.blocks.0.ln"  # op@module_path
      target: "aten.layer_norm.default@Model.blocks.0.ln"        # (first occurrence)

A tensorsight dump against an msprobe dump (``formats`` differ) aligns on cross-format keys
instead (:mod:`~tensorsight.compare.names`: call family and name, direction, shapes; no
module path; parameter gradients grouped per module), and the target op's tensors are
renamed after the bench op's so the engine pairs them by name. Same-format matching is
unchanged.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tensorsight.compare import names
from tensorsight.compare.flow import DataFlow, Producer, data_flow
from tensorsight.dumpformat.schema import OpRecord
from tensorsight.errors import CompareError, InputFileError, UsageError

__all__ = ["OpPair", "load_mapping", "match_ops"]


@dataclass(frozen=True)
class OpPair:
    """Bench ops and target ops judged together.

    Attributes:
        bench: Bench ops (one, several for a mapped group, none if target-only).
        target: Target ops (likewise).
        how: ``name`` (aligned, same key), ``order`` (same op name inside a shifted block),
            ``mapping`` (user mapping), ``value`` / ``structure`` (across frameworks, by
            value or by position in the module: :mod:`~tensorsight.compare.crossmatch`) or
            ``unmatched``.
        reason: Why an op is unmatched ("" otherwise).
        layouts: ``(tensor, axes)`` of rows whose target tensor is compared as
            ``target.transpose(axes).reshape(bench shape)`` (a transposed weight, NHWC).
        notes: ``(tensor, why)`` of the bench rows of a paired op left without a counterpart.
        conversions: ``(tensor, (kind, parameter))`` of rows whose target tensor is kept in
            another form and converted before comparing (``("rstd_from_var", eps)``:
            :func:`~tensorsight.compare.crossmatch.convert`).
    """

    bench: tuple[OpRecord, ...]
    target: tuple[OpRecord, ...]
    how: str
    reason: str = ""
    layouts: tuple[tuple[str, tuple[int, ...]], ...] = ()
    notes: tuple[tuple[str, str], ...] = ()
    conversions: tuple[tuple[str, tuple[str, float]], ...] = ()

    @property
    def position(self) -> tuple[int, int]:
        """Sort key: direction, then bench index (target index for target-only ops)."""
        first = (self.bench or self.target)[0]
        return (0 if first.direction == "forward" else 1, first.index)


# ops that do the same thing under another name, by what runs them: a TorchDispatchMode makes
# torch reshape through view and accumulate gradients out of place (docs/formats/dump.md)
_ALIASES = {"aten._reshape_alias.default": "aten.view.default"}
_FAMILIES: dict[str, str] = {}


def op_family(op: str) -> str:
    """An op's name for pairing: ``aten.add_.Tensor`` pairs with ``aten.add.Tensor``."""
    family = _FAMILIES.get(op)
    if family is None:
        family = _ALIASES.get(op, op)
        ns, _, rest = family.partition(".")
        name, dot, overload = rest.partition(".")
        if ns == "aten" and dot and len(name) > 1 and name.endswith("_") and name[-2] != "_":
            family = f"{ns}.{name[:-1]}.{overload}"  # an in-place variant
        _FAMILIES[op] = family
    return family


def _key(op: OpRecord) -> tuple[str, str, tuple[tuple[int, ...], ...]]:
    return (op_family(op.op), op.module_path, tuple(t.shape for t in op.tensors))


@dataclass(frozen=True)
class _Rules:
    """How ops are keyed, named and explained for one pairing (same- or cross-format)."""

    key: Callable[[OpRecord, str], Hashable]
    name: Callable[[OpRecord, str], str]
    formats: tuple[str, str] | None = None

    def only(self, op: OpRecord, side: str) -> OpPair:
        if self.formats is None:
            return _only(op, side)
        reason = names.unmatched_reason(op, side, self.formats)
        if side == "bench":
            return OpPair((op,), (), "unmatched", reason)
        return OpPair((), (op,), "unmatched", reason)

    def pair(self, b: OpRecord, t: OpRecord, how: str) -> OpPair:
        if self.formats is None:
            return OpPair((b,), (t,), how)
        return OpPair((b,), (names.rename_tensors(b, t),), how)


_SAME = _Rules(key=lambda op, _: _key(op), name=lambda op, _: op_family(op.op))


def _cross_name(op: OpRecord, fmt: str) -> str:
    c = names.call_name(op, fmt)
    return c.key if c is not None else f"?{fmt}:{op.op}"


def _rules(formats: tuple[str, str] | None) -> _Rules:
    if formats is None or formats[0] == formats[1]:
        return _SAME
    return _Rules(key=names.cross_key, name=_cross_name, formats=formats)


def _select(selector: str, ops: Sequence[OpRecord], side: str) -> OpRecord:
    sel = selector.strip()
    if sel.startswith("#"):
        try:
            idx = int(sel[1:])
        except ValueError:
            idx = -1
        for op in ops:
            if op.index == idx:
                return op
    else:
        name, _, module = sel.partition("@")
        for op in ops:
            if op.op == name and (not module or op.module_path == module):
                return op
    msg = (
        f"Mapping selector {selector!r}: no such op in the {side} dump. Expected '#<index>' or "
        "'<op>@<module_path>' naming an op of that dump."
    )
    raise UsageError(msg)


def load_mapping(path: str | Path) -> list[dict[str, list[str]]]:
    """Read a mapping file (``.json``, ``.yaml``/``.yml``) into ``[{bench: [...], target: [...]}]``.

    Raises:
        InputFileError: The file is missing, unreadable or malformed.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        msg = f"Mapping file {str(p)!r}: cannot be read ({exc}). Check the path."
        raise InputFileError(msg) from exc
    try:
        if p.suffix.lower() in (".yaml", ".yml"):
            import yaml

            raw: Any = yaml.safe_load(text)
        else:
            raw = json.loads(text)
    except Exception as exc:  # yaml.YAMLError or ValueError, reported the same way
        msg = f"Mapping file {str(p)!r}: cannot be parsed ({exc}). Expected YAML or JSON."
        raise InputFileError(msg) from exc
    return _validate_mapping(raw, str(p))


def _validate_mapping(raw: Any, label: str) -> list[dict[str, list[str]]]:
    if not isinstance(raw, list):
        msg = (
            f"Mapping {label!r}: not a list. Expected a list of {{bench, target}} entries, "
            f"got {type(raw).__name__}."
        )
        raise InputFileError(msg)
    out = []
    for i, entry in enumerate(raw):
        if not isinstance(entry, dict) or "bench" not in entry or "target" not in entry:
            msg = (
                f"Mapping {label!r}: entry {i} is {entry!r:.80}. "
                "Expected keys 'bench' and 'target'."
            )
            raise InputFileError(msg)
        pair = {}
        for side in ("bench", "target"):
            v = entry[side]
            items = [v] if isinstance(v, (str, int)) else v
            if not isinstance(items, list) or not items:
                msg = (
                    f"Mapping {label!r}: entry {i} {side} is {v!r:.80}. "
                    "Expected a selector or a list of selectors."
                )
                raise InputFileError(msg)
            pair[side] = [f"#{s}" if isinstance(s, int) else str(s) for s in items]
        out.append(pair)
    return out


def match_ops(
    bench: Sequence[OpRecord],
    target: Sequence[OpRecord],
    mapping: Sequence[dict[str, list[str]]] | None = None,
    *,
    formats: tuple[str, str] | None = None,
) -> list[OpPair]:
    """Pair ``bench`` and ``target`` ops (each in execution order).

    Args:
        bench: Ops of the reference step.
        target: Ops of the step under test.
        mapping: Parsed user mapping (:func:`load_mapping`), applied first.
        formats: ``(bench format, target format)`` (``Dump.format``); when they differ
            (tensorsight vs msprobe), ops pair by cross-format call names.

    Returns:
        Every op of both sides exactly once, ordered forward then backward by position.

    Raises:
        CompareError: A tensorsight dump and an msprobe dump at levels that cannot pair, or
            a MindSpore Dump or TensorFlow debugger dump against a dump of another format.
    """
    foreign = {"mindspore": "MindSpore Dump", "tfdbg": "TensorFlow debugger dump"}
    if formats is not None and formats[0] != formats[1] and (set(formats) & set(foreign)):
        what = foreign[next(f for f in formats if f in foreign)]
        msg = (
            f"Dumps ({formats[0]} vs {formats[1]}): a {what} pairs only with another "
            f"{what} or, by value, with a tensorsight dump of PyTorch given without "
            "a mapping; its kernels do not map one to one to other formats' ops. Expected "
            f"two {what}s, or a PyTorch dump and no --mapping."
        )
        raise CompareError(msg)
    rules = _rules(formats)
    if rules.formats is not None:
        names.check_pairable(bench, target, rules.formats)
        bench = names.normalise(bench, rules.formats[0])
        target = names.normalise(target, rules.formats[1])
    pairs: list[OpPair] = []
    used_b: set[int] = set()
    used_t: set[int] = set()
    for entry in mapping or ():
        b = tuple(_select(s, bench, "bench") for s in entry["bench"])
        t = tuple(_select(s, target, "target") for s in entry["target"])
        used_b.update(op.index for op in b)
        used_t.update(op.index for op in t)
        pairs.append(OpPair(b, t, "mapping"))
    for direction in ("forward", "backward"):
        bs = [op for op in bench if op.direction == direction and op.index not in used_b]
        ts = [op for op in target if op.direction == direction and op.index not in used_t]
        pairs.extend(_rematch(_align(bs, ts, rules), rules))
    if rules.formats is None:
        pairs = _by_flow(pairs, bench, target)
    pairs.sort(key=lambda p: p.position)
    return pairs


# ops that carry no arithmetic: their output is their input (in another shape or dtype)
_PASS_THROUGH = (
    "detach", "alias", "view", "_unsafe_view", "_reshape_alias", "reshape", "clone",
    "contiguous", "t", "transpose", "permute", "expand", "squeeze", "unsqueeze", "_to_copy",
    "to", "lift_fresh", "slice", "select", "split", "unbind", "as_strided",
)  # fmt: skip


def _short(op: str) -> str:
    """``aten.detach.default`` -> ``detach`` (in-place variants as their op)."""
    return op_family(op).split(".")[1] if op.startswith("aten.") else op


class _Flow:
    """Producer edges of both sides and the current pairing, to judge a pair's credibility."""

    def __init__(
        self, pairs: Sequence[OpPair], bench: Sequence[OpRecord], target: Sequence[OpRecord]
    ) -> None:
        self.fb, self.ft = data_flow(bench), data_flow(target)
        self.b_ops = {op.index: op for op in bench}
        self.t_ops = {op.index: op for op in target}
        self.mate: dict[int, int] = {}  # bench index -> target index of matched pairs
        for p in pairs:
            if p.how in ("name", "order", "mapping") and len(p.bench) == len(p.target) == 1:
                self.mate[p.bench[0].index] = p.target[0].index
        self.t_mated = set(self.mate.values())

    def _source(
        self, flow: DataFlow, ops: dict[int, OpRecord], mated: Callable[[int], bool], p: Producer
    ) -> Producer:
        """Follow a producer through one-sided pass-through ops (autocast casts, detach)."""
        seen = 0
        while not mated(p.index) and _short(p.op) in _PASS_THROUGH and seen < 16:
            op = ops.get(p.index)
            up = flow.producer(p.index, op.inputs[0].tensor) if op and op.inputs else None
            if up is None:
                break
            p, seen = up, seen + 1
        return p

    def doubt(self, b: OpRecord, t: OpRecord) -> tuple[str, bool]:
        """Why ``b`` and ``t`` are no credible pair ("" when nothing speaks against it), and
        whether the data flow links an input of each (positive evidence for the pair)."""
        linked, unlinked = False, ""
        t_names = {r.tensor for r in t.inputs}
        for rec in b.inputs:
            if rec.tensor not in t_names:
                continue
            pb = self.fb.producer(b.index, rec.tensor)
            pt = self.ft.producer(t.index, rec.tensor)
            if pb is None or pt is None:
                continue
            pb = self._source(self.fb, self.b_ops, lambda i: i in self.mate, pb)
            pt = self._source(self.ft, self.t_ops, lambda i: i in self.t_mated, pt)
            mate = self.mate.get(pb.index)
            if mate == pt.index:
                linked = True
            elif mate is not None and pt.index in self.t_mated:
                why = (
                    f"No credible counterpart: its {rec.tensor} is the output of op #{pb.index} "
                    f"({pb.op}) on the bench side but of target op #{pt.index} ({pt.op}), which "
                    f"is not that op's counterpart (target #{mate})."
                )
                return why, False
            elif mate is None and pt.index not in self.t_mated:
                if op_family(pb.op) == op_family(pt.op):
                    linked = True
                elif not unlinked:
                    unlinked = (
                        f"No credible counterpart: its {rec.tensor} is the output of "
                        f"{pb.op} (#{pb.index}) on the bench side and of {pt.op} (target "
                        f"#{pt.index}) on the target side, each without a counterpart."
                    )
        if unlinked and not linked and _short(b.op) in _PASS_THROUGH:
            return unlinked, False  # an op without arithmetic whose input has no counterpart
        return "", linked

    def unpair(self, b: OpRecord, t: OpRecord) -> None:
        self.mate.pop(b.index, None)
        self.t_mated.discard(t.index)

    def pair(self, b: OpRecord, t: OpRecord) -> None:
        self.mate[b.index] = t.index
        self.t_mated.add(t.index)


def _by_flow(
    pairs: list[OpPair], bench: Sequence[OpRecord], target: Sequence[OpRecord]
) -> list[OpPair]:
    """Undo pairs that the recorded data flow contradicts, then re-pair those ops by it.

    Ops that share op, module and shape are told apart by where their inputs come from: a
    pair whose input is, on each side, the output of ops that are not each other's
    counterpart is no pair (seen: a rewritten softmax made the alignment pair the bench's
    ``detach`` of the probabilities with the target's ``detach`` of the unnormalised
    ``exp``). Each op undone is re-paired with a leftover op of the same key whose inputs
    the data flow links, else left unmatched with the reason.
    """
    flow = _Flow(pairs, bench, target)
    out: list[OpPair] = []
    undone: list[tuple[OpPair, str]] = []
    for p in pairs:
        if p.how in ("name", "order") and len(p.bench) == len(p.target) == 1:
            why, _ = flow.doubt(p.bench[0], p.target[0])
            if why:
                flow.unpair(p.bench[0], p.target[0])
                undone.append((p, why))
                continue
        out.append(p)
    if not undone:
        return pairs
    spare_t: dict[Hashable, list[OpRecord]] = {}
    for p in out:
        if p.how == "unmatched" and p.target:
            spare_t.setdefault(_key(p.target[0]), []).append(p.target[0])
    for p, _ in undone:
        spare_t.setdefault(_key(p.target[0]), []).append(p.target[0])
    used: set[int] = set()
    for p, why in undone:
        b = p.bench[0]
        mate = next(
            (
                t
                for t in spare_t.get(_key(b), ())
                if t.index not in used
                and t.index != p.target[0].index
                and flow.doubt(b, t) == ("", True)
            ),
            None,
        )
        if mate is not None:
            used.add(mate.index)
            flow.pair(b, mate)
            out.append(OpPair((b,), (mate,), "order"))
        else:
            out.append(OpPair((b,), (), "unmatched", why))
    for p, why in undone:
        t = p.target[0]
        if t.index not in used:
            out.append(OpPair((), (t,), "unmatched", why))
    return [
        p
        for p in out
        if not (p.how == "unmatched" and p.target and p.target[0].index in used and not p.bench)
    ]


def _align(bs: Sequence[OpRecord], ts: Sequence[OpRecord], rules: _Rules) -> list[OpPair]:
    fb, ft = rules.formats or ("", "")
    kb = [rules.key(o, fb) for o in bs]
    kt = [rules.key(o, ft) for o in ts]
    matcher = difflib.SequenceMatcher(None, kb, kt, False)
    out: list[OpPair] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            pairs = zip(bs[i1:i2], ts[j1:j2], strict=True)
            out.extend(rules.pair(b, t, "name") for b, t in pairs)
        elif tag == "delete":
            out.extend(rules.only(b, "bench") for b in bs[i1:i2])
        elif tag == "insert":
            out.extend(rules.only(t, "target") for t in ts[j1:j2])
        else:  # replace: pair equal op names in order, the rest stays unmatched
            out.extend(_pair_by_name(bs[i1:i2], ts[j1:j2], rules))
    return out


def _rematch(pairs: list[OpPair], rules: _Rules) -> list[OpPair]:
    """Second chance: pair leftover ops with an identical key, in order (reordered ops)."""
    fb, ft = rules.formats or ("", "")
    waiting: dict[Hashable, list[int]] = {}
    for i, p in enumerate(pairs):
        if p.how == "unmatched" and p.target:
            waiting.setdefault(rules.key(p.target[0], ft), []).append(i)
    drop: set[int] = set()
    out = list(pairs)
    for i, p in enumerate(pairs):
        if p.how != "unmatched" or not p.bench:
            continue
        slots = waiting.get(rules.key(p.bench[0], fb))
        if slots:
            j = slots.pop(0)
            out[i] = rules.pair(p.bench[0], pairs[j].target[0], "order")
            drop.add(j)
    return [p for i, p in enumerate(out) if i not in drop]


def _pair_by_name(bs: Sequence[OpRecord], ts: Sequence[OpRecord], rules: _Rules) -> list[OpPair]:
    fb, ft = rules.formats or ("", "")
    kt = [rules.key(t, ft) for t in ts]
    nt = [rules.name(t, ft) for t in ts]
    out: list[OpPair] = []
    j = 0
    for b in bs:
        kb, nb = rules.key(b, fb), rules.name(b, fb)
        k = next((x for x in range(j, len(ts)) if kt[x] == kb), None)
        if k is None:
            k = next((x for x in range(j, len(ts)) if nt[x] == nb), None)
        if k is None:
            out.append(rules.only(b, "bench"))
            continue
        out.extend(rules.only(t, "target") for t in ts[j:k])
        out.append(rules.pair(b, ts[k], "order"))
        j = k + 1
    out.extend(rules.only(t, "target") for t in ts[j:])
    return out


def _only(op: OpRecord, side: str) -> OpPair:
    other = "target" if side == "bench" else "bench"
    reason = f"Op only in {side} (no {op.op} in {op.module_path or 'the root'} on the {other} side"
    if op.op.startswith(("aten._to_copy", "aten.to", "aten.type_as")):
        reason += "; a dtype cast, e.g. inserted by autocast"
    reason += ")."
    if side == "bench":
        return OpPair((op,), (), "unmatched", reason)
    return OpPair((), (op,), "unmatched", reason)
