"""Python source read from a log or a launch file, without a word on stderr.

CPython 3.12+ warns on stderr while it parses text such as `1if`, `0x1for` or `"\\d"` (a
SyntaxWarning for an invalid literal or escape); a log's config repr or a pasted script may hold
any of them, and a parser never prints (the CLI's stderr is its own one line)."""

from __future__ import annotations

import ast
import warnings
from typing import Any


def parse(source: str, mode: str = "exec") -> ast.AST:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(source, mode=mode)


def literal_eval(text: str) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.literal_eval(text)
