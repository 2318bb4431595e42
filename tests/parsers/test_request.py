"""The request: OpenAI JSON bodies and curl commands → request.* knobs with provenance."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_triage.parsers import request

FIXTURES = Path(__file__).parent.parent / "fixtures" / "request"


def parsed(name: str):
    return request.parse((FIXTURES / name).read_text(encoding="utf-8"), name)


def values(result) -> dict:
    return {name: sourced.value for name, sourced in result.knobs.items()}


def lines(result) -> dict:
    return {name: sourced.source.line for name, sourced in result.knobs.items()}


# ------------------------------------------------------------------------------------ looks_like


@pytest.mark.parametrize(
    "name",
    [
        "chat_pretty.json",
        "completion_oneline.json",
        "curl_chat.sh",
        "curl_json_flag.txt",
        "curl_body_file.txt",
        "curl_windows.txt",
        "curl_heredoc.sh",
        "curl_with_error_response.txt",
        "xargs_concurrency.sh",
        "batch.jsonl",
        "truncated.json",
    ],
)
def test_claims_requests(name: str) -> None:
    assert request.looks_like((FIXTURES / name).read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    "name", ["docker_inspect.json", "inspect_object.json", "response.json", "curl_health.txt"]
)
def test_does_not_claim_inspect_json_responses_or_health_checks(name: str) -> None:
    assert not request.looks_like((FIXTURES / name).read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\x00\x01binary\xfe" * 40,
        "HF_HOME=/data\nVLLM_USE_V1=1\n",
        "vllm serve Qwen/Qwen3-8B --max-model-len 8192\n",
        "(APIServer pid=1) INFO 03-02 10:11:12 [utils.py:326] non-default args: {'model': 'x'}\n",
        "services:\n  vllm:\n    image: vllm/vllm-openai\n",
        '{"model": "x"}',  # a bare model name is not enough to call it a request
    ],
)
def test_does_not_claim_other_formats(text: str) -> None:
    assert not request.looks_like(text)


# ----------------------------------------------------------------------------------- JSON bodies


def test_pretty_printed_chat_body() -> None:
    result = parsed("chat_pretty.json")
    got = values(result)
    assert result.kind == request.KIND_JSON
    assert got["request.model"] == "mistralai/Mistral-Small-3.1-24B-Instruct-2503"
    assert got["request.max_tokens"] == 1024
    assert got["request.temperature"] == 0.2
    assert got["request.top_p"] == 0.95
    assert got["request.top_k"] == 40
    assert got["request.stream"] is True
    assert got["request.n"] == 1
    assert got["request.seed"] == 1234
    assert got["request.messages_count"] == 2
    system, user = (
        "You are a terse assistant.",
        "Summarise the attached incident report in three bullet points.",
    )
    assert got["request.prompt_chars"] == len(system) + len(user)
    assert got["request.stream_options.include_usage"] is True
    assert got["request.stop"] == ["</s>", "###"]
    assert "request.user" not in got  # an end-user identifier is not a knob
    at = lines(result)
    assert (at["request.model"], at["request.max_tokens"], at["request.seed"]) == (2, 7, 13)
    assert at["request.messages_count"] == 3


def test_one_line_completion_body() -> None:
    got = values(parsed("completion_oneline.json"))
    assert got["request.model"] == "bigcode/starcoder2-15b"
    assert got["request.max_tokens"] == 256
    assert got["request.temperature"] == 0
    assert got["request.prompt_chars"] == len(
        'def fibonacci(n):\n    """Return the n-th Fibonacci number."""\n'
    )
    assert got["request.logprobs"] == 3
    assert "request.messages_count" not in got


def test_openai_batch_jsonl_uses_first_line() -> None:
    result = parsed("batch.jsonl")
    got = values(result)
    assert got["request.endpoint"] == "/v1/chat/completions"
    assert got["request.model"] == "meta-llama/Llama-3.3-70B-Instruct"
    assert got["request.prompt_chars"] == len("Hello world")
    assert any("2 JSON objects" in note for note in result.notes)


def test_truncated_body_keeps_readable_fields() -> None:
    result = parsed("truncated.json")
    got = values(result)
    assert got["request.model"] == "Qwen/Qwen2.5-72B-Instruct-AWQ"
    assert got["request.max_tokens"] == 4096
    assert got["request.messages_count"] == 1
    assert got["request.prompt_chars"] > 0
    assert any("cut" in note and "lower bounds" in note for note in result.notes)


@pytest.mark.parametrize("name", ["docker_inspect.json", "inspect_object.json", "response.json"])
def test_non_request_json_yields_no_knobs(name: str) -> None:
    result = parsed(name)
    assert result.knobs == {}
    assert result.notes


def test_token_id_prompt_and_multi_prompt() -> None:
    got = values(request.parse('{"model": "m", "prompt": [1, 2, 3, 4], "max_tokens": 5}', "ids.json"))
    assert got["request.prompt_tokens"] == 4
    assert "request.prompt_chars" not in got


def test_fenced_and_quoted_body() -> None:
    text = '> ```json\n> {"model": "m", "messages": [{"role": "user", "content": "hi"}]}\n> ```\n'
    assert request.looks_like(text)
    result = request.parse(text, "fenced.md")
    assert values(result)["request.model"] == "m"
    assert values(result)["request.prompt_chars"] == 2
    assert lines(result)["request.model"] == 2


# ------------------------------------------------------------------------------------------ curl


def test_curl_with_continuations_headers_and_timeout() -> None:
    result = parsed("curl_chat.sh")
    got = values(result)
    assert result.kind == request.KIND_CURL
    assert got["request.url"] == "http://10.0.3.17:8000/v1/chat/completions"
    assert got["request.endpoint"] == "/v1/chat/completions"
    assert got["request.method"] == "POST"
    assert got["request.timeout"] == 300
    assert got["request.model"] == "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B"
    assert got["request.max_tokens"] == 8192
    assert "max_completion_tokens" in (result.knobs["request.max_tokens"].note or "")
    assert got["request.temperature"] == 0.6
    assert got["request.messages_count"] == 1
    assert got["request.chat_template_kwargs.enable_thinking"] is True
    assert got["request.concurrency"] == 32  # from the header comment
    at = lines(result)
    assert (at["request.url"], at["request.timeout"], at["request.model"], at["request.max_tokens"]) == (
        2,
        5,
        7,
        11,
    )


def test_authorization_value_never_leaves_the_parser() -> None:
    result = parsed("curl_chat.sh")
    assert values(result)["request.auth_scheme"] == "Bearer"
    everything = repr(values(result)) + "\n".join(result.notes)
    assert "sk-FAKE-prod-9f8e7d6c5b4a" not in everything
    assert any("Authorization" in note for note in result.notes)  # the header's name is fine


def test_curl_json_flag_short_options_and_prompt_line() -> None:
    got = values(parsed("curl_json_flag.txt"))
    assert got["request.url"] == "http://localhost:8001/v1/completions"
    assert got["request.timeout"] == 30
    assert got["request.model"] == "facebook/opt-125m"
    assert got["request.prompt_chars"] == len("Hello") + len("World!")
    assert got["request.prompts_count"] == 2
    assert got["request.n"] == 2


def test_curl_body_in_another_file() -> None:
    result = parsed("curl_body_file.txt")
    got = values(result)
    assert got["request.body_file"] == "long_context_request.json"
    assert got["request.endpoint"] == "/v1/chat/completions"
    assert any("another file" in note and "long_context_request.json" in note for note in result.notes)
    assert result.knobs["request.body_file"].source.line == 3


def test_windows_curl_with_caret_continuations_and_escaped_quotes() -> None:
    got = values(parsed("curl_windows.txt"))
    assert got["request.url"] == "http://192.168.1.50:8000/v1/chat/completions"
    assert got["request.model"] == "Qwen/Qwen2.5-VL-7B-Instruct"
    assert got["request.prompt_chars"] == len("What is in this image?")
    assert got["request.images_count"] == 1
    assert got["request.max_tokens"] == 300


def test_curl_body_from_heredoc() -> None:
    result = parsed("curl_heredoc.sh")
    got = values(result)
    assert got["request.model"] == "google/gemma-3-27b-it"
    assert got["request.max_tokens"] == 64
    assert lines(result)["request.model"] == 5


def test_error_response_after_the_command_is_a_problem() -> None:
    result = parsed("curl_with_error_response.txt")
    assert values(result)["request.max_tokens"] == 200000
    assert [p.id for p in result.problems] == ["request-error-response"]
    problem = result.problems[0]
    assert "maximum context length is 131072" in problem.message
    assert problem.evidence[0].line == 2


def test_xargs_fan_out_gives_concurrency() -> None:
    result = parsed("xargs_concurrency.sh")
    got = values(result)
    assert got["request.concurrency"] == 64
    assert got["request.model"] == "Qwen/Qwen3-30B-A3B"
    assert got["request.url"] == "http://vllm.internal:8000/v1/chat/completions"


def test_url_credentials_and_query_are_dropped() -> None:
    text = "curl 'https://bob:hunter2@api.local:8443/v1/completions?api_key=SECRET' -d '{\"prompt\": \"x\"}'"
    result = request.parse(text, "c.sh")
    assert values(result)["request.url"] == "https://api.local:8443/v1/completions"
    assert "hunter2" not in repr(values(result)) and "SECRET" not in repr(values(result))


def test_attached_short_options_and_data_raw() -> None:
    text = 'curl -sSXPOST -m5 http://h:8000/v1/completions --data-raw=\'{"model":"m","prompt":"abc"}\''
    got = values(request.parse(text, "c.sh"))
    assert got["request.method"] == "POST"
    assert got["request.timeout"] == 5
    assert got["request.prompt_chars"] == 3


def test_several_curl_commands_use_the_one_with_a_body() -> None:
    text = (
        "curl http://localhost:8000/v1/models\n"
        'curl http://localhost:8000/v1/chat/completions -d \'{"model": "a", "messages": []}\'\n'
    )
    result = request.parse(text, "two.sh")
    assert values(result)["request.model"] == "a"
    assert result.knobs["request.url"].source.line == 2
    assert any("2 curl commands" in note for note in result.notes)


def test_body_with_shell_variables_is_read_tolerantly() -> None:
    text = 'curl localhost:8000/v1/completions -d "{\\"model\\": \\"$MODEL\\", \\"max_tokens\\": $N}"'
    result = request.parse(text, "vars.sh")
    got = values(result)
    assert got["request.model"] == "$MODEL"
    assert any("not valid JSON" in note for note in result.notes)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\x00\x01\x02\xff" * 100,
        "{",
        "[1, 2",
        "curl",
        "curl -d",
        "curl 'unterminated",
        "curl http://[::1:8000/v1/completions -d '{}'",
        '"just a string"',
        "no request here at all",
    ],
)
def test_bad_input_gives_notes_not_exceptions(text: str) -> None:
    result = request.parse(text, "bad.txt")
    assert "request.model" not in result.knobs
    assert result.notes


@pytest.mark.parametrize(
    "text",
    [
        "vllm serve Qwen/Qwen3-8B --port 8000 &\nsleep 60\n"
        'curl localhost:8000/v1/completions -d \'{"model": "Qwen/Qwen3-8B", "prompt": "hi"}\'\n',
        "(APIServer pid=1) INFO 03-02 10:11:12 [launcher.py:44] Route: /v1/chat/completions, Methods: POST\n"
        "(APIServer pid=1) ERROR 03-02 10:11:13 [serving_chat.py:222] curl -d '{}' /v1/completions failed\n",
    ],
)
def test_does_not_claim_launch_scripts_or_logs_that_contain_a_curl(text: str) -> None:
    assert not request.looks_like(text)


@pytest.mark.parametrize("filler", ["(", "/", "a=", "\r", "curl "])
def test_a_long_hostile_line_is_read_in_linear_time(filler):
    # 50,000 of one character on a line took minutes with the backtracking regexes (quadratic);
    # read linearly it is well under a second, so the bound below only catches the quadratic.
    import time

    from vllm_triage.parsers import request

    text = 'curl -s http://localhost:8000/v1/completions -d \'{"prompt": "x"}\'\n' + filler * 50_000 + "\n"
    started = time.perf_counter()
    request.looks_like(text)
    request.parse(text, "r.txt")
    assert time.perf_counter() - started < 20


def test_deeply_nested_json_body_is_a_note_not_a_crash() -> None:
    # Fuzz finding: thousands of `[` made json's decoder raise RecursionError out of parse().
    from vllm_triage.parsers import request as request_parser

    result = request_parser.parse('{"model": "m", "messages": ' + "[" * 100_000 + "\n", "request.json")
    assert any("nested too deeply" in note for note in result.notes)


def test_deeply_nested_json_in_a_sniff_or_a_curl_body_is_no_crash() -> None:
    from vllm_triage.parsers import request as request_parser

    deep = "[" * 100_000
    assert request_parser.looks_like(deep + "\n") in (True, False)
    result = request_parser.parse(f"curl http://localhost:8000/v1/chat/completions -d '{deep}'\n", "r.sh")
    assert result.kind
