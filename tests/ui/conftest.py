"""GUI tests: cyclic garbage is collected on the GUI thread only, as in the application."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _gc_on_gui_thread(qapp):
    from viewer.ui import gc_guard

    gc_guard.install()
    yield
