"""The hostile-input matrix of issue 11: every attack against every command, each run capped.

    python benchmarks/attack.py                       # the whole matrix (big inputs: ~1.3 GB on disk)
    python benchmarks/attack.py --small               # the same attacks at a few MB (minutes, not tens)
    python benchmarks/attack.py --only json-1g --commands redact,triage
    python benchmarks/attack.py --cmd "python -m vllm_triage"   # another build (PYTHONPATH=…)

Each attack is built by this script in a temporary folder (nothing is read from the corpus). Each
run is capped like an attacker's victim would want it: address space 4 GiB (`ulimit -v`), 30 s wall.
A row records the exit code, seconds, peak RSS, stderr line count and whether a planted secret
survives anywhere in what the command printed or wrote (stdout, stderr, files: names, contents,
compressed members, Parquet columns; `collect` copies its input as found, so only its stdout).
A row passes when it exits 0 or 4 (1 for a refused leak or a failed check, 2 for usage), within
`--max-seconds`, under 1 GiB, with at most one stderr line and no secret out. The exit status is 1
when any row fails. Runs as root cannot test permission denials (root reads everything): those
attacks are left out then, and said so.
"""

from __future__ import annotations

import argparse
import base64
import gzip
import io
import json
import os
import shlex
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

GiB = 1024**3
MiB = 1024**2

LOG_LINES = [
    "INFO 01-02 03:04:05 [__init__.py:241] Automatically detected platform cuda.",
    "(APIServer pid=7) INFO 01-02 03:04:07 [api_server.py:1805] vLLM API server version 0.10.1",
    "(EngineCore_0 pid=9) INFO 01-02 03:04:20 [gpu_model_runner.py:1953] Model loading took 14.99 GiB",
    "(EngineCore_0 pid=9) ERROR 01-02 03:04:31 [core.py:700] EngineCore failed to start.",
    "(EngineCore_0 pid=9) ERROR 01-02 03:04:31 [core.py:700] Traceback (most recent call last):",
    '(EngineCore_0 pid=9) ERROR 01-02 03:04:31 [core.py:700]   File "/usr/lib/python3/core.py", line 691, '
    "in run",
    "(EngineCore_0 pid=9) ERROR 01-02 03:04:31 [core.py:700] torch.OutOfMemoryError: CUDA out of memory. "
    "Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which 1.02 GiB is free.",
]
LOG = ("\n".join(LOG_LINES) + "\n").encode()


def _fake(prefix: str, seed: str, length: int) -> str:
    body = "".join(c.upper() if i % 3 == 0 else c for i, c in enumerate(seed * 64))
    return prefix + body[:length]


# Fake secrets, assembled at run time; each must be absent from every redacted output.
SECRETS = {
    "argv": _fake("", "zq8lm3np9rt2vb6", 24),
    "pod-args": _fake("", "kp2lm9qr7st4vw1", 22),
    "yaml-args": _fake("", "mx4nb7vc1zl9qw3", 22),
    "netrc": _fake("", "nt5rc8pw2dq7lz4", 18),
    "docker-auth": base64.b64encode(b"robot:" + _fake("", "dk3au7th9re2gx5", 20).encode()).decode(),
    "slash-value": "/x8" + _fake("", "sl4sh9va1ue6pq", 20),
    "cookie": _fake("", "co0k1e5es7si9on", 26),
    "hf": _fake("hf_", "q7lm3np9rt2zb", 34),
    "wrapped": _fake("hf_", "w4xy7hs1gf5kd", 40),
    "env-end": _fake("hf_", "en7dt0k3nx5qa", 34),
    "in-zip": _fake("hf_", "z1pm3mb3r4qr7", 34),
    "file-name": _fake("hf_", "f1l3n4m3q8rt2", 34),
}
B64_TOKEN = base64.b64encode(f"HF_TOKEN={SECRETS['hf']}".encode()).decode()
# The launch and credential shapes the readers learned since (systemd, Helm, Ray Serve, sbatch,
# compose, `sh -c`, wrappers, JSON logging, URLs, headers, cloud and login tokens, key files).
LAUNCH_SECRETS = {
    name: _fake("", seed, 22)
    for name, seed in (
        ("systemd-quoted", "sy5qt7dq2lm9x"),
        ("systemd-exec", "sy3ex8ec4kp1w"),
        ("helm-extra", "he7lm2ex9tr4a"),
        ("helm-env", "he4nv8ir1zq6b"),
        ("ray-env", "ra7ye9nv2kd5c"),
        ("ray-setdefault", "ra2sd6fl8qw3d"),
        ("sbatch-export", "sb4ex7pt1zl9e"),
        ("compose-folded", "co6fd3ld8vk2f"),
        ("compose-env", "co9ev2nm5qx7g"),
        ("k8s-escaped", "k8es3cq7pd1h"),
        ("k8s-block", "k8bl6ck2zr9i"),
        ("json-log", "js8lg4og1mq5j"),
        ("api-key-second", "ap2ks7ec9nd4k"),
        ("url-signature", "ur5sg8ig3nt6l"),
        ("bearer", "be7ar2er9tk4m"),
        ("ngrok", "ng3rk6ok9au2n"),
        ("kubeconfig-token", "ku4bc7fg1tk8o"),
    )
}
LAUNCH_SECRETS["hf-helm"] = _fake("hf_", "hl9mv2al5us8q", 34)
LAUNCH_SECRETS["npm"] = _fake("npm_", "np4mt7ok2en9r", 36)
LAUNCH_SECRETS["pgp-body"] = _fake("", "pg7pk3ey9bl2s", 64)


@dataclass
class Attack:
    name: str
    build: Callable[[Path, bool], dict]  # (folder, big) -> {"input": path, "stdin": file?, ...}
    note: str = ""


def _write(path: Path, data: bytes | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def _bundle(root: Path, extra: dict[str, bytes | str] | None = None) -> Path:
    _write(root / "vllm.log", LOG)
    for name, data in (extra or {}).items():
        _write(root / name, data)
    return root


def _repeat_to(path: Path, unit: bytes, size: int, head: bytes = b"", tail: bytes = b"") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as out:
        out.write(head)
        block = unit * max(1, (4 * MiB) // len(unit))
        written = 0
        while written < size:
            out.write(block)
            written += len(block)
        out.write(tail)
    return path


def a_long_value_error(d: Path, big: bool) -> dict:
    line = b"(EngineCore_0 pid=9) ERROR 01-02 03:04:31 [core.py:700] " + b"Value error, " * (
        40_000 if big else 4_000
    )
    return {"input": _bundle(d / "b", {"vllm.log": LOG + line + b"\n"})}


def a_box_blank_run(d: Path, big: bool) -> dict:
    # A terminal-UI box row holding a long run of blanks with more text after it: the Python
    # reader's box pattern once retried every split of the run (2,000 blanks took 9 s).
    line = "│ ERROR ".encode() + b" " * (200_000 if big else 20_000) + b"x\n"
    return {"input": _bundle(d / "b", {"vllm.log": line * 3})}


def a_single_line(d: Path, big: bool) -> dict:
    path = _repeat_to(d / "b" / "vllm.log", b"A" * 4096, (200 if big else 8) * MiB, head=LOG)
    return {"input": path.parent}


def a_stdin_zero(d: Path, big: bool) -> dict:
    return {"input": "-", "stdin": "/dev/zero", "args": ["--max-input", "2G" if big else "64M"]}


def a_fifo(d: Path, big: bool) -> dict:
    os.mkfifo(d / "fifo.log")
    return {"input": d / "fifo.log"}


def a_dev_zero(d: Path, big: bool) -> dict:
    return {"input": "/dev/zero"}


def a_gz_in_zip(d: Path, big: bool) -> dict:
    inflated = (2 if big else 0.25) * GiB
    raw = io.BytesIO()
    with gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9) as gz:
        chunk = b"\x00" * (16 * MiB)
        for _ in range(int(inflated // len(chunk))):
            gz.write(chunk)
    path = d / "bomb.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("vllm.log", LOG)
        archive.writestr("nested/vllm.log.gz", raw.getvalue())
    return {"input": path}


def a_tar_many_dirs(d: Path, big: bool) -> dict:
    path = d / "dirs.tar"
    with tarfile.open(path, "w") as tar:
        info = tarfile.TarInfo("vllm.log")
        info.size = len(LOG)
        tar.addfile(info, io.BytesIO(LOG))
        for i in range(200_000 if big else 20_000):
            entry = tarfile.TarInfo(f"d{i}")
            entry.type = tarfile.DIRTYPE
            tar.addfile(entry)
    return {"input": path}


def a_tar_collision(d: Path, big: bool) -> dict:
    path = d / "clash.tar"
    with tarfile.open(path, "w") as tar:
        for name, data in (("vllm.log", LOG), ("a", b"x\n"), ("a/b.txt", b"y\n")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return {"input": path}


def a_yaml_laughs(d: Path, big: bool) -> dict:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 10):
        prev = chr(ord("a") + i - 1)
        cur = chr(ord("a") + i)
        lines.append(
            f"{cur}: &{cur} [*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev}]"
        )
    pod = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: vllm\n" + "\n".join(lines) + "\n"
    return {"input": _bundle(d / "b", {"pod.yaml": pod, "docker-compose.yml": "services:\n" + pod})}


def a_nul_padding(d: Path, big: bool) -> dict:
    path = d / "b" / "vllm.log"
    _repeat_to(path, b"\x00" * 4096, (64 if big else 4) * MiB, tail=LOG)
    return {"input": path.parent}


def a_json_1g(d: Path, big: bool) -> dict:
    # A well-formed docker inspect whose Env holds a million harmless entries: one real shape, huge.
    path = d / "b" / "container-inspect.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    target = (1 * GiB) if big else (48 * MiB)
    with open(path, "w") as out:
        out.write('[{"Id": "0123abcd", "Name": "/vllm", "Config": {"Image": "vllm/vllm-openai:v0.10.1",')
        out.write(f' "Cmd": ["--model", "x/y", "--api-key", "{SECRETS["argv"]}"], "Env": [')
        entry = '"VLLM_FILLER_VARIABLE_NUMBER_{:09d}=some-ordinary-value-of-a-setting",\n'
        written, i = 0, 0
        while written < target:
            piece = "".join(entry.format(i + k) for k in range(1000))
            out.write(piece)
            written += len(piece)
            i += 1000
        out.write('"LAST=1"]}}]\n')
    _write(path.parent / "vllm.log", LOG)
    return {"input": path.parent, "secret": SECRETS["argv"]}


def a_rule_catastrophic(d: Path, big: bool) -> dict:
    rules = _write(
        d / "rules" / "bad.toml",
        '[[rule]]\nid = "slow"\nphase = "runtime"\ncategory = "x"\npattern = "(a+)+$"\n',
    )
    log = _write(d / "b" / "vllm.log", LOG + b"ERROR " + b"a" * 50_000 + b"!\n")
    return {"input": log.parent, "rules": rules.parent}


def a_rule_toml_error(d: Path, big: bool) -> dict:
    rules = _write(d / "rules" / "broken.toml", '[[rule]\nid = "x"\npattern = "ERROR"\n')
    return {"input": _bundle(d / "b"), "rules": rules.parent}


def a_rule_huge(d: Path, big: bool) -> dict:
    alternation = "|".join(f"word{i}x" for i in range(200_000))
    rules = _write(d / "rules" / "huge.toml", f'[[rule]]\nid = "huge"\npattern = "({alternation}"\n')
    return {"input": _bundle(d / "b"), "rules": rules.parent}


def a_secrets(d: Path, big: bool) -> dict:
    """Every shape of issue 11 §5 in one bundle; a secret left anywhere in an output is a fail."""
    s = SECRETS
    wrapped = s["wrapped"]
    inner = io.BytesIO()
    with zipfile.ZipFile(inner, "w") as archive:
        archive.writestr("env.txt", f"HF_TOKEN={s['in-zip']}\n")
    docker_auth = {"auths": {"registry.example.com": {"auth": s["docker-auth"]}}}
    files: dict[str, bytes | str] = {
        "container-inspect.json": json.dumps(
            [{"Config": {"Cmd": ["--model", "x/y", "--api-key", s["argv"]], "Env": ["A=1"]}}], indent=1
        ),
        "pod.json": json.dumps({"spec": {"containers": [{"args": ["--api-key", s["pod-args"]]}]}}, indent=2),
        "pod.yaml": f"spec:\n  containers:\n  - args:\n    - --api-key\n    - {s['yaml-args']}\n",
        "home/.netrc": f"machine hf.co login me password {s['netrc']}\n",
        "docker/config.json": json.dumps(docker_auth, indent=2),
        "env/app.env": f"DB_PASSWORD={s['slash-value']}\nHF_TOKEN={s['env-end']}",
        "requests/curl.txt": f"curl -H 'Cookie: session={s['cookie']}' http://x/v1\n",
        "k8s/secret.yaml": f"data:\n  token: {B64_TOKEN}\n",
        "paste.txt": f"my token is {wrapped[:20]}\n{wrapped[20:]}\nthanks\n",
        "nested.zip": inner.getvalue(),
        f"requests/{s['file-name']}.txt": "empty\n",
        "vllm.log": LOG.decode() + f"export HF_TOKEN={s['hf']}\n",
    }
    return {"input": _write_all(d / "b", files), "secrets": True}


def a_launch_secrets(d: Path, big: bool) -> dict:
    """The launch and credential shapes read since the last matrix, each with a planted secret."""
    s = LAUNCH_SECRETS
    files: dict[str, bytes | str] = {
        "vllm.service": (
            f"[Service]\nEnvironment='OPENAI_API_KEY={s['systemd-quoted']}'\n"
            f"ExecStart=/usr/bin/vllm serve Qwen/Qwen3-8B --api-key {s['systemd-exec']} \\\n    --port 8000\n"
        ),
        "helm/values.yaml": (
            "servingEngineSpec:\n  modelSpec:\n  - name: llama\n    modelURL: Qwen/Qwen3-8B\n"
            f"    hf_token: {s['hf-helm']}\n"
            f'    env:\n      - name: VLLM_API_KEY\n        value: "{s["helm-env"]}"\n'
            f'    vllmConfig:\n      extraArgs: ["--api-key", "{s["helm-extra"]}"]\n'
        ),
        "ray/serve_llm.py": (
            "from ray.serve.llm import LLMConfig\n"
            f'os.environ.setdefault("OPENAI_API_KEY", "{s["ray-setdefault"]}")\n'
            "llm_config = LLMConfig(model_loading_config=dict(model_id='q', model_source='Qwen/Qwen3-8B'),\n"
            f'    runtime_env={{"env_vars": {{"VLLM_API_KEY": "{s["ray-env"]}"}}}})\n'
        ),
        "job.sbatch": (
            f'#!/bin/bash\n#SBATCH -N 1\nexport VLLM_API_KEY="{s["sbatch-export"]}"\nsrun vllm serve m\n'
        ),
        "docker-compose.yml": (
            "services:\n  vllm:\n    image: vllm/vllm-openai:v0.10.1\n"
            f"    command: >\n      --model Qwen/Qwen3-8B\n      --api-key\n      {s['compose-folded']}\n"
            f"    environment:\n      VLLM_API_KEY: {s['compose-env']}\n"
        ),
        "pod.json": json.dumps(
            {
                "spec": {
                    "containers": [{"command": ["sh", "-c", f'vllm serve m --api-key "{s["k8s-escaped"]}"']}]
                }
            }
        ),
        "deploy.yaml": (
            "spec:\n  containers:\n  - name: v\n    command:\n    - sh\n    - -c\n    - |\n"
            f"      vllm serve m --api-key \\\n        {s['k8s-block']} \\\n        --port 8000\n"
        ),
        "logs/json.log": json.dumps(
            {"message": f'non-default args: {{"api_key": ["{s["json-log"]}"]}}', "level": "INFO"}
        )
        + "\n",
        "command.txt": (
            f"vllm serve Qwen/Qwen3-8B --api-key {s['json-log']} {s['api-key-second']} --port 8000\n"
        ),
        "requests/curl.txt": (
            f"curl -H 'Authorization: Bearer {s['bearer']}' http://10.0.0.3:8000/v1/models\n"
            f"wget 'https://b.s3.amazonaws.com/w?X-Amz-Signature={s['url-signature']}'\n"
        ),
        "tokens.txt": f"ngrok config add-authtoken {s['ngrok']}\nnpm: {s['npm']}\n",
        "kube/config": f"users:\n- name: a\n  user:\n    token: {s['kubeconfig-token']}\n",
        "keys/pgp.asc": (
            f"-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n{s['pgp-body']}\n-----END PGP PRIVATE KEY BLOCK-----\n"
        ),
        "vllm.log": LOG,
    }
    return {"input": _write_all(d / "b", files), "planted": list(s.values())}


def a_launch_hostile(d: Path, big: bool) -> dict:
    """The new readers fed what breaks parsers: Python that makes ast.parse warn and nests
    deep, a systemd line of a million assignments, YAML aliases in Helm values, a quote never
    closed in an sbatch script, a `sh -c` string of whitespace."""
    n = 10 if big else 1
    files: dict[str, bytes | str] = {
        "serve_llm.py": (
            'from ray.serve.llm import LLMConfig\nx = "\\d"\ny = 1 is 1\n'
            "deep = " + "1" + "+1" * (20_000 * n) + "\n"
            "llm_config = LLMConfig(model_loading_config=dict(model_id='q', model_source='Qwen/Qwen3-8B'))\n"
        ),
        "vllm.service": "[Service]\nEnvironment=" + "A=1 " * (50_000 * n) + "\nExecStart=vllm serve m\n",
        "values.yaml": "servingEngineSpec:\n  a: &a [x,x,x,x,x,x,x,x,x]\n"
        + "".join(f"  b{i}: &b{i} [" + ",".join([f"*b{i - 1}" if i else "*a"] * 9) + "]\n" for i in range(9))
        + "  modelSpec:\n  - name: m\n    modelURL: q\n    env: *b8\n",
        "job.sbatch": '#!/bin/bash\n#SBATCH -N 1\nexport HF_TOKEN="'
        + "c" * (100_000 * n)
        + "\nsrun vllm serve m\n",
        "pod.yaml": 'spec:\n  containers:\n  - command: ["sh", "-c", "'
        + " " * (100_000 * n)
        + 'vllm serve m"]\n',
        "vllm.log": LOG,
    }
    return {"input": _write_all(d / "b", files)}


def _write_all(root: Path, files: dict[str, bytes | str]) -> Path:
    for name, data in files.items():
        _write(root / name, data)
    return root


def a_out_symlink(d: Path, big: bool) -> dict:
    outside = d / "outside"
    outside.mkdir()
    out = d / "out"
    out.mkdir()
    os.symlink(outside, out / "env")
    return {"input": _bundle(d / "b", {"env/app.env": "X=1\n"}), "out": out, "outside": outside}


def a_binary_member(d: Path, big: bool) -> dict:
    path = d / "b" / "core.bin"
    _repeat_to(path, bytes(range(256)) * 16, (256 if big else 8) * MiB)
    _write(path.parent / "vllm.log", LOG)
    return {"input": path.parent}


ATTACKS = [
    Attack("long-value-error", a_long_value_error),
    Attack("box-blank-run", a_box_blank_run),
    Attack("single-line-200m", a_single_line),
    Attack("stdin-dev-zero", a_stdin_zero),
    Attack("fifo-path", a_fifo),
    Attack("dev-zero-path", a_dev_zero),
    Attack("gz-bomb-in-zip", a_gz_in_zip),
    Attack("tar-dir-entries", a_tar_many_dirs),
    Attack("tar-name-collision", a_tar_collision),
    Attack("yaml-billion-laughs", a_yaml_laughs),
    Attack("nul-padding", a_nul_padding),
    Attack("json-1g", a_json_1g),
    Attack("rule-catastrophic", a_rule_catastrophic),
    Attack("rule-toml-error", a_rule_toml_error),
    Attack("rule-huge", a_rule_huge),
    Attack("secret-shapes", a_secrets),
    Attack("launch-secret-shapes", a_launch_secrets),
    Attack("launch-hostile", a_launch_hostile),
    Attack("out-symlink", a_out_symlink),
    Attack("binary-member", a_binary_member),
]

COMMANDS = [
    "triage",
    "diff",
    "series",
    "fingerprint",
    "check",
    "report-md",
    "report-html",
    "report-json",
    "redact",
    "collect",
    "scan",
    "rules-check",
]


def argv_for(command: str, spec: dict, work: Path, good: Path) -> list[str] | None:
    given = str(spec["input"])
    rules = ["--rules", str(spec["rules"])] if "rules" in spec else []
    limits = list(spec.get("args", []))
    out = str(spec.get("out", work / "out"))
    if command == "triage":
        return ["triage", given, *rules, *limits]
    if command == "diff":
        return ["diff", str(good), given, *rules, *limits]
    if command == "series":
        return ["series", str(good), given, *rules, *limits]
    if command == "fingerprint":
        return ["fingerprint", given, *limits]
    if command == "check":
        return ["check", given, *rules, *limits]
    if command.startswith("report-"):
        return ["report", given, "--format", command[7:], "-o", str(work / "report.out"), *rules, *limits]
    if command == "redact":
        force = ["--force"] if "out" in spec else []
        return ["redact", given, "--out", out, *force, *limits]
    if command == "collect":
        if given == "-" or Path(given).is_dir():
            log = Path(given) / "vllm.log" if given != "-" else None
            if log is None or not log.exists():
                return None
            given = str(log)
        force = ["--force"] if "out" in spec else []
        return ["collect", "--log", given, "--out", out, *force]
    if command == "scan":
        return ["scan", given, "-o", str(work / "fleet"), "--jobs", "1", *rules, *limits]
    if command == "rules-check":
        return ["rules", "check", *rules] if rules else None
    raise ValueError(command)


@dataclass
class Row:
    attack: str
    command: str
    code: int | None
    seconds: float
    cpu_seconds: float
    rss_mib: float
    stderr_lines: int
    secret_out: bool | None
    note: str = ""

    def passed(self, max_seconds: float) -> bool:
        allowed = {0, 1, 2, 4}
        return (
            self.code in allowed
            # CPU seconds: on a shared machine the wall clock measures the neighbours too.
            and self.cpu_seconds <= max_seconds
            and self.rss_mib < 1024
            and self.stderr_lines <= 1
            and not self.secret_out
        )


def _run(cmd: list[str], argv: list[str], stdin: str | None, cwd: Path, timeout: float) -> tuple:
    timing = cwd / "time.txt"
    # ulimit -v in a shell, /usr/bin/time for the child's own peak RSS, `timeout` for the wall cap.
    line = " ".join(shlex.quote(a) for a in [*cmd, *argv])
    shell = (
        f"ulimit -v {4 * 1024 * 1024}; exec timeout -s KILL {timeout} "
        f"/usr/bin/time -f '%M %U %S' -o {shlex.quote(str(timing))} {line}"
    )
    started = time.perf_counter()
    with open(stdin or os.devnull, "rb") as feed:
        done = subprocess.run(["bash", "-c", shell], stdin=feed, capture_output=True, cwd=cwd)
    seconds = time.perf_counter() - started
    code: int | None = done.returncode
    if code in (124, 137, -9):
        code = None  # killed by the timeout
        seconds = max(seconds, timeout)
    try:
        rss, user, system = timing.read_text().split()[-3:]
        rss_kib, cpu = int(rss), float(user) + float(system)
    except (OSError, ValueError):
        rss_kib, cpu = 0, seconds
    stderr = done.stderr.decode("utf-8", "replace")
    stderr = "\n".join(s for s in stderr.splitlines() if "Command exited with non-zero status" not in s)
    (cwd / "stdout.out").write_bytes(done.stdout + b"\n" + done.stderr)
    return code, seconds, cpu, rss_kib / 1024, len([s for s in stderr.splitlines() if s.strip()]), stderr


def _bytes_under(root: Path) -> bytes:
    parts = []
    for path in sorted(root.rglob("*")) if root.is_dir() else [root]:
        parts.append(str(path).encode())
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            parts.append(data)
            if data[:2] == b"\x1f\x8b":
                parts.append(gzip.decompress(data))
            if data[:4] == b"PAR1":
                import pyarrow.parquet as pq

                parts.append(json.dumps(pq.read_table(path).to_pylist(), default=str).encode())
            if data[:4] == b"PK\x03\x04":
                with zipfile.ZipFile(io.BytesIO(data)) as archive:
                    parts += [archive.read(n) + n.encode() for n in archive.namelist()]
    return b"\n".join(parts)


def _secret_out(spec: dict, command: str, work: Path) -> bool | None:
    if spec.get("secrets"):
        planted = list(SECRETS.values()) + [B64_TOKEN]
    elif "secret" in spec:
        planted = [spec["secret"]]
    else:
        planted = spec.get("planted", [])
    if not planted:
        return None
    # Everything under the run's folder: stdout/stderr, --out, -o, the fleet; not collect's bundle,
    # which holds its input as found by design (its stdout still must not).
    data = b"\n".join(
        _bytes_under(p) for p in sorted(work.iterdir()) if not (command == "collect" and p.name == "out")
    )
    return any(secret.encode() in data for secret in planted)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cmd", default=f"{sys.executable} -m vllm_triage")
    parser.add_argument("--small", action="store_true", help="attacks at a few MB instead of 200 MB–2 GB")
    parser.add_argument("--only", default="", help="comma-separated attack names")
    parser.add_argument("--commands", default="", help="comma-separated commands (see COMMANDS)")
    parser.add_argument("--timeout", type=float, default=30.0)
    parser.add_argument("--max-seconds", type=float, default=10.0, help="a row slower than this fails")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args()
    cmd = shlex.split(args.cmd)
    only = set(filter(None, args.only.split(",")))
    commands = [c for c in COMMANDS if not args.commands or c in args.commands.split(",")]
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="vllm-triage-attack-") as tmp:
        good = _bundle(Path(tmp) / "good")
        for attack in ATTACKS:
            if only and attack.name not in only:
                continue
            base = Path(tmp) / attack.name
            base.mkdir()
            spec = attack.build(base, not args.small)
            for command in commands:
                work = base / f"run-{command}"
                work.mkdir()
                if "out" in spec:  # a fresh --out holding the symlink for every run
                    spec = attack.build(_fresh(base, command), not args.small)
                argv = argv_for(command, spec, work, good)
                if argv is None:
                    continue
                code, seconds, cpu, rss, lines, stderr = _run(
                    cmd, argv, spec.get("stdin"), work, args.timeout
                )
                secret = _secret_out(spec, command, work)
                if "outside" in spec and any(Path(spec["outside"]).iterdir()):
                    secret, stderr = True, "wrote outside --out; " + stderr
                note = stderr.strip().splitlines()[0][:90] if stderr.strip() else ""
                row = Row(attack.name, command, code, seconds, cpu, rss, lines, secret, note)
                rows.append(row)
                print(_format(row, args.max_seconds), flush=True)
                _clean(work)
            _clean(base)
    failed = [r for r in rows if not r.passed(args.max_seconds)]
    print(f"\n{len(rows)} runs, {len(rows) - len(failed)} pass, {len(failed)} fail")
    if args.json:
        args.json.write_text(json.dumps([r.__dict__ for r in rows], indent=1))
    return 1 if failed else 0


def _fresh(base: Path, command: str) -> Path:
    folder = base / f"spec-{command}"
    folder.mkdir()
    return folder


def _clean(path: Path) -> None:
    subprocess.run(["rm", "-rf", str(path)], check=False)


HEADER = (
    f"{'attack':22} {'command':12} {'exit':>4} {'wall s':>6} {'cpu s':>6} {'MiB':>6} {'err':>3} {'leak':>4}"
    "  ok  first stderr line"
)


def _format(row: Row, max_seconds: float) -> str:
    if not hasattr(_format, "printed"):
        print(HEADER)
        _format.printed = True  # type: ignore[attr-defined]
    code = "kill" if row.code is None else str(row.code)
    leak = "-" if row.secret_out is None else ("YES" if row.secret_out else "no")
    ok = "ok" if row.passed(max_seconds) else "FAIL"
    return (
        f"{row.attack:22} {row.command:12} {code:>4} {row.seconds:6.1f} {row.cpu_seconds:6.1f} "
        f"{row.rss_mib:6.0f} "
        f"{row.stderr_lines:>3} {leak:>4}  {ok:4} {row.note}"
    )


if __name__ == "__main__":
    sys.exit(main())
