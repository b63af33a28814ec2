"""Reading the projector's files back: ``projector_config.pbtxt``, ``tensors.tsv``, metadata.

Pure functions of the files' bytes (no I/O; ``summary/projector.py`` reads the files). The
layout is the one TensorBoard's projector reads and that torch.utils.tensorboard, tensorboardX
and our :meth:`~tensorsight.SummaryWriter.add_embedding` write:

* ``projector_config.pbtxt``: a ``ProjectorConfig`` in protobuf text format; only the
  ``embeddings { tensor_name tensor_path metadata_path sprite { image_path single_image_dim } }``
  fields are used, every other field (``model_checkpoint_path``, ``tensor_shape``,
  ``bookmarks_path``, ...) is skipped. A tiny tokenizer, not TensorFlow's parser.
* ``tensors.tsv``: one point per line, its values separated by tabs (any whitespace is
  accepted), no header.
* ``metadata.tsv``: one label per line when it has one column (no header); with several
  tab-separated columns the first line is the header (TensorBoard's rule).

Every problem is a ``ValueError`` whose message names the line; callers add the file name.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from tensorsight.summary.kinds.embedding import EmbeddingInfo

__all__ = [
    "MetadataTable",
    "parse_config",
    "parse_metadata",
    "parse_tensors",
    "split_tensor_path",
]

_TOKEN = re.compile(
    r"""\s+|\#[^\n]*|(?P<str>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')"""
    r"""|(?P<word>[A-Za-z0-9_.+\-\[\]/]+)|(?P<punct>[{}:<>;,])""",
    re.DOTALL,
)
_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", '"': '"', "'": "'", "\\": "\\", "a": "\a",
            "b": "\b", "f": "\f", "v": "\v"}  # fmt: skip


def _unquote(literal: str) -> str:
    body = literal[1:-1]
    out: list[str] = []
    i = 0
    raw = bytearray()
    while i < len(body):
        char = body[i]
        if char != "\\":
            raw.extend(char.encode())
            i += 1
            continue
        nxt = body[i + 1]
        if nxt in _ESCAPES:
            raw.extend(_ESCAPES[nxt].encode())
            i += 2
        elif nxt in "01234567":
            digits = re.match(r"[0-7]{1,3}", body[i + 1 :])
            assert digits is not None
            raw.append(int(digits.group(), 8) & 0xFF)
            i += 1 + len(digits.group())
        elif nxt == "x":
            digits = re.match(r"[0-9a-fA-F]{1,2}", body[i + 2 :])
            if digits is None:
                msg = f"bad escape in {literal[:60]!r}"
                raise ValueError(msg)
            raw.append(int(digits.group(), 16))
            i += 2 + len(digits.group())
        else:
            msg = f"bad escape \\{nxt} in {literal[:60]!r}"
            raise ValueError(msg)
    out.append(raw.decode("utf-8", errors="replace"))
    return "".join(out)


def _tokens(text: str) -> list[tuple[str, str, int]]:
    """``(kind, text, line)`` tokens: kind ``str``, ``word`` or ``punct``."""
    out = []
    pos, line = 0, 1
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            msg = f"line {line}: unexpected {text[pos : pos + 20]!r}"
            raise ValueError(msg)
        kind = m.lastgroup
        if kind is not None:
            out.append((kind, m.group(), line))
        line += m.group().count("\n")
        pos = m.end()
    return out


Message = dict[str, list[object]]


def _parse_message(
    tokens: list[tuple[str, str, int]], pos: int, close: str | None
) -> tuple[Message, int]:
    fields: Message = {}
    while pos < len(tokens):
        kind, text, line = tokens[pos]
        if close is not None and kind == "punct" and text == close:
            return fields, pos + 1
        if kind != "word":
            msg = f"line {line}: expected a field name, got {text[:40]!r}"
            raise ValueError(msg)
        name = text
        pos += 1
        if pos < len(tokens) and tokens[pos][1] == ":":
            pos += 1
        if pos >= len(tokens):
            msg = f"line {line}: field {name!r} has no value"
            raise ValueError(msg)
        kind, text, line = tokens[pos]
        if kind == "punct" and text in "{<":
            sub, pos = _parse_message(tokens, pos + 1, "}" if text == "{" else ">")
            fields.setdefault(name, []).append(sub)
        elif kind == "str":
            value = _unquote(text)
            pos += 1
            while pos < len(tokens) and tokens[pos][0] == "str":  # adjacent literals concatenate
                value += _unquote(tokens[pos][1])
                pos += 1
            fields.setdefault(name, []).append(value)
        elif kind == "word":
            fields.setdefault(name, []).append(text)
            pos += 1
        else:
            msg = f"line {line}: field {name!r}: unexpected {text[:40]!r}"
            raise ValueError(msg)
        if pos < len(tokens) and tokens[pos][1] in ";,":
            pos += 1
    if close is not None:
        msg = f"end of file inside a message (missing {close!r})"
        raise ValueError(msg)
    return fields, pos


def _one_str(msg: Message, name: str) -> str | None:
    values = [v for v in msg.get(name, ()) if isinstance(v, str)]
    return values[-1] if values else None


def parse_config(text: str) -> list[EmbeddingInfo]:
    """The ``embeddings`` entries of a ``projector_config.pbtxt``, in file order.

    Entries without a ``tensor_path`` (TensorFlow checkpoint variables) are left out.

    Raises:
        ValueError: The text is not protobuf text format (the message names the line).

    Example:
        >>> entry = parse_config('embeddings { tensor_name: "x:00001" tensor_path: "1/x/t.tsv" }')
        >>> entry[0].tensor_name, entry[0].tensor_path, entry[0].metadata_path
        ('x:00001', '1/x/t.tsv', None)
    """
    root, _ = _parse_message(_tokens(text), 0, None)
    out = []
    for entry in root.get("embeddings", ()):
        if not isinstance(entry, dict):
            continue
        tensor_path = _one_str(entry, "tensor_path")
        if not tensor_path:
            continue
        sprite_path = None
        sprite_dim = None
        for sprite in entry.get("sprite", ()):
            if not isinstance(sprite, dict):
                continue
            sprite_path = _one_str(sprite, "image_path") or sprite_path
            dims = [v for v in sprite.get("single_image_dim", ()) if isinstance(v, str)]
            try:
                width, height = (int(d) for d in dims[-2:])
            except ValueError:
                width = height = 0
            if len(dims) >= 2 and width > 0 and height > 0:
                sprite_dim = (width, height)
        out.append(
            EmbeddingInfo(
                tensor_name=_one_str(entry, "tensor_name") or tensor_path,
                tensor_path=tensor_path,
                metadata_path=_one_str(entry, "metadata_path") or None,
                sprite_path=sprite_path if sprite_dim is not None else None,
                sprite_dim=sprite_dim if sprite_path else None,
            )
        )
    return out


def split_tensor_path(info: EmbeddingInfo) -> tuple[str, int]:
    """``(tag, step)`` of an entry: from ``<step:05d>/<escaped tag>/tensors.tsv`` as the
    writers lay it out, else from a ``tag:step`` tensor name, else ``(tensor_name, 0)``."""
    parts = info.tensor_path.replace("\\", "/").split("/")
    if len(parts) >= 3 and parts[-3].isdigit():
        tag = parts[-2].replace("%2f", "/").replace("%5c", "\\").replace("%25", "%")
        return tag, int(parts[-3])
    name, sep, step = info.tensor_name.rpartition(":")
    if sep and name and step.isdigit():
        return name, int(step)
    return info.tensor_name, 0


def _count_lines(data: bytes) -> list[bytes]:
    return [line for line in data.splitlines() if line.strip()]


def parse_tensors(data: bytes, *, max_values: int) -> NDArray[np.float32]:
    """The ``(points, dims)`` float32 matrix of a ``tensors.tsv``.

    Sizes are checked before the matrix is allocated: at most ``max_values`` values.

    Raises:
        ValueError: Ragged rows, a value that is not a number, no rows, or too many values;
            the message names the first bad line.

    Example:
        >>> parse_tensors(b"1\\t2\\n3\\t4.5\\n", max_values=100)
        array([[1. , 2. ],
               [3. , 4.5]], dtype=float32)
    """
    lines = _count_lines(data)
    if not lines:
        msg = "no rows"
        raise ValueError(msg)
    dims = len(lines[0].split())
    rows = len(lines)
    if rows * dims > max_values:
        msg = (
            f"{rows} rows x {dims} values is over the limit of {max_values} values "
            "(TENSORSIGHT_MAX_TENSOR_MIB)"
        )
        raise ValueError(msg)
    with warnings.catch_warnings():
        # numpy warns (and stops) at the first value it cannot read: make that an error
        warnings.simplefilter("error", DeprecationWarning)
        try:
            values = np.fromstring(data, dtype=np.float32, sep=" ")
        except (ValueError, DeprecationWarning):
            values = None
    if values is not None and values.size == rows * dims:
        ragged = any(len(line.split()) != dims for line in lines)
        if not ragged:
            return values.reshape(rows, dims)
    for number, line in _numbered(data):
        cells = line.split()
        if len(cells) != dims:
            msg = f"line {number}: {len(cells)} values, expected {dims} like line 1"
            raise ValueError(msg)
        for token in cells:
            try:
                float(token)
            except ValueError:
                msg = f"line {number}: {token[:40].decode(errors='replace')!r} is not a number"
                raise ValueError(msg) from None
    msg = "values that are not numbers"  # pragma: no cover - float() reads what numpy reads
    raise ValueError(msg)


def _numbered(data: bytes) -> list[tuple[int, bytes]]:
    return [(i + 1, line) for i, line in enumerate(data.splitlines()) if line.strip()]


@dataclass(frozen=True)
class MetadataTable:
    """The labels of a ``metadata.tsv``: column names and one row of strings per point.

    One column without a header is named ``"label"``.
    """

    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


def parse_metadata(data: bytes, points: int) -> MetadataTable:
    """The metadata table of ``points`` points (a header row only when several columns).

    Raises:
        ValueError: The row count differs from ``points``, or a row has the wrong number of
            columns (the message names the line).

    Example:
        >>> parse_metadata(b"name\\tclass\\na\\t1\\nb\\t2\\n", 2)
        MetadataTable(columns=('name', 'class'), rows=(('a', '1'), ('b', '2')))
    """
    text = data.decode("utf-8", errors="replace")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    lines = [line.rstrip("\r") for line in lines]
    if not lines:
        msg = "no rows"
        raise ValueError(msg)
    if "\t" not in lines[0]:
        if len(lines) != points:
            msg = f"{len(lines)} labels for {points} points; expected one label per point"
            raise ValueError(msg)
        return MetadataTable(("label",), tuple((line,) for line in lines))
    columns = tuple(lines[0].split("\t"))
    body = lines[1:]
    if len(body) != points:
        msg = f"{len(body)} rows after the header for {points} points; expected one row per point"
        raise ValueError(msg)
    rows = []
    for number, line in enumerate(body, start=2):
        cells = tuple(line.split("\t"))
        if len(cells) != len(columns):
            msg = f"line {number}: {len(cells)} columns, expected {len(columns)} like the header"
            raise ValueError(msg)
        rows.append(cells)
    return MetadataTable(columns, tuple(rows))
