"""Dependencies point one way: ui -> export -> document -> whatif/runtime -> planning -> analysis -> ops -> model.

No Qt below viewer.ui except viewer.export (where rendering needs it), and export never imports ui.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "viewer"
RANK = {"model": 0, "ops": 0.5, "analysis": 1, "planning": 2, "runtime": 3, "whatif": 3, "document": 4, "export": 5, "ui": 6,
        "cli": 7,
        "resources": 0}
ANYWHERE = {"errors", "units", "__init__", "__main__"}
QT = ("PySide6", "pyqtgraph", "shiboken6")


def _imports(path: Path):
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name, node.lineno
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module, node.lineno


def _layer(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "viewer" or len(parts) < 2:
        return None
    return parts[1]


def test_dependencies_point_one_way():
    bad = []
    for f in ROOT.rglob("*.py"):
        rel = f.relative_to(ROOT)
        own = rel.parts[0] if len(rel.parts) > 1 else rel.stem
        if own in ANYWHERE or own not in RANK:
            continue
        for mod, line in _imports(f):
            dep = _layer(mod)
            if dep is None or dep in ANYWHERE or dep == own:
                continue
            if dep not in RANK or RANK[dep] > RANK[own] or (RANK[dep] == RANK[own] and {own, dep} != {"runtime", "whatif"}):
                bad.append(f"{rel}:{line} imports {mod}")
            if own == "runtime" and dep == "whatif":
                bad.append(f"{rel}:{line} imports {mod} (runtime must not depend on whatif)")
    assert not bad, "\n".join(bad)


def test_no_qt_below_ui():
    bad = []
    for f in ROOT.rglob("*.py"):
        rel = f.relative_to(ROOT)
        own = rel.parts[0] if len(rel.parts) > 1 else rel.stem
        if own in ("ui", "export", "cli"):
            continue
        for mod, line in _imports(f):
            if mod.split(".")[0] in QT:
                bad.append(f"{rel}:{line} imports {mod}")
    assert not bad, "\n".join(bad)


def test_export_never_imports_ui():
    bad = [f"{f.relative_to(ROOT)}:{line}" for f in (ROOT / "export").rglob("*.py")
           for mod, line in _imports(f) if mod.startswith("viewer.ui")]
    assert not bad, bad


def test_document_imports_no_qt_even_indirectly():
    """Every module of the document (state, events, views, background work) loads without
    PySide6/pyqtgraph in a fresh process."""
    modules = ", ".join(f"viewer.document.{f.stem}" for f in sorted((ROOT / "document").glob("*.py"))
                        if f.stem != "__init__")
    code = (f"import sys, viewer.document, {modules}; "
            f"bad = [m for m in sys.modules if m.split('.')[0] in {QT!r}]; "
            "print(bad); sys.exit(1 if bad else 0)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert not [f for f in (ROOT / "document").rglob("*.py")
                for mod, _ in _imports(f) if mod.split(".")[0] in QT]
