"""viewer.units: byte sizes formatted with one decimal in binary units, and parsed with limits."""

from __future__ import annotations

import pytest

from viewer.errors import UsageError
from viewer.units import MAX_SIZE_BYTES, format_bytes, parse_size


@pytest.mark.parametrize("n, text", [
    (0, "0 B"), (1023, "1023 B"), (1024, "1.0 KiB"), (1536, "1.5 KiB"),
    (6_623_232, "6.3 MiB"), (3 << 30, "3.0 GiB"), (5 << 40, "5.0 TiB"), (-2048, "-2.0 KiB"),
])
def test_format_bytes_one_decimal_binary_units(n, text):
    assert format_bytes(n) == text


@pytest.mark.parametrize("text, n", [
    ("4MiB", 4 << 20), ("512KB", 512_000), ("1.5GiB", 3 << 29), ("1000", 1000), ("2k", 2048),
    ("4TiB", 4 << 40),
])
def test_parse_size(text, n):
    assert parse_size(text) == n


@pytest.mark.parametrize("text", ["99999999999999999999999TiB", "1e400", "5000000TiB"])
def test_huge_sizes_are_one_line_usage_errors(text):
    with pytest.raises(UsageError, match="too large") as e:
        parse_size(text)
    assert "\n" not in str(e.value)


def test_the_limit_itself_is_taken():
    assert parse_size(str(MAX_SIZE_BYTES)) == MAX_SIZE_BYTES


@pytest.mark.parametrize("text", ["", "four", "4 parsecs", "-1MiB", "nan"])
def test_unreadable_sizes(text):
    with pytest.raises(UsageError):
        parse_size(text)
