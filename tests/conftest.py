"""Shared test fixtures.

Real models live in ../shared/models beside the checkout; tests that need them skip with a reason
when that folder is absent. GUI tests run offscreen.
"""

from __future__ import annotations

import csv
import os
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("ARENA_VIEWER_SHARED", ROOT.parent / "shared"))
MODELS = SHARED / "models"


def shared_model(name: str) -> Path:
    """Path of ``../shared/models/NAME``; skips the test when it is absent."""
    p = MODELS / name
    if not p.exists():
        pytest.skip(f"{p} not present (../shared is not beside this checkout)")
    return p


def shared_model_names(loads_in_litert: bool | None = None) -> list[str]:
    """Every model listed in SOURCES.tsv (optionally only those LiteRT loads).

    Returns [] when ../shared is absent, so parametrized tests collect nothing and a
    separate ``test_shared_present`` reports the skip.
    """
    src = MODELS / "SOURCES.tsv"
    if not src.exists():
        return []
    with src.open(newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    out = []
    for r in rows:
        if loads_in_litert is not None and (r.get("loads_in_litert_2.3") == "yes") != loads_in_litert:
            continue
        if (MODELS / r["file"]).exists():
            out.append(r["file"])
    return out


@pytest.fixture
def models_dir() -> Path:
    if not MODELS.exists():
        pytest.skip(f"{MODELS} not present (../shared is not beside this checkout)")
    return MODELS


@pytest.fixture(autouse=True)
def _gc_on_gui_thread(request):
    """GUI tests collect cyclic garbage on the GUI thread only, as the application does
    (viewer.ui.gc_guard): a collection in a worker thread can deadlock Qt against the GIL."""
    if f"{os.sep}ui{os.sep}" not in str(request.path):
        yield
        return
    request.getfixturevalue("qapp")
    from viewer.ui import gc_guard

    gc_guard.install()
    yield
