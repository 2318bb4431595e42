"""A secret never reaches an output (issue 11), whatever the command: `triage`, `fingerprint`,
`check`, `diff` and `series` print their payload redacted in every format, and `scan` writes its
Parquet rows redacted. Each test builds a small bundle with planted (fake) secrets in the shapes
the readers take them from: an env file, a launch command, a compose file, vLLM's arg dump."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from vllm_triage.bundle.redact.payload import redact_payload
from vllm_triage.cli import cli


def fake(seed: str, length: int = 20) -> str:
    body = "".join(c.upper() if i % 3 == 0 else c for i, c in enumerate(seed * 64))
    return body[:length]


HF = "hf_" + fake("q7lm3np9rt2zb", 34)
KEY_ENV = fake("zq8lm3np9rt2vb6")
KEY_CMD = fake("kp2lm9qr7st4vw1")
KEY_LOG = fake("mx4nb7vc1zl9qw3")
KEY_LOG_2 = fake("wc4xy7hs1gf5kd")
PASSWORD = fake("pw8dq3lz6nx2ab", 14)
SECRETS = (HF, KEY_ENV, KEY_CMD, KEY_LOG, KEY_LOG_2, PASSWORD)
LOG = (
    "INFO 01-02 03:04:05 [__init__.py:241] Automatically detected platform cuda.\n"
    "(APIServer pid=7) INFO 01-02 03:04:07 [api_server.py:1805] vLLM API server version 0.10.1\n"
    f"(APIServer pid=7) INFO 01-02 03:04:07 [utils.py:326] non-default args: {{'model': 'Qwen/Qwen3-8B', "
    f"'api_key': ['{KEY_LOG}', '{KEY_LOG_2}'], 'hf_token': '{HF}'}}\n"
    "(EngineCore_0 pid=9) ERROR 01-02 03:04:31 [core.py:700] EngineCore failed to start.\n"
    "(EngineCore_0 pid=9) ERROR 01-02 03:04:31 [core.py:700] Traceback (most recent call last):\n"
    '(EngineCore_0 pid=9) ERROR 01-02 03:04:31 [core.py:700]   File "/usr/lib/python3/core.py", line 691, in run\n'
    "(EngineCore_0 pid=9) ERROR 01-02 03:04:31 [core.py:700] torch.OutOfMemoryError: CUDA out of memory. "
    "Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which 1.02 GiB is free.\n"
)


def bundle(root: Path) -> Path:
    files = {
        "vllm.log": LOG,
        "env.txt": f"HF_TOKEN={HF}\nVLLM_API_KEY={KEY_ENV}\nDB_PASSWORD=/x8{PASSWORD}\nNCCL_DEBUG=INFO\n",
        "command.txt": f"vllm serve Qwen/Qwen3-8B --api-key {KEY_CMD} --port 8000\n",
        "docker-compose.yml": (
            "services:\n  vllm:\n    image: vllm/vllm-openai:v0.10.1\n"
            f'    command: ["--model", "Qwen/Qwen3-8B", "--api-key", "{KEY_CMD}"]\n'
            f"    environment:\n      VLLM_API_KEY: {KEY_ENV}\n"
        ),
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def assert_clean(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"{secret[:6]}… leaked"
    # A cut-off prefix of a secret is a leak too (messages are shortened to a length).
    for secret in SECRETS:
        assert secret[:12] not in text, f"a prefix of {secret[:6]}… leaked"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("out")
    good = base / "good"
    good.mkdir()
    (good / "vllm.log").write_text(LOG.replace(KEY_LOG, "x").replace(KEY_LOG_2, "y").replace(HF, "z"))
    b = base / "b"
    b.mkdir()
    return good, bundle(b)


@pytest.mark.parametrize(
    "args",
    [
        ["triage", "{b}", "--format", "json"],
        ["triage", "{b}", "-v"],
        ["triage", "{b}", "--format", "md"],
        ["fingerprint", "{b}", "--format", "json"],
        ["fingerprint", "{b}"],
        ["check", "{b}", "--format", "json"],
        ["check", "{b}"],
        ["diff", "{good}", "{b}", "--format", "json", "--show-noise"],
        ["diff", "{good}", "{b}", "--show-noise"],
        ["diff", "{good}", "{b}", "--format", "md", "--show-noise"],
        ["series", "{good}", "{b}", "--format", "json"],
    ],
    ids=lambda a: "-".join(x for x in a if not x.startswith("{")),
)
def test_printed_outputs_hold_no_secret(runs: tuple[Path, Path], args: list[str]) -> None:
    good, b = runs
    argv = [a.format(b=b, good=good) for a in args]
    result = CliRunner().invoke(cli, argv)
    assert result.exit_code in (0, 1, 3), result.output
    assert_clean(result.output)
    assert "<redacted" in result.output


def test_one_secret_one_placeholder_across_a_fingerprint(runs: tuple[Path, Path]) -> None:
    _good, b = runs
    data = json.loads(CliRunner().invoke(cli, ["fingerprint", str(b), "--format", "json"]).output)
    hf = data["knobs"]["env.HF_TOKEN"]["value"]
    assert hf.startswith("<redacted:hf-token:")
    assert data["knobs"]["arg.hf_token"]["value"] == hf  # the log's hf_token is the env file's
    assert data["knobs"]["env.DB_PASSWORD"]["value"].startswith("<redacted:")
    keys = data["knobs"]["arg.api_key"]["value"]
    assert all(k.startswith("<redacted:") for k in keys) and len(set(keys)) == 2
    # What is not a secret is left as it was.
    assert data["knobs"]["arg.model"]["value"] == "Qwen/Qwen3-8B"
    assert data["knobs"]["env.NCCL_DEBUG"]["value"] == "INFO"


def test_scan_writes_no_secret_to_parquet(runs: tuple[Path, Path], tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    _good, b = runs
    fleet = tmp_path / "fleet"
    result = CliRunner().invoke(cli, ["scan", str(b), "-o", str(fleet), "--jobs", "1"])
    assert result.exit_code == 0, result.output
    tables = {p.parent.name: pq.read_table(p).to_pylist() for p in fleet.rglob("*.parquet")}
    assert {"runs", "knobs"} <= set(tables)
    assert_clean(json.dumps(tables, default=str))
    knobs = {row["name"]: row["value"] for row in tables["knobs"]}
    assert knobs["env.HF_TOKEN"].startswith("<redacted:hf-token:")
    assert knobs["arg.model"] == "Qwen/Qwen3-8B"


def test_payload_structure_names_the_secret() -> None:
    # The value stands alone in its string: only the key next to it says it is secret.
    payload = {
        "knobs": {"env.VLLM_API_KEY": {"value": "short1", "note": "read from env.txt"}},
        "changes": [{"name": "arg.api_key", "a": {"value": KEY_ENV}, "b": {"value": KEY_CMD}}],
        "message": f"the key {KEY_CMD} was rejected",
        "keep": {
            "arg.max_num_batched_tokens": {"value": "8192"},
            "env.HF_TOKEN_PATH": {"value": "/run/s/hf"},
        },
    }
    clean = redact_payload(payload)
    assert clean["knobs"]["env.VLLM_API_KEY"]["value"].startswith("<redacted:key:")
    assert clean["knobs"]["env.VLLM_API_KEY"]["note"] == "read from env.txt"
    a, b = clean["changes"][0]["a"]["value"], clean["changes"][0]["b"]["value"]
    assert a.startswith("<redacted:") and b.startswith("<redacted:") and a != b
    assert clean["message"] == f"the key {b} was rejected"  # the same placeholder in prose
    assert clean["keep"] == payload["keep"]
    assert payload["knobs"]["env.VLLM_API_KEY"]["value"] == "short1"  # the input is not changed


def test_a_secret_in_a_file_name_is_not_listed_in_clear(tmp_path: Path) -> None:
    token = "hf_" + fake("f1l3n4m3q8rt2", 34)
    b = bundle(tmp_path / "b")
    (b / "requests").mkdir()
    (b / "requests" / f"{token}.txt").write_text("empty\n")
    for args in (
        ["fingerprint", str(b)],
        ["fingerprint", str(b), "--format", "json"],
        ["triage", str(b), "-v"],
    ):
        result = CliRunner().invoke(cli, args)
        assert token not in result.output, args
        assert token[:12] not in result.output, args


@pytest.mark.parametrize("fmt", ["md", "html", "json"])
def test_report_of_differing_secret_args_is_written_not_refused(runs: tuple[Path, Path], fmt: str) -> None:
    # The log's api_key differs from the command's: the finding says so without the values, and
    # the Markdown's escaped `&lt;redacted&gt;` is read as GitHub shows it (it was refused, exit 1).
    _good, b = runs
    result = CliRunner().invoke(cli, ["report", str(b), "--format", fmt])
    assert result.exit_code == 0, result.output
    assert_clean(result.output)
    assert "args-differ-from-log" in result.output


def test_a_spark_partition_writes_its_rows_redacted(runs: tuple[Path, Path], tmp_path: Path) -> None:
    # What a Spark executor runs for its share of `scan --engine spark` (no Spark needed to call it):
    # the rows go through the same redaction as the local scan's before they are written.
    from datetime import datetime, timezone

    import pyarrow.parquet as pq

    from vllm_triage.bundle.redact.payload import redact_rows
    from vllm_triage.fleet.bundles import discover
    from vllm_triage.fleet.spark import _partition

    _good, b = runs
    out = tmp_path / "fleet"
    out.mkdir()
    [ref] = discover([str(b)])
    task = (ref, (), "run-1", "scan-1", datetime(2026, 1, 2, tzinfo=timezone.utc))
    [(outcomes, files)] = list(_partition(0, [task], str(out), "scan-1", redact=redact_rows))
    assert outcomes[0][1] == "run-1" and files
    tables = {p.parent.name: pq.read_table(p).to_pylist() for p in out.rglob("*.parquet")}
    assert_clean(json.dumps(tables, default=str))
    knobs = {row["name"]: row["value"] for row in tables["knobs"]}
    assert knobs["env.HF_TOKEN"].startswith("<redacted:hf-token:")


def test_diff_says_a_secret_changed_without_showing_either(runs: tuple[Path, Path], tmp_path: Path) -> None:
    # Two trials that differ only in the API key: the diff names the change, each side under its
    # own placeholder (a mask of the same length on both sides would hide that it changed).
    _good, b = runs
    other = tmp_path / "other"
    other.mkdir()
    for path in b.iterdir():
        (other / path.name).write_text(path.read_text().replace(KEY_LOG, KEY_LOG_2[::-1]))
    result = CliRunner().invoke(cli, ["diff", str(b), str(other), "--format", "json", "--show-noise"])
    assert result.exit_code in (0, 3), result.output
    assert_clean(result.output)
    assert KEY_LOG_2[::-1] not in result.output
    data = json.loads(result.output)
    text = json.dumps(data)
    assert "arg.api_key" in text
    assert "<redacted:key:1>" in text and "<redacted:key:2>" in text


def test_an_exception_named_for_a_key_is_not_a_secret(tmp_path: Path) -> None:
    # `KeyError: '<tensor name>'` is the checkpoint's missing tensor, the line triage reports as
    # the root of a weight-loading failure: it must come out as vLLM printed it.
    log = tmp_path / "vllm.log"
    log.write_text(
        "INFO 12-05 20:24:40 model_runner.py:1072] Starting to load model Qwen/Qwen2-7B-FP8...\n"
        "ERROR 12-05 20:24:46 engine.py:366] Traceback (most recent call last):\n"
        'ERROR 12-05 20:24:46 engine.py:366]   File "/opt/vllm/model_executor/models/qwen2.py", '
        "line 512, in load_weights\n"
        "ERROR 12-05 20:24:46 engine.py:366]     param = params_dict[name]\n"
        "ERROR 12-05 20:24:46 engine.py:366] KeyError: 'layers.0.mlp.down_proj.weight_scale'\n"
        f"HF_TOKEN={HF}\n"
    )
    result = CliRunner().invoke(cli, ["triage", str(log), "--format", "json"])
    first = json.loads(result.output)["first_error"]["text"]
    assert first.endswith("KeyError: 'layers.0.mlp.down_proj.weight_scale'")
    assert HF not in result.output


@pytest.mark.parametrize(
    "line",
    [
        "    next_token_ids = flashinfer.sampling.top_k_top_p_sampling_from_logits(",
        "    valid_sampled_token_ids = sampled_token_ids.tolist()",
        "    key_cache, value_cache = kv_cache.unbind(0)",
        "    key_cache = torch.empty(kv_cache_shape, dtype=self.dtype)",
    ],
)
def test_source_lines_of_a_traceback_are_code_not_secrets(line: str) -> None:
    assert redact_payload({"block_lines": [line]}) == {"block_lines": [line]}


def test_a_token_written_as_a_setting_is_still_redacted() -> None:
    payload = {"text": f"    hf_token = '{HF}'", "env": f"API_KEY={KEY_ENV}"}
    out = json.dumps(redact_payload(payload))
    assert HF not in out and KEY_ENV not in out
