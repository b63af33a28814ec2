"""The file pre-scan: which files a rule set could change or report, from their tokens alone.

Parsing with LibCST (and even with ``ast``) costs far more than reading a file's tokens, and
most files of a real project hold nothing CUDA-specific. Each rule declares, as
:class:`Need` values in ``TOKENS``, what a file must contain for the rule to be able to match
anything in it; :class:`Prescan` joins the needs of a rule set and :meth:`Prescan.wanted`
answers, per file, whether any rule's need is met. Only those files are parsed.

Tokens, not substrings: one regular-expression pass (:func:`lex`) splits the text into
comments, string literals and code, so ``# moved to cuda`` or a docstring about CUDA do
not make a file wanted, ``torch.cuda`` counts as the identifiers ``torch`` and ``cuda``,
and ``"cuda:0"`` as a string whose value starts with ``cuda``. The pre-scan errs on the
side of parsing: a rule that declares no needs (``TOKENS = None``) makes every file wanted,
and a file the lexer is unsure about (an unterminated string, an f-string whose quotes
nest the Python 3.12 way) is always parsed.

Why a skipped file is one no rule could change or report: rules match

- qualified names (``ctx.qname``), which resolve only through ``import``/``from ... import``
  statements and ``a = b.c`` aliases, so every component of the name (``torch``, ``cuda``,
  ``synchronize``) is an identifier token somewhere in the file: ``Need.api``;
- attribute and keyword names (``.cuda()``, ``pin_memory=``): identifier tokens;
- string literals by value (``"cuda:0"``, ``"nccl"``): :func:`lex` evaluates literals with
  escapes and reads the literal text of f-strings as the rules do, strings nested in
  f-string replacement fields included;
- node shapes (``.to(0)``, ``device=local_rank``): a regular expression over the code with
  comments removed and plain string literals emptied (``Need.code``);
- anything else (facts of a whole-file analysis): ``Need.confirm``, a costlier test of the
  text (an ``ast`` pass, say) that runs only where the cheap fields already hold.
"""

from __future__ import annotations

import ast
import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

__all__ = ["Lexed", "Need", "Prescan", "lex"]

_IDENT = re.compile(r"[^\W\d]\w*")
_TOKEN = re.compile(
    r"""
    (?P<comment>\#[^\r\n]*)
  | (?P<prefix>(?<!\w)[rRbBuUfF]{1,2})?
    (?P<string>
        '''[^'\\]*(?:(?:\\.|'(?!''))[^'\\]*)*'''
      | \"\"\"[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*\"\"\"
      | '[^'\\\r\n]*(?:\\.[^'\\\r\n]*)*'
      | "[^"\\\r\n]*(?:\\.[^"\\\r\n]*)*"
    )
  | (?P<stray>['"])
    """,
    re.VERBOSE | re.DOTALL,
)


@dataclass(frozen=True)
class Need:
    """What a file must contain for a rule to possibly match in it; every field must hold.

    Attributes:
        names: Identifiers that must all occur in the code (attribute and keyword names
            count; comments and plain strings do not).
        strings: For each, some string literal whose value starts with it (``"cuda"``
            matches ``"cuda"``, ``"cuda:1"`` and ``f"cuda:{i}"``, not ``"use cuda"``).
        code: A regular expression that must match the code with comments removed and
            plain string literals emptied (``'...'`` becomes ``''``; f-strings are kept,
            their replacement fields are code).
        confirm: Called with the file's text when the fields above hold; it must return
            true whenever the rule could match (e.g. a check of ``ast`` facts). It runs
            last, so the cheap fields should narrow the files it sees.

    Example:
        >>> Need.api("torch.cuda.synchronize").names
        ('torch', 'cuda', 'synchronize')
    """

    names: tuple[str, ...] = ()
    strings: tuple[str, ...] = ()
    code: str | None = None
    confirm: Callable[[str], bool] | None = None
    _regex: re.Pattern[str] | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.code is not None:
            object.__setattr__(self, "_regex", re.compile(self.code))

    @classmethod
    def api(cls, qualified: str) -> Need:
        """The need of a rule that matches the qualified name ``qualified`` (after alias
        resolution): each of its components is an identifier of the file."""
        return cls(names=tuple(qualified.split(".")))

    def met(self, lexed: Lexed) -> bool:
        """Whether ``lexed`` meets this need."""
        if lexed.unsure:
            return True
        if any(n not in lexed.names for n in self.names):
            return False
        for prefix in self.strings:
            if not any(s is None or s.startswith(prefix) for s in lexed.strings):
                return False
        if self._regex is not None and self._regex.search(lexed.code) is None:
            return False
        return self.confirm is None or self.confirm(lexed.text)


@dataclass(frozen=True)
class Lexed:
    """A source text split by :func:`lex`.

    Attributes:
        names: Every identifier in the code (NFKC-normalised ones added, as Python does).
        strings: The value of every string literal (for f-strings their text, as written);
            ``None`` for a literal whose value could not be worked out (matches any prefix).
        code: The text with comments removed and plain string literals emptied.
        unsure: The lexer met something it cannot split reliably; the file must be parsed.
        text: The text as given.
    """

    names: frozenset[str]
    strings: tuple[str | None, ...]
    code: str
    unsure: bool
    text: str = ""


def lex(text: str) -> Lexed:
    """Split ``text`` into identifiers, string values and code (one regex pass).

    Example:
        >>> out = lex("x = 'cuda:0'  # cuda\\ny = f'{d}'\\n")
        >>> sorted(out.names), out.strings, out.code
        (['d', 'f', 'x', 'y'], ('cuda:0', '{d}'), "x = ''  \\ny = f'{d}'\\n")
    """
    strings: list[str | None] = []
    unsure = False

    def mask(m: re.Match[str]) -> str:
        nonlocal unsure
        kind = m.lastgroup
        if kind == "comment":
            return ""
        if kind == "stray":
            unsure = True
            return m.group()
        prefix = (m.group("prefix") or "").lower()
        literal = m.group("string")
        quote = 3 if literal[:3] in ("'''", '"""') else 1
        body = literal[quote:-quote]
        if "f" in prefix:
            strings.append(body)
            if "{" in body or "}" in body:
                fields = _fields(body)
                if fields is None:  # e.g. f"{d["k"]}" (Python 3.12) ended early
                    unsure = True
                elif "'" in body or '"' in body:  # strings inside replacement fields count
                    for text in fields:
                        inner = lex(text)
                        strings.extend(inner.strings)
                        unsure = unsure or inner.unsure
            return m.group()  # replacement fields are code
        if "b" not in prefix:
            strings.append(_value(m.group()) if "\\" in body else body)
        return (m.group("prefix") or "") + literal[:quote] * 2

    code = _TOKEN.sub(mask, text)
    names = set(_IDENT.findall(code))
    if not code.isascii():
        names.update(unicodedata.normalize("NFKC", n) for n in list(names) if not n.isascii())
    return Lexed(frozenset(names), tuple(strings), code, unsure, text)


def _value(literal: str) -> str | None:
    try:
        value = ast.literal_eval(literal)
    except (SyntaxError, ValueError):
        return None
    return value if isinstance(value, str) else None


def _fields(body: str) -> list[str] | None:
    """The replacement fields of an f-string's text (quoted strings inside them skipped
    whole), or ``None`` when the braces do not balance."""
    out: list[str] = []
    i, n, depth, start = 0, len(body), 0, 0
    while i < n:
        c = body[i]
        if depth == 0:
            if c in "{}" and body.startswith(c * 2, i):
                i += 2
                continue
            if c == "}":
                return None
            if c == "{":
                depth, start = 1, i + 1
        elif c in "'\"":
            m = _TOKEN.match(body, i)
            if m is None or m.lastgroup != "string":
                return None
            i = m.end()
            continue
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                out.append(body[start:i])
        i += 1
    return None if depth else out


class Prescan:
    """The joined needs of a rule set's rules.

    ``None`` among ``needs`` (a rule that declares none) means every file is wanted; ``()``
    (a rule that only adds to what others found) never makes a file wanted.

    Example:
        >>> scan = Prescan([(Need(names=("cuda",)),), (Need(strings=("nccl",)),)])
        >>> scan.wanted("x.cuda()"), scan.wanted("b = 'nccl'"), scan.wanted("# cuda, 'nccl'")
        (True, True, False)
        >>> scan.active("x.cuda()")
        (True, False)
    """

    def __init__(self, needs: Iterable[tuple[Need, ...] | None]) -> None:
        self._per_rule = tuple(needs)
        joined: list[Need] = []
        self.always = False
        for rule_needs in self._per_rule:
            if rule_needs is None:
                self.always = True
                continue
            joined.extend(n for n in rule_needs if n not in joined)
        self.needs = tuple(joined)

    def wanted(self, text: str) -> bool:
        """Whether some rule could change or report something in ``text``."""
        if self.always:
            return True
        lexed = lex(text)
        return any(need.met(lexed) for need in self.needs)

    def active(self, text: str) -> tuple[bool, ...] | None:
        """Per rule (in the order given), whether it could match anything in ``text``; or
        ``None`` when no rule could (the file is not wanted). A rule without needs
        (``None``) and one that only adds to the others (``()``) are active in every wanted
        file. Only the active rules need to run, and only their trigger words make a
        statement worth parsing."""
        lexed = lex(text)
        met: dict[Need, bool] = {}

        def holds(need: Need) -> bool:
            if need not in met:
                met[need] = need.met(lexed)
            return met[need]

        out = tuple(
            not rule_needs or any(holds(n) for n in rule_needs) for rule_needs in self._per_rule
        )
        if self.always or any(holds(n) for n in self.needs):
            return out
        return None
