"""Property-based tests of the redaction round-trip (hypothesis): for generated tokens of every
known form, planted in the shapes a bundle holds them (env files, argv lists in JSON and YAML,
JSON objects, headers, log lines, wraps, base64), nothing secret survives and the leak scan of
the result is clean; the same secret always gets the same placeholder and two secrets never share
one; and text with no secret in it comes out byte for byte. The budget is small (the suite stays
fast); `--hypothesis-seed` reproduces a failure."""

from __future__ import annotations

import base64
import gzip
import json
import re
import string
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vllm_triage.bundle.redact import rules as redact_rules
from vllm_triage.bundle.redact.bundle_copy import redact_bundle
from vllm_triage.bundle.redact.leakscan import scan_text
from vllm_triage.bundle.redact.redactor import Redactor, redact_text

BUDGET = settings(
    max_examples=120, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)

ALNUM = string.ascii_letters + string.digits
UPPER_DIGITS = string.ascii_uppercase + string.digits


def body(alphabet: str, size: int) -> st.SearchStrategy[str]:
    # Mixed: at least one upper, one lower and one digit where the alphabet has them, as a real
    # token has (a body of one repeated letter is a different question).
    return st.text(alphabet, min_size=size, max_size=size).filter(lambda s: len(set(s)) >= 6)


# Every shape rules/redact/tokens.toml knows, with a generated body.
TOKENS = st.one_of(
    body(ALNUM, 34).map(lambda b: "hf_" + b),
    body(ALNUM, 40).map(lambda b: "sk-proj-" + b),
    body(ALNUM + "_-", 32).filter(lambda b: b[0].isalnum()).map(lambda b: "sk-ant-api03-" + b),
    body(ALNUM, 36).map(lambda b: "ghp_" + b),
    body(ALNUM, 30).map(lambda b: "github_pat_11" + b),
    body(ALNUM, 20).map(lambda b: "glpat-" + b),
    body(UPPER_DIGITS, 16).map(lambda b: "AKIA" + b),
    body(ALNUM, 35).map(lambda b: "AIza" + b),
    body(ALNUM, 30).map(lambda b: "ya29." + b),
    body(ALNUM, 24).map(lambda b: "xoxb-1029384756-" + b),
    body(ALNUM, 36).map(lambda b: "nvapi-" + b),
    st.tuples(body(ALNUM, 16), body(ALNUM, 20), body(ALNUM, 24)).map(lambda p: f"eyJ{p[0]}.eyJ{p[1]}.{p[2]}"),
)
# A value with no shape, found only by where it stands (a secret-named variable, flag or key).
PLAIN = body(ALNUM, 20).filter(lambda s: not s.isdigit())

FLAGS = st.sampled_from(["--api-key", "--hf-token", "--token", "--password", "--secret", "--auth"])
NAMES = st.sampled_from(
    ["HF_TOKEN", "VLLM_API_KEY", "OPENAI_API_KEY", "DB_PASSWORD", "client_secret", "AUTH"]
)


def placements(secret: st.SearchStrategy[str]) -> st.SearchStrategy[tuple[str, str]]:
    """(text holding the secret, the secret) in one of the shapes a bundle holds it."""
    return st.one_of(
        st.tuples(NAMES, secret).map(lambda p: (f"{p[0]}={p[1]}\n", p[1])),
        st.tuples(NAMES, secret).map(lambda p: (f'export {p[0]}="{p[1]}"\n', p[1])),
        st.tuples(FLAGS, secret).map(
            lambda p: (json.dumps({"Config": {"Cmd": ["--model", "m", p[0], p[1]]}}, indent=2) + "\n", p[1])
        ),
        st.tuples(FLAGS, secret).map(lambda p: (json.dumps({"args": [p[0], p[1]]}) + "\n", p[1])),
        st.tuples(FLAGS, secret).map(
            lambda p: (f"    args:\n    - {p[0]}\n    - {p[1]}\n    - --port\n", p[1])
        ),
        st.tuples(FLAGS, secret).map(lambda p: (f'    command: ["vllm", "{p[0]}", "{p[1]}"]\n', p[1])),
        st.tuples(FLAGS, secret).map(lambda p: (f"vllm serve m {p[0]}={p[1]} --port 8000\n", p[1])),
        st.tuples(NAMES, secret).map(lambda p: (json.dumps({p[0].lower(): p[1]}) + "\n", p[1])),
        st.tuples(NAMES, secret).map(lambda p: (f"- name: {p[0]}\n  value: {p[1]}\n", p[1])),
        secret.map(lambda s: (f"curl -H 'Authorization: Bearer {s}' http://10.0.0.3:8000/v1/models\n", s)),
        secret.map(lambda s: (f"> Cookie: session={s}; theme=dark\n", s)),
        secret.map(lambda s: (f"machine huggingface.co login x password {s}\n", s)),
    )


def shaped_placements() -> st.SearchStrategy[tuple[str, str]]:
    """Shapes only a token with a known form can take: bare in a log, wrapped, base64-encoded."""
    return st.one_of(
        TOKENS.map(lambda t: (f"INFO 10-20 08:14:02 [hub.py:77] login with {t} failed\n", t)),
        st.tuples(TOKENS, st.integers(4, 12)).map(
            lambda p: (f"my key:\n{p[0][: p[1]]}\n{p[0][p[1] :]}\n", p[0])
        ),
        TOKENS.map(lambda t: (f"payload {base64.b64encode(t.encode()).decode()} end\n", t)),
        TOKENS.map(lambda t: (f"data: {base64.b64encode(('token=' + t).encode()).decode()}\n", t)),
    )


def filler() -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(CALM_LINES), max_size=4).map("".join)


# Lines of an ordinary bundle with no secret in them (look-alikes included).
CALM_LINES = [
    "INFO 10-20 08:14:02 [api_server.py:1] vLLM API server version 0.9.2\n",
    "INFO 10-20 08:14:09 [metrics.py:455] Avg prompt throughput: 12.5 tokens/s, Running: 3 reqs\n",
    "DEBUG 10-20 08:14:10 [engine.py:301] Added request chatcmpl-9c1e8b3d4e6fa1b2c3d4e5f6a7b8c9d0.\n",
    "TOKENIZERS_PARALLELISM=false\n",
    "HF_TOKEN_PATH=/run/secrets/hf_token\n",
    "HF_HUB_ENABLE_HF_TRANSFER=1\n",
    "vllm serve Qwen/Qwen3-8B --max-num-batched-tokens 8192 --tokenizer-mode auto\n",
    '"Cmd": ["--model", "Qwen/Qwen3-8B", "--max-model-len", "32768"],\n',
    "    args:\n    - --port\n    - '8000'\n",
    "NVIDIA_VISIBLE_DEVICES=GPU-5f2a9c1e-8b3d-4e6f-a1b2-c3d4e5f6a7b8\n",
    "image: vllm/vllm-openai@sha256:" + "e5f6a7b8c9d0e1f2" * 4 + "\n",
    "pip install hf_transfer scikit-learn\n",
    "ERROR 10-20 08:16:00 [engine.py:1] torch.OutOfMemoryError: CUDA out of memory.\n",
    "machine learning needs a password manager\n",
    "the cookie jar is empty\n",
]
# Words that name no secret (a key called `token` holds one, whatever its value).
WORDS = st.text(string.ascii_lowercase, min_size=1, max_size=10).filter(
    lambda w: redact_rules.builtin().names.secret_kind(w) is None
)
NUMBERS = st.integers(0, 10**6).map(str)


@BUDGET
@given(
    st.lists(st.one_of(placements(PLAIN), placements(TOKENS), shaped_placements()), min_size=1, max_size=4),
    filler(),
)
def test_no_planted_secret_survives(planted: list[tuple[str, str]], calm: str) -> None:
    text = calm + "".join(piece for piece, _ in planted) + calm
    clean, found = redact_text(text)
    flat = clean.replace("\n", "")
    for _piece, secret in planted:
        assert secret not in clean and secret not in flat, (secret, clean)
    assert found
    assert scan_text(clean) == [], clean


def placeholder_of(secret: str, text: str, clean: str) -> str:
    """The placeholder standing where the secret stood (the text before it holds no secret)."""
    before = text[: text.index(secret)]
    assert clean.startswith(before), (before, clean)
    found = re.match(r"<redacted:[a-z0-9-]+:\d+>", clean[len(before) :])
    assert found, clean
    return found.group()


@BUDGET
@given(placements(PLAIN), placements(PLAIN), TOKENS)
def test_the_same_secret_gets_the_same_placeholder(
    first: tuple[str, str], second: tuple[str, str], token: str
) -> None:
    (text_a, secret), (text_b, other) = first, second
    text_b = text_b.replace(other, secret)  # the same secret, in another shape
    redactor = Redactor()
    texts = [text_a, text_b, f"log: token {token} rejected\n", f"HF_TOKEN={token}\n"]
    for text in texts:
        redactor.learn(text)
    outs = [redactor.redact(text) for text in texts]
    assert placeholder_of(secret, text_a, outs[0]) == placeholder_of(secret, text_b, outs[1]), outs
    assert placeholder_of(token, texts[2], outs[2]) == placeholder_of(token, texts[3], outs[3]), outs
    assert placeholder_of(secret, text_a, outs[0]) != placeholder_of(token, texts[2], outs[2])
    # And again in a later call: the numbering holds.
    assert redactor.redact(texts[1]) == outs[1]


@BUDGET
@given(
    st.lists(
        st.one_of(
            st.sampled_from(CALM_LINES),
            st.tuples(WORDS, NUMBERS).map(lambda p: f"INFO {p[0]}={p[1]} max_tokens={p[1]}\n"),
            st.tuples(WORDS, WORDS).map(
                lambda p: f'{{"{p[0]}": "{p[1]}", "usage": {{"total_tokens": 4}}}}\n'
            ),
            WORDS.map(lambda w: f"    - --{w}\n    - {w}\n"),
        ),
        max_size=8,
    )
)
def test_text_without_secrets_is_unchanged(lines: list[str]) -> None:
    text = "".join(lines)
    assert redact_text(text)[0] == text


FILE_NAMES = st.sampled_from(["env/vllm.env", "container/inspect.json", "pod.yaml", "vllm.log", "request.sh"])


@settings(max_examples=25, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(FILE_NAMES, st.one_of(placements(PLAIN), placements(TOKENS), shaped_placements())),
        min_size=1,
        max_size=5,
    ),
    st.booleans(),
)
def test_the_bundle_round_trip_leaves_nothing(
    planted: list[tuple[str, tuple[str, str]]], gzipped: bool
) -> None:
    """The whole of `redact`: files on disk, a .gz member, the leak scan, the report."""
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "bundle"
        contents: dict[str, str] = {}
        for name, (piece, _secret) in planted:
            contents[name] = contents.get(name, "") + piece
        for name, text in contents.items():
            path = root / (name + ".gz" if gzipped and name.endswith(".log") else name)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(gzip.compress(text.encode()) if path.suffix == ".gz" else text.encode())
        result = redact_bundle(str(root), str(Path(scratch) / "out"))
        assert result.clean, [str(leak) for leak in result.leaks]
        written = b"\n".join(
            gzip.decompress(p.read_bytes()) if p.suffix == ".gz" else p.read_bytes()
            for p in sorted((Path(scratch) / "out").rglob("*"))
            if p.is_file()
        )
        flat = written.replace(b"\n", b"")
        for _name, (_piece, secret) in planted:
            assert secret.encode() not in written and secret.encode() not in flat, secret
