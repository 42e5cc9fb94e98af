"""Files shipped with the package (the demo model), reached through :func:`resource_path`."""

from __future__ import annotations

import sys
from importlib import resources
from pathlib import Path

#: The model the window opens when none is given.
DEMO_MODEL = "demo_unet.tflite"


def resource_path(name: str) -> Path:
    """Filesystem path of the packaged resource ``name`` (e.g. ``"demo_unet.tflite"``).

    Works from a source checkout, an installed wheel (``importlib.resources``) and a frozen
    bundle (PyInstaller's ``sys._MEIPASS``).

    Raises
    ------
    FileNotFoundError
        When the resource is not shipped (a broken install).
    """
    frozen = getattr(sys, "_MEIPASS", None)
    if frozen:
        p = Path(frozen) / "viewer" / "resources" / name
        if p.exists():
            return p
    ref = resources.files(__name__) / name
    p = Path(str(ref))
    if not p.exists():
        raise FileNotFoundError(f"{p}: packaged resource {name!r} is missing (reinstall arena-viewer)")
    return p
