"""Redaction of the report (on by default) with the bundle redaction's own library
(vllm_triage/bundle/redact/redactor.py), and the leak scan of what is about to be written.

The report's data is redacted before it is rendered, string by string: a placeholder such as
`<redacted:hf-token:1>` then goes through the HTML escaping and the Markdown code fences like any
other text, instead of being mangled (or, in HTML, swallowed as a tag) by a pass over the output.
Every artefact of the bundles is learned first, so a secret found by its name in an env file is
also replaced where it stands bare in a command or an error line, with the same placeholder.
"""

from __future__ import annotations

import html
from collections import Counter
from html.parser import HTMLParser
from typing import Any

from vllm_triage.bundle.redact.leakscan import Leak, LeakScanner
from vllm_triage.bundle.redact.payload import PayloadRedactor
from vllm_triage.bundle.redact.redactor import Redactor
from vllm_triage.bundle.trials import Trial
from vllm_triage.core.errors import ExitCode, TriageError
from vllm_triage.core.roles import Role

LOG_LEARN_CHARS = 2 * 1024 * 1024


class LeakError(TriageError):
    """The rendered report still holds something secret-looking: it is not written."""

    exit_code = ExitCode.INCOMPLETE
    problem_id = "leak-scan-failed"


def _learn(redactor: Redactor, trials: list[Trial]) -> None:
    for trial in trials:
        for source in trial.sources:
            if source.role == Role.MANIFEST:
                continue
            text = trial.text(source)
            if source.role == Role.VLLM_LOG:
                # Only the head of a log is learned: the report quotes a few of its lines, which are
                # redacted on their own; a log names secrets in its first lines (arguments, env).
                text = text[:LOG_LEARN_CHARS]
            if text:
                redactor.learn_text(text)


def redact_report(report: dict[str, Any], trials: list[Trial]) -> tuple[dict[str, Any], Redactor]:
    """The report with every string redacted, and the redactor (for the summary and the leak scan)."""
    redactor = Redactor()
    _learn(redactor, trials)
    # The one redaction of every command's output (payload.py): a knob's value is a secret by its
    # name there as in `fingerprint`, and the same rules and placeholders apply.
    clean = PayloadRedactor(redactor).redact({k: v for k, v in report.items() if k != "redaction"})
    kinds: Counter[str] = Counter()
    for (_file, category, kind), count in redactor.counts.items():
        if category == "secret":
            kinds[kind] += count
    clean["redaction"] = {
        "enabled": True,
        "replaced": sum(kinds.values()),
        "by_kind": [{"kind": kind, "count": count} for kind, count in sorted(kinds.items())],
        "pseudonyms": [
            {"placeholder": p["placeholder"], "kind": p["kind"], "occurrences": p["occurrences"]}
            for p in redactor.pseudonyms()
        ],
    }
    return clean, redactor


def _strings(value: Any, path: str = "") -> list[tuple[str, str]]:
    if isinstance(value, str):
        return [(path, value)]
    if isinstance(value, list):
        return [pair for i, v in enumerate(value) for pair in _strings(v, f"{path}[{i}]")]
    if isinstance(value, dict):
        return [pair for k, v in value.items() for pair in _strings(v, f"{path}.{k}" if path else k)]
    return []


# Elements that end a line of the page as rendered: their text never runs into the next one's.
_BLOCK_TAGS = frozenset(
    [
        "address",
        "article",
        "aside",
        "blockquote",
        "br",
        "dd",
        "details",
        "div",
        "dl",
        "dt",
        "fieldset",
        "figcaption",
        "figure",
        "footer",
        "form",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "header",
        "hr",
        "li",
        "main",
        "nav",
        "ol",
        "p",
        "pre",
        "section",
        "summary",
        "table",
        "tbody",
        "td",
        "tfoot",
        "th",
        "thead",
        "title",
        "tr",
        "ul",
        "script",
        "style",
    ]
)


class _PageText(HTMLParser):
    """The text of a page as a reader gets it: tags gone, entities decoded, one line per block.
    Attribute values (a title, a link) and comments are shared with the page too: each is a line
    of its own."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = [value for _name, value in attrs if value]
        if values:
            self.parts.append("\n" + "\n".join(values) + "\n")
        if tag in _BLOCK_TAGS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in _BLOCK_TAGS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        self.parts.append(data)

    # Not shown by a browser, but in the file that is shared: comments and declarations are read.
    def handle_comment(self, data: str) -> None:
        self.parts.append("\n" + data + "\n")

    def unknown_decl(self, data: str) -> None:
        self.parts.append("\n" + data + "\n")


def html_text(page: str) -> str:
    """The rendered text of an HTML page (standard library html.parser)."""
    parser = _PageText()
    parser.feed(page)
    parser.close()
    return "".join(parser.parts)


def leak_scan(report: dict[str, Any], text: str, fmt: str, redactor: Redactor) -> list[Leak]:
    """Every string of the redacted data, then the rendered output as a reader sees it: for HTML
    the page's text, tags stripped and entities decoded (`HF_TOKEN=&lt;redacted:…&gt;</pre>` is a
    placeholder at the end of a block, not a value running into `</pre>`). JSON is the data
    itself, whose escapes (`\\n` after a placeholder) would only confuse a scan of the serialised
    text."""
    scanner = LeakScanner(known=redactor.known_secrets())
    leaks = [leak for path, value in _strings(report) for leak in scanner.scan_text(value, path)]
    if fmt == "html":
        leaks += scanner.scan_text(html_text(text), "report.html")
    elif fmt == "md":
        # As GitHub shows it: the Markdown escapes `<` in prose (`&lt;redacted&gt;`), which read
        # raw is a value (`api_key: &lt;redacted&gt;` → `&lt`). The raw strings were scanned above.
        leaks += scanner.scan_text(html.unescape(text), "report.md")
    return leaks


def refuse_leaks(leaks: list[Leak], name: str) -> None:
    if leaks:
        shown = "; ".join(f"{leak.file}:{leak.line}: {leak.kind} (rule {leak.rule})" for leak in leaks[:3])
        raise LeakError(
            f"the {name} report still holds {len(leaks)} secret-looking value(s) after redaction "
            f"({shown}); nothing was written",
            "report an issue with vllm-triage; do not share the bundle as is",
        )
