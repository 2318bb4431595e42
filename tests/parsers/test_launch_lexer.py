"""The one shell lexer, in its two uses: a logical command (launch pastes) and a whole script
(curl pastes, the checklist's "is this command whole?" test)."""

from __future__ import annotations

from vllm_triage.parsers.launch.lexer import lex_script, tokenize_string


def words(simple) -> list[str]:
    return [token.text for token in simple.words]


def test_a_script_keeps_multi_line_quotes_and_the_line_of_every_word():
    text = (
        "curl -s http://localhost:8000/v1/completions \\\n"
        '  -H "Content-Type: application/json" \\\n'
        '  -d \'{\n    "model": "m",\n    "prompt": "hi"\n  }\'\n'
        "echo done # trailing comment\n"
    )
    first, second = lex_script(text)
    assert words(first)[:4] == ["curl", "-s", "http://localhost:8000/v1/completions", "-H"]
    assert words(first)[-1].startswith("{\n") and words(first)[-1].endswith("}")
    assert [token.line for token in first.words] == [1, 1, 1, 2, 2, 3, 3]
    assert words(second) == ["echo", "done"] and second.words[0].line == 7


def test_powershell_and_cmd_continuations_in_a_script():
    ps, cmd = lex_script('curl.exe http://x `\n  -d "{}"\ncurl http://y ^\n  -H "A: b" > out.json\n')
    assert words(ps) == ["curl.exe", "http://x", "-d", "{}"]
    assert words(cmd) == ["curl", "http://y", "-H", "A: b"]  # the redirection is no argument


def test_operators_split_commands_and_unbalanced_quotes_are_noted_not_fatal():
    notes: list[str] = []
    commands = lex_script(
        'pip list | grep vllm && vllm serve m --port 8000 &\nvllm serve "cut\n', notes=notes
    )
    assert [words(c) for c in commands][:3] == [
        ["pip", "list"],
        ["grep", "vllm"],
        ["vllm", "serve", "m", "--port", "8000"],
    ]
    assert any("unbalanced double quote" in note for note in notes)


def test_a_command_string_expands_known_variables_and_keeps_placeholders():
    tokens = tokenize_string("vllm serve ${MODEL:-Qwen/Qwen3-8B} --api-key <your key> 2>&1", 4)
    assert [t.text for t in tokens if t.op is None] == [
        "vllm",
        "serve",
        "Qwen/Qwen3-8B",
        "--api-key",
        "<your key>",
    ]
    assert {t.line for t in tokens} == {4}


def test_the_checklist_calls_a_command_with_an_open_quote_cut():
    from vllm_triage.bundle.check.scene import _cut

    assert _cut("vllm serve m \\\n  --chat-template '{% for m in messages %}\n") is not None
    assert "unbalanced single quote" in _cut("vllm serve m --served-model-name 'x\n")
    assert _cut("vllm serve m --chat-template '{{ x }}'\n") is None


def test_a_word_opening_with_its_only_backslash_is_read_as_bash_reads_it():
    # a web page joined `… \<newline>--ipc=host` into `… \--ipc=host`
    notes: list[str] = []
    text = "docker run --gpus all \\--ipc=host \\-e HF_HUB_OFFLINE=1 \\vllm/vllm-openai:v0.9.0 \\--model /m"
    got = [token.text for token in tokenize_string(text, 3, notes=notes)]
    assert got == [
        "docker", "run", "--gpus", "all", "--ipc=host", "-e", "HF_HUB_OFFLINE=1",
        "vllm/vllm-openai:v0.9.0", "--model", "/m",
    ]  # fmt: skip
    assert len(notes) == 1 and "line 3" in notes[0]


def test_windows_paths_keep_their_backslashes():
    notes: list[str] = []
    got = [
        token.text
        for token in tokenize_string(r"vllm serve C:\models\phi-4 --download-dir D:\hf", 1, notes=notes)
    ]
    assert got == ["vllm", "serve", r"C:\models\phi-4", "--download-dir", r"D:\hf"]
    rooted = [token.text for token in tokenize_string(r"vllm serve \models\phi-4", 1, notes=notes)]
    assert rooted == ["vllm", "serve", r"\models\phi-4"]  # more than one backslash: a path
    assert notes == []


def test_a_long_script_is_lexed_in_linear_time() -> None:
    # Fuzz finding: Logical.add grew its text by `+=` on an attribute, copying the whole text for
    # every line: a request paste of 20,000 lines took seconds in the lexer alone.
    import gc
    import time

    from vllm_triage.parsers.launch.lexer import lex_script

    line = "curl -s http://localhost:8000/v1/models\n"

    def best_of_three(text: str) -> tuple[float, list]:
        # The lexer's growth, not the machine's: the best of three runs (a busy CI neighbour
        # slows one), with the cyclic GC off (its passes over a heap of 32,000 commands' objects
        # grow with the heap, which is CPython's cost, not the lexer's).
        times, result = [], []
        gc.collect()
        gc.disable()
        try:
            for _ in range(3):
                started = time.process_time()
                result = lex_script(text)
                times.append(time.process_time() - started)
        finally:
            gc.enable()
        return min(times), result

    small_time, small = best_of_three(line * 4_000)
    big_time, commands = best_of_three(line * 32_000)
    assert len(small) == 4_000 and len(commands) == 32_000
    assert commands[-1].words[0].text == "curl" and commands[-1].words[0].line == 32_000
    # 8 times the input: linear is about 8 times the time, the old quadratic copy about 30 times.
    assert big_time < 16 * small_time + 0.5
