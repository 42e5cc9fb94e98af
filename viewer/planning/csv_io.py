"""Planning problems as CSV, in MiniMalloc's benchmark format.

One row per buffer: ``id,lower,upper,size[,offset]``. The usage interval is half-open
``[lower, upper)`` in time steps (operator indices here); in a :class:`Buffer` it becomes
``first=lower, last=upper-1`` (inclusive). Source: google/minimalloc, README.md and
``src/converter.cc`` (the same columns, the optional ``offset`` column is a solution).
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Sequence

from viewer.errors import PlanningError
from viewer.planning.types import Buffer, Plan, PlanningProblem

#: Columns every problem CSV must have (any order; extra columns are ignored).
REQUIRED_COLUMNS = ("id", "lower", "upper", "size")


#: Largest ``lower``, ``upper`` or ``size`` taken: 2**53. Planners add sizes and offsets in
#: int64 (and some in float64, exact up to 2**53), so this leaves headroom for sums.
MAX_FIELD = 1 << 53
#: Largest sum of sizes taken (every offset stays below it): 2**62 bytes.
MAX_TOTAL = 1 << 62


def _int_field(path: Path, line: int, column: str, text: str | None) -> int:
    t = str(text).strip()
    if len(t) > 40:
        t_show = t[:20] + "..."
    else:
        t_show = t
    try:
        v = int(t)
    except (TypeError, ValueError):
        raise PlanningError(
            f"{path}: line {line}: column {column!r} is {t_show!r}, not an integer"
        ) from None
    if v > MAX_FIELD:
        raise PlanningError(
            f"{path}: line {line}: {column} {t_show} is too large (at most 2**53 = {MAX_FIELD:,d})"
        )
    return v


def read_problem_csv(path: str | Path) -> tuple[PlanningProblem, list[str]]:
    """Read a planning problem from a MiniMalloc-style CSV file.

    Parameters
    ----------
    path : str or Path
        A CSV file with a header naming at least ``id, lower, upper, size``. ``lower`` and
        ``upper`` bound a half-open usage interval ``[lower, upper)`` (time steps, >= 0,
        ``upper > lower``, at most 2**53); ``size`` is in bytes (>= 0, at most 2**53). An
        ``offset`` column, if present, is ignored. Nothing is allocated in proportion to the
        time range.

    Returns
    -------
    problem : PlanningProblem
        Buffers renumbered ``0..n-1`` in file order, ``first=lower``, ``last=upper-1``
        (inclusive); ``num_ops`` = max(upper) (0 when there are no rows).
    names : list of str
        ``names[i]`` is the original ``id`` string of buffer ``i``.

    Raises
    ------
    viewer.errors.PlanningError
        One line naming the file (and line) and what is wrong: unreadable file, missing
        column, a row with fewer or more fields than the header, non-integer field, negative
        value, a value above 2**53 (:data:`MAX_FIELD`), sizes summing above 2**62, ``upper <=
        lower``, duplicate id.
    """
    path = Path(path)
    try:
        with path.open(newline="", encoding="utf-8-sig") as f:
            rows = list(csv.reader(f))
    except FileNotFoundError:
        raise PlanningError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise PlanningError(f"{path}: cannot read CSV: {e}") from None
    rows = [r for r in rows if any(c.strip() for c in r)]
    if not rows:
        raise PlanningError(f"{path}: empty file; expected a header id,lower,upper,size")
    header = [c.strip().lower() for c in rows[0]]
    missing = [c for c in REQUIRED_COLUMNS if c not in header]
    if missing:
        raise PlanningError(
            f"{path}: header {','.join(rows[0])!r} lacks column(s) {', '.join(missing)}; "
            "expected id,lower,upper,size"
        )
    col = {c: header.index(c) for c in REQUIRED_COLUMNS}
    buffers: list[Buffer] = []
    names: list[str] = []
    seen: dict[str, int] = {}
    for k, row in enumerate(rows[1:]):
        line = k + 2
        if len(row) != len(header):
            raise PlanningError(
                f"{path}: line {line}: {len(row)} fields, the header has {len(header)}"
            )
        name = row[col["id"]].strip()
        if not name:
            raise PlanningError(f"{path}: line {line}: empty id")
        if name in seen:
            raise PlanningError(
                f"{path}: line {line}: id {name!r} repeats line {seen[name]}"
            )
        seen[name] = line
        lower = _int_field(path, line, "lower", row[col["lower"]])
        upper = _int_field(path, line, "upper", row[col["upper"]])
        size = _int_field(path, line, "size", row[col["size"]])
        if lower < 0:
            raise PlanningError(f"{path}: line {line}: lower {lower} is negative")
        if upper <= lower:
            raise PlanningError(
                f"{path}: line {line}: upper {upper} must be greater than lower {lower} "
                "(half-open [lower, upper))"
            )
        if size < 0:
            raise PlanningError(f"{path}: line {line}: size {size} is negative")
        buffers.append(Buffer(id=len(buffers), first=lower, last=upper - 1, size=size))
        names.append(name)
    total = sum(b.size for b in buffers)
    if total > MAX_TOTAL:
        raise PlanningError(
            f"{path}: the sizes add up to {total:,d} bytes, more than 2**62: no arena that large "
            "can be planned in 64-bit offsets"
        )
    num_ops = max((b.last + 1 for b in buffers), default=0)
    return PlanningProblem(tuple(buffers), num_ops), names


def problem_csv_text(
    problem: PlanningProblem,
    plan: Plan | None = None,
    names: Sequence[str] | None = None,
    label: str | Path = "CSV",
) -> str:
    """``problem`` (and optionally a plan's offsets) as MiniMalloc-style CSV text.

    Writing it is :func:`viewer.export.problem_csv.write_problem_csv`'s job (atomically).

    Parameters
    ----------
    problem : PlanningProblem
        Each buffer becomes a row ``id,lower,upper,size`` with ``lower=first``,
        ``upper=last+1`` (half-open).
    plan : Plan, optional
        When given, an ``offset`` column (bytes) is added from ``plan.offsets[buffer.id]``.
    names : sequence of str, optional
        ``names[i]`` is written as the id of ``problem.buffers[i]``; default the buffer ids.
    label : str or Path
        Names the output in messages (the path it goes to).

    Raises
    ------
    viewer.errors.PlanningError
        When ``names`` has the wrong length or ``plan`` lacks an offset for some buffer.
    """
    import io

    bufs = problem.buffers
    if names is not None and len(names) != len(bufs):
        raise PlanningError(
            f"{label}: {len(names)} names given for {len(bufs)} buffers"
        )
    if plan is not None:
        lacking = [b.id for b in bufs if b.id not in plan.offsets]
        if lacking:
            raise PlanningError(
                f"{label}: plan {plan.planner!r} has no offset for buffers {lacking[:10]}"
            )
    header = ["id", "lower", "upper", "size"] + (["offset"] if plan is not None else [])
    f = io.StringIO(newline="")
    w = csv.writer(f, lineterminator="\n")
    w.writerow(header)
    for i, b in enumerate(bufs):
        row = [names[i] if names is not None else b.id, b.first, b.last + 1, b.size]
        if plan is not None:
            row.append(int(plan.offsets[b.id]))
        w.writerow(row)
    return f.getvalue()
