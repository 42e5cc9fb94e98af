"""Build the one-folder desktop bundle with PyInstaller: ``python packaging/build.py [--dist DIR]``.

The bundle is ``DIST/arena-viewer/arena-viewer`` (``.exe`` on Windows): the window and every
command, as the installed ``arena-viewer``. Runtime children (LiteRT probes) run the same
executable with a hidden flag (viewer.runtime.spawn), so no Python needs to be installed.
Needs the ``package`` extra: ``pip install -e '.[package]'``.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Pulled in by optional imports of our dependencies, never used by the app (~70 MB).
EXCLUDE = ("model_explorer", "ai_edge_model_explorer_adapter", "tkinter", "matplotlib",
           "pytest", "pytestqt", "jedi", "pandas", "IPython", "PyInstaller")


def pyinstaller_args(dist: Path, work: Path) -> list[str]:
    """The PyInstaller command line (without the program name)."""
    args = ["--noconfirm", "--clean", "--onedir", "--name", "arena-viewer",
            "--distpath", str(dist), "--workpath", str(work), "--specpath", str(work),
            "--paths", str(ROOT), "--icon", str(ROOT / "resources" / "arena-viewer.png"),
            # LiteRT's interpreter is a shared library PyInstaller's import scan cannot see.
            "--collect-all", "ai_edge_litert",
            # The demo model, and every module (runtime children are started by name).
            "--collect-data", "viewer.resources", "--collect-submodules", "viewer",
            "--add-data", f"{ROOT / 'resources'}{':' if sys.platform != 'win32' else ';'}resources"]
    for name in EXCLUDE:
        args += ["--exclude-module", name]
    return args + [str(ROOT / "packaging" / "launcher.py")]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dist", type=Path, default=ROOT / "dist", help="output folder (default ./dist)")
    p.add_argument("--work", type=Path, default=ROOT / "build" / "pyinstaller",
                   help="PyInstaller's work folder (default ./build/pyinstaller)")
    args = p.parse_args(argv)
    try:
        import PyInstaller.__main__ as pyinstaller
    except ImportError:
        print("packaging/build.py: PyInstaller is missing; pip install -e '.[package]'",
              file=sys.stderr)
        return 2
    start = time.monotonic()
    pyinstaller.run(pyinstaller_args(args.dist, args.work))
    app = args.dist / "arena-viewer"
    size = sum(f.stat().st_size for f in app.rglob("*") if f.is_file() and not f.is_symlink())
    print(f"built {app} in {time.monotonic() - start:.0f} s, {size / 2**20:.0f} MiB")
    shutil.rmtree(args.work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
