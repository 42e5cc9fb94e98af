"""Pieces shared by the subcommands."""

from __future__ import annotations

import argparse
import math

from viewer.planning.run import default_planner_names
from viewer.planning.registry import planner_names


def add_model_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", metavar="MODEL", help="a .tflite model file")
    p.add_argument("--subgraph", type=int, default=0, metavar="N", help="subgraph index (default 0)")
    p.add_argument("--signature", default=None, metavar="KEY",
                   help="the subgraph a signature runs, by its key ('plan' lists them); the "
                        "runtime allocates it through that signature's runner")


def resolve_signature(args: argparse.Namespace) -> None:
    """Set ``args.subgraph`` from ``args.signature`` (when given).

    Raises
    ------
    viewer.errors.SubgraphError
        No such signature (the message lists the keys).
    viewer.errors.UsageError
        ``--subgraph`` names another subgraph than the signature's.
    """
    key = getattr(args, "signature", None)
    if key is None or not getattr(args, "model", None):
        return
    from viewer.errors import UsageError
    from viewer.model.reader import load_model
    from viewer.whatif.footprint import signature_subgraph

    index = signature_subgraph(load_model(args.model), key)
    if getattr(args, "subgraph", 0) not in (0, index):
        raise UsageError(f"--signature {key!r} runs subgraph {index}, not --subgraph {args.subgraph}; "
                         "give one of them")
    args.subgraph = index


#: The longest duration a flag takes, in seconds (11.6 days): the runtime waits go through
#: poll(2), whose timeout is a C int of milliseconds (at most 2,147,483 s); ``--timeout 1e9``
#: was an internal error.
MAX_SECONDS = 1_000_000


class StoreOnce(argparse.Action):
    """argparse action of a flag that may be given once: ``--budget 4MiB --budget 8MiB`` is an
    error (one line, exit 2), not the last one silently winning (a CI script appending a
    stricter budget to a default got the looser one)."""

    def __call__(self, parser, namespace, values, option_string=None):
        if getattr(namespace, f"_{self.dest}_given", False):
            parser.error(f"{option_string} given twice; give it once")
        setattr(namespace, f"_{self.dest}_given", True)
        setattr(namespace, self.dest, values)


def positive_seconds(text: str) -> float:
    """argparse ``type`` of a duration: a positive, finite number of seconds, at most
    :data:`MAX_SECONDS`.

    Raises
    ------
    argparse.ArgumentTypeError
        For anything else (``0``, ``-1``, ``nan``, ``inf``, ``1e9``, ``soon``): the parser makes
        it one line, exit 2, naming the option.
    """
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0 < value <= MAX_SECONDS):
        raise argparse.ArgumentTypeError(f"{text}: need a positive, finite number of seconds, at "
                                         f"most {MAX_SECONDS:,} (e.g. 10)")
    return value


def add_runtime_args(p: argparse.ArgumentParser, *, no_measure_help: str | None = None,
                     measure_help: str | None = None, timeout: float = 120.0,
                     timeout_help: str = "seconds before the LiteRT process is killed") -> None:
    """The runtime flags: ``--measure`` / ``--no-measure`` (``args.measure``) and ``--timeout S``.

    Parameters
    ----------
    no_measure_help : str, optional
        Help of ``--no-measure``; given, measuring is the default.
    measure_help : str, optional
        Help of ``--measure``; given alone, measuring is opt-in (``plan``).
    timeout : float
        Default of ``--timeout``, seconds; always validated by :func:`positive_seconds`.
    timeout_help : str
        What the timeout bounds; "(default N)" is appended.
    """
    if measure_help is not None:
        p.add_argument("--measure", dest="measure", action="store_true",
                       default=no_measure_help is not None, help=measure_help)
    if no_measure_help is not None:
        p.add_argument("--no-measure", dest="measure", action="store_false", help=no_measure_help)
    p.add_argument("--timeout", type=positive_seconds, default=float(timeout), metavar="S",
                   help=f"{timeout_help} (default {timeout:g})")


def add_edit_args(p: argparse.ArgumentParser) -> None:
    """What-if flags (--input-shape, --batch, --activation-dtype) when the what-if layer has them."""
    _edits = _edits_module()
    if _edits is not None:
        _edits.add_edit_args(p)


def edits_from_args(args: argparse.Namespace):
    _edits = _edits_module()
    return None if _edits is None else _edits.edits_from_args(args)


def _edits_module():
    import importlib

    try:
        return importlib.import_module("viewer.cli._edits")
    except ModuleNotFoundError as e:
        if e.name != "viewer.cli._edits":
            raise
        return None


def planner_choice(name: str | None, *, include_exact_in_all: bool = False) -> list[str]:
    """``None``/"all" -> every default planner; else the named ones, comma-separated (validated later)."""
    if name is None or name == "all":
        return default_planner_names(include_exact=include_exact_in_all)
    names: list[str] = []
    for n in (n.strip() for n in name.split(",")):
        if n == "all":
            names.extend(default_planner_names(include_exact=include_exact_in_all))
        elif n:
            names.append(n)
    return list(dict.fromkeys(names)) or default_planner_names(include_exact=include_exact_in_all)


def known_planners_help() -> str:
    return ", ".join(planner_names())
