"""The one shell lexer of the project: a logical command (or one string, or a whole script) into
words that keep the line they were written on, then into simple commands.

Used by the launch-command reader, docker inspect (`sh -c` scripts, command strings), the curl
reader (parsers/request/) and the checklist's "is the command whole?" test. It follows POSIX
quoting as `shlex` in POSIX mode does, and adds what `shlex` cannot give: the line of each word
(provenance), tolerance of the unbalanced quote of a cut paste (dropped and noted, not fatal),
`$VAR` / `${VAR:-default}` expansion from what the paste defined, redirections as operators,
`<placeholder>` words and Windows paths.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from vllm_triage.parsers.launch.model import Value


@dataclass
class Token:
    text: str  # after shell unquoting and variable expansion
    line: int | None  # 1-based line of the token's first character
    op: str | None = None  # shell operator ("&&", ";", ">", …) instead of a word
    # ($NAME, line it was defined on or None when unresolved) for each variable expanded
    expansions: list[tuple[str, int | None]] = field(default_factory=list)


@dataclass
class Logical:
    """A command as the shell sees it after continuations: text plus where each piece started."""

    starts: list[int] = field(default_factory=list)  # offset of each piece in `text`
    lines: list[int] = field(default_factory=list)  # line number of each piece
    open: bool = False  # the last piece ended with a continuation character
    quote: str = ""  # the quote the text ends inside ('"', "'" or ""), kept as pieces are added
    last_raw: str = ""
    # The pieces are joined when `text` is read: `self.text += piece` on an attribute copies the
    # whole text for every line, quadratic on a script of a million lines (seconds per MB).
    _pieces: list[str] = field(default_factory=list, repr=False)
    _length: int = 0
    _joined: str | None = field(default=None, repr=False)

    @property
    def text(self) -> str:
        if self._joined is None:
            self._joined = "".join(self._pieces)
        return self._joined

    def add(self, line: int, piece: str, sep: str) -> None:
        if self._length:
            self._pieces.append(sep)
            self._length += len(sep)
        self.starts.append(self._length)
        self.lines.append(line)
        self._pieces.append(piece)
        self._length += len(piece)
        self._joined = None

    def line_at(self, offset: int) -> int | None:
        if not self.lines:
            return None
        return self.lines[max(0, bisect.bisect_right(self.starts, offset) - 1)]


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


_OPERATORS = ("&&", "||", ";;", ";", "|", "&")


Resolver = Callable[[str], "Value | None"]


class _Tokenizer:
    """Split a logical command into words the way bash would, keeping each word's line.

    Why not shlex: shlex cannot say where a word started (provenance), fails on the unbalanced
    quotes of a cut paste, and knows nothing of `$VAR`, `$(…)`, `2>&1` or `<placeholder>`.
    An unbalanced quote is dropped (and noted) instead of failing or swallowing the rest.
    """

    def __init__(self, logical: Logical, resolve: Resolver, notes: list[str], script: bool = False):
        # script: the text is a whole script, not one logical command, so an unquoted newline
        # ends a command and `\\`, PowerShell's backtick and cmd's `^` at a line end continue it.
        self.script = script
        self.src = logical.text
        self.logical = logical
        self.resolve = resolve
        self.notes = notes
        self.flattened_noted = False
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
            if self.script and (skip := _continuation_at(src, self.pos)):
                self.pos += skip
            elif char == "\n" and self.script:
                self._flush()
                self.tokens.append(Token("\n", self.logical.line_at(self.pos), op=";"))
                self.pos += 1
            elif char in " \t\n\r":
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
                at_word_start = self.word_start is None
                self._start()
                nxt = src[self.pos + 1 : self.pos + 2]
                if at_word_start and nxt and _flattened_continuation(src, self.pos):
                    # `… \--ipc=host \vllm/vllm-openai …`: a web page or chat joined the lines of a
                    # continued command and kept the backslashes. A word that opens with its only
                    # backslash is no Windows path (`C:\x`, `\\server\share` have more or start
                    # with a drive); bash reads it the same: the backslash quotes the next character.
                    if not self.flattened_noted:
                        self.flattened_noted = True
                        self.notes.append(
                            f"line {self.logical.line_at(self.pos)}: words opening with a backslash read as "
                            "bash does (a continued command whose line breaks were lost)"
                        )
                    self.buf.append(nxt)
                    self.pos += 2
                elif _WINDOWS_PATH_CHAR.match(nxt):
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
                # A run of ordinary characters at once: one loop turn per character made the
                # lexer the slowest step of reading a launch command or a curl paste.
                self._start()
                plain = _PLAIN_RUN.match(src, self.pos)
                end = plain.end() if plain else self.pos + 1
                self.buf.append(src[self.pos : end])
                self.pos = end
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
            if src.startswith("\\\n", self.pos):
                self.pos += 2  # a line continuation inside double quotes is removed, as bash does
            elif char == "\\" and self.pos + 1 < len(src) and src[self.pos + 1] in '$`"\\':
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
            # the default word goes through quote removal, as bash does: ${M:-"org/model"} is org/model
            self.buf.append(_remove_quotes(rest[len(operator) :]))
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


_CONTINUATION = re.compile(r"[\\`^]\r?\n")
# Characters no branch of _Tokenizer.run treats specially (whitespace, quotes, escapes, `$`,
# backticks, redirections, operators, comments and continuation marks excluded).
_PLAIN_RUN = re.compile(r"[^ \t\n\r'\"\\$`<>&|;#^]+")


def _continuation_at(text: str, pos: int) -> int:
    """Length of a line continuation starting at `pos` (0 if none): bash `\\`, PowerShell's
    backtick or cmd's `^` right before the end of the line."""
    match = _CONTINUATION.match(text, pos)
    if match is None or (text[pos] == "^" and pos > 0 and not text[pos - 1].isspace()):
        return 0
    return match.end() - pos


_WINDOWS_PATH_CHAR = re.compile(r"[A-Za-z0-9_.-]")


def _flattened_continuation(text: str, pos: int) -> bool:
    """The backslash at `pos` opens a word and is the word's only one, after a space on the same line."""
    if pos == 0 or text[pos - 1] not in " \t":
        return False
    end = pos + 1
    while end < len(text) and text[end] not in " \t\n\r":
        end += 1
    return "\\" not in text[pos + 1 : end]


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
    logical: Logical, resolve: Resolver | None = None, notes: list[str] | None = None
) -> list[Token]:
    return _Tokenizer(logical, resolve or (lambda _name: None), notes if notes is not None else []).run()


def tokenize_string(
    text: str, line: int | None, resolve: Resolver | None = None, notes: list[str] | None = None
) -> list[Token]:
    """Tokenise a command given as one string (supervisord `command=`, `bash -c "…"`, YAML)."""
    logical = Logical()
    logical.add(line or 0, text, "")
    tokens = tokenize(logical, resolve, notes)
    for token in tokens:
        if line is None:
            token.line = None
    return tokens


def lex_script(text: str, first_line: int = 1, notes: list[str] | None = None) -> list[Simple]:
    """A whole script (a curl paste, a body of commands) as simple commands: quotes may span
    lines, an unquoted newline ends a command, continuations join lines; each word keeps the
    line it starts on."""
    logical = Logical()
    for offset, line in enumerate(text.split("\n")):
        logical.add(first_line + offset, line, "\n")
    tokens = _Tokenizer(logical, lambda _name: None, notes if notes is not None else [], script=True).run()
    return simple_commands(tokens)


@dataclass
class Simple:
    """One simple command: its words, and what the shell does around it (for notes)."""

    words: list[Token] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def simple_commands(tokens: list[Token]) -> list[Simple]:
    """Split on `&&`, `||`, `;`, `|`, `&`; drop redirections (noting where output went)."""
    commands: list[Simple] = [Simple()]
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
            commands.append(Simple())
        elif not (token.text in ("(", ")", "{", "}") and not current.words):  # subshell/group braces
            current.words.append(token)
        index += 1
    return [command for command in commands if command.words]


def _remove_quotes(word: str) -> str:
    """Quote removal of a word that stands inside `${…}`: quotes dropped, what they held kept."""
    out: list[str] = []
    quote = ""
    for char in word:
        if char in "\"'" and (not quote or quote == char):
            quote = "" if quote else char
        else:
            out.append(char)
    return "".join(out) if not quote else word  # an unclosed quote: keep the word as written


ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)


def unquote_simple(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    return text
