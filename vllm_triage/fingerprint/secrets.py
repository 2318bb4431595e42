"""Secret values never leave a fingerprint: its JSON and text show what a credential is, never it.

A fingerprint is printed, diffed and pasted into issues; the value of a credential is none of its
business. Whether a credential was given is: `env.HF_TOKEN` and `arg.api_key` stay, their value
becomes `<secret: N chars>`. The values are kept as read inside the program (the bug report has
its own redaction, with `--no-redact` to opt out); what is concealed is what the fingerprint
prints: its JSON (`Fingerprint.to_json`), and the notes and findings it shows.

A value is a credential by its name (the words TOKEN, KEY, SECRET, PASSWORD… in an env name or a
flag: `HF_TOKEN`, `--api-key`, `--hf-token`; parsers/env_file.py decides) or by its shape wherever
it appears (`hf_…` Hugging Face tokens, `sk-…` API keys, GitHub and AWS keys), since a token
pasted under an odd name is still a token.

A placeholder is shown as written, because it says how the run was meant to get its secret and
holds none: a variable reference (`$HF_TOKEN`, `${TOKEN}`), a bracketed mask (`<token>`, `<...>`,
`[REDACTED]`, `{{ .Values.token }}`), a masked run (`hf_xxxxx`, `hf_Ke....`, `****`), or a word
made of placeholder words (`YOUR_TOKEN`, `your_token_here`, `EMPTY`, `changeme`).

>>> conceal_value("hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123")
'<secret: 35 chars>'
>>> conceal_value("<token>"), conceal_value("$HF_TOKEN"), conceal_value("YOUR_APIKEY")
('<token>', '$HF_TOKEN', 'YOUR_APIKEY')
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from vllm_triage.parsers.env_file import is_secret_name

# Credentials recognisable by their own shape, whatever they are called.
_TOKEN_SHAPES = re.compile(
    r"\b(?:hf_[A-Za-z0-9]{20,}"  # Hugging Face user access token
    r"|sk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}"  # OpenAI / Anthropic style API keys
    r"|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}"  # GitHub tokens
    r"|AKIA[0-9A-Z]{16})\b"  # AWS access key id
)
_REFERENCE = re.compile(r"^\$(?:\{[^}]*\}|\w+)$|^\$\(.*\)$")
_BRACKETED = re.compile(r"^(?:<[^<>]*>|\[[^\[\]]*\]|\{\{.*\}\}|\(\s*[^()]*\s*\))$")
_MASK_CHARS = re.compile(r"[xX*•.#]")
_PLACEHOLDER_WORDS = {
    "YOUR",
    "MY",
    "TOKEN",
    "KEY",
    "API",
    "APIKEY",
    "HERE",
    "SECRET",
    "PASSWORD",
    "CHANGEME",
    "CHANGE",
    "ME",
    "REPLACE",
    "PLACEHOLDER",
    "DUMMY",
    "EMPTY",
    "NONE",
    "NULL",
    "REDACTED",
    "HF",
    "HUGGINGFACE",
    "HUGGING",
    "FACE",
    "HUB",
    "ACCESS",
    "INSERT",
    "PUT",
    "XXX",
    "TODO",
}
_WORDS = re.compile(r"[A-Za-z]+")


def is_placeholder(value: str) -> bool:
    """True when the text stands for a secret instead of being one (see the module docstring)."""
    text = value.strip().strip("\"'")
    if not text:
        return True
    if _REFERENCE.match(text) or _BRACKETED.match(text) or "..." in text or "…" in text:
        return True
    # masked by hand (`hf_xxxxx`, `****`): a run of 3+ mask characters making much of the value; a
    # random token may hold `xXx` by chance, but not 40 % of mask characters
    if re.search(r"[xX*•#]{3,}", text) and len(_MASK_CHARS.findall(text)) >= 0.4 * len(text):
        return True
    words = _WORDS.findall(text)
    return bool(words) and not re.search(r"\d", text) and all(w.upper() in _PLACEHOLDER_WORDS for w in words)


def conceal_value(value: str) -> str:
    """What may be shown of a credential: the placeholder as written, else its length only."""
    return value if is_placeholder(value) else f"<secret: {len(value)} chars>"


def secret_name(name: str) -> bool:
    """`env.HF_TOKEN`, `arg.api_key`, `arg.hf_token`; not `arg.max_num_batched_tokens`."""
    scope, _, rest = name.partition(".")
    return scope in ("env", "arg") and is_secret_name(rest)


def secret_values(named: Iterable[tuple[str, Any]]) -> set[str]:
    """The credentials among (name, value) pairs: values of secret names that are no placeholder."""
    return {
        value
        for name, value in named
        if secret_name(name) and isinstance(value, str) and value and not is_placeholder(value)
    }


def conceal_text(text: str, secrets: set[str]) -> str:
    """`text` with every known credential, and every token-shaped word, replaced."""
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, conceal_value(secret))
    return _TOKEN_SHAPES.sub(lambda m: conceal_value(m.group(0)), text)


def conceal_json(value: Any, secrets: set[str]) -> Any:
    """A JSON-like value with every string concealed (a credential inside a list or a note too)."""
    if isinstance(value, str):
        return conceal_text(value, secrets)
    if isinstance(value, list | tuple):
        return [conceal_json(item, secrets) for item in value]
    if isinstance(value, dict):
        return {key: conceal_json(item, secrets) for key, item in value.items()}
    return value


def conceal_entry(name: str, entry: dict[str, Any], secrets: set[str]) -> dict[str, Any]:
    """One knob or fact as JSON ({value, source, note}): a secret name's value shown by its length."""
    shown = dict(entry)
    value = entry.get("value")
    if secret_name(name) and isinstance(value, str):
        shown["value"] = conceal_value(value)
    else:
        shown["value"] = conceal_json(value, secrets)
    if shown.get("note"):
        shown["note"] = conceal_text(shown["note"], secrets)
    return shown
