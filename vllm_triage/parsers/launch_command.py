"""The launch command of a vLLM server, in every shape people paste it.

Shapes: `vllm serve MODEL …`, `python -m vllm.entrypoints.openai.api_server --model MODEL …`
(also under `uv run`, `conda run`, `nohup`, env prefixes), `docker run` / `podman run` (docker
options, the image, then vLLM arguments read against the image's entrypoint), docker-compose
service blocks, Kubernetes container specs and supervisord `[program:x]` sections.

Sample (a paste as it arrives; prompts, continuations and comments are debris to read through):

    $ export NCCL_DEBUG=INFO
    $ docker run --gpus '"device=0,1"' --ipc=host -e HF_TOKEN \\
        vllm/vllm-openai:v0.8.5 --model Qwen/Qwen2.5-7B-Instruct -tp 2 \\
    #   --enforce-eager \\
        --max_model_len=8192

gives `launcher=docker_run`, `image.ref=vllm/vllm-openai:v0.8.5`, `container.gpus=device=0,1`,
`arg.model`, `arg.tensor_parallel_size=2`, `arg.max_model_len=8192` (no `enforce_eager`: that
line is commented out), each with the line it was written on.

Values are strings as written after shell unquoting; a bare boolean flag is "true", `--no-X` is
"false"; JSON-valued flags keep their JSON text. The parser never raises: what it cannot read
becomes a note, and what vLLM itself would reject (an unknown flag) becomes a problem.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import yaml

from vllm_triage.parsers.base import ParseResult, Problem, clean_paste
from vllm_triage.parsers.vllm_flags import (
    BOOL,
    LIST,
    OPTIONAL,
    OPTIONAL_BOOL,
    FlagMatch,
    FlagSpec,
    normalise_spelling,
    resolve_flag,
    suggest_flag,
)
from vllm_triage.provenance import Provenance

KIND_PREFIX = "launch_command"


def _words(block: str) -> list[str]:
    """A whitespace-separated word list written as a text block (long tables stay readable)."""
    return block.split()


# ---------------------------------------------------------------------------------------------
# Small records
# ---------------------------------------------------------------------------------------------


@dataclass
class Token:
    text: str  # after shell unquoting and variable expansion
    line: int | None  # 1-based line of the token's first character
    op: str | None = None  # shell operator ("&&", ";", ">", …) instead of a word
    # ($NAME, line it was defined on or None when unresolved) for each variable expanded
    expansions: list[tuple[str, int | None]] = field(default_factory=list)


@dataclass
class Value:
    value: Any
    line: int | None
    note: str | None = None


@dataclass
class Launch:
    """One vLLM launch found in the paste, before it is written into a ParseResult."""

    launcher: str
    line: int | None
    args: dict[str, Value] = field(default_factory=dict)  # dest → value; "model" included
    env: dict[str, Value] = field(default_factory=dict)
    container: dict[str, Value] = field(default_factory=dict)
    image: Value | None = None
    digest: Value | None = None
    notes: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


@dataclass
class _Shell:
    """What a shell session has defined so far: variables, and which of them are exported."""

    variables: dict[str, Value] = field(default_factory=dict)
    exported: dict[str, Value] = field(default_factory=dict)
    files: dict[str, tuple[str, int]] = field(default_factory=dict)  # name → (text, first line)

    def lookup(self, name: str) -> Value | None:
        return self.exported.get(name) or self.variables.get(name)


# ---------------------------------------------------------------------------------------------
# Sniffing
# ---------------------------------------------------------------------------------------------

# Text that belongs to another parser even when it quotes a launch command.
_OTHER_FORMATS = re.compile(
    r"non-default args:|\bNamespace\(|NVIDIA-SMI \d|Collecting environment information"
    r"|^PyTorch version:|^vLLM Version\s*:|^\s*\"(?:Entrypoint|HostConfig|Config)\"\s*:",
    re.M,
)
_LOG_LINE = re.compile(
    r"^(?:.*?\s)?(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) (?:\d\d-\d\d|\d{4}-\d\d-\d\d) \d\d:\d\d:\d\d"
    r"|^Traceback \(most recent call last\)|^\(\w*(?:APIServer|EngineCore|Worker)\w* pid=\d+\)",
    re.M,
)
_JSON_START = re.compile(r"^\s*(?:\{|\[\s*[{\[\"\d\]])")
_SUPERVISORD = re.compile(r"^\s*\[program:[^\]]+\]", re.M)
_SUPERVISORD_COMMAND = re.compile(r"^\s*command\s*=.*(?:vllm|api_server)", re.M)
_K8S = re.compile(r"^\s*(?:-\s+)?containers:\s*$", re.M)
_K8S_KIND = re.compile(r"^\s*kind:\s*\w+", re.M)
_COMPOSE = re.compile(r"^services:\s*$", re.M)
_YAML_VLLM = re.compile(
    r"^\s*(?:-\s+)?(?:image|command|entrypoint|args):.*(?:vllm|api_server|--model)", re.M | re.I
)
_YAML_IMAGE = re.compile(r"^\s*(?:-\s+)?image:", re.M)
_VLLM_WORD = re.compile(r"vllm|api_server", re.I)
_YAML_KEY = re.compile(r"^[ \t]*(?:-[ \t]+)?[\w.-]+:(?:[ \t]|$)", re.M)
_SNIFF_LIMIT = 1_000_000


def looks_like(text: str) -> str | None:
    """The shape of the vLLM launch in `text` ("shell", "compose", "kubernetes",
    "supervisord"), or None when it is no launch command (or is another parser's format)."""
    if not text or not text.strip() or "\x00" in text[:4096]:
        return None
    head = text[:_SNIFF_LIMIT].lstrip("\ufeff")
    if _OTHER_FORMATS.search(head) or _JSON_START.match(head.lstrip("\ufeff")):
        return None
    if len(_LOG_LINE.findall(head)) >= 3 or "Traceback (most recent call last)" in head:
        return None  # a log (or a traceback) that quotes its command line is still a log
    # Blockquote markers, fences and colours would hide the YAML/INI structure.
    head = "\n".join(line.text for line in clean_paste(head, keep_prompts=True))
    if _SUPERVISORD.search(head) and _SUPERVISORD_COMMAND.search(head):
        return "supervisord"
    yaml_like = len(_YAML_KEY.findall(head)) >= 2
    # `command:` as a block list puts `vllm` on a later line than the key, hence the second test.
    if yaml_like and (_YAML_VLLM.search(head) or (_YAML_IMAGE.search(head) and _VLLM_WORD.search(head))):
        if _K8S.search(head) or (_K8S_KIND.search(head) and "apiVersion" in head):
            return "kubernetes"
        if _COMPOSE.search(head) or re.search(r"^\s+(?:image|command|deploy|environment):", head, re.M):
            return "compose"
    if _shell_launches(head, sniff=True)[0]:
        return "shell"
    return None


# ---------------------------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------------------------


def parse(text: str, file: str) -> ParseResult:
    """Read the launch command(s) in `text`; never raises on odd input."""
    shape = None
    try:
        text = text.lstrip("\ufeff")  # a BOM from a Windows editor is no part of the first word
        shape = looks_like(text)
        if shape is None:
            result = ParseResult(kind=f"{KIND_PREFIX}.unknown")
            result.notes.append(
                "no vLLM launch command recognised (vllm serve, api_server, docker/podman run, "
                "compose, Kubernetes or supervisord)"
            )
            return result
        reader = {
            "shell": _parse_shell,
            "compose": _parse_compose,
            "kubernetes": _parse_kubernetes,
            "supervisord": _parse_supervisord,
        }[shape]
        result = reader(text, file)
        if "launcher" not in result.knobs and shape != "shell":
            # YAML-looking prose around a shell command (a README, an issue): try the shell.
            fallback = _parse_shell(text, file)
            if "launcher" in fallback.knobs:
                return fallback
        return result
    except Exception as exc:  # a parser must never take the run down; say what happened instead
        result = ParseResult(kind=f"{KIND_PREFIX}.{shape or 'unknown'}")
        result.notes.append(f"launch command could not be read ({type(exc).__name__}: {exc})")
        return result


# ---------------------------------------------------------------------------------------------
# Lines: prompts, comments, heredocs, continuations
# ---------------------------------------------------------------------------------------------

# A shell prompt in front of a command: `$ `, `user@host:~/dir$ `, `root@abc:/# `,
# `[user@host dir]$ `, `(venv) user@host:~$ `, `PS C:\> `, `C:\models> `. A bare `# ` is a
# comment, not a root prompt: without user@host we cannot tell, and comments are far commoner.
_PROMPT = re.compile(
    r"^\s*(?:\([^)\s]*\)\s*)?"
    r"(?:\[[^\]]*\]\s*[$#]"
    r"|[\w.-]+@[\w.-]+(?::[^\s$#]*)?\s*[$#%]"
    r"|[\w.-]+@[\w.-]+\s+\S+\s*[$#%]"
    r"|[$%]"
    r"|PS [^>]*>"
    r"|[A-Za-z]:\\[^>]*>)[ \t]+"
)
# cmd.exe asks `More?` for the next line of a `^`-continued command (bash's `> ` is removed as
# a blockquote marker by clean_paste).
_CONTINUATION_PROMPT = re.compile(r"^More\? ?")
_HEREDOC = re.compile(r"<<(-?)\s*(['\"]?)([A-Za-z_][\w]*)\2")
_HEREDOC_TARGET = re.compile(r"(?:>\s*|\btee\s+(?:-a\s+)?)([^\s<>|;&]+)")
_CAT_FILE = re.compile(r"^\s*cat\s+([^\s<>|;&]+)\s*$")
_POWERSHELL_ENV = re.compile(r"""^\s*\$env:([A-Za-z_]\w*)\s*=\s*(.*?)\s*;?\s*$""")

# Words that start a new command; a line starting with one is never the tail of a wrapped line.
_COMMAND_WORDS = frozenset(
    _words("""
    docker podman nvidia-docker vllm python python3 uv uvx conda mamba micromamba source export
    set unset cd ls cat echo printf curl wget sleep wait kill pkill nvidia-smi pip pip3 git sudo
    nohup env exec bash sh zsh if then else elif fi for do done while case esac function return
    mkdir rm cp mv tail head grep sed awk tee chmod chown ray srun sbatch torchrun kubectl helm
    huggingface-cli hf apt apt-get yum dnf systemctl journalctl time timeout numactl taskset
    declare local readonly trap ulimit cmd powershell pwsh setx start call rem
    """)
)
_OPTION_START = re.compile(r"^--?[A-Za-z]")
_LOG_START = re.compile(r"^\s*(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL|Traceback|\(\w+ pid=|\[\w)")


@dataclass
class _Line:
    number: int
    text: str
    prompted: bool = False
    comment: bool = False


@dataclass
class _Logical:
    """A command as the shell sees it after continuations: text plus where each piece started."""

    text: str = ""
    starts: list[int] = field(default_factory=list)  # offset of each piece in `text`
    lines: list[int] = field(default_factory=list)  # line number of each piece
    open: bool = False  # the last piece ended with a continuation character
    last_raw: str = ""

    def add(self, line: int, piece: str, sep: str) -> None:
        if self.text:
            self.text += sep
        self.starts.append(len(self.text))
        self.lines.append(line)
        self.text += piece

    def line_at(self, offset: int) -> int | None:
        if not self.lines:
            return None
        return self.lines[max(0, bisect.bisect_right(self.starts, offset) - 1)]


def _prepare_lines(text: str) -> tuple[list[_Line], bool]:
    """Paste lines with debris removed; prompts stripped and remembered; comments marked."""
    out = []
    for pasted in clean_paste(text, keep_prompts=True):
        line = _CONTINUATION_PROMPT.sub("", pasted.text)
        prompt = _PROMPT.match(line)
        if prompt:
            out.append(_Line(pasted.number, line[prompt.end() :], prompted=True))
            continue
        out.append(_Line(pasted.number, line, comment=line.lstrip().startswith(("#", "::", "REM "))))
    prompted = any(ln.prompted for ln in out)
    return out, prompted


def _take_heredocs(lines: list[_Line], shell: _Shell) -> list[_Line]:
    """Remove here-document bodies (and `$ cat file` output) from the command lines; keep the
    bodies as files, so `--config cfg.yaml` written by `cat > cfg.yaml <<EOF` can be read."""
    kept: list[_Line] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        kept.append(line)
        index += 1
        heredoc = None if line.comment else _HEREDOC.search(line.text)
        cat = _CAT_FILE.match(line.text) if line.prompted else None
        if heredoc and "<<<" not in line.text:
            body, index = _heredoc_body(lines, index, heredoc.group(3), strip_tabs=bool(heredoc.group(1)))
            target = _HEREDOC_TARGET.search(line.text[heredoc.end() :] + " " + line.text[: heredoc.start()])
            if target and body:
                shell.files[target.group(1)] = ("\n".join(b.text for b in body), body[0].number)
        elif cat:
            body = []
            while index < len(lines) and not lines[index].prompted:
                body.append(lines[index])
                index += 1
            if body:
                shell.files[cat.group(1)] = ("\n".join(b.text for b in body), body[0].number)
    return kept


def _heredoc_body(
    lines: list[_Line], index: int, delimiter: str, strip_tabs: bool
) -> tuple[list[_Line], int]:
    body = []
    while index < len(lines):
        candidate = lines[index].text.lstrip("\t") if strip_tabs else lines[index].text
        index += 1
        if candidate.strip() == delimiter:
            break
        body.append(_Line(lines[index - 1].number, candidate))
    return body, index


def _strip_continuation(text: str) -> tuple[str, bool]:
    """Remove a trailing continuation character: bash `\\`, PowerShell backtick, cmd.exe `^`,
    or a dangling `&&`/`||`/`|` that the shell completes from the next line."""
    stripped = text.rstrip()
    if stripped.endswith("\\") and not stripped.endswith("\\\\"):
        return stripped[:-1], True
    if stripped.endswith("`") and stripped.count("`") % 2 == 1:
        return stripped[:-1], True
    if stripped == "^" or stripped.endswith((" ^", "\t^")):
        return stripped[:-1], True
    if stripped.endswith(("&&", "||", "|")):
        return stripped, True
    return text, False


_LAUNCH_HINT = re.compile(r"\bvllm\b|api_server|\b(?:docker|podman)\b", re.I)


def _wrap_separator(previous: str, line: _Line, current: _Logical) -> str | None:
    """If `line` continues `current` without a continuation character, the separator to join
    them with ("" for a terminal wrap inside a word, " " or "\\n" between words), else None.

    Two cases: a command pasted without its backslashes (the next line starts with an option,
    which can never start a command of its own), and a terminal that wrapped a long line (the
    next line is a fragment such as `ap-space 8 --max-num-seqs 1`).
    """
    if not _LAUNCH_HINT.search(current.text) or line.prompted or line.comment:
        return None
    text = line.text
    first = text.split(None, 1)[0] if text.strip() else ""
    if not first or _LOG_START.match(text) or first in _COMMAND_WORDS or _ASSIGNMENT.match(first):
        return None
    if _OPTION_START.match(first):
        return "\n"
    if len(previous) < 60 or text[:1] in " \t":
        return None
    last = previous.split()[-1] if previous.split() else ""
    # A wrap inside a flag (`--sw` / `ap-space 8`) joins into a known flag; otherwise the
    # fragment must itself carry options, or it is more likely output than command.
    if (
        last.startswith("-")
        and not previous.endswith((" ", "\t"))
        and _exact_flag((last + first).split("=", 1)[0])
    ):
        return ""
    if not re.search(r"\s--?[A-Za-z]", text):
        return None
    if previous.endswith((" ", "\t")) or (last.startswith("-") and _exact_flag(last.split("=", 1)[0])):
        return " "
    return ""


def _exact_flag(option: str) -> bool:
    match = resolve_flag(option)
    return isinstance(match, FlagMatch) and not match.abbreviated


def _logical_commands(lines: list[_Line], prompted_paste: bool, notes: list[str]) -> list[_Logical]:
    """Join continued lines into logical commands. Commented lines inside a continued command
    are skipped (the person commented out one flag); blank lines end a command."""
    commands: list[_Logical] = []
    current: _Logical | None = None
    for line in lines:
        if not line.text.strip():
            current = None
            continue
        if line.comment:
            if current is not None and current.open:
                notes.append(f"line {line.number}: commented-out line inside a continued command ignored")
            else:
                current = None
            continue
        if current is not None and current.open:
            piece, still_open = _strip_continuation(line.text)
            current.add(line.number, piece, "\n")
        elif current is not None and (sep := _wrap_separator(current.last_raw, line, current)) is not None:
            piece, still_open = _strip_continuation(line.text)
            current.add(line.number, piece.lstrip() if sep == " " else piece, sep)
            how = "no backslash" if sep == "\n" else "terminal-wrapped line"
            notes.append(f"line {line.number}: read as the continuation of line {current.lines[0]} ({how})")
        elif prompted_paste and not line.prompted:
            current = None  # output of a prompted command, not a command
            continue
        else:
            current = _Logical()
            commands.append(current)
            piece, still_open = _strip_continuation(line.text)
            current.add(line.number, piece, "")
        current.open = still_open
        current.last_raw = line.text
    return commands


# ---------------------------------------------------------------------------------------------
# Tokenising: POSIX-shell words, tolerant of cut pastes
# ---------------------------------------------------------------------------------------------

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_OPERATORS = ("&&", "||", ";;", ";", "|", "&")
Resolver = Callable[[str], "Value | None"]


class _Tokenizer:
    """Split a logical command into words the way bash would, keeping each word's line.

    Why not shlex: shlex cannot say where a word started (provenance), fails on the unbalanced
    quotes of a cut paste, and knows nothing of `$VAR`, `$(…)`, `2>&1` or `<placeholder>`.
    An unbalanced quote is dropped (and noted) instead of failing or swallowing the rest.
    """

    def __init__(self, logical: _Logical, resolve: Resolver, notes: list[str]):
        self.src = logical.text
        self.logical = logical
        self.resolve = resolve
        self.notes = notes
        self.pos = 0
        self.tokens: list[Token] = []
        self._reset_word()

    def _reset_word(self) -> None:
        self.buf: list[str] = []
        self.word_start: int | None = None
        self.expansions: list[tuple[str, int | None]] = []

    def _start(self) -> None:
        if self.word_start is None:
            self.word_start = self.pos

    def _flush(self) -> None:
        if self.word_start is not None:
            self.tokens.append(
                Token("".join(self.buf), self.logical.line_at(self.word_start), expansions=self.expansions)
            )
        self._reset_word()

    def _op(self, op: str) -> None:
        self._flush()
        self.tokens.append(Token(op, self.logical.line_at(self.pos), op=op))
        self.pos += len(op)

    def run(self) -> list[Token]:
        src = self.src
        while self.pos < len(src):
            char = src[self.pos]
            if char in " \t\n\r":
                self._flush()
                self.pos += 1
            elif char == "#" and self.word_start is None:
                end = src.find("\n", self.pos)
                self.pos = len(src) if end < 0 else end
            elif char == "'":
                self._single_quoted()
            elif char == '"':
                self._double_quoted()
            elif char == "\\":
                self._start()
                nxt = src[self.pos + 1 : self.pos + 2]
                if _WINDOWS_PATH_CHAR.match(nxt):
                    # `C:\models\phi3`: bash would eat these backslashes, but nobody escapes a
                    # letter on purpose; it is a Windows path pasted from cmd/PowerShell.
                    self.buf.append(char)
                    self.pos += 1
                else:
                    self.buf.append(nxt)
                    self.pos += 2
            elif char == "$":
                self._start()
                self._dollar(in_double=False)
            elif char == "`":
                self._backtick()
            elif char in "<>" or (char == "&" and src.startswith("&>", self.pos)):
                self._angle(char)
            elif src.startswith(_OPERATORS, self.pos):
                self._op(next(op for op in _OPERATORS if src.startswith(op, self.pos)))
            else:
                self._start()
                self.buf.append(char)
                self.pos += 1
        self._flush()
        return self.tokens

    def _unbalanced(self, what: str) -> None:
        """A quote that never closes (a paste cut short, a quote lost in an editor): drop the
        stray quote and split the rest normally — closer to what the person meant than one
        giant word running to the end of the command."""
        line = self.logical.line_at(self.pos)
        self.notes.append(f"line {line}: unbalanced {what} ignored")
        self._start()
        self.pos += 1

    def _single_quoted(self) -> None:
        end = self.src.find("'", self.pos + 1)
        if end < 0:
            self._unbalanced("single quote")
            return
        self._start()
        self.buf.append(self.src[self.pos + 1 : end])
        self.pos = end + 1

    def _double_quoted(self) -> None:
        src = self.src
        if not _closes(src, self.pos + 1):
            self._unbalanced("double quote")
            return
        self._start()
        self.pos += 1
        while self.pos < len(src) and src[self.pos] != '"':
            char = src[self.pos]
            if char == "\\" and self.pos + 1 < len(src) and src[self.pos + 1] in '$`"\\\n':
                self.buf.append(src[self.pos + 1])
                self.pos += 2
            elif char == "$":
                self._dollar(in_double=True)
            else:
                self.buf.append(char)
                self.pos += 1
        self.pos += 1

    def _backtick(self) -> None:
        """Bash command substitution: kept literally (we never run anything)."""
        self._start()
        end = self.src.find("`", self.pos + 1)
        end = len(self.src) - 1 if end < 0 else end
        self.buf.append(self.src[self.pos : end + 1])
        self.pos = end + 1

    def _dollar(self, in_double: bool) -> None:
        src, pos = self.src, self.pos
        nxt = src[pos + 1 : pos + 2]
        if nxt == "(":
            end = _matching(src, pos + 1, "(", ")")
            self.buf.append(src[pos : end + 1])
            self.pos = end + 1
        elif nxt == "{":
            end = src.find("}", pos)
            end = len(src) - 1 if end < 0 else end
            self._expand_braced(src[pos + 2 : end], src[pos : end + 1])
            self.pos = end + 1
        elif nxt == "'" and not in_double:
            self.pos += 1
            self._single_quoted()
        elif src.startswith("env:", pos + 1) and (name := _NAME.match(src, pos + 5)):
            self._expand(name.group(0), src[pos : name.end()])  # PowerShell $env:NAME
            self.pos = name.end()
        elif name := _NAME.match(src, pos + 1):
            self._expand(name.group(0), "$" + name.group(0))
            self.pos = name.end()
        else:
            self.buf.append("$")
            self.pos += 1

    def _expand(self, name: str, literal: str) -> None:
        value = self.resolve(name)
        self.expansions.append((name, value.line if value else None))
        self.buf.append(literal if value is None else str(value.value))

    def _expand_braced(self, inner: str, literal: str) -> None:
        name_match = _NAME.match(inner)
        if not name_match:
            self.buf.append(literal)
            return
        name, rest = name_match.group(0), inner[name_match.end() :]
        value = self.resolve(name)
        self.expansions.append((name, value.line if value else None))
        # ${NAME:-default} / ${NAME-default} (and the := / = forms): the colon forms also
        # replace an empty value.
        operator = next((op for op in (":-", ":=", "-", "=") if rest.startswith(op)), None)
        empty = value is not None and value.value == "" and operator is not None and operator[0] == ":"
        if value is not None and not empty:
            self.buf.append(str(value.value))
        elif operator is not None:
            self.buf.append(rest[len(operator) :])
        else:
            self.buf.append(literal)

    def _angle(self, char: str) -> None:
        """`<placeholder with spaces>` is a word (people paste `--model <your model>`); anything
        else is a redirection: `> file`, `2>&1`, `&> file`, `< file`."""
        src, pos = self.src, self.pos
        if char == "<" and not src.startswith("<<", pos):
            newline = src.find("\n", pos)
            end = src.find(">", pos, len(src) if newline < 0 else newline)
            inner = src[pos + 1 : end] if end > 0 else ""
            if (
                end > 0
                and inner
                and not inner[0].isspace()
                and not inner[-1].isspace()
                and "<" not in inner
                and inner[0] != "("
            ):
                self._start()
                self.buf.append(src[pos : end + 1])
                self.pos = end + 1
                return
        fd = "".join(self.buf) if self.buf and "".join(self.buf).isdigit() else ""
        if fd:
            self._reset_word()
        else:
            self._flush()
        match = _REDIRECT.match(src, pos)
        op = match.group(0) if match else char
        # `2>&1` / `>&2` duplicate a descriptor and take no target word; the others do.
        kind = "redirect-dup" if re.search(r">&[\d-]*$", op) else "redirect"
        self.tokens.append(Token(fd + op, self.logical.line_at(pos), op=kind))
        self.pos = pos + len(op)


_WINDOWS_PATH_CHAR = re.compile(r"[A-Za-z0-9_.-]")
_REDIRECT = re.compile(r"&?(?:>>?|<<?<?)(?:&[\d-]*)?")


def _closes(text: str, start: int) -> bool:
    """Whether a double quote opened before `start` has an unescaped closing quote."""
    index = start
    while index < len(text):
        if text[index] == "\\":
            index += 2
            continue
        if text[index] == '"':
            return True
        index += 1
    return False


def _matching(text: str, start: int, opening: str, closing: str) -> int:
    depth = 0
    for index in range(start, len(text)):
        if text[index] == opening:
            depth += 1
        elif text[index] == closing:
            depth -= 1
            if depth == 0:
                return index
    return len(text) - 1


def tokenize(
    logical: _Logical, resolve: Resolver | None = None, notes: list[str] | None = None
) -> list[Token]:
    return _Tokenizer(logical, resolve or (lambda _name: None), notes if notes is not None else []).run()


def tokenize_string(
    text: str, line: int | None, resolve: Resolver | None = None, notes: list[str] | None = None
) -> list[Token]:
    """Tokenise a command given as one string (supervisord `command=`, `bash -c "…"`, YAML)."""
    logical = _Logical()
    logical.add(line or 0, text, "")
    tokens = tokenize(logical, resolve, notes)
    for token in tokens:
        if line is None:
            token.line = None
    return tokens


@dataclass
class _Simple:
    """One simple command: its words, and what the shell does around it (for notes)."""

    words: list[Token] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _simple_commands(tokens: list[Token]) -> list[_Simple]:
    """Split on `&&`, `||`, `;`, `|`, `&`; drop redirections (noting where output went)."""
    commands: list[_Simple] = [_Simple()]
    index = 0
    while index < len(tokens):
        token = tokens[index]
        current = commands[-1]
        if token.op == "redirect":
            target = tokens[index + 1] if index + 1 < len(tokens) and tokens[index + 1].op is None else None
            if target and token.text.lstrip("0123456789&").startswith(">"):
                current.notes.append(f"line {token.line}: output redirected to {target.text}")
            index += 2 if target else 1
            continue
        if token.op == "redirect-dup":
            index += 1
            continue
        if token.op:
            if token.op == "&" and current.words:
                current.notes.append(f"line {token.line}: run in the background (&)")
            commands.append(_Simple())
        elif not (token.text in ("(", ")", "{", "}") and not current.words):  # subshell/group braces
            current.words.append(token)
        index += 1
    return [command for command in commands if command.words]


# ---------------------------------------------------------------------------------------------
# Finding the launch inside a simple command (through wrappers and env prefixes)
# ---------------------------------------------------------------------------------------------

_ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)
_PYTHON = re.compile(r"^python(?:\d+(?:\.\d+)?)?(?:\.exe)?$")
_API_SERVER_MODULES = {
    "vllm.entrypoints.openai.api_server": "api_server_module",
    "vllm.entrypoints.api_server": "api_server_module",  # the old demo server; same engine args
}
_SHELLS = {"bash", "sh", "zsh", "dash", "ash"}
# Wrapper commands that run the command after them: {name: options that take a value}.
_WRAPPERS: dict[str, set[str]] = {
    "sudo": {"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U"},
    "nohup": set(),
    "exec": set(),
    "time": set(),
    "command": set(),
    "nice": {"-n"},
    "ionice": {"-c", "-n"},
    "chrt": set(),
    "unbuffer": set(),
    "stdbuf": {"-i", "-o", "-e"},
    "env": {"-u", "-C", "-S", "--unset", "--chdir"},
    "numactl": {"-C", "-N", "-m", "-p", "-i"},
    "srun": {"-N", "-n", "-p", "-c", "-w", "-t", "-J", "-A"},
    "uvx": {"--from", "--with", "--python", "-p"},
}
# Two-word wrappers: `uv run`, `conda run`, … and the options of theirs that take a value.
_RUNNERS: dict[tuple[str, str], set[str]] = {
    ("uv", "run"): {
        "--with",
        "--python",
        "-p",
        "--env-file",
        "--project",
        "--directory",
        "--package",
        "--extra",
        "--group",
        "--index",
        "--index-url",
        "--with-requirements",
    },
    ("conda", "run"): {"-n", "--name", "-p", "--prefix", "--cwd"},
    ("mamba", "run"): {"-n", "--name", "-p", "--prefix"},
    ("micromamba", "run"): {"-n", "--name", "-p", "--prefix"},
    ("poetry", "run"): set(),
    ("pipenv", "run"): set(),
    ("pdm", "run"): set(),
    ("hatch", "run"): set(),
    ("pixi", "run"): {"-e", "--environment"},
}
# Positional arguments a wrapper takes before the command (timeout 600 cmd, taskset -c 0-7 cmd).
_WRAPPER_POSITIONALS = {"timeout": 1, "taskset": 1}


@dataclass
class _Anchor:
    kind: str  # vllm_serve | api_server_module | docker_run | podman_run | shell_c
    index: int  # index of the program word
    args_from: int  # index of the first argument after the program (and subcommand)
    prefix_env: list[Token] = field(default_factory=list)
    wrappers: list[str] = field(default_factory=list)


def _basename(word: str) -> str:
    return re.split(r"[\\/]", word)[-1]


def _skip_wrapper(words: list[Token], index: int) -> tuple[int, str] | None:
    """If words[index] starts a wrapper, the index after it and its description."""
    name = _basename(words[index].text)
    following = words[index + 1].text if index + 1 < len(words) else ""
    if (name, following) in _RUNNERS:
        value_options = _RUNNERS[(name, following)]
        cursor, described = index + 2, f"{name} {following}"
        while cursor < len(words) and words[cursor].text.startswith("-"):
            option = words[cursor].text
            if option in ("-n", "--name") and cursor + 1 < len(words):
                described += f" -n {words[cursor + 1].text}"
            cursor += 2 if option in value_options and "=" not in option else 1
        return cursor, described
    if name in _WRAPPERS or name in _WRAPPER_POSITIONALS:
        value_options = _WRAPPERS.get(name, set())
        cursor = index + 1
        while cursor < len(words) and words[cursor].text.startswith("-") and words[cursor].text != "--":
            takes_value = words[cursor].text in value_options
            # `srun --ntasks 1 vllm serve`: an unlisted long option may take a value too, but
            # never the program we are looking for.
            if not takes_value and words[cursor].text.startswith("--") and "=" not in words[cursor].text:
                takes_value = cursor + 1 < len(words) and not _is_program(words[cursor + 1].text)
                takes_value = takes_value and not words[cursor + 1].text.startswith("-")
            cursor += 2 if takes_value else 1
        if cursor < len(words) and words[cursor].text == "--":
            cursor += 1
        cursor += _WRAPPER_POSITIONALS.get(name, 0)
        return cursor, name
    return None


def _is_program(word: str) -> bool:
    name = _basename(word)
    return (
        name in ("vllm", "docker", "podman", "nvidia-docker") or name in _SHELLS or bool(_PYTHON.match(name))
    )


def _find_anchor(words: list[Token]) -> _Anchor | None:
    """Locate the program that starts vLLM, skipping env assignments and wrapper commands."""
    prefix_env: list[Token] = []
    wrappers: list[str] = []
    index = 0
    while index < len(words):
        word = words[index].text
        name = _basename(word)
        following = words[index + 1].text if index + 1 < len(words) else ""
        if _ASSIGNMENT.match(word):
            prefix_env.append(words[index])
            index += 1
            continue
        anchor = _program_anchor(words, index, name, following)
        if anchor:
            anchor.prefix_env, anchor.wrappers = prefix_env, wrappers
            return anchor
        skipped = _skip_wrapper(words, index)
        if skipped is None:
            return None
        index, described = skipped
        wrappers.append(described)
    return None


def _program_anchor(words: list[Token], index: int, name: str, following: str) -> _Anchor | None:
    if name in ("docker", "podman", "nvidia-docker"):
        kind = "podman_run" if name == "podman" else "docker_run"
        if following == "run":
            return _Anchor(kind, index, index + 2)
        if following == "container" and index + 2 < len(words) and words[index + 2].text == "run":
            return _Anchor(kind, index, index + 3)
        return None
    if name in ("vllm", "vllm.exe") and following == "serve":
        return _Anchor("vllm_serve", index, index + 2)
    if _PYTHON.match(name):
        return _python_anchor(words, index)
    if name in _SHELLS and following.startswith("-") and following.endswith("c") and index + 2 < len(words):
        return _Anchor("shell_c", index, index + 2)
    return None


def _python_anchor(words: list[Token], index: int) -> _Anchor | None:
    cursor = index + 1
    while cursor < len(words):
        word = words[cursor].text
        if word == "-m" and cursor + 1 < len(words):
            module = words[cursor + 1].text
            if module in _API_SERVER_MODULES:
                return _Anchor(_API_SERVER_MODULES[module], index, cursor + 2)
            if (
                module == "vllm.entrypoints.cli.main"
                and cursor + 2 < len(words)
                and words[cursor + 2].text == "serve"
            ):
                return _Anchor("vllm_serve", index, cursor + 3)
            return None
        if word.startswith("-m") and word[2:] in _API_SERVER_MODULES:
            return _Anchor(_API_SERVER_MODULES[word[2:]], index, cursor + 1)
        if word.replace("\\", "/").endswith("vllm/entrypoints/openai/api_server.py"):
            return _Anchor("api_server_module", index, cursor + 1)
        if not word.startswith("-"):
            return None  # a script that is not vLLM's
        cursor += 2 if word in ("-X", "-W") else 1
    return None


# ---------------------------------------------------------------------------------------------
# vLLM arguments → arg.<dest>
# ---------------------------------------------------------------------------------------------

_NEGATIVE_NUMBER = re.compile(r"^-\d+(?:\.\d+)?$")
_OPT_LEVEL = re.compile(r"^-O(\d+)$")
_TRUE_FALSE = {"true", "false", "True", "False", "1", "0", "yes", "no"}
# `-O` set the compilation level (`--compilation-config`) from v0.6.4 until the optimization
# levels of PR #26847 took it over (v0.12.0).
_OPTIMIZATION_LEVEL_SINCE = (0, 12)


def _is_option(text: str) -> bool:
    return text.startswith("-") and text != "-" and not _NEGATIVE_NUMBER.match(text)


@dataclass
class _ArgReader:
    """Reads vLLM arguments the way FlexibleArgumentParser + argparse would."""

    launch: Launch
    file: str
    positional: str  # "model": a positional model_tag is accepted; "reject": it is an error
    version: tuple[int, int] | None = None
    entrypoint: str = ""  # what runs these arguments, for messages
    dotted: dict[str, list[tuple[str, str, int | None]]] = field(default_factory=dict)
    positionals: list[Token] = field(default_factory=list)
    model_flag: Value | None = None

    def read(self, words: list[Token]) -> None:
        index = 0
        while index < len(words):
            word = words[index]
            if word.text == "--":
                self.positionals.extend(words[index + 1 :])
                break
            if _is_option(word.text):
                index = self._option(words, index)
            else:
                self.positionals.append(word)
                index += 1
        self._finish()

    # -- options ---------------------------------------------------------------------------

    def _option(self, words: list[Token], index: int) -> int:
        word = words[index]
        name, eq, inline = word.text.partition("=")
        inline_value = inline if eq else None
        level = _OPT_LEVEL.match(name)
        if level:
            self._set_optimization_level(level.group(1), word)
            return index + 1
        base, dot, key = name.partition(".")
        match = resolve_flag(base)
        if isinstance(match, list):
            self._problem(
                "ambiguous-flag", f"ambiguous vLLM flag {base} (could be {', '.join(match[:5])})", word
            )
            return self._skip_value(words, index, inline_value)
        if match is None:
            return self._unknown(words, index, base, inline_value)
        spec = match.spec
        if match.abbreviated:
            self.launch.notes.append(
                f"line {word.line}: {base} read as {spec.long} (argparse accepts a unique prefix)"
            )
        if dot:
            value, index = self._one_value(words, index, inline_value, spec.long + "." + key)
            if value is not None:
                self.dotted.setdefault(spec.dest, []).append((key, value.value, value.line))
            return index
        if base == "-O":  # `-O 3` / `-O=3`; `-O3` was handled above
            value, index = self._one_value(words, index, inline_value, "-O")
            if value is not None:
                self._set_optimization_level(value.value, word)
            return index
        return self._store(spec, match, words, index, inline_value)

    def _store(
        self, spec: FlagSpec, match: FlagMatch, words: list[Token], index: int, inline: str | None
    ) -> int:
        word = words[index]
        if spec.kind in (BOOL, OPTIONAL_BOOL):
            value = Value("false" if match.negated else "true", word.line)
            if inline is not None:
                value = Value(inline, word.line)
            elif (
                spec.kind == OPTIONAL_BOOL and index + 1 < len(words) and words[index + 1].text in _TRUE_FALSE
            ):
                value, index = Value(words[index + 1].text, words[index + 1].line), index + 1
            self._set(spec.dest, value)
            return index + 1
        if spec.kind == LIST and inline is None:
            values = []
            cursor = index + 1
            while cursor < len(words) and not _is_option(words[cursor].text):
                values.append(words[cursor])
                cursor += 1
            if not values:
                self._problem("flag-missing-value", f"vLLM flag {spec.long} is given no value", word)
                return cursor
            self._set(spec.dest, self._value_of(values[0], " ".join(v.text for v in values)))
            return cursor
        if spec.kind == OPTIONAL and inline is None:
            if index + 1 < len(words) and not _is_option(words[index + 1].text):
                self._set(spec.dest, self._value_of(words[index + 1]))
                return index + 2
            self._set(spec.dest, Value("true", word.line))
            return index + 1
        value, index = self._one_value(words, index, inline, spec.long)
        if value is not None:
            if spec.dest == "model":
                self.model_flag = value
            self._set(spec.dest, value)
        return index

    def _one_value(
        self, words: list[Token], index: int, inline: str | None, shown: str
    ) -> tuple[Value | None, int]:
        word = words[index]
        if inline is not None:
            return self._value_of(word, inline), index + 1
        if index + 1 < len(words) and not _is_option(words[index + 1].text):
            return self._value_of(words[index + 1]), index + 2
        self._problem("flag-missing-value", f"vLLM flag {shown} is given no value", word)
        return None, index + 1

    def _value_of(self, token: Token, text: str | None = None) -> Value:
        note = None
        if token.expansions:
            parts = [
                f"${name} from line {line}" if line else f"${name} is not defined in the paste"
                for name, line in token.expansions
            ]
            note = "variable: " + "; ".join(parts)
        return Value(token.text if text is None else text, token.line, note)

    def _skip_value(self, words: list[Token], index: int, inline: str | None) -> int:
        if inline is None and index + 1 < len(words) and not _is_option(words[index + 1].text):
            return index + 2
        return index + 1

    def _unknown(self, words: list[Token], index: int, base: str, inline: str | None) -> int:
        word = words[index]
        suggestion = suggest_flag(base)
        hint = f" (did you mean {suggestion}?)" if suggestion else ""
        advice = "vLLM rejects it at start-up (unrecognized arguments)"
        self._problem(
            "unknown-flag",
            f"unknown vLLM flag {base}{hint}",
            word,
            advice=advice + (f"; use {suggestion}" if suggestion else ""),
        )
        # Most vLLM options take a value, so an unknown one is read as taking the next word
        # unless that word is itself an option; the value is kept under the name as written.
        dest = normalise_spelling(base).lstrip("-").replace("-", "_")
        value = Value(inline if inline is not None else "true", word.line, "flag unknown to vLLM")
        next_index = index + 1
        if (
            inline is None
            and index + 1 < len(words)
            and not _is_option(words[index + 1].text)
            and not (self.positional == "model" and not self.positionals and "/" in words[index + 1].text)
        ):
            value = Value(words[index + 1].text, words[index + 1].line, "flag unknown to vLLM")
            next_index = index + 2
        if dest:
            self._set(dest, value)
        return next_index

    def _set_optimization_level(self, level: str, word: Token) -> None:
        if self.version is not None and self.version < _OPTIMIZATION_LEVEL_SINCE:
            self.dotted.setdefault("compilation_config", []).append(("level", level, word.line))
            self.launch.notes.append(
                f"line {word.line}: -O{level} sets the compilation level on vLLM "
                f"{'.'.join(map(str, self.version))} (--compilation-config)"
            )
            return
        note = "-O: --optimization-level since v0.12; on v0.6.4–v0.11 it set the compilation-config level"
        self._set("optimization_level", Value(level, word.line, note))

    def _set(self, dest: str, value: Value) -> None:
        previous = self.launch.args.get(dest)
        if previous is not None and previous.value != value.value:
            self.launch.notes.append(
                f"line {value.line}: --{dest.replace('_', '-')} given again "
                f"(also at line {previous.line}); the last one wins"
            )
        self.launch.args[dest] = value

    def _problem(self, problem_id: str, message: str, token: Token, advice: str = "") -> None:
        self.launch.problems.append(
            Problem(problem_id, "warning", message, [Provenance(self.file, token.line)], advice)
        )

    # -- after the last word ---------------------------------------------------------------

    def _finish(self) -> None:
        self._merge_dotted()
        if not self.positionals:
            return
        first, extra = self.positionals[0], self.positionals[1:]
        if self.positional == "reject":
            self._problem(
                "positional-argument",
                f"{self.entrypoint or 'this entry point'} takes the model only as --model; "
                f"the positional {first.text!r} is rejected (unrecognized arguments)",
                first,
            )
            if self.model_flag is None:
                self.launch.args["model"] = Value(
                    first.text, first.line, "positional; rejected by this entry point"
                )
        elif self.model_flag is not None:
            self._problem(
                "model-given-twice",
                f"model given both as positional {first.text!r} and as --model "
                f"{self.model_flag.value!r}; vLLM rejects the extra argument",
                first,
            )
            self.launch.args["model"] = self._value_of(first)
        else:
            self.launch.args["model"] = self._value_of(first)
        for word in extra:
            self._problem(
                "positional-argument",
                f"unexpected argument {word.text!r} (vLLM: unrecognized arguments)",
                word,
            )

    def _merge_dotted(self) -> None:
        """`--compilation-config.level 3 -cc.mode 2` → one JSON object per option, merged over
        a full JSON value given for the same option."""
        for dest, pieces in self.dotted.items():
            base: dict[str, Any] = {}
            given = self.launch.args.get(dest)
            if given is not None:
                try:
                    loaded = json.loads(given.value)
                    base = loaded if isinstance(loaded, dict) else {}
                except (TypeError, ValueError):
                    base = {}
            for key, raw, _line in pieces:
                _set_path(base, key, _json_or_text(raw))
            last_line = pieces[-1][2]
            self.launch.args[dest] = Value(
                json.dumps(base),
                last_line,
                "merged from dotted keys (" + ", ".join(p[0] for p in pieces) + ")",
            )


def _json_or_text(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def _set_path(target: dict[str, Any], dotted_key: str, value: Any) -> None:
    keys = dotted_key.split(".")
    append = keys[-1].endswith("+")
    keys[-1] = keys[-1].rstrip("+")
    for key in keys[:-1]:
        nested = target.get(key)
        if not isinstance(nested, dict):
            nested = target[key] = {}
        target = nested
    if append:
        items = value.split(",") if isinstance(value, str) else [value]
        existing = target.get(keys[-1])
        target[keys[-1]] = (existing if isinstance(existing, list) else []) + items
    else:
        target[keys[-1]] = value


# ---------------------------------------------------------------------------------------------
# docker run / podman run
# ---------------------------------------------------------------------------------------------

_DOCKER_BOOL_LONG = frozenset(
    _words("""--detach --interactive --tty --rm --init --privileged --read-only --publish-all
    --no-healthcheck --oom-kill-disable --sig-proxy --disable-content-trust --quiet --help
    --use-api-socket --env-host --replace --rootfs --read-only-tmpfs --no-hosts --tls-verify
    --http-proxy --env-merge-unused""")
)
_DOCKER_BOOL_SHORT = set("ditPq")
_DOCKER_VALUE_SHORT = set("evpwuhmlac")
_DOCKER_ALIASES = {
    "-e": "--env",
    "-v": "--volume",
    "-p": "--publish",
    "-w": "--workdir",
    "-u": "--user",
    "-h": "--hostname",
    "-m": "--memory",
    "-l": "--label",
    "-a": "--attach",
    "-c": "--cpu-shares",
    "--net": "--network",
}
_IMAGE_VERSION = re.compile(r"^v?(\d+)\.(\d+)")
# vllm/vllm-openai switched its entrypoint from the api_server module to `vllm serve` in
# PR #25967 (v0.11.0).
_SERVE_ENTRYPOINT_SINCE = (0, 11)


def _docker_options(words: list[Token]) -> tuple[list[tuple[str, Token, Token | None]], int]:
    """docker run options up to the image: [(long option, option token, value token)], image index."""
    options: list[tuple[str, Token, Token | None]] = []
    index = 0
    while index < len(words):
        word = words[index]
        text = word.text
        if not text.startswith("-") or text == "-":
            return options, index
        if text == "--":
            return options, index + 1
        if text.startswith("--"):
            name, eq, inline = text.partition("=")
            if eq:
                options.append((name, word, Token(inline, word.line)))
            elif name in _DOCKER_BOOL_LONG:
                options.append((name, word, None))
            elif index + 1 < len(words):
                options.append((name, word, words[index + 1]))
                index += 1
            index += 1
            continue
        letters = text[1:]
        if all(letter in _DOCKER_BOOL_SHORT for letter in letters):
            index += 1
            continue
        value_at = next((i for i, letter in enumerate(letters) if letter in _DOCKER_VALUE_SHORT), None)
        if value_at is None:
            index += 1
            continue
        long = _DOCKER_ALIASES.get("-" + letters[value_at], "-" + letters[value_at])
        attached = letters[value_at + 1 :].lstrip("=")
        if attached:
            options.append((long, word, Token(attached, word.line)))
        elif index + 1 < len(words):
            options.append((long, word, words[index + 1]))
            index += 1
        index += 1
    return options, index


def _image_entrypoint(ref: str) -> tuple[str | None, tuple[int, int] | None]:
    """What the image runs by default ("vllm_serve" | "api_server_module" | None) and its version."""
    name = ref.split("@", 1)[0]
    tag = ""
    if ":" in name.rsplit("/", 1)[-1]:
        name, tag = name.rsplit(":", 1)
    if not name.rsplit("/", 1)[-1].startswith("vllm-openai"):
        return None, None
    version_match = _IMAGE_VERSION.match(tag)
    if version_match:
        version = (int(version_match.group(1)), int(version_match.group(2)))
        return ("vllm_serve" if version >= _SERVE_ENTRYPOINT_SINCE else "api_server_module"), version
    return None, None  # latest, nightly, model tags: which entrypoint depends on when it was pulled


def _unquote_gpus(value: str) -> str:
    """`--gpus '"device=0,1"'`: the shell removes one layer of quotes, docker's CSV reader the
    second; the selection is what is left."""
    value = value.strip()
    while len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        value = value[1:-1].strip()
    return value


# ---------------------------------------------------------------------------------------------
# From words to a Launch
# ---------------------------------------------------------------------------------------------


@dataclass
class _Context:
    file: str
    notes: list[str] = field(default_factory=list)


def _analyse(words: list[Token], shell: _Shell, ctx: _Context) -> Launch | None:
    """The Launch a simple command starts, or None if it starts no vLLM server."""
    anchor = _find_anchor(words)
    if anchor is None:
        return None
    if anchor.kind == "shell_c":
        return _analyse_shell_c(words, anchor, shell, ctx)
    if anchor.kind in ("docker_run", "podman_run"):
        return _analyse_docker(words, anchor, shell, ctx)
    launch = Launch(anchor.kind, words[anchor.index].line)
    # The environment the process inherits: exports so far (host shell, container env or a
    # supervisord environment= line, depending on which shell this is).
    launch.env.update(shell.exported)
    _add_prefix_env(launch, anchor)
    serve = anchor.kind == "vllm_serve"
    reader = _ArgReader(
        launch,
        ctx.file,
        positional="model" if serve else "reject",
        entrypoint="vllm serve" if serve else "python -m vllm.entrypoints.openai.api_server",
    )
    reader.read(words[anchor.args_from :])
    _read_config_file(launch, shell, ctx)
    return launch


def _add_prefix_env(launch: Launch, anchor: _Anchor) -> None:
    for token in anchor.prefix_env:
        name, _, value = token.text.partition("=")
        launch.env[name] = Value(value, token.line)
    for wrapper in anchor.wrappers:
        launch.notes.append(f"started through `{wrapper}`")


def _analyse_shell_c(words: list[Token], anchor: _Anchor, shell: _Shell, ctx: _Context) -> Launch | None:
    """`bash -c "export X=1; vllm serve …"`: read the script as a small shell session."""
    script = words[anchor.args_from]
    child = _Shell(dict(shell.variables), dict(shell.exported), shell.files)
    for token in anchor.prefix_env:
        name, _, value = token.text.partition("=")
        child.exported[name] = Value(value, token.line)
    launches = _script_launches(script.text, script.line, child, ctx)
    if not launches:
        return None
    launch = launches[-1]
    launch.notes.append(
        f"line {script.line}: launched by `{_basename(words[anchor.index].text)} "
        f'{words[anchor.index + 1].text} "…"`'
    )
    return launch


def _analyse_docker(words: list[Token], anchor: _Anchor, shell: _Shell, ctx: _Context) -> Launch | None:
    """A docker/podman run that starts vLLM (a `docker run … nvidia/cuda nvidia-smi` is not one)."""
    rest = words[anchor.args_from :]
    options, image_index = _docker_options(rest)
    if image_index >= len(rest) or not _runs_vllm(rest[image_index], rest[image_index + 1 :], options):
        return None
    launch = Launch(anchor.kind, words[anchor.index].line)
    for token in anchor.prefix_env:
        launch.notes.append(
            f"line {token.line}: {token.text.partition('=')[0]} set for the "
            f"{_basename(words[anchor.index].text)} client, not inside the container"
        )
    entrypoint: Token | None = None
    for name, _option, value in options:
        if value is None:
            continue
        if name == "--entrypoint":
            entrypoint = value
        else:
            _docker_option(launch, name, value, shell, anchor)
    _gpus_from_visible_devices(launch)
    if shell.exported:
        launch.notes.append(
            "host exports are not passed into the container unless named with -e/--env: "
            + ", ".join(sorted(shell.exported))
        )
    image = rest[image_index]
    _set_image(launch, image)
    _container_command(launch, image, [entrypoint] if entrypoint else [], rest[image_index + 1 :], ctx, shell)
    return launch


def _runs_vllm(image: Token, args: list[Token], options: list[tuple[str, Token, Token | None]]) -> bool:
    """The image is a vLLM image, or what runs in it is vLLM: a vLLM program, or arguments that
    are (nearly all) vLLM flags. TGI's `--model-id`, sglang's `--model-path` are not."""
    if "vllm" in image.text.lower():
        return True
    entrypoint = [value for name, _option, value in options if name == "--entrypoint" and value is not None]
    program = entrypoint + args
    if program and not _is_option(program[0].text) and _find_anchor(program) is not None:
        return True
    flags = [token.text.split("=", 1)[0].split(".", 1)[0] for token in args if _is_option(token.text)]
    known = [flag for flag in flags if isinstance(resolve_flag(flag), FlagMatch)]
    return bool(flags) and len(known) >= 0.8 * len(flags)


def _docker_option(launch: Launch, name: str, value: Token, shell: _Shell, anchor: _Anchor) -> None:
    text = value.text
    if name == "--gpus":
        launch.container["gpus"] = Value(_unquote_gpus(text), value.line)
    elif name == "--device" and "gpu" in text and "/" in text and not text.startswith("/dev/"):
        previous = launch.container.get("gpus")
        joined = f"{previous.value},{text}" if previous else text
        launch.container["gpus"] = Value(joined, previous.line if previous else value.line, "CDI device")
    elif name in ("--runtime", "--shm-size", "--ipc", "--network"):
        launch.container[name[2:].replace("-", "_")] = Value(text, value.line)
    elif name in ("--volume", "--mount"):
        _append(launch.container, "volumes", text, value.line)
    elif name == "--env-file":
        _append(launch.container, "env_files", text, value.line)
    elif name == "--env":
        _docker_env(launch, value, shell, anchor)


def _docker_env(launch: Launch, value: Token, shell: _Shell, anchor: _Anchor) -> None:
    name, eq, env_value = value.text.partition("=")
    if eq:
        launch.env[name] = Value(env_value, value.line)
        return
    # `-e NAME` passes the client's own NAME through: an earlier export, or a prefix on docker.
    prefix = {t.text.partition("=")[0]: t for t in anchor.prefix_env}
    source = shell.exported.get(name)
    if name in prefix:
        source = Value(prefix[name].text.partition("=")[2], prefix[name].line)
    if source is not None:
        launch.env[name] = Value(
            source.value, value.line, f"passed from the host; value set at line {source.line}"
        )
    else:
        launch.notes.append(
            f"line {value.line}: -e {name} passes the host's {name}; its value is not in the paste"
        )


def _append(target: dict[str, Value], key: str, item: str, line: int | None) -> None:
    if key in target:
        target[key].value.append(item)
    else:
        target[key] = Value([item], line)


def _gpus_from_visible_devices(launch: Launch) -> None:
    """Without --gpus, the NVIDIA runtime selects GPUs from NVIDIA_VISIBLE_DEVICES."""
    visible = launch.env.get("NVIDIA_VISIBLE_DEVICES")
    if "gpus" not in launch.container and visible is not None:
        runtime = launch.container.get("runtime")
        note = "from NVIDIA_VISIBLE_DEVICES" + (
            "" if runtime and runtime.value == "nvidia" else " (takes effect only with the NVIDIA runtime)"
        )
        launch.container["gpus"] = Value(visible.value, visible.line, note)


def _set_image(launch: Launch, image: Token) -> None:
    launch.image = Value(image.text, image.line)
    if "@sha256:" in image.text:
        launch.digest = Value(image.text.split("@", 1)[1], image.line)


def _container_command(
    launch: Launch, image: Token, entrypoint: list[Token], args: list[Token], ctx: _Context, shell: _Shell
) -> None:
    """Read what runs in the container: an overridden entrypoint, a command given after the
    image, or (the usual case) vLLM arguments handed to the image's own entrypoint."""
    container_shell = _Shell(exported=dict(launch.env), files=shell.files)
    program = entrypoint + args
    default, version = _image_entrypoint(image.text)
    anchor = _find_anchor(program) if program and not _is_option(program[0].text) else None
    if anchor is not None:
        inner = _analyse(program, container_shell, ctx)
        if inner is not None:
            if default and not entrypoint:
                launch.problems.append(
                    Problem(
                        "command-after-vllm-image",
                        "warning",
                        f"{image.text} already starts vLLM from its entrypoint; the command after the image "
                        "is passed to it as extra arguments",
                        [Provenance(ctx.file, program[0].line)],
                        "give only vLLM arguments after the image, or override --entrypoint",
                    )
                )
            _merge_inner(launch, inner)
            return
    if entrypoint:
        shown = " ".join(token.text for token in entrypoint)
        launch.notes.append(
            f"line {entrypoint[0].line}: entrypoint {shown!r} does not start vLLM "
            "directly; its arguments were not read"
        )
        return
    if default is None:
        launch.notes.append(
            f"line {image.line}: entrypoint of {image.text} assumed to be vLLM's "
            "(vllm serve on images from v0.11, the api_server module before)"
        )
    positional = "reject" if default == "api_server_module" else "model"
    shown = {
        "api_server_module": f"{image.text} (entrypoint python3 -m vllm.entrypoints.openai.api_server)",
        "vllm_serve": f"{image.text} (entrypoint vllm serve)",
    }.get(default or "", image.text)
    reader = _ArgReader(launch, ctx.file, positional=positional, version=version, entrypoint=shown)
    reader.read(args)
    _read_config_file(launch, container_shell, ctx)


_DESCRIBE = {
    "vllm_serve": "vllm serve",
    "api_server_module": "python -m vllm.entrypoints.openai.api_server",
    "docker_run": "docker run",
    "podman_run": "podman run",
}


def _merge_inner(launch: Launch, inner: Launch) -> None:
    launch.args.update(inner.args)
    launch.env.update(inner.env)
    launch.notes.extend(inner.notes)
    launch.problems.extend(inner.problems)
    launch.notes.append(f"line {inner.line}: the container runs {_DESCRIBE[inner.launcher]}")


# ---------------------------------------------------------------------------------------------
# Shell sessions: variables, exports, several commands
# ---------------------------------------------------------------------------------------------


def _walk(commands: list[_Simple], shell: _Shell, ctx: _Context) -> list[Launch]:
    launches = []
    for command in commands:
        if _assignments(command.words, shell):
            continue
        launch = _analyse(command.words, shell, ctx)
        if launch is not None:
            launch.notes.extend(command.notes)
            launches.append(launch)
        else:
            _note_environment(command.words, ctx)
    return launches


def _assignments(words: list[Token], shell: _Shell) -> bool:
    """`export A=1`, `A=1`, `declare -x A=1`, `unset A`, cmd.exe `set A=1`; True if handled."""
    head = words[0].text
    if head in ("export", "declare", "typeset", "setx"):
        for word in words[1:]:
            if word.text.startswith("-"):
                continue
            match = _ASSIGNMENT.match(word.text)
            if match:
                value = Value(match.group(2), word.line)
                shell.variables[match.group(1)] = shell.exported[match.group(1)] = value
            elif head == "setx" and word is words[1] and len(words) >= 3:
                shell.exported[word.text] = Value(words[2].text, words[2].line)
                break
            elif word.text in shell.variables:
                shell.exported[word.text] = shell.variables[word.text]
        return True
    if all(_ASSIGNMENT.match(word.text) for word in words):
        for word in words:
            name, _, value = word.text.partition("=")
            shell.variables[name] = Value(value, word.line)
        return True
    if head.lower() == "set" and len(words) == 2 and _ASSIGNMENT.match(words[1].text):
        name, _, value = words[1].text.partition("=")
        shell.variables[name] = shell.exported[name] = Value(value, words[1].line)
        return True
    if head == "unset":
        for word in words[1:]:
            shell.variables.pop(word.text, None)
            shell.exported.pop(word.text, None)
        return True
    return False


def _note_environment(words: list[Token], ctx: _Context) -> None:
    """Python environments activated before the launch matter when versions are compared."""
    texts = [w.text for w in words]
    if (
        texts[:2] in (["conda", "activate"], ["mamba", "activate"], ["micromamba", "activate"])
        and len(texts) > 2
    ):
        ctx.notes.append(f"line {words[0].line}: conda environment {texts[2]} activated")
    elif texts[0] in ("source", ".") and len(texts) > 1 and "activate" in texts[1]:
        ctx.notes.append(f"line {words[0].line}: Python environment {texts[1]} activated")


def _script_launches(script: str, first_line: int | None, shell: _Shell, ctx: _Context) -> list[Launch]:
    """The launches in a script given as one string (`sh -c "…"`, a YAML block scalar): lines,
    continuations and comments as in a file, line numbers counted from where the string starts."""
    lines = [
        _Line(first_line + offset if first_line else 0, text, comment=text.lstrip().startswith("#"))
        for offset, text in enumerate(script.splitlines())
    ]
    launches: list[Launch] = []
    for logical in _logical_commands(lines, False, ctx.notes):
        tokens = tokenize(logical, shell.lookup, ctx.notes)
        if first_line is None:
            for token in tokens:
                token.line = None
        launches.extend(_walk(_simple_commands(tokens), shell, ctx))
    return launches


def _shell_launches(
    text: str, file: str = "", sniff: bool = False
) -> tuple[list[Launch], _Context, list[int]]:
    """Every vLLM launch in a shell paste, in order; plus lines of commented-out launches."""
    ctx = _Context(file)
    lines, prompted = _prepare_lines(text)
    shell = _Shell()
    lines = _take_heredocs(lines, shell)
    commented = [line.number for line in lines if line.comment and _COMMENTED_LAUNCH.search(line.text)]
    launches: list[Launch] = []
    logicals = _logical_commands(lines, prompted, ctx.notes)
    if prompted and not any(_LAUNCH_HINT.search(logical.text) for logical in logicals):
        # Prompts were shown only for other commands (`$ nvidia-smi`); the launch was pasted
        # without one, so every line may be a command after all.
        logicals = _logical_commands(lines, False, ctx.notes)
    for logical in logicals:
        powershell = _POWERSHELL_ENV.match(logical.text)
        if powershell:
            value = Value(_unquote_simple(powershell.group(2)), logical.lines[0])
            shell.variables[powershell.group(1)] = shell.exported[powershell.group(1)] = value
            continue
        tokens = tokenize(logical, shell.lookup, ctx.notes)
        launches.extend(_walk(_simple_commands(tokens), shell, ctx))
        if sniff and launches:
            break
    return launches, ctx, commented


_COMMENTED_LAUNCH = re.compile(r"\bvllm\s+serve\b|vllm\.entrypoints\.|\b(?:docker|podman)\s+run\b")


def _unquote_simple(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    return text


def _parse_shell(text: str, file: str) -> ParseResult:
    result = ParseResult(kind=f"{KIND_PREFIX}.shell")
    launches, ctx, commented = _shell_launches(text, file)
    if not launches:
        result.notes.append("no vLLM launch found in the shell text")
        result.notes.extend(ctx.notes)
        return result
    chosen = launches[-1]
    _emit(chosen, result, file)
    for other in launches[:-1]:
        result.notes.append(
            f"line {other.line}: another launch ({other.launcher}) not used; "
            f"the last live one (line {chosen.line}) is"
        )
    for line in commented:
        result.notes.append(f"line {line}: commented-out launch ignored")
    result.notes.extend(ctx.notes)
    return result


def _emit(launch: Launch, result: ParseResult, file: str) -> None:
    result.knob("launcher", launch.launcher, file, launch.line)
    if launch.image is not None:
        result.knob("image.ref", launch.image.value, file, launch.image.line, launch.image.note)
    if launch.digest is not None:
        result.knob("image.digest", launch.digest.value, file, launch.digest.line)
    for key, value in launch.container.items():
        result.knob(f"container.{key}", value.value, file, value.line, value.note)
    if "model" in launch.args:
        model = launch.args["model"]
        result.knob("arg.model", model.value, file, model.line, model.note)
    for dest, value in launch.args.items():
        if dest != "model":
            result.knob(f"arg.{dest}", value.value, file, value.line, value.note)
    for name, value in launch.env.items():
        result.knob(f"env.{name}", value.value, file, value.line, value.note)
    result.notes.extend(launch.notes)
    result.problems.extend(launch.problems)


# ---------------------------------------------------------------------------------------------
# --config file.yaml
# ---------------------------------------------------------------------------------------------


def _read_config_file(launch: Launch, shell: _Shell, ctx: _Context) -> None:
    """Fold the keys of `--config x.yaml` in when its text is in the same paste (a heredoc or
    `$ cat x.yaml` output). CLI values win over the YAML (vLLM's precedence), and a key set
    to `false` is dropped by vLLM, so it sets nothing — a trap worth a warning."""
    config = launch.args.get("config")
    if config is None:
        return
    name = str(config.value)
    found = shell.files.get(name) or next(
        (body for path, body in shell.files.items() if _basename(path) == _basename(name)), None
    )
    if found is None:
        launch.notes.append(
            f"line {config.line}: the values in {name} are not in the paste; "
            "only the arguments on the command line were read"
        )
        return
    body, first_line = found
    try:
        data = yaml.safe_load(body)
    except yaml.YAMLError as exc:
        launch.notes.append(f"line {first_line}: {name} does not parse as YAML ({exc.__class__.__name__})")
        return
    if not isinstance(data, dict):
        return
    body_lines = body.splitlines()
    for key, value in data.items():
        _config_key(launch, str(key), value, _key_line(body_lines, str(key), first_line), name, ctx)


def _config_key(launch: Launch, key: str, value: Any, line: int | None, name: str, ctx: _Context) -> None:
    dest = key.replace("-", "_")
    if dest in ("model_tag", "model") and "model" not in launch.args:
        launch.args["model"] = Value(str(value), line, f"from {name}")
        return
    match = resolve_flag("--" + key.replace("_", "-"))
    if not isinstance(match, FlagMatch):
        suggestion = suggest_flag("--" + key.replace("_", "-"))
        hint = f" (did you mean {suggestion}?)" if suggestion else ""
        launch.problems.append(
            Problem(
                "unknown-flag",
                "warning",
                f"unknown vLLM flag {key} in {name}{hint}",
                [Provenance(ctx.file, line)],
            )
        )
    else:
        dest = match.spec.dest
    if dest in launch.args:
        return  # the command line wins over the config file
    if value is False:
        launch.problems.append(
            Problem(
                "config-false-dropped",
                "warning",
                f"{key}: false in {name} is dropped by vLLM (only true emits --{key.replace('_', '-')}), "
                "so the default applies",
                [Provenance(ctx.file, line)],
                f"pass --no-{key.replace('_', '-')} on the command line to switch it off",
            )
        )
        return
    if value is True:
        text = "true"
    elif isinstance(value, list):
        text = " ".join(str(item) for item in value)
    elif isinstance(value, dict):
        text = json.dumps(value)
    else:
        text = str(value)
    launch.args[dest] = Value(text, line, f"from {name}")


def _key_line(lines: list[str], key: str, first_line: int) -> int | None:
    pattern = re.compile(rf"^\s*['\"]?{re.escape(key)}['\"]?\s*:")
    for offset, text in enumerate(lines):
        if pattern.match(text):
            return first_line + offset
    return first_line


# ---------------------------------------------------------------------------------------------
# YAML: docker-compose services and Kubernetes container specs
# ---------------------------------------------------------------------------------------------

Path = tuple[Any, ...]


@dataclass
class _YamlDoc:
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
    become empty), and tab indentation (a paste artefact PyYAML refuses) made spaces."""
    kept = {line.number: line.text for line in clean_paste(text, keep_prompts=True)}
    total = text.count("\n") + 1
    lines = []
    for number in range(1, total + 1):
        line = kept.get(number, "")
        indent = len(line) - len(line.lstrip(" \t"))
        lines.append(line[:indent].replace("\t", "    ") + line[indent:])
    return "\n".join(lines)


def _load_yaml(text: str, notes: list[str]) -> list[_YamlDoc]:
    """All documents; a paste cut mid-document is read up to the line where YAML breaks."""
    lines = _paste_as_yaml(text).split("\n")
    for _attempt in range(30):
        try:
            nodes = list(yaml.compose_all("\n".join(lines), Loader=yaml.SafeLoader))
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            cut = mark.line if mark is not None and 0 < mark.line < len(lines) else len(lines) - 1
            if cut <= 0:
                notes.append(f"YAML does not parse ({exc.__class__.__name__})")
                return []
            notes.append(f"line {cut + 1}: YAML breaks here; read up to line {cut}")
            lines = lines[:cut]
            continue
        docs = []
        for node in nodes:
            if node is None:
                continue
            loader = yaml.SafeLoader("")
            docs.append(_YamlDoc(loader.construct_document(node), node, lines))
        return docs
    return []


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


_COMPOSE_VAR = re.compile(r"\$\{([A-Za-z_]\w*)(?::?-([^}]*))?\}|\$\$")


def _compose_interpolate(text: str, notes: list[str], line: int | None) -> str:
    """Compose substitutes ${VAR} from the host/.env (not visible here): keep the default when
    one is given, else keep the reference as written; `$$` is a literal `$`."""

    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        if match.group(2) is not None:
            notes.append(f"line {line}: ${{{match.group(1)}}} read as its default {match.group(2)!r}")
            return match.group(2)
        return match.group(0)

    return _COMPOSE_VAR.sub(replace, text)


def _command_tokens(
    doc: _YamlDoc, path: Path, value: Any, notes: list[str], expand: Callable[[str, int | None], str]
) -> list[Token]:
    """A YAML command/entrypoint/args value as words: a list is taken item by item (no shell
    splitting), a string is split like a shell would."""
    if isinstance(value, list):
        tokens = []
        for index, item in enumerate(value):
            line = doc.line((*path, index))
            tokens.append(Token(expand(_scalar(item), line), line))
        return tokens
    if isinstance(value, str):
        pieces = doc.block_pieces(path)
        if pieces:  # a shell-split string over several lines: newlines are only whitespace
            logical = _Logical()
            for line, text in pieces:
                logical.add(line, expand(text, line), "\n")
            return tokenize(logical, None, notes)
        line = doc.line(path)
        return tokenize_string(expand(value, line), line, None, notes)
    return []


def _mentions_vllm(*values: Any) -> bool:
    text = json.dumps(values, default=str).lower()
    return "vllm" in text or "api_server" in text or "--model" in text


def _parse_compose(text: str, file: str) -> ParseResult:
    result = ParseResult(kind=f"{KIND_PREFIX}.compose")
    ctx = _Context(file)
    found = []
    for doc in _load_yaml(text, ctx.notes):
        found.extend(_compose_services(doc))
    vllm = [
        item
        for item in found
        if _mentions_vllm(item[2].get("image"), item[2].get("command"), item[2].get("entrypoint"))
    ]
    if not vllm:
        result.notes.append("no vLLM service found in the compose file")
        result.notes.extend(ctx.notes)
        return result
    doc, path, service = vllm[0]
    launch = _compose_launch(doc, path, service, ctx)
    _emit(launch, result, file)
    for _doc, other_path, _service in vllm[1:]:
        result.notes.append(f"service {other_path[-1]} also runs vLLM; the first one ({path[-1]}) was read")
    result.notes.extend(ctx.notes)
    return result


def _compose_services(doc: _YamlDoc) -> list[tuple[_YamlDoc, Path, dict[str, Any]]]:
    data = doc.data
    if not isinstance(data, dict):
        return []
    if isinstance(data.get("services"), dict):
        return [
            (doc, ("services", name), svc) for name, svc in data["services"].items() if isinstance(svc, dict)
        ]
    if "image" in data or "command" in data:  # a lone service body
        return [(doc, (), data)]
    return [(doc, (name,), svc) for name, svc in data.items() if isinstance(svc, dict)]


def _compose_launch(doc: _YamlDoc, path: Path, service: dict[str, Any], ctx: _Context) -> Launch:
    launch = Launch("compose", doc.line((*path, "image")) or doc.line(path) or 1)
    if path:
        launch.notes.append(f"service {path[-1]}")
    _compose_environment(launch, doc, path, service.get("environment"))
    env_files = service.get("env_file")
    if env_files:
        items = env_files if isinstance(env_files, list) else [env_files]
        paths = [item.get("path", "") if isinstance(item, dict) else _scalar(item) for item in items]
        launch.container["env_files"] = Value(paths, doc.line((*path, "env_file")))
    _compose_container(launch, doc, path, service)
    image_text = _scalar(service.get("image")).strip()
    image = Token(_compose_interpolate(image_text, ctx.notes, launch.line), doc.line((*path, "image")))
    if image_text:
        _set_image(launch, image)
    elif "build" in service:
        launch.notes.append("the service is built locally (build:), no image reference")

    def expand(text: str, line: int | None) -> str:
        return _compose_interpolate(text, ctx.notes, line)

    entrypoint = _command_tokens(doc, (*path, "entrypoint"), service.get("entrypoint"), ctx.notes, expand)
    args = _command_tokens(doc, (*path, "command"), service.get("command"), ctx.notes, expand)
    _container_command(launch, image, entrypoint, args, ctx, _Shell())
    return launch


def _compose_environment(launch: Launch, doc: _YamlDoc, path: Path, environment: Any) -> None:
    where = (*path, "environment")
    if isinstance(environment, dict):
        for name, value in environment.items():
            if value is None:
                launch.notes.append(
                    f"environment {name} is passed from the host; its value is not in the file"
                )
            else:
                launch.env[str(name)] = Value(_scalar(value), doc.line((*where, str(name))))
    elif isinstance(environment, list):
        for index, item in enumerate(environment):
            name, eq, value = _scalar(item).partition("=")
            if eq:
                launch.env[name] = Value(value, doc.line((*where, index)))
            else:
                launch.notes.append(
                    f"environment {name} is passed from the host; its value is not in the file"
                )


def _compose_container(launch: Launch, doc: _YamlDoc, path: Path, service: dict[str, Any]) -> None:
    gpus = _compose_gpus(service)
    if gpus is not None:
        value, gpu_path = gpus
        launch.container["gpus"] = Value(value, doc.line((*path, *gpu_path)))
    for key, name in (
        ("runtime", "runtime"),
        ("shm_size", "shm_size"),
        ("ipc", "ipc"),
        ("network_mode", "network"),
    ):
        if service.get(key) is not None:
            launch.container[name] = Value(_scalar(service[key]), doc.line((*path, key)))
    volumes = service.get("volumes")
    if isinstance(volumes, list) and volumes:
        items = [
            f"{v.get('source', '')}:{v.get('target', '')}" if isinstance(v, dict) else _scalar(v)
            for v in volumes
        ]
        launch.container["volumes"] = Value(items, doc.line((*path, "volumes", 0)))
    _gpus_from_visible_devices(launch)


def _compose_gpus(service: dict[str, Any]) -> tuple[str, Path] | None:
    """deploy.resources.reservations.devices (count / device_ids), or the newer `gpus:` key."""
    devices = (((service.get("deploy") or {}).get("resources") or {}).get("reservations") or {}).get(
        "devices"
    )
    if isinstance(devices, list):
        for index, device in enumerate(devices):
            if not isinstance(device, dict):
                continue
            base: Path = ("deploy", "resources", "reservations", "devices", index)
            if device.get("device_ids") is not None:
                ids = device["device_ids"]
                text = ",".join(_scalar(i) for i in ids) if isinstance(ids, list) else _scalar(ids)
                # docker's own spelling: a bare "0" would read as a GPU count, not GPU 0
                return f"device={text}", (*base, "device_ids")
            if device.get("count") is not None:
                return _scalar(device["count"]), (*base, "count")
            if "gpu" in json.dumps(device.get("capabilities", [])):
                return "all", base  # capabilities [gpu] with neither count nor ids: all GPUs
    for index, device in enumerate(service.get("devices") or []):
        if "nvidia.com/gpu" in _scalar(device):  # CDI device names, as with --device
            return _scalar(device), ("devices", index)
    gpus = service.get("gpus")
    if gpus is not None:
        return (_scalar(gpus) if not isinstance(gpus, list) else json.dumps(gpus)), ("gpus",)
    return None


def _parse_kubernetes(text: str, file: str) -> ParseResult:
    result = ParseResult(kind=f"{KIND_PREFIX}.kubernetes")
    ctx = _Context(file)
    candidates = []
    for doc in _load_yaml(text, ctx.notes):
        for pod_path, pod in _pod_specs(doc.data, ()):
            for index, container in enumerate(pod.get("containers") or []):
                if isinstance(container, dict) and _mentions_vllm(
                    container.get("image"), container.get("command"), container.get("args")
                ):
                    candidates.append((doc, pod_path, pod, index, container))
    if not candidates:
        result.notes.append("no vLLM container found in the Kubernetes spec")
        result.notes.extend(ctx.notes)
        return result
    doc, pod_path, pod, index, container = candidates[0]
    launch = _k8s_launch(doc, pod_path, pod, index, container, ctx)
    _emit(launch, result, file)
    for other in candidates[1:]:
        result.notes.append(f"container {other[4].get('name')} also runs vLLM; the first one was read")
    result.notes.extend(ctx.notes)
    return result


def _pod_specs(data: Any, path: Path) -> Iterable[tuple[Path, dict[str, Any]]]:
    """Every mapping holding `containers:` (Pod, Deployment, StatefulSet, Job, LeaderWorkerSet…)."""
    if isinstance(data, dict):
        if isinstance(data.get("containers"), list):
            yield path, data
        for key, value in data.items():
            if key != "containers":
                yield from _pod_specs(value, (*path, key))
    elif isinstance(data, list):
        for index, item in enumerate(data):
            yield from _pod_specs(item, (*path, index))


_K8S_VAR = re.compile(r"\$\(([A-Za-z_]\w*)\)")


def _k8s_launch(
    doc: _YamlDoc, pod_path: Path, pod: dict[str, Any], index: int, container: dict[str, Any], ctx: _Context
) -> Launch:
    path: Path = (*pod_path, "containers", index)
    launch = Launch("kubernetes", doc.line((*path, "image")) or doc.line(path))
    if container.get("name"):
        launch.notes.append(f"container {container['name']}")
    _k8s_env(launch, doc, path, container)
    _k8s_resources(launch, doc, path, pod_path, pod, container)
    image = Token(_scalar(container.get("image")).strip(), doc.line((*path, "image")))
    if image.text:
        _set_image(launch, image)

    def expand(text: str, line: int | None) -> str:
        # Kubernetes expands $(VAR) in command/args from the container's own env.
        def replace(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in launch.env:
                return match.group(0)
            ctx.notes.append(
                f"line {line}: $({name}) expanded from the container env (line {launch.env[name].line})"
            )
            return str(launch.env[name].value)

        return _K8S_VAR.sub(replace, text)

    entrypoint = _command_tokens(doc, (*path, "command"), container.get("command"), ctx.notes, expand)
    args = _command_tokens(doc, (*path, "args"), container.get("args"), ctx.notes, expand)
    _container_command(launch, image, entrypoint, args, ctx, _Shell())
    return launch


def _k8s_env(launch: Launch, doc: _YamlDoc, path: Path, container: dict[str, Any]) -> None:
    for index, item in enumerate(container.get("env") or []):
        if not isinstance(item, dict) or "name" not in item:
            continue
        line = doc.line((*path, "env", index, "value")) or doc.line((*path, "env", index))
        if "value" in item:
            launch.env[str(item["name"])] = Value(_scalar(item["value"]), line)
        elif "valueFrom" in item:
            source = json.dumps(item["valueFrom"], default=str)
            launch.notes.append(f"line {line}: env {item['name']} comes from {source}; value not in the spec")
    for item in container.get("envFrom") or []:
        if isinstance(item, dict):
            launch.notes.append(
                f"envFrom {json.dumps(item, default=str)}: those variables are not in the spec"
            )


def _k8s_resources(
    launch: Launch, doc: _YamlDoc, path: Path, pod_path: Path, pod: dict[str, Any], container: dict[str, Any]
) -> None:
    resources = container.get("resources") or {}
    for section in ("limits", "requests"):
        for key, value in (resources.get(section) or {}).items():
            if str(key).endswith("/gpu") and "gpus" not in launch.container:
                launch.container["gpus"] = Value(
                    _scalar(value), doc.line((*path, "resources", section, key)), f"{key} {section[:-1]}"
                )
    if pod.get("runtimeClassName"):
        launch.container["runtime"] = Value(
            _scalar(pod["runtimeClassName"]), doc.line((*pod_path, "runtimeClassName"))
        )
    if pod.get("hostIPC"):
        launch.container["ipc"] = Value("host", doc.line((*pod_path, "hostIPC")))
    if pod.get("hostNetwork"):
        launch.container["network"] = Value("host", doc.line((*pod_path, "hostNetwork")))
    _k8s_volumes(launch, doc, path, pod_path, pod, container)


def _k8s_volumes(
    launch: Launch, doc: _YamlDoc, path: Path, pod_path: Path, pod: dict[str, Any], container: dict[str, Any]
) -> None:
    volumes = {v.get("name"): (i, v) for i, v in enumerate(pod.get("volumes") or []) if isinstance(v, dict)}
    mounts = [m for m in container.get("volumeMounts") or [] if isinstance(m, dict)]
    if mounts:
        launch.container["volumes"] = Value(
            [f"{m.get('name')}:{m.get('mountPath')}" for m in mounts], doc.line((*path, "volumeMounts", 0))
        )
    for mount in mounts:
        if mount.get("mountPath") != "/dev/shm" or mount.get("name") not in volumes:
            continue
        index, volume = volumes[mount["name"]]
        empty_dir = volume.get("emptyDir") or {}
        size = empty_dir.get("sizeLimit")
        line = doc.line((*pod_path, "volumes", index, "emptyDir"))
        launch.container["shm_size"] = Value(
            _scalar(size) if size else "memory", line, "emptyDir (medium Memory) mounted at /dev/shm"
        )


# ---------------------------------------------------------------------------------------------
# supervisord
# ---------------------------------------------------------------------------------------------

_SECTION = re.compile(r"^\s*\[([^\]]+)\]\s*$")
_INI_KEY = re.compile(r"^([A-Za-z_][\w.-]*)\s*[=:]\s*(.*)$")
_INLINE_COMMENT = re.compile(r"\s+[;#].*$")


def _ini_sections(text: str) -> list[tuple[str, dict[str, _Logical]]]:
    """[(section, {key: value with the line of each piece})]; indented lines continue a value."""
    sections: list[tuple[str, dict[str, _Logical]]] = []
    last_key: str | None = None
    for line in clean_paste(text, keep_prompts=True):
        stripped = line.text.strip()
        if not stripped or stripped.startswith((";", "#")):
            continue
        header = _SECTION.match(line.text)
        if header:
            sections.append((header.group(1).strip(), {}))
            last_key = None
            continue
        if not sections:
            continue
        values = sections[-1][1]
        if line.text[:1] in " \t" and last_key is not None:
            values[last_key].add(line.number, _INLINE_COMMENT.sub("", stripped), "\n")
            continue
        match = _INI_KEY.match(stripped)
        if match:
            last_key = match.group(1).lower()
            values[last_key] = _Logical()
            values[last_key].add(line.number, _INLINE_COMMENT.sub("", match.group(2)), "")
    return sections


def _supervisord_environment(text: str, line: int) -> dict[str, Value]:
    """`environment=A="1",B="x,y",C=3` — commas inside quotes belong to the value."""
    env: dict[str, Value] = {}
    for item in re.findall(r"""(?:[^,"']|"[^"]*"|'[^']*')+""", text):
        name, eq, value = item.strip().partition("=")
        if eq and name:
            env[name.strip()] = Value(_unquote_simple(value), line)
    return env


def _parse_supervisord(text: str, file: str) -> ParseResult:
    result = ParseResult(kind=f"{KIND_PREFIX}.supervisord")
    ctx = _Context(file)
    launches: list[tuple[str, Launch]] = []
    for name, values in _ini_sections(text):
        if not name.startswith("program:") or "command" not in values:
            continue
        launch = _supervisord_program(values, ctx)
        if launch is not None:
            launches.append((name.split(":", 1)[1], launch))
    if not launches:
        result.notes.append("no supervisord program runs vLLM")
        return result
    # Programs run side by side (not retries of one another), so the first is the primary one.
    program, chosen = launches[0]
    chosen.notes.insert(0, f"[program:{program}]")
    _emit(chosen, result, file)
    for other, launch in launches[1:]:
        result.notes.append(
            f"[program:{other}] (line {launch.line}) also runs vLLM; the first program was read"
        )
    result.notes.extend(ctx.notes)
    return result


def _supervisord_program(values: dict[str, _Logical], ctx: _Context) -> Launch | None:
    command = values["command"]
    shell = _Shell()
    if "environment" in values:
        environment = values["environment"]
        shell.exported.update(
            _supervisord_environment(environment.text.replace("\n", " "), environment.lines[0])
        )
    if "%(" in command.text:
        ctx.notes.append(f"line {command.lines[0]}: supervisord %(…)s expansions kept as written")
    words = tokenize(command, None, ctx.notes)
    inner = _analyse(words, shell, ctx)
    if inner is None:
        return None
    inner.notes.insert(0, f"line {inner.line}: the program runs {_DESCRIBE[inner.launcher]}")
    inner.launcher = "supervisord"
    if "directory" in values:
        inner.notes.append(f"working directory {values['directory'].text}")
    return inner
