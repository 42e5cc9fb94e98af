"""Command line: ``arena-viewer [MODEL]`` opens the window; subcommands work headless.

Each subcommand lives in its own module with ``add_parser(subparsers)`` and ``run(args) -> int``.
``main`` turns any :class:`~viewer.errors.ViewerError` into one line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from viewer import __version__
from viewer.errors import FIXED_SIZE_HINTS, ViewerError

#: subcommand -> module under viewer.cli
COMMANDS = {
    "plan": "plan",
    "export": "export",
    "measure": "measure",
    "check": "check",
    "plan-csv": "plan_csv",
    "reorder": "reorder",
    "offline-plan": "offline_plan",
    "overlay": "overlay",
    "compare": "compare",
    "tile": "tile",
    "session": "session",
    "gui": "gui",
}

PROG = "arena-viewer"

#: Exit code of an internal error (a bug): sysexits.h EX_SOFTWARE, apart from check's 3
#: ("cannot tell") so that CI can tell a bug from an unknown.
EXIT_INTERNAL_ERROR = 70

#: Exit code when standard output was closed before everything was written (``check ... | head
#: -1``): 128 + SIGPIPE, what a shell reports for a process killed by that signal. Never 0: the
#: verdict may not have been written, and a CI step must not read a cut-off report as success.
EXIT_BROKEN_PIPE = 141

#: First tokens the top-level parser answers itself; anything else that is not a command goes
#: to ``gui``.
TOP_LEVEL_FLAGS = ("-h", "--help", "--version")


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line on stderr (exit 2), like every other error."""

    def error(self, message: str):  # argparse's override point
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser.

    Parameters
    ----------
    only : str, optional
        A command name (a key of ``COMMANDS``): build that command's subparser alone, importing
        only its module. ``main`` passes the command being run, so that ``plan`` does not import
        ``check``'s runtime modules (~0.3 s). Every subcommand's parser, help text included, is
        the same either way; only the top-level ``--help`` needs them all, and then ``only`` is
        None.
    """
    parser = OneLineParser(
        prog=PROG,
        description="Plan and show the tensor arena of a TensorFlow Lite / LiteRT model. "
        f"'{PROG} [MODEL]' opens the window (the demo model when MODEL is omitted).",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, mod in COMMANDS.items():
        if only is not None and name != only:
            continue
        try:
            module = importlib.import_module(f"viewer.cli.{mod}")
        except ModuleNotFoundError as e:
            if e.name == f"viewer.cli.{mod}":
                continue  # not written yet
            raise
        module.add_parser(sub)
    return parser




def _unknown_command(word: str) -> bool:
    """``word`` (the first argument) is neither a command, a flag nor a model to open: a bare
    word such as ``frobnicate`` that names no existing file and does not end in ``.tflite``."""
    if word in COMMANDS or word.startswith("-"):
        return False
    return not word.lower().endswith(".tflite") and not os.path.exists(word) and os.sep not in word


#: Size options whose value may be written negative by mistake (``--budget -4MB``): argparse
#: would take ``-4MB`` for an option and say only "expected one argument".
_SIZE_OPTIONS = ("--budget", "--runtime-overhead")


def _negative_sizes_attached(argv: list[str]) -> list[str]:
    """``["--budget", "-4MB"]`` -> ``["--budget=-4MB"]``, so the size parser can say what is
    wrong with the value (negative) in its own words."""
    out, i = [], 0
    while i < len(argv):
        tok = argv[i]
        if (tok in _SIZE_OPTIONS and i + 1 < len(argv) and argv[i + 1][:1] == "-"
                and argv[i + 1][1:2].isdigit()):
            out.append(f"{tok}={argv[i + 1]}")
            i += 2
            continue
        out.append(tok)
        i += 1
    return out


def _fewer_collections() -> None:
    """Run the cyclic garbage collector every 50,000 new objects instead of every 700.

    A command builds one model of up to ~10^6 records that live to the end (tensors, operators,
    usage intervals), and with the default threshold the collector walked that growing heap
    again and again: 1.3 s of the 11 s ``plan`` of a 100k-operator graph. Memory is still
    collected (cycles are rare here), only in larger batches; the window opened from here too.
    """
    import gc

    gen0, gen1, gen2 = gc.get_threshold()
    if gen0 and gen0 < 50_000:
        gc.set_threshold(50_000, gen1, gen2)


def main(argv: list[str] | None = None) -> int:
    """Run the command line.

    Returns
    -------
    int
        0 on success; 1 when ``check`` finds the model over budget; 2 on bad input (with one
        line on stderr naming the file and what is wrong); 3 when ``check`` cannot tell (one
        line names what is unknown); 70 (EX_SOFTWARE) on an internal error (a bug); 141 when
        standard output closed before everything was written (``| head -1``), whatever the
        verdict was.
    """
    argv = _negative_sizes_attached(list(sys.argv[1:] if argv is None else argv))
    _fewer_collections()
    # `arena-viewer`, `arena-viewer MODEL` and `arena-viewer --no-measure MODEL` (any gui flag
    # without the word `gui`) open the window.
    if argv and _unknown_command(argv[0]):
        print(f"{PROG}: error: unknown command {argv[0]!r}; the commands are "
              f"{', '.join(c for c in COMMANDS if c != 'gui')} (or '{PROG} MODEL' for the window; "
              f"see '{PROG} --help')", file=sys.stderr)
        return 2
    if not argv or (argv[0] not in COMMANDS and argv[0] not in TOP_LEVEL_FLAGS):
        argv = ["gui", *argv]
    try:
        parser = build_parser(argv[0] if argv[0] in COMMANDS else None)
        try:
            args = parser.parse_args(argv)
        except SystemExit as e:  # argparse already printed one usage line
            return int(e.code or 0) if isinstance(e.code, int) else 2
        if not getattr(args, "command", None):
            parser.print_help()
            return 0
        from viewer.cli._common import resolve_signature

        resolve_signature(args)
        code = int(args.run(args) or 0)
        sys.stdout.flush()  # a pipe closed early shows here, not at shutdown (exit 120)
        return code
    except ViewerError as e:
        hint = FIXED_SIZE_HINTS["cli"] if getattr(e, "fixed_size", False) else ""
        print(f"{PROG}: error: {e}{hint}", file=sys.stderr)
        _json_error(argv, f"{e}{hint}", 2)
        return 2
    except BrokenPipeError:  # e.g. `arena-viewer check M --budget 4MiB | head -1`
        try:  # the rest of the output goes nowhere, and shutdown's flush raises no more
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        print(f"{PROG}: error: standard output was closed before the report was written in "
              f"full (exit {EXIT_BROKEN_PIPE}, whatever the verdict)", file=sys.stderr)
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # never a traceback to a user
        if os.environ.get("ARENA_VIEWER_DEBUG"):
            raise
        print(
            f"{PROG}: internal error: {type(e).__name__}: {e} "
            "(set ARENA_VIEWER_DEBUG=1 for a traceback, and please report it)",
            file=sys.stderr,
        )
        _json_error(argv, f"internal error: {type(e).__name__}: {e}", EXIT_INTERNAL_ERROR)
        return EXIT_INTERNAL_ERROR


def _json_error(argv: list[str], message: str, code: int) -> None:
    """With ``--json``, the error as one JSON object on stdout too, so that a CI step parsing
    stdout reads ``{"verdict": "error", "error": "...", "exit_code": 2}`` rather than nothing
    (the line on stderr stays). ``verdict`` is there for ``check`` and ``session``."""
    if "--json" not in argv[1:]:
        return
    doc: dict = {"error": message, "exit_code": code}
    if argv[0] in ("check", "session"):
        doc = {"verdict": "error", "fits": False, **doc}
    try:
        import json

        print(json.dumps(doc))
        sys.stdout.flush()
    except (OSError, ValueError):
        pass


def entry_point() -> None:
    """Console-script entry point (also a frozen bundle's, where it may start a runtime child)."""
    from viewer.runtime.spawn import run_child_if_asked

    if run_child_if_asked(sys.argv[1:]):
        sys.exit(0)
    sys.exit(main())
