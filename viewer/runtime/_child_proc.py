"""Process measurements for the runtime child's ``measure`` mode (Linux ``/proc``; None elsewhere):
status and smaps_rollup figures, the RSS of one file mapping, page faults."""

from __future__ import annotations

import os


def _status() -> dict:
    out = {}
    try:
        with open("/proc/self/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("VmHWM", "VmRSS", "RssAnon", "RssFile"):
                    out[k] = int(v.split()[0]) * 1024
    except OSError:
        pass
    return out


def _smaps_rollup() -> dict:
    out = {}
    try:
        with open("/proc/self/smaps_rollup") as f:
            for line in f:
                k, _, v = line.partition(":")
                parts = v.split()
                if len(parts) == 2 and parts[1] == "kB":
                    out[k.strip()] = int(parts[0]) * 1024
    except OSError:
        pass
    return out


def _mapping_rss(path: str) -> int | None:
    """Rss of every mapping of ``path`` (/proc/self/smaps), in bytes."""
    real = os.path.realpath(path)
    total, inside, seen = 0, False, False
    try:
        with open("/proc/self/smaps") as f:
            for line in f:
                head = line.split(None, 5)
                if head and "-" in head[0] and len(head) >= 5 and not head[0].endswith(":"):
                    inside = len(head) == 6 and head[5].strip() == real
                    seen = seen or inside
                elif inside and line.startswith("Rss:"):
                    total += int(line.split()[1]) * 1024
    except OSError:
        return None
    return total if seen else 0


def _faults() -> tuple[int, int] | None:
    """(minor, major) page faults of this process so far; None where getrusage is missing."""
    try:
        import resource
    except ImportError:  # Windows
        return None
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return int(ru.ru_minflt), int(ru.ru_majflt)


def _delta(a, b, k: int) -> int | None:
    return None if a is None or b is None else b[k] - a[k]
