"""YAML documents with the line of every value, read from a paste that may be cut short."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import yaml

from vllm_triage.parsers import safe_yaml
from vllm_triage.parsers.base import clean_paste, is_fence
from vllm_triage.parsers.launch.lexer import Logical, Token, tokenize, tokenize_string
from vllm_triage.parsers.launch.wrappers import awaits_script
from vllm_triage.parsers.vllm_flags import names_vllm_flags

Path = tuple[Any, ...]


@dataclass
class YamlDoc:
    """A YAML document with its node tree, so every value can be traced to its line."""

    data: Any
    node: yaml.Node | None
    lines: list[str] = field(default_factory=list)  # the text the nodes point into

    def line(self, path: Path) -> int | None:
        node = self._node(path)
        if node is None:
            return None
        # A block scalar (`|` / `>`) starts on the indicator's line; its text on the next one.
        block = isinstance(node, yaml.ScalarNode) and node.style in ("|", ">")
        return node.start_mark.line + (2 if block else 1)

    def block_pieces(self, path: Path) -> list[tuple[int, str]] | None:
        """The source lines of a block scalar, so each word of a multi-line `command: >` keeps
        its own line; None for other values."""
        node = self._node(path)
        if not (isinstance(node, yaml.ScalarNode) and node.style in ("|", ">")):
            return None
        opener = self.lines[node.start_mark.line]
        indent = len(opener) - len(opener.lstrip())
        pieces = []
        for number in range(node.start_mark.line + 1, len(self.lines)):
            text = self.lines[number]
            if text.strip() and len(text) - len(text.lstrip()) <= indent:
                break  # back at the key's indentation: the block has ended
            if text.strip():
                pieces.append((number + 1, text))
        return pieces

    def _node(self, path: Path) -> yaml.Node | None:
        node = self.node
        for key in path:
            if isinstance(node, yaml.MappingNode):
                node = next(
                    (
                        value
                        for k, value in node.value
                        if isinstance(k, yaml.ScalarNode) and k.value == str(key)
                    ),
                    None,
                )
            elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
                node = node.value[key]
            else:
                node = None
            if node is None:
                return None
        return node


def _paste_as_yaml(text: str) -> str:
    """The paste with fences/blockquotes/colours removed, line numbers kept (dropped lines
    become empty), and tabs (a paste artefact PyYAML refuses) made spaces where they indent or
    stand before a comment. A fence closing one YAML block and opening the next ends a document:
    a ServingRuntime and its InferenceService pasted as two code blocks are two objects."""
    kept = {line.number: line.text for line in clean_paste(text, keep_prompts=True)}
    raw = text.splitlines()  # numbered as clean_paste numbers them
    total = text.count("\n") + 1
    lines = []
    seen_yaml = False
    for number in range(1, total + 1):
        line = kept.get(number, "")
        if seen_yaml and number not in kept and number <= len(raw) and is_fence(raw[number - 1]):
            lines.append("---")  # the next block's keys must not overwrite this one's
            seen_yaml = False
            continue
        indent = len(line) - len(line.lstrip(" \t"))
        rest = line[indent:]
        if "\t" in rest and "#" in rest:
            rest = _WHITESPACE_RUN.sub(_tab_before_comment, rest)
        line = line[:indent].replace("\t", "    ") + rest
        seen_yaml = seen_yaml or bool(_STRUCTURE_KEY.match(line))
        lines.append(line)
    _unwrap_code_span(lines)
    _heredoc_bodies(lines)
    return "\n".join(lines)


# `cat <<EOF > vllm.yaml`, `kubectl apply -f - <<'EOF'`: an install script that writes its
# manifests with a shell here-document. An opener at the start of a line is shell, never YAML (a
# heredoc inside a block scalar — `args: [sh, -c, |…]` — is indented under its key).
_HEREDOC_OPENER = re.compile(r"""^\S.*<<-?\s*(['"]?)(?P<word>[A-Za-z_]\w{0,30})\1""")


def _heredoc_bodies(lines: list[str]) -> None:
    """Keep only the bodies of a script's here-documents, each its own document: the shell lines
    around them are blanked (line numbers stay those of the input)."""
    if not any(_HEREDOC_OPENER.match(line) for line in lines):
        return
    word: str | None = None
    for i, line in enumerate(lines):
        if word is None:
            opener = _HEREDOC_OPENER.match(line)
            word = opener.group("word") if opener else None
            lines[i] = ""
        elif line.strip() == word:
            lines[i] = "---"
            word = None


# Each run of blanks is matched once (a lookahead after `[ \t]*\t` would retry every position of a
# long run: quadratic on a line of spaces).
_WHITESPACE_RUN = re.compile(r"[ \t]+")


def _tab_before_comment(run: re.Match[str]) -> str:
    before_comment = run.string.startswith("#", run.end())
    return "  " if before_comment and "\t" in run.group() else run.group()


_STRUCTURE_KEY = re.compile(r"^\s*(?:-\s+)?[\w\"'./-]+:(?:\s|$)")


def _unwrap_code_span(lines: list[str]) -> None:
    """Values pasted between single backticks (an issue comment's inline code over several lines:
    `` `servingEngineSpec:\n  modelSpec: …` ``): a backtick is a YAML indicator that cannot start
    a token, so the first line's opening one is the paste's, and so is an unbalanced closing one on
    the last line (the close is often cut away with the paste's end)."""
    shown = [i for i, line in enumerate(lines) if line.strip()]
    if len(shown) < 2:
        return
    first = lines[shown[0]]
    head = first.lstrip()
    if head.startswith("`") and not head.startswith("``") and first.count("`") % 2 == 1:
        lines[shown[0]] = first.replace("`", "", 1)
    last = lines[shown[-1]].rstrip()
    if last.endswith("`") and not last.endswith("``") and last.count("`") % 2 == 1:
        lines[shown[-1]] = last[:-1]


_TOP_KEY = re.compile(r"""^(?:---\s*$|[\w"'.-]+:(?:\s|$))""")
_STRUCTURE = re.compile(r"^\s*(?:-\s|[\w\"'.-]+:(?:\s|$)|#|$)")


def _document_start(lines: list[str]) -> int:
    """The index of the first top-level key when every non-blank line above it is no YAML
    structure (prose, a shell prompt); 0 when the text starts as YAML."""
    for index, line in enumerate(lines[:40]):
        if _TOP_KEY.match(line):
            return index
        if _STRUCTURE.match(line) and line.strip():
            return 0
    return 0


def load_yaml(text: str, notes: list[str]) -> list[YamlDoc]:
    """All documents; a paste cut mid-document is read up to the line where YAML breaks.
    Raises `YamlRefused` for a text too large or whose aliases would expand too far."""
    safe_yaml.check_size(text)
    lines = _paste_as_yaml(text).split("\n")
    for _attempt in range(30):
        try:
            nodes = safe_yaml.compose_all("\n".join(lines))
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            start = _document_start(lines)
            if start and mark is not None and mark.line <= start:
                # prose or a `$ cat values.yaml` prompt above the document: the YAML starts below
                notes.append(f"lines 1-{start}: text before the YAML document skipped")
                lines = [""] * start + lines[start:]
                continue
            cut = mark.line if mark is not None and 0 < mark.line < len(lines) else len(lines) - 1
            if cut <= 0:
                notes.append(f"YAML does not parse ({exc.__class__.__name__})")
                return []
            notes.append(f"line {cut + 1}: YAML breaks here; read up to line {cut}")
            lines = lines[:cut]
            continue
        return [YamlDoc(safe_yaml.construct(node), node, lines) for node in nodes]
    return []


def dig(value: Any, *keys: str) -> Any:
    """value[k1][k2]… where every step is a mapping, else None: a hand-written file may put a
    string or a list where a mapping belongs, and that must not stop the reading."""
    for key in keys:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def items_of(value: Any) -> list[Any]:
    """The items of a YAML sequence; nothing for any other value."""
    return value if isinstance(value, list) else []


def yaml_scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


# An exec-form item that is a whole command: a program, then words (`python3 -m vllm…`, `vllm serve …`).
_WHOLE_COMMAND = re.compile(r"^\s*(?:\S*/)?(?:python[\d.]*|vllm|bash|sh)\s+\S")


def command_tokens(
    doc: YamlDoc,
    path: Path,
    value: Any,
    notes: list[str],
    expand: Callable[[str, int | None], str],
    before: list[Token] | None = None,
) -> list[Token]:
    """A YAML command/entrypoint/args value as words: a list is taken item by item (no shell
    splitting), a string is split like a shell would. `before` is the entrypoint these words
    follow: after `["/bin/sh", "-c"]` the first item is the script, one string the shell lexes."""
    script_first = before is not None and awaits_script(before)
    if isinstance(value, list):
        tokens = []
        for index, item in enumerate(value):
            line = doc.line((*path, index))
            text = expand(yaml_scalar(item), line)
            if index == 0 and not script_first and _WHOLE_COMMAND.match(text):
                # `command: ["python3 -m vllm… --model m"]`: the exec form runs the item as one
                # program name, so the container cannot start; what was meant is the split line
                notes.append(
                    f"line {line}: the first {path[-1]} item holds a whole command line; the exec form "
                    "runs it as one program name (the container fails to start), read as a shell splits it"
                )
                tokens.extend(tokenize_string(text, line, None, notes))
                continue
            tokens.append(Token(text, line))
        return tokens
    if isinstance(value, str):
        pieces = doc.block_pieces(path)
        if pieces:  # a shell-split string over several lines: newlines are only whitespace
            logical = Logical()
            for line, text in pieces:
                logical.add(line, expand(text, line), "\n")
            return tokenize(logical, None, notes)
        line = doc.line(path)
        return tokenize_string(expand(value, line), line, None, notes)
    return []


def mentions_vllm(*values: Any) -> bool:
    text = json.dumps(values, default=str).lower()
    return "vllm" in text or "api_server" in text or "--model" in text or names_vllm_flags(text)
