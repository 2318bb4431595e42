"""Physical to logical lines: CR-only endings, CRI partial records, terminal-UI box wraps."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from vllm_triage.cli import cli
from vllm_triage.ingest.logical import join_wrapped, logical_lines, split_carriage_returns

LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "logs"
BAR = "Capturing CUDA graphs (decode, FULL): {p:3d}%|{bar:<10}| {n}/67 [00:0{n}<00:10, 3.1it/s]"


def _bar(p: int, n: int) -> str:
    return BAR.format(p=p, bar="█" * (p // 10), n=n)


def test_a_lone_carriage_return_ends_a_line_but_a_progress_redraw_does_not() -> None:
    text = (
        "INFO 11-04 15:23:28 [core.py:1] a\r"
        + "\r".join(_bar(p, n) for p, n in ((0, 0), (50, 3)))
        + "\rINFO b"
    )
    assert split_carriage_returns([text]) == [
        "INFO 11-04 15:23:28 [core.py:1] a",
        _bar(0, 0) + "\r" + _bar(50, 3),
        "INFO b",
    ]
    # CRLF and a bar redrawn from a leading `\r` stay as they were.
    assert split_carriage_returns(["a\r", "\r" + _bar(0, 0) + "\r" + _bar(50, 3)]) == [
        "a\r",
        "\r" + _bar(0, 0) + "\r" + _bar(50, 3),
    ]
    assert split_carriage_returns(["a\r\rb"]) == ["a", "", "b"]


def test_cri_partial_records_join_the_next_full_record_of_their_stream() -> None:
    lines = [
        "2025-01-01T00:00:00Z stdout P INFO 11-04 15:23:28 [core.py:69] Initializing a V1 LLM engine with ",
        "2025-01-01T00:00:00Z stderr F Traceback (most recent call last):",
        "2025-01-01T00:00:00Z stdout P config: model='m', ",
        "2025-01-01T00:00:01Z stdout F tensor_parallel_size=2",
        "2025-01-01T00:00:01Z stdout F next",
    ]
    joined = (
        "2025-01-01T00:00:00Z stdout F INFO 11-04 15:23:28 [core.py:69] Initializing a V1 LLM engine with "
        "config: model='m', tensor_parallel_size=2"
    )
    assert join_wrapped(lines) == [
        "",
        "2025-01-01T00:00:00Z stderr F Traceback (most recent call last):",
        "",
        joined,
        "2025-01-01T00:00:01Z stdout F next",
    ]


def test_box_rows_rejoin_only_where_the_box_wrapped() -> None:
    width = 20
    # A pane that cuts at its width: full rows continue, nothing else does.
    hard = ["abcdefghijklmnopqrst", "uvwxyz", "the quick brown", "foxes jump over", "a long row filled up",
            '  File "x.py", line 1', "cut right after a ", "space"]  # fmt: skip
    joined = join_wrapped([f"│ {row:<{width}} │" for row in hard])
    assert joined[:2] == ["", "│ abcdefghijklmnopqrstuvwxyz │"]
    assert joined[2:4] == [f"│ {row:<{width}} │" for row in hard[2:4]]  # no word-wrapping in a hard pane
    assert joined[4:6] == [f"│ {row:<{width}} │" for row in hard[4:6]]  # a frame starts a record
    assert joined[6:] == ["", "│ cut right after a space │"]  # the padding hid the space at the cut
    # A word-wrapping panel (rich): a row ends early where the next word would not have fitted.
    soft = ["the quick brown fox", "jumps over", "short line", "another", "RuntimeError: boom"]
    boxed = [f"│ {row:<{width}} │" for row in soft]
    joined = join_wrapped(boxed)
    assert joined[:2] == ["", "│ the quick brown fox jumps over │"]
    assert joined[2:] == boxed[2:]  # `another` would have fitted; an exception starts a record


def test_a_wrapped_source_line_stays_under_its_frame() -> None:
    width = 30
    rows = [
        '  File "/x/vllm/worker.py", line 9, in f',
        '    raise ValueError("No memory for the cache blocks")',
    ]
    boxed = [f"│ {row[k : k + width]:<{width}} │" for row in rows for k in range(0, len(row), width)]
    assert len(boxed) == 4
    joined = join_wrapped(boxed)
    assert joined[0] == "" and joined[1] == f"│ {rows[0]} │"  # the frame: last row of its group
    assert joined[2] == f"│ {rows[1]} │" and joined[3] == ""  # its source line: first row


def test_a_group_cut_by_a_chunk_boundary_is_joined_in_the_next_chunk() -> None:
    first = ["x", "2025-01-01T00:00:00Z stdout P part one, "]
    second = ["2025-01-01T00:00:00Z stdout F part two", "y"]
    batches = [pl.Series("raw", first), pl.Series("raw", second)]
    out = [line for batch in logical_lines(batches) for line in batch.to_list()]
    assert out == ["x", "", "2025-01-01T00:00:00Z stdout F part one, part two", "y"]
    # A box-wrapped line cut by the chunk boundary, in a pane where every row is boxed.
    width = 10
    rows = [f"│ {piece:<{width}} │" for piece in ("short", "abcdefghij", "klmnopqrst", "uvw", "end")]
    for cut in range(1, len(rows)):
        batches = [pl.Series("raw", rows[:cut]), pl.Series("raw", rows[cut:])]
        out = [line for batch in logical_lines(batches) for line in batch.to_list()]
        assert out == [rows[0], "", "", "│ abcdefghijklmnopqrstuvw │", rows[4]], cut
    plain = [pl.Series("raw", ["a", "b"])]
    assert [b.to_list() for b in logical_lines(plain)] == [["a", "b"]]


def test_a_cr_only_log_is_triaged_like_the_lf_one(tmp_path: Path) -> None:
    import json

    from click.testing import CliRunner

    lines = (LOGS / "v1-0.9.2-tp4-worker-nccl.log").read_text().splitlines()
    verdicts = []
    for name, end in (("lf.log", "\n"), ("cr.log", "\r")):
        given = tmp_path / name
        given.write_text(end.join(lines) + end, newline="")
        result = CliRunner().invoke(cli, ["triage", str(given), "--format", "json"], catch_exceptions=False)
        out = json.loads(result.stdout)
        verdicts.append((out["phase"], out["first_error"]["line"], out["first_error"]["text"]))
    assert verdicts[0] == verdicts[1]
    assert verdicts[0][2] == lines[57]
