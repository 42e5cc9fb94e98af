"""``arena-viewer [MODEL]`` / ``arena-viewer gui [MODEL]``: open the window."""

from __future__ import annotations

import argparse
import os

from viewer.errors import UsageError


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "gui", help="open the window (the default command)",
        description="Open the Arena Viewer window on MODEL (the built-in demo model when omitted).",
    )
    p.add_argument("model", nargs="?", metavar="MODEL", help=".tflite file to open")
    p.add_argument("--subgraph", type=int, default=0, metavar="N", help="subgraph to show (default 0)")
    m = p.add_mutually_exclusive_group()
    m.add_argument("--measure", dest="measure", action="store_true", default=None,
                   help="run the LiteRT runtime for kernel temporaries and the measured arena")
    m.add_argument("--no-measure", dest="measure", action="store_false",
                   help="plan only; do not run the LiteRT runtime")
    p.set_defaults(run=run)
    return p


def run(args: argparse.Namespace) -> int:
    """Read MODEL first (a bad file is one line on stderr and exit 2), then open the window.

    Raises
    ------
    viewer.errors.UsageError
        MODEL does not exist or is a folder.
    viewer.errors.ModelFormatError, viewer.errors.SubgraphError
        MODEL is not a readable .tflite model, or has no such subgraph.
    """
    model = None
    path = args.model
    if path is not None:
        if not os.path.exists(path):
            raise UsageError(f"{path}: no such file")
        if os.path.isdir(path):
            raise UsageError(f"{path}: is a folder, not a .tflite file")
        from viewer.model.reader import load_model

        model = load_model(path)
        model.subgraph(args.subgraph)
    from viewer.ui.app import run_gui

    return run_gui(path, model=model, subgraph=args.subgraph, measure=args.measure)
