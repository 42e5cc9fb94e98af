"""viewer.units: byte sizes formatted with one decimal in binary units, and parsed with limits."""

from __future__ import annotations

import pytest

from viewer.errors import UsageError
from viewer.units import MAX_SIZE_BYTES, format_bytes, parse_size


@pytest.mark.parametrize("n, text", [
    (0, "0 B"), (1023, "1023 B"), (1024, "1.0 KiB"), (1536, "1.5 KiB"),
    (6_623_232, "6.3 MiB"), (3 << 30, "3.0 GiB"), (5 << 40, "5.0 TiB"), (-2048, "-2.0 KiB"),
    # Ties round away from zero, as people do: 2.25 KiB, 0.05 MiB past 1 MiB, 2.75 KiB.
    (2304, "2.3 KiB"), (-2304, "-2.3 KiB"), (1_101_005, "1.1 MiB"), (2816, "2.8 KiB"),
    (2252, "2.2 KiB"),  # 2.199... KiB: below the tie
])
def test_format_bytes_one_decimal_binary_units(n, text):
    assert format_bytes(n) == text


@pytest.mark.parametrize("text, n", [
    ("4MiB", 4 << 20), ("512KB", 512_000), ("1.5GiB", 3 << 29), ("1000", 1000), ("2kib", 2048),
    ("4TiB", 4 << 40), ("4mb", 4_000_000), ("4MB", 4_000_000),
])
def test_parse_size(text, n):
    assert parse_size(text) == n


@pytest.mark.parametrize("text", ["99999999999999999999999TiB", "1e400", "5000000TiB"])
def test_huge_sizes_are_one_line_usage_errors(text):
    with pytest.raises(UsageError, match="too large") as e:
        parse_size(text)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("text, line", [
    ("4m", "size '4m' is ambiguous: write 4MiB (1,048,576 B per MiB) or 4MB (1,000,000 B per MB)"),
    ("2K", "size '2K' is ambiguous: write 2KiB (1,024 B per KiB) or 2KB (1,000 B per KB)"),
    ("1.5g", "size '1.5g' is ambiguous: write 1.5GiB (1,073,741,824 B per GiB) or 1.5GB (1,000,000,000 B per GB)"),
])
def test_bare_prefixes_are_refused_as_ambiguous(text, line):
    """A bare K/M/G means 1000 or 1024 depending on who reads it: refused, both readings named."""
    with pytest.raises(UsageError) as e:
        parse_size(text)
    assert str(e.value) == line


def test_ambiguous_budget_is_exit_2_one_line(capsys, tmp_path):
    from tests.tflite_builder import add_chain, write
    from viewer.cli import main

    m = write(tmp_path, "chain.tflite", add_chain(2))
    assert main(["check", str(m), "--budget", "4m", "--no-measure"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "arena-viewer: error: size '4m' is ambiguous: write 4MiB (1,048,576 B per MiB) or 4MB (1,000,000 B per MB)"]


def test_every_size_option_states_the_syntax(capsys):
    from viewer.cli import main
    from viewer.units import SIZE_SYNTAX

    for argv, flag in ((["check"], "--budget"), (["check"], "--runtime-overhead"),
                       (["measure"], "--runtime-overhead"), (["plan-csv"], "--capacity")):
        assert main([*argv, "--help"]) == 0
        out = " ".join(capsys.readouterr().out.replace("- ", "-").split())
        after = out[out.index(flag + " SIZE", out.index("options:")):]
        assert " ".join(SIZE_SYNTAX.split()) in after[:600], (argv, flag)


def test_the_limit_itself_is_taken():
    assert parse_size(str(MAX_SIZE_BYTES)) == MAX_SIZE_BYTES


@pytest.mark.parametrize("text", ["", "four", "4 parsecs", "-1MiB", "nan"])
def test_unreadable_sizes(text):
    with pytest.raises(UsageError):
        parse_size(text)


def test_one_byte_formatter_everywhere():
    """Issue 12 item 11: no view formats bytes its own way: format_bytes takes no precision,
    and nothing passes one (the window said 24.75 MiB, the CLI 24.8, the compare line 24.8)."""
    import ast
    import inspect
    from pathlib import Path

    assert list(inspect.signature(format_bytes).parameters) == ["n"]
    bad = []
    for f in (Path(__file__).resolve().parents[1] / "viewer").rglob("*.py"):
        for node in ast.walk(ast.parse(f.read_text())):
            if (isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None))
                    == "format_bytes" and (len(node.args) > 1 or node.keywords)):
                bad.append(f"{f.name}:{node.lineno}")
    assert not bad, bad
    assert format_bytes(25_952_256) == "24.8 MiB"
