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
    _check_display()
    from viewer.ui.app import run_gui

    return run_gui(path, model=model, subgraph=args.subgraph, measure=args.measure)


def _check_display() -> None:
    """On Linux, say in one line why no window can open, instead of letting Qt abort.

    Raises
    ------
    viewer.errors.UsageError
        No display to open a window on, or Qt's xcb platform lacks libxcb-cursor0.
    """
    import sys

    if not sys.platform.startswith("linux") or os.environ.get("QT_QPA_PLATFORM"):
        return
    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        raise UsageError(
            "no display to open the window on (DISPLAY is not set); use the headless commands "
            "(arena-viewer plan/export/check/measure MODEL) or set QT_QPA_PLATFORM=offscreen"
        )
    if os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        import ctypes.util

        if ctypes.util.find_library("xcb-cursor") is None:
            raise UsageError(
                "Qt's X11 (xcb) platform needs the libxcb-cursor0 library, which is not installed "
                "(Debian/Ubuntu: apt install libxcb-cursor0)"
            )
        if not _x_display_reachable():
            raise UsageError(
                f"cannot connect to the X display {os.environ['DISPLAY']!r}; use the headless commands "
                "(arena-viewer plan/export/check/measure MODEL) or set QT_QPA_PLATFORM=offscreen"
            )


def _x_display_reachable() -> bool:
    """True when libxcb can connect to $DISPLAY (or when we cannot tell)."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("xcb")
    if name is None:
        return True
    try:
        xcb = ctypes.CDLL(name)
        xcb.xcb_connect.restype = ctypes.c_void_p
        xcb.xcb_connect.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
        xcb.xcb_connection_has_error.argtypes = [ctypes.c_void_p]
        xcb.xcb_disconnect.argtypes = [ctypes.c_void_p]
        conn = xcb.xcb_connect(None, None)
        ok = xcb.xcb_connection_has_error(conn) == 0
        xcb.xcb_disconnect(conn)
        return ok
    except (OSError, AttributeError):
        return True
