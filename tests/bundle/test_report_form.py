"""`vllm-triage report` for vLLM's bug-report form, which takes no blank issue: one labelled block
per field (title, "Your current environment", "🐛 Describe the bug"), `--field NAME` for one body
alone, every field redacted and leak-scanned, and the whole issue GitHub builds of them under its
65,536-character limit however large the bundle's artefacts are.

The bundles are written here: a long-context server on eight H100s whose fat image has a very long
collect_env (pip and conda lists), a 200,000-character prompt in the request, and a config
recursion in the model's config code whose traceback (every frame kept) is 65,000 characters."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from vllm_triage.cli import cli
from vllm_triage.render.issue_form import GITHUB_BODY_LIMIT, FormField, _cut_lines, submitted_body

HF_TOKEN = "hf_Qm7TzXc4VbN9aLs2DfGh8JkWe3RtYu6IoPz1"
API_KEY = "sk-prod-8c41f0d2e7b94a6a"
FRAMES = 190  # the triage keeps a block of up to 400 lines: the whole traceback is the block

ENGINE = "(EngineCore_DP0 pid=4102)"
API = "(APIServer pid=3980)"


def _log() -> str:
    site = "/usr/local/lib/python3.12/dist-packages"
    head = [
        f"{API} INFO 03-14 08:11:02 [api_server.py:1896] vLLM API server version 0.10.1.1",
        f"{API} INFO 03-14 08:11:02 [utils.py:326] non-default args: {{'model': 'acme/llama-70b-longctx', "
        f"'max_model_len': 131072, 'tensor_parallel_size': 8, 'api_key': ['{API_KEY}']}}",
        f"{API} INFO 03-14 08:11:09 [config.py:726] Resolved architecture: LlamaForCausalLM",
        f"{ENGINE} INFO 03-14 08:11:18 [core.py:654] Waiting for init message from front-end.",
        f"{ENGINE} INFO 03-14 08:11:18 [core.py:73] Initializing a V1 LLM engine (v0.10.1.1) with config: "
        "model='acme/llama-70b-longctx', tensor_parallel_size=8",
        f"{ENGINE} ERROR 03-14 08:11:31 [core.py:718] EngineCore failed to start.",
        f"{ENGINE} ERROR 03-14 08:11:31 [core.py:718] Traceback (most recent call last):",
        f'{ENGINE} ERROR 03-14 08:11:31 [core.py:718]   File "{site}/vllm/v1/engine/core.py", line 709, '
        "in run_engine_core",
        f"{ENGINE} ERROR 03-14 08:11:31 [core.py:718]     engine_core = EngineCoreProc(*args, **kwargs)",
        f'{ENGINE} ERROR 03-14 08:11:31 [core.py:718]   File "{site}/vllm/model_executor/model_loader/'
        'utils.py", line 52, in initialize_model',
        f"{ENGINE} ERROR 03-14 08:11:31 [core.py:718]     return model_class(vllm_config=vllm_config, prefix=prefix)",
    ]
    frames = []
    for i in range(FRAMES):
        # Two functions calling each other: Python folds only identical consecutive frames, so all stay.
        name, line = ("__getattr__", 211) if i % 2 == 0 else ("rope_scaling", 187)
        frames += [
            f'{ENGINE} ERROR 03-14 08:11:31 [core.py:718]   File "{site}/acme_longctx/configuration_longctx.py", '
            f"line {line}, in {name}",
            f"{ENGINE} ERROR 03-14 08:11:31 [core.py:718]     return self._resolve(key, depth={i})",
        ]
    tail = [
        f"{ENGINE} ERROR 03-14 08:11:31 [core.py:718] RecursionError: maximum recursion depth exceeded "
        "while calling a Python object",
        f"{API} ERROR 03-14 08:11:33 [api_server.py:1590] RuntimeError: Engine core initialization failed. "
        "See root cause above. Failed core proc(s): {}",
    ]
    return "\n".join(head + frames + tail) + "\n"


def _collect_env() -> str:
    lines = [
        "Collecting environment information...",
        "==============================",
        "        System Info",
        "==============================",
        "OS                           : Ubuntu 22.04.4 LTS (x86_64)",
        "Python version               : 3.12.3 (main, Nov  6 2024) [GCC 11.4.0] (64-bit runtime)",
        "PyTorch version              : 2.7.1+cu128",
        "CUDA used to build PyTorch   : 12.8",
        "GPU models and configuration :",
        *[f"GPU {i}: NVIDIA H100 80GB HBM3" for i in range(8)],
        "Nvidia driver version        : 570.124.06",
        "vLLM Version                 : 0.10.1.1",
        "Versions of relevant libraries:",
    ]
    # A fat image: every package of a data-science stack, twice (pip and conda).
    for tool in ("[pip3]", "[conda]"):
        lines += [f"{tool} acme-internal-package-{i:04d}==1.{i % 17}.{i % 5}" for i in range(1600)]
    return "\n".join(lines) + "\n"


def _request() -> str:
    document = " ".join(
        f"Clause {i}: the supplier shall deliver the goods in good order." for i in range(3200)
    )
    body = {
        "model": "acme/llama-70b-longctx",
        "messages": [{"role": "user", "content": f"Summarise this contract:\n{document}"}],
        "max_tokens": 1024,
    }
    return json.dumps(body, indent=2)


def _command() -> str:
    return (
        "docker run --gpus all --ipc=host -p 8000:8000 \\\n"
        f"  -e HF_TOKEN={HF_TOKEN} \\\n"
        "  vllm/vllm-openai:v0.10.1.1 \\\n"
        "  --model acme/llama-70b-longctx --max-model-len 131072 --tensor-parallel-size 8 \\\n"
        f"  --api-key {API_KEY}\n"
    )


def _write(folder: Path, files: dict[str, tuple[str, str]]) -> Path:
    folder.mkdir()
    manifest = ['[run]\nlabel = "llama-70b 128k, h100 x8"\nnode = "h100-r3-12"\n']
    for name, (role, text) in files.items():
        (folder / name).write_text(text)
        manifest.append(f'[[file]]\npath = "{name}"\nrole = "{role}"\n')
    (folder / "bundle.toml").write_text("\n".join(manifest))
    return folder


@pytest.fixture(scope="module")
def huge(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _write(
        tmp_path_factory.mktemp("form") / "huge",
        {
            "vllm.log": ("vllm_log", _log()),
            "collect_env.txt": ("collect_env", _collect_env()),
            "request.json": ("request", _request()),
            "command.sh": ("launch_command", _command()),
        },
    )


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    lines = _log().splitlines()
    short_log = "\n".join(lines[:11] + lines[-2:]) + "\n"  # the same failure, ten frames
    env = "\n".join(_collect_env().splitlines()[:30]) + "\n"
    return _write(
        tmp_path_factory.mktemp("form") / "small",
        {
            "vllm.log": ("vllm_log", short_log),
            "collect_env.txt": ("collect_env", env),
            "command.sh": ("launch_command", _command()),
        },
    )


def report(*args: str) -> str:
    result = CliRunner().invoke(cli, ["report", *args])
    assert result.exit_code == 0, result.output
    return result.stdout


_FIELDS: dict[Path, dict[str, FormField]] = {}


def fields(folder: Path) -> dict[str, FormField]:
    """Each field as `--field` prints it (once per bundle: the huge one takes seconds)."""
    if folder in _FIELDS:
        return _FIELDS[folder]
    labels = {"title": "Title", "environment": "Your current environment", "bug": "🐛 Describe the bug"}
    _FIELDS[folder] = {
        n: FormField(n, label, report("--field", n, str(folder))) for n, label in labels.items()
    }
    return _FIELDS[folder]


def blocks(text: str) -> dict[str, str]:
    """The guide's blocks as a reader copies them: the text inside each field's outer fence."""
    out = {}
    for match in re.finditer(
        r"^## \d+\. [^\n]+ — `--field (\w+)`\n\n(`{3,})\w*\n(.*?)\n\2$", text, re.S | re.M
    ):
        out[match.group(1)] = match.group(3)
    return out


def test_each_block_of_the_guide_is_the_field_alone(huge: Path, small: Path) -> None:
    for folder in (huge, small):
        text = report(str(folder))
        copied = blocks(text)
        assert list(copied) == ["title", "environment", "bug"]
        for name, f in fields(folder).items():
            assert copied[name] == f.body.rstrip("\n"), name
        # The guide says which goes where and how large the issue will be.
        body = submitted_body(list(fields(folder).values()))
        assert f"Together the issue body will be {len(body):,} characters" in text
        assert "| Your current environment | `environment` |" in text


def test_a_huge_bundle_fits_githubs_limit(huge: Path) -> None:
    f = fields(huge)
    body = submitted_body(list(f.values()))
    assert len(body) <= GITHUB_BODY_LIMIT, len(body)
    assert len(f["title"].body.strip()) <= 256
    # What was cut says so, and the parts that matter most are kept.
    env = f["environment"].body
    assert env.startswith("<details>\n<summary>The output of <code>python collect_env.py</code></summary>")
    assert "Collecting environment information..." in env and "vLLM Version                 : 0.10.1.1" in env
    assert "to fit GitHub's 65,536-character issue limit" in env
    assert "```\n\n</details>\n\n| | llama-70b 128k, h100 x8 | read from |" in env  # the fence closed
    assert "| vLLM | `0.10.1.1` |" in env
    bug = f["bug"].body
    assert "Traceback (most recent call last):" in bug
    assert "RecursionError: maximum recursion depth exceeded" in bug  # the tail of the traceback
    cut = re.search(r"\[… (\d+) line\(s\) cut by vllm-triage to fit GitHub's 65,536-character", bug)
    assert cut and 0 < int(cut.group(1)) < 2 * FRAMES
    assert '"max_tokens": 1024' not in bug  # the request's end went, its head stays
    assert '"model": "acme/llama-70b-longctx"' in bug
    # Every fence still closes: what follows the cuts renders as Markdown, not as code.
    assert bug.count("```") % 2 == 0
    assert "Later errors are consequences" in bug or "**Milestones reached:**" in bug


def test_a_small_bundle_is_not_cut(small: Path) -> None:
    f = fields(small)
    assert all("cut by vllm-triage" not in x.body for x in f.values())
    assert f["bug"].body.count("/acme_longctx/configuration_longctx.py") == 0  # the short log has none
    assert "RecursionError: maximum recursion depth exceeded" in f["bug"].body
    assert f["title"].body.startswith("[Bug]: RecursionError: maximum recursion depth exceeded")


def test_every_field_is_redacted(huge: Path, small: Path) -> None:
    for folder in (huge, small):
        for name, f in fields(folder).items():
            assert HF_TOKEN not in f.body and API_KEY not in f.body, name
        assert "HF_TOKEN=<redacted:hf-token:1>" in fields(folder)["bug"].body


def test_leak_scan_refuses_a_field_left_unredacted(small: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from vllm_triage.bundle.report import redact as report_redact

    monkeypatch.setattr(report_redact.PayloadRedactor, "redact", lambda self, payload: payload)
    result = CliRunner().invoke(cli, ["report", "--field", "bug", str(small)])
    assert result.exit_code == 1
    assert result.stdout == ""
    assert "leak-scan-failed" in result.stderr and result.stderr.count("\n") == 1
    assert HF_TOKEN not in result.stderr


def test_field_with_another_format_is_a_usage_error(small: Path) -> None:
    """Through the installed entry point (cli.main makes a usage error one line)."""
    import subprocess
    import sys

    def main(*args: str) -> subprocess.CompletedProcess[str]:
        code = "from vllm_triage.cli import main; main()"
        return subprocess.run(
            [sys.executable, "-c", code, "report", *args], capture_output=True, text=True, timeout=120
        )

    result = main("--field", "bug", "--format", "json", str(small))
    assert result.returncode == 2 and result.stdout == "" and result.stderr.count("\n") == 1
    assert "--field prints one field of the form as Markdown; drop --format json" in result.stderr
    result = main("--field", "askllm", str(small))
    assert result.returncode == 2 and "'title', 'environment', 'bug'" in result.stderr  # the choices
    assert main("--field", "bug", "--format", "md", str(small)).returncode == 0


def test_field_to_a_file(small: Path, tmp_path: Path) -> None:
    target = tmp_path / "environment.md"
    result = CliRunner().invoke(cli, ["report", "--field", "environment", "-o", str(target), str(small)])
    assert result.exit_code == 0 and result.stdout == ""
    assert target.read_text() == report("--field", "environment", str(small))


def test_cut_lines_keeps_head_and_tail() -> None:
    lines = [f"frame {i:04d}" for i in range(100)]  # 10 characters each, 11 with the newline
    kept = _cut_lines(lines, 11 * 60)
    marker = next(line for line in kept if line.startswith("[…"))
    shown = [line for line in kept if line != marker]
    assert shown[0] == "frame 0000" and shown[-1] == "frame 0099"
    assert len(shown) == 40 and f"[… {100 - len(shown)} line(s)" in marker
    assert shown == sorted(shown)  # the order of the traceback is kept
    assert _cut_lines(lines, 0) == lines
