"""A curl command's words, read from the project's one shell lexer, into the options the request
knobs come from: URL, bodies (`-d` and its spellings), timeouts, method, header names and the
Authorization header (whose value is never copied)."""

from __future__ import annotations

from dataclasses import dataclass, field

from vllm_triage.parsers.launch.lexer import lex_script

# curl options that take a value (long and short spellings); everything else is a flag.
_CURL_VALUE_LONG = {
    "--header",
    "--request",
    "--data",
    "--data-raw",
    "--data-binary",
    "--data-ascii",
    "--data-urlencode",
    "--json",
    "--max-time",
    "--connect-timeout",
    "--output",
    "--user",
    "--user-agent",
    "--referer",
    "--cookie",
    "--cookie-jar",
    "--write-out",
    "--url",
    "--proxy",
    "--retry",
    "--retry-delay",
    "--retry-max-time",
    "--cacert",
    "--cert",
    "--key",
    "--form",
    "--upload-file",
    "--oauth2-bearer",
    "--resolve",
    "--interface",
    "--unix-socket",
    "--config",
    "--limit-rate",
    "--max-filesize",
    "--expect100-timeout",
    "--keepalive-time",
}
_CURL_VALUE_SHORT = set("HXdmouAebcwxFTrEKY")
_DATA_OPTIONS = {"-d", "--data", "--data-raw", "--data-binary", "--data-ascii", "--json"}


@dataclass
class Token:
    text: str
    line: int  # 1-based line where the token starts


@dataclass
class Curl:
    url: Token | None = None
    bodies: list[Token] = field(default_factory=list)
    timeout: Token | None = None
    connect_timeout: Token | None = None
    method: Token | None = None
    header_names: list[str] = field(default_factory=list)
    auth: Token | None = None  # the Authorization header (value never copied)
    start_line: int = 1
    end_line: int = 1


def curl_commands(text: str) -> list[Curl]:
    commands = []
    for words in _shell_commands(text):
        position = next((i for i, w in enumerate(words) if _is_curl_word(w.text)), None)
        if position is not None:
            curl = _read_curl_args(words[position + 1 :])
            curl.start_line = words[position].line
            last = words[-1]
            curl.end_line = last.line + last.text.count("\n")
            commands.append(curl)
    return commands


def _is_curl_word(word: str) -> bool:
    return word.rsplit("/", 1)[-1] in ("curl", "curl.exe")


def _read_curl_args(words: list[Token]) -> Curl:
    curl = Curl()
    index = 0
    while index < len(words):
        word = words[index]
        index += 1
        option, value, index = _split_option(word, words, index)
        if option is None:
            if curl.url is None and not word.text.startswith("-"):
                curl.url = word
            continue
        if value is None:
            continue
        _apply_curl_option(curl, option, value)
    return curl


def _split_option(word: Token, words: list[Token], index: int) -> tuple[str | None, Token | None, int]:
    """(option, its value, next index) for one curl word; (None, None, index) for a positional."""
    text = word.text
    if text.startswith("--"):
        name, eq, attached = text.partition("=")
        if name in _CURL_VALUE_LONG or name in _DATA_OPTIONS:
            if eq:
                return name, Token(attached, word.line), index
            if index < len(words):
                return name, words[index], index + 1
        return name, None, index
    if text.startswith("-") and len(text) > 1:
        # Short flags combine (`-sSN`, `-sd '{…}'`, `-XPOST`): the first value-taking letter ends them.
        for offset, letter in enumerate(text[1:], start=1):
            if letter in _CURL_VALUE_SHORT:
                attached = text[offset + 1 :]
                if attached:
                    return f"-{letter}", Token(attached, word.line), index
                if index < len(words):
                    return f"-{letter}", words[index], index + 1
                return f"-{letter}", None, index
        return text, None, index
    return None, None, index


def _apply_curl_option(curl: Curl, option: str, value: Token) -> None:
    if option in _DATA_OPTIONS:
        curl.bodies.append(value)
    elif option in ("-H", "--header"):
        name = value.text.split(":", 1)[0].strip()
        curl.header_names.append(name)
        if name.lower() in ("authorization", "api-key", "x-api-key"):
            curl.auth = value
    elif option in ("-m", "--max-time"):
        curl.timeout = value
    elif option == "--connect-timeout":
        curl.connect_timeout = value
    elif option in ("-X", "--request"):
        curl.method = value
    elif option == "--url":
        curl.url = value
    elif option == "--oauth2-bearer":
        curl.auth = Token("Authorization: Bearer", value.line)


def _shell_commands(text: str) -> list[list[Token]]:
    """Simple commands of words with the line each starts on, from the project's one shell lexer
    (quotes across lines, continuations, comments, `|`, `;`, `&&`, newlines)."""
    commands = []
    for simple in lex_script(text):
        words = [Token(token.text, token.line or 1) for token in simple.words]
        if words:
            commands.append(words)
    return commands
