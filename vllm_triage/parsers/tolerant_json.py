"""A tolerant JSON reader for pasted JSON: every value with the line it starts on.

Pastes of JSON are rarely whole: an array or a bare object, a jq piece, the middle elided by the
user (`...` or `…` lines), blockquoted, or cut by a paste limit mid-string. `json.loads` gives up
on all but the first two and gives no line numbers; this reader keeps the line of every value
(for provenance), skips what it cannot read, closes what the paste left open, and never fails.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Node:
    """A JSON value with the 1-based line it starts on (for a dict entry: the key's line)."""

    value: Any  # dict[str, Node] | list[Node] | str | int | float | bool | None
    line: int

    def get(self, key: str) -> Node | None:
        return self.value.get(key) if isinstance(self.value, dict) else None

    def plain(self) -> Any:
        """The value with the Node wrappers removed (ordinary JSON data)."""
        if isinstance(self.value, dict):
            return {key: node.plain() for key, node in self.value.items()}
        if isinstance(self.value, list):
            return [node.plain() for node in self.value]
        return self.value


@dataclass
class JsonReading:
    values: list[Node] = field(default_factory=list)  # the top-level values, in order
    truncated: bool = False  # the text ended with a string, object or array still open
    elided: list[int] = field(default_factory=list)  # lines where the user cut something out


_TOKEN = re.compile(
    r"""
    (?P<space>[ \t\r\f\v]+|\n)
  | (?P<string>"(?:[^"\\\n]|\\.)*(?:"|(?=\n)|$))      # a string; unterminated ones end at the line
  | (?P<punct>[{}\[\]:,])
  | (?P<elision>\.\.\.+|…|\[\.\.\.\]|<snip(?:ped)?>)
  | (?P<comment>//[^\n]*)
  | (?P<number>-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)
  | (?P<word>[A-Za-z_][\w.+-]*)
  | (?P<other>.)
    """,
    re.VERBOSE,
)


MAX_DEPTH = 128  # inspect JSON nests ~6 deep; deeper input is not inspect output


@dataclass
class _Token:
    kind: str  # string | punct | number | word | eof
    text: str
    line: int
    closed: bool = True  # for strings: the closing quote was there


class _Reader:
    def __init__(self, text: str) -> None:
        self.tokens: list[_Token] = []
        self.reading = JsonReading()
        self._tokenise(text)
        self.position = 0

    def _tokenise(self, text: str) -> None:
        line = 1
        for match in _TOKEN.finditer(text):
            kind = match.lastgroup or "other"
            token = match.group(0)
            if kind == "space":
                line += token.count("\n")
            elif kind == "elision":
                self.reading.elided.append(line)
            elif kind == "string":
                closed = len(token) >= 2 and token.endswith('"') and not _escaped_end(token)
                self.tokens.append(_Token("string", token, line, closed))
            elif kind in ("punct", "number", "word"):
                self.tokens.append(_Token(kind, token, line))
            # comments and stray characters (prose around the JSON) are dropped
        self.tokens.append(_Token("eof", "", line))

    # -- token helpers
    def peek(self, ahead: int = 0) -> _Token:
        return self.tokens[min(self.position + ahead, len(self.tokens) - 1)]

    def next(self) -> _Token:
        token = self.peek()
        self.position = min(self.position + 1, len(self.tokens) - 1)
        return token

    def is_key_ahead(self) -> bool:
        token = self.peek()
        return token.kind in ("string", "word") and self.peek(1).text == ":" and self.peek(1).kind == "punct"

    # -- grammar
    def read_all(self) -> JsonReading:
        while self.peek().kind != "eof":
            token = self.peek()
            if token.kind == "punct" and token.text in "{[":
                self.reading.values.append(self.value(0))
            elif self.is_key_ahead():
                # A fragment that starts inside an object: read its members as an object of
                # their own until the brace that closed the (unseen) opening one.
                self.reading.values.append(self.members(token.line, 0, implicit=True))
            else:
                self.next()  # stray closer, comma or word between values
        return self.reading

    def value(self, depth: int) -> Node:
        token = self.next()
        if token.kind == "punct" and token.text == "{":
            return self.members(token.line, depth + 1, implicit=False)
        if token.kind == "punct" and token.text == "[":
            return self.items(token.line, depth + 1)
        if token.kind == "string":
            if not token.closed:
                self.reading.truncated = True
            return Node(_decode_string(token.text), token.line)
        if token.kind == "number":
            return Node(_decode_number(token.text), token.line)
        if token.kind == "word":
            return Node({"true": True, "false": False, "null": None}.get(token.text, token.text), token.line)
        if token.kind == "eof":
            self.reading.truncated = True
        return Node(None, token.line)

    def members(self, line: int, depth: int, implicit: bool) -> Node:
        found: dict[str, Node] = {}
        if depth > MAX_DEPTH:
            self._skip_block()
            return Node(found, line)
        while True:
            token = self.peek()
            if token.kind == "eof":
                # an implicit object (a fragment's loose members) has no brace to miss
                self.reading.truncated = self.reading.truncated or not implicit
                return Node(found, line)
            if token.kind == "punct" and token.text == "}":
                self.next()
                return Node(found, line)
            if token.kind == "punct" and token.text == "]":
                if implicit:
                    self.next()
                return Node(found, line)  # an elided "}" : let the enclosing array close
            if self.is_key_ahead():
                key = self.next()
                self.next()  # the colon
                name = _decode_string(key.text) if key.kind == "string" else key.text
                if self._value_follows():
                    node = self.value(depth)
                    found[name] = Node(node.value, key.line)
                else:
                    found[name] = Node(None, key.line)  # `"Env": ,` after an elision
                continue
            self.next()  # a comma, or debris between members

    def items(self, line: int, depth: int) -> Node:
        found: list[Node] = []
        if depth > MAX_DEPTH:
            self._skip_block()
            return Node(found, line)
        while True:
            token = self.peek()
            if token.kind == "eof":
                self.reading.truncated = True
                return Node(found, line)
            if token.kind == "punct" and token.text == "]":
                self.next()
                return Node(found, line)
            if token.kind == "punct" and token.text == "}":
                return Node(found, line)  # an elided "]": let the enclosing object close
            if token.kind == "punct" and token.text in ",:":
                self.next()
                continue
            found.append(self.value(depth))

    def _value_follows(self) -> bool:
        token = self.peek()
        return not (token.kind == "punct" and token.text in ",}]") and token.kind != "eof"

    def _skip_block(self) -> None:
        level = 1
        while level and self.peek().kind != "eof":
            token = self.next()
            if token.kind == "punct" and token.text in "{[":
                level += 1
            elif token.kind == "punct" and token.text in "}]":
                level -= 1


def _escaped_end(token: str) -> bool:
    """True when the final quote is escaped (`"abc\\"` cut mid-string)."""
    backslashes = len(token) - 1 - len(token[:-1].rstrip("\\"))
    return backslashes % 2 == 1


def _decode_string(token: str) -> str:
    body = token[1:-1] if len(token) >= 2 and token.endswith('"') and not _escaped_end(token) else token[1:]
    try:
        decoded: str = json.loads(f'"{body}"')
        return decoded
    except ValueError:
        return body.replace('\\"', '"').replace("\\\\", "\\")


def _decode_number(token: str) -> int | float:
    try:
        return int(token)
    except ValueError:
        try:
            return float(token)
        except ValueError:
            return 0


def read_json(text: str) -> JsonReading:
    """Every top-level JSON value in text, read as far as it goes, each value with its line."""
    return _Reader(text).read_all()
