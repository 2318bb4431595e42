"""The shapes secrets really take in a bundle (issue 11): argv lists, .netrc, registry auth files,
cookies, values that start with `/`, base64, line wraps, archives, file names. Each test builds its
bundle, runs `vllm-triage redact`, and looks for the planted secret in every byte written —
compressed members and archive members inflated, file names included, the report included. The
leak scan must see each of them when it is left in clear.

Every secret is assembled at run time and fake."""

from __future__ import annotations

import base64
import gzip
import io
import json
import tarfile
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from vllm_triage.bundle.redact.leakscan import LeakScanner, scan_text
from vllm_triage.bundle.redact.redactor import redact_text
from vllm_triage.cli import cli


def fake(prefix: str, seed: str, length: int) -> str:
    """A token-looking string of `length` characters after the prefix, mixed case and digits."""
    body = "".join(c.upper() if i % 3 == 0 else c for i, c in enumerate((seed * 64).replace("-", "")))
    return prefix + body[:length]


HF = fake("hf_", "q7lm3np9rt2zb", 34)
HF_LONG = fake("hf_", "w4xy7hs1gf5kd", 40)
OPENAI = fake("sk-" + "proj-", "ab3de6gh9jk2", 40)
GITHUB = fake("gh" + "p_", "r4nd0mt0k3n", 36)
PLAIN = fake("", "zq8lm3np9rt2vb6", 20)  # no known shape: found by where it stands only
PLAIN_2 = fake("", "kp2lm9qr7st4vw1", 18)


def write(root: Path, files: dict[str, str | bytes]) -> Path:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


def every_byte(root: Path) -> bytes:
    """Names and contents of everything under root, gzip, zip and tar members inflated."""

    def expand(data: bytes, depth: int = 0) -> list[bytes]:
        found = [data]
        if depth > 2:
            return found
        if data[:2] == b"\x1f\x8b":
            found += expand(gzip.decompress(data), depth + 1)
        if data[:4] == b"PK\x03\x04":
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                for name in archive.namelist():
                    found += [name.encode(), *expand(archive.read(name), depth + 1)]
        if data[257:262] == b"ustar":
            with tarfile.open(fileobj=io.BytesIO(data)) as tar:
                for member in tar.getmembers():
                    found.append(member.name.encode())
                    extracted = tar.extractfile(member) if member.isfile() else None
                    if extracted is not None:
                        found += expand(extracted.read(), depth + 1)
        return found

    parts: list[bytes] = []
    for path in sorted(root.rglob("*")):
        parts.append(path.relative_to(root).as_posix().encode())
        if path.is_file():
            parts += expand(path.read_bytes())
    return b"\n".join(parts)


def redact(bundle: Path, out: Path, *extra: str):
    return CliRunner().invoke(cli, ["redact", str(bundle), "--out", str(out), *extra])


def assert_gone(out: Path, secrets: list[str]) -> None:
    written = every_byte(out)
    # A token broken across lines survives when its pieces do: look through the breaks too.
    joined = written.replace(b"\r", b"").replace(b"\n", b"").replace(b"\\n", b"")
    for secret in secrets:
        assert secret.encode() not in written, f"{secret[:6]}… left in clear"
        assert secret.encode() not in joined, f"{secret[:6]}… left in pieces"


# form → (files of the bundle, the secrets planted in them)
SHAPES: dict[str, tuple[dict[str, str | bytes], list[str]]] = {
    "inspect-cmd-next-element": (
        {
            "container/inspect.json": json.dumps(
                [
                    {
                        "Config": {"Cmd": ["--model", "Qwen/Qwen3-8B", "--api-key", PLAIN]},
                        "Args": ["--hf-token", PLAIN_2],
                    }
                ],
                indent=2,
            )
        },
        [PLAIN, PLAIN_2],
    ),
    "inspect-cmd-one-line": (
        {"inspect.json": json.dumps([{"Config": {"Cmd": ["vllm", "serve", "--token", PLAIN]}}])},
        [PLAIN],
    ),
    "pod-json-args": (
        {"pod/pod.json": json.dumps({"spec": {"containers": [{"args": ["--password", PLAIN]}]}}, indent=2)},
        [PLAIN],
    ),
    "yaml-block-sequence": (
        {
            "pod.yaml": f"spec:\n  containers:\n  - args:\n    - --api-key\n    - {PLAIN}\n    - --port\n    - '8000'\n"
        },
        [PLAIN],
    ),
    "yaml-block-quoted": (
        {"compose.yaml": f'services:\n  vllm:\n    command:\n      - "--secret"\n      - "{PLAIN}"\n'},
        [PLAIN],
    ),
    "yaml-flow-sequence": (
        {"pod.yaml": f'    command: ["vllm", "--auth", "{PLAIN}"]\n    args: [--api-key, {PLAIN_2}]\n'},
        [PLAIN, PLAIN_2],
    ),
    "flag-equals-in-list-element": (
        {"pod.yaml": f'    args:\n      - "--api-key={PLAIN}"\n'},
        [PLAIN],
    ),
    "netrc-one-line": ({"home/.netrc": f"machine huggingface.co login x password {HF}\n"}, [HF]),
    "netrc-token-per-line": (
        {"home/.netrc": f"machine example.org\n  login bob\n  password {PLAIN}\n"},
        [PLAIN],
    ),
    "docker-config-auth": (
        {
            "home/.docker/config.json": json.dumps(
                {
                    "auths": {
                        "registry.example.com": {
                            "auth": base64.b64encode(f"bob:{PLAIN}".encode()).decode(),
                            "identitytoken": PLAIN_2,
                        }
                    }
                },
                indent=2,
            )
        },
        [base64.b64encode(f"bob:{PLAIN}".encode()).decode(), PLAIN_2],
    ),
    "podman-auth-json": (
        {
            "containers/auth.json": json.dumps(
                {"auths": {"quay.io": {"auth": base64.b64encode(PLAIN.encode()).decode()}}}
            )
        },
        [base64.b64encode(PLAIN.encode()).decode()],
    ),
    "cookie-headers": (
        {
            "curl-v.txt": (
                "> GET /v1/models HTTP/1.1\n"
                f"> Cookie: session={PLAIN}; theme=dark\n"
                ">\n< HTTP/1.1 200 OK\n"
                f"< Set-Cookie: sid={PLAIN_2}; Path=/; HttpOnly\n"
            )
        },
        [PLAIN, PLAIN_2],
    ),
    "har-cookie-headers": (
        {
            "capture.har": json.dumps(
                {
                    "log": {
                        "entries": [
                            {
                                "request": {"headers": [{"name": "Cookie", "value": f"sid={PLAIN}"}]},
                                "response": {
                                    "headers": [{"name": "Set-Cookie", "value": f"sid={PLAIN_2}; Path=/"}]
                                },
                            }
                        ]
                    }
                },
                indent=2,
            )
            + "\n"
        },
        [PLAIN, PLAIN_2],
    ),
    "value-that-starts-with-a-slash": (
        {"env/app.env": f"DB_PASSWORD=/{PLAIN}\nAPI_TOKEN=/{PLAIN_2}/x\n"},
        [PLAIN, PLAIN_2],
    ),
    "base64-of-known-tokens": (
        {
            "logs/b64.log": (
                f"INFO payload {base64.b64encode(HF.encode()).decode()}\n"
                f"INFO x={base64.b64encode(('Bearer ' + OPENAI).encode()).decode()}\n"
                f"blob: {base64.urlsafe_b64encode(GITHUB.encode()).decode()}\n"
            )
        },
        [
            base64.b64encode(HF.encode()).decode(),
            base64.b64encode(("Bearer " + OPENAI).encode()).decode(),
            base64.urlsafe_b64encode(GITHUB.encode()).decode(),
        ],
    ),
    "k8s-secret-data": (
        {
            "k8s/secret.yaml": f"kind: Secret\ndata:\n  creds: {base64.b64encode(f'HF_TOKEN={PLAIN}'.encode()).decode()}\n"
        },
        [base64.b64encode(f"HF_TOKEN={PLAIN}".encode()).decode()],
    ),
    "token-wrapped-in-a-paste": (
        {"issue.md": f"my token is {HF_LONG[:22]}\n{HF_LONG[22:]} and it fails\n"},
        [HF_LONG],
    ),
    "token-wrapped-over-three-lines": (
        {"paste.txt": f"key:\n{OPENAI[:15]}\n{OPENAI[15:30]}\n{OPENAI[30:]}\n"},
        [OPENAI],
    ),
    "token-split-by-a-json-escape": (
        {"logs/escaped.json": json.dumps({"msg": f"token {HF_LONG[:20]}\n{HF_LONG[20:]} end"}) + "\n"},
        [HF_LONG],
    ),
    "gz-member": ({"logs/old.log.gz": gzip.compress(f"HF_TOKEN={HF}\n".encode())}, [HF]),
    "secret-in-a-file-name": ({f"requests/{HF}.txt": "hello\n", f"{GITHUB}/notes.txt": "x\n"}, [HF, GITHUB]),
}


@pytest.mark.parametrize("form", sorted(SHAPES))
def test_every_shape_is_redacted_and_the_scan_passes(form: str, tmp_path: Path) -> None:
    files, secrets = SHAPES[form]
    bundle = write(
        tmp_path / "bundle", {"vllm.log": "INFO 10-20 08:14:02 [api_server.py:1] start\n", **files}
    )
    out = tmp_path / "out"
    result = redact(bundle, out)
    assert result.exit_code == 0, result.output
    assert "leak scan: clean" in result.output
    assert_gone(out, secrets)
    report = json.loads((out / "redaction-report.json").read_text())
    assert report["summary"]["secrets"] >= len(secrets)
    for secret in secrets:
        assert secret not in json.dumps(report), "the report names a secret"


@pytest.mark.parametrize("form", sorted(SHAPES))
def test_the_leak_scan_sees_every_shape_left_in_clear(form: str, tmp_path: Path) -> None:
    """The input bundle itself, scanned as if it were an output: each form is a leak."""
    files, _secrets = SHAPES[form]
    bundle = write(tmp_path / "bundle", files)
    assert LeakScanner().scan_tree(bundle), f"{form}: nothing found"


def test_look_alikes_stay_as_they_are(tmp_path: Path) -> None:
    keep = {
        "inspect.json": json.dumps(
            {
                "Cmd": ["--max-num-batched-tokens", "8192", "--api-key", "--port", "8000"],
                "Args": ["--api-key-file", "/run/secrets/key"],
            },
            indent=2,
        )
        + "\n",
        "pod.yaml": "args:\n  - --api-key\n  - ${VLLM_API_KEY}\n  - --tokenizer-mode\n  - auto\n",
        "env": "HF_TOKEN_PATH=/run/secrets/hf_token\nSSH_AUTH_SOCK=/tmp/ssh-XXXXabcd/agent.1234\nAUTH_METHOD=oidc\n",
        "vllm.log": (
            "INFO 10-20 08:14:02 [metrics.py:455] Avg prompt throughput: 12.5 tokens/s\n"
            "DEBUG 10-20 08:14:03 [engine.py:301] Added request chatcmpl-9c1e8b3d4e6fa1b2c3d4e5f6a7b8c9d0.\n"
            "INFO login succeeded for user bob, the cookie jar is empty\n"
            "INFO model=/models/Qwen/Qwen3-8B-Instruct-AWQ revision=1a2b3c4d5e6f7a8b9c0d\n"
        ),
    }
    bundle = write(tmp_path / "bundle", keep)
    out = tmp_path / "out"
    result = redact(bundle, out)
    assert result.exit_code == 0, result.output
    for name, text in keep.items():
        assert (out / name).read_text() == text, name


def test_an_archive_inside_the_bundle_is_left_out_and_named(tmp_path: Path) -> None:
    zipped = io.BytesIO()
    with zipfile.ZipFile(zipped, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("inner/vllm.env", f"HF_TOKEN={HF}\n")
    tarred = io.BytesIO()
    with tarfile.open(fileobj=tarred, mode="w:gz") as tar:
        data = f"export HF_TOKEN={HF_LONG}\n".encode()
        info = tarfile.TarInfo("env.sh")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    bundle = write(
        tmp_path / "bundle",
        {
            "vllm.log": "INFO start\n",
            "extra/logs.zip": zipped.getvalue(),
            "extra/more.tar.gz": tarred.getvalue(),
        },
    )
    out = tmp_path / "out"
    result = redact(bundle, out)
    assert result.exit_code == 0, result.output
    assert not (out / "extra/logs.zip").exists() and not (out / "extra/more.tar.gz").exists()
    assert "extra/logs.zip: an archive inside the bundle: not copied" in result.output
    statuses = {
        f["path"]: f["status"] for f in json.loads((out / "redaction-report.json").read_text())["files"]
    }
    assert statuses["extra/logs.zip"] == statuses["extra/more.tar.gz"] == "archive-left-out"
    assert_gone(out, [HF, HF_LONG])


def test_a_stale_archive_in_out_fails_the_scan(tmp_path: Path) -> None:
    bundle = write(tmp_path / "bundle", {"vllm.log": "INFO start\n"})
    out = tmp_path / "out"
    zipped = io.BytesIO()
    with zipfile.ZipFile(zipped, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("old.env", f"HF_TOKEN={HF}\n")
    write(out, {"old.zip": zipped.getvalue()})
    result = redact(bundle, out, "--force")
    assert result.exit_code == 1
    assert "old.zip!(member):1: hf-token" in result.output


def test_a_file_name_is_redacted_in_the_tree_and_the_report(tmp_path: Path) -> None:
    bundle = write(tmp_path / "bundle", {f"requests/{HF}.txt": f"token {HF}\n"})
    out = tmp_path / "out"
    assert redact(bundle, out).exit_code == 0
    assert (out / "requests/<redacted:hf-token:1>.txt").read_text() == "token <redacted:hf-token:1>\n"
    report = json.loads((out / "redaction-report.json").read_text())
    assert [f["path"] for f in report["files"]] == ["requests/<redacted:hf-token:1>.txt"]


def test_a_wrapped_token_keeps_the_line_count() -> None:
    text = f"my token is {HF_LONG[:22]}\n{HF_LONG[22:]} and it fails\nnext line\n"
    clean, found = redact_text(text)
    assert clean == "my token is <redacted:hf-token:1>\n and it fails\nnext line\n"
    assert [r.rule for r in found] == ["wrapped-token"]


def test_a_whole_token_at_a_line_end_does_not_swallow_the_next_line() -> None:
    text = f"HF_TOKEN={HF}\nINFO 10-20 08:14:02 [api_server.py:1] start\n"
    assert (
        redact_text(text)[0]
        == "HF_TOKEN=<redacted:hf-token:1>\nINFO 10-20 08:14:02 [api_server.py:1] start\n"
    )


def test_the_second_opinion_finds_what_the_name_policy_misses() -> None:
    # `MYAPPTOKEN` is one word, not in names.toml: the redaction keeps it, the entropy check does not.
    text = f"MYAPPTOKEN={PLAIN}\n"
    assert redact_text(text)[0] == text
    assert [(leak.rule, leak.kind) for leak in scan_text(text)] == [("entropy", "high-entropy-value")]
    for calm in (
        "max_tokens=4096",
        "tokenizer=Qwen/Qwen3-8B-Instruct-2507",
        "PWD=/home/u123/proj-2024/vllm",
        "auth_method: oidc-provider-2",
        "num_tokens_total=12345678901234567",
    ):
        assert scan_text(calm + "\n") == [], calm


@pytest.mark.parametrize(
    "hostile",
    [
        "x." + "sk-." * 500_000 + "\n",  # a million prefix starts in one run of token characters
        "token=" * 400_000,  # a million keyword hits on one line with no line end
        "api_key:" + "A1b2" * 250_000 + "\n",  # a value run of a megabyte after a keyword
        ("gl\n" + "A1b2" * 10 + "\n") * 100_000,  # cut-prefix candidates on every other line
    ],
    ids=["prefix-starts", "keyword-hits", "long-value", "cut-prefixes"],
)
def test_the_disguise_and_entropy_scans_stay_linear(hostile: str) -> None:
    """Those scans use stdlib `re`, which has no timeout: each is bounded by construction."""
    import time

    started = time.process_time()
    clean, _ = redact_text(hostile)
    scan_text(clean)
    assert time.process_time() - started < 10
