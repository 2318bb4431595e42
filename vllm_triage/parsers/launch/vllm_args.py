"""vLLM's own arguments read the way FlexibleArgumentParser and argparse read them: aliases,
unique prefixes, `--no-X`, dotted keys, the positional model; each value kept with its line."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from vllm_triage.core.finding import Finding
from vllm_triage.core.provenance import Provenance
from vllm_triage.parsers.launch.lexer import Token
from vllm_triage.parsers.launch.model import Launch, Value
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

_NEGATIVE_NUMBER = re.compile(r"^-\d+(?:\.\d+)?$")


_OPT_LEVEL = re.compile(r"^-O(\d+)$")


_TRUE_FALSE = {"true", "false", "True", "False", "1", "0", "yes", "no"}


# `-O` set the compilation level (`--compilation-config`) from v0.6.4 until the optimization
# levels of PR #26847 took it over (v0.12.0).
_OPTIMIZATION_LEVEL_SINCE = (0, 12)


def is_option(text: str) -> bool:
    return text.startswith("-") and text != "-" and not _NEGATIVE_NUMBER.match(text)


@dataclass
class ArgReader:
    """Reads vLLM arguments the way FlexibleArgumentParser + argparse would."""

    launch: Launch
    file: str
    positional: str  # "model": a positional model_tag is accepted; "reject": it is an error
    version: tuple[int, int] | None = None
    entrypoint: str = ""  # what runs these arguments, for messages
    dotted: dict[str, list[tuple[str, str, int | None]]] = field(default_factory=dict)
    # "did you mean" costs a fuzzy search over every option: the first few unknown flags get one
    # (a command of 200,000 unknown flags is data, not a typo).
    suggestions_left: int = 64
    positionals: list[Token] = field(default_factory=list)
    model_flag: Value | None = None

    def read(self, words: list[Token]) -> None:
        index = 0
        while index < len(words):
            word = words[index]
            if word.text == "--":
                self.positionals.extend(words[index + 1 :])
                break
            if is_option(word.text):
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
            while cursor < len(words) and not is_option(words[cursor].text):
                values.append(words[cursor])
                cursor += 1
            if not values:
                self._problem("flag-missing-value", f"vLLM flag {spec.long} is given no value", word)
                return cursor
            self._set(spec.dest, self._value_of(values[0], " ".join(v.text for v in values)))
            return cursor
        if spec.kind == OPTIONAL and inline is None:
            if index + 1 < len(words) and not is_option(words[index + 1].text):
                self._set(spec.dest, self._value_of(words[index + 1]))
                return index + 2
            self._set(spec.dest, Value("true", word.line))
            return index + 1
        taken, index = self._one_value(words, index, inline, spec.long)
        if taken is not None:
            value = taken
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
        if index + 1 < len(words) and not is_option(words[index + 1].text):
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
        if inline is None and index + 1 < len(words) and not is_option(words[index + 1].text):
            return index + 2
        return index + 1

    def _unknown(self, words: list[Token], index: int, base: str, inline: str | None) -> int:
        word = words[index]
        suggestion = suggest_flag(base) if self.suggestions_left > 0 else None
        self.suggestions_left -= 1
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
            and not is_option(words[index + 1].text)
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
            Finding(problem_id, "warning", message, [Provenance(self.file, token.line)], advice)
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


def key_dest(key: str, exact: bool = False) -> tuple[str | None, str | None]:
    """A vLLM argument written as a config key (`max_model_len`, `max-model-len`): its dest, or
    (None, the nearest known flag or None) when vLLM does not know it. `exact`: no unique-prefix
    abbreviation (keyword arguments are never abbreviated; `--config` keys go through argparse)."""
    flag = "--" + key.replace("_", "-")
    match = resolve_flag(flag)
    if isinstance(match, FlagMatch) and not (exact and match.abbreviated):
        return match.spec.dest, None
    return None, suggest_flag(flag)
