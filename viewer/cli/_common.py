"""Pieces shared by the subcommands."""

from __future__ import annotations

import argparse

from viewer.planning.run import default_planner_names
from viewer.planning.registry import planner_names


def add_model_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", metavar="MODEL", help="a .tflite model file")
    p.add_argument("--subgraph", type=int, default=0, metavar="N", help="subgraph index (default 0)")


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
