"""What the window writes: the chart image, the JSON report, a reordered model; and the recent
files list. Each asks for a file when given none, and before replacing an existing one."""

from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtWidgets import QFileDialog

from viewer.errors import ViewerError
from viewer.resources import DEMO_MODEL, resource_path
from viewer.ui import dialogs

MAX_RECENT = 8
MODEL_FILTER = "TensorFlow Lite / LiteRT models (*.tflite);;All files (*)"


def _default_name(w, ext: str) -> str:
    resp = w.document.response
    stem = Path(resp.model.path).stem if resp else "arena"
    folder = w.settings.value("export_dir", str(Path.home()))
    return str(Path(str(folder)) / f"{stem}_{w.document.planner or 'plan'}.{ext}")


def _ask_save(w, title: str, default: str, filt: str) -> str | None:
    path, _ = QFileDialog.getSaveFileName(w, title, default, filt,
                                          options=QFileDialog.Option.DontConfirmOverwrite)
    return path or None


def export_image(w, path: str | None = None, width: int | None = None,
                 height: int | None = None) -> str | None:
    """Save the chart as PNG or SVG (format from the extension) of ``width`` x ``height`` px.

    Without a path, asks for size and file. Returns the path written, or None when cancelled.
    """
    if w.document.response is None:
        return None
    if path is None:
        dlg = dialogs.ExportImageDialog(w)
        if dlg.exec() != dlg.DialogCode.Accepted:
            return None
        width, height, fmt = dlg.values()
        path = _ask_save(w, "Export image", _default_name(w, fmt), f"{fmt.upper()} image (*.{fmt})")
        if not path:
            return None
        if not path.lower().endswith((".png", ".svg")):
            path += f".{fmt}"
    width, height = int(width or 1600), int(height or 900)
    if not dialogs.confirm_overwrite(w, path):
        return None
    try:
        w.chart.export(path, width, height)
    except (ViewerError, OSError) as e:
        msg = str(e)  # our errors already start with the path; OSError's do not
        dialogs.show_error(w, "Export failed", msg if msg.startswith(str(path)) else f"{path}: {msg}")
        return None
    w.settings.setValue("export_dir", os.path.dirname(os.path.abspath(path)))
    w.status_label.setText(f"Wrote {path} ({width}x{height})")
    return path


def export_json(w, path: str | None = None) -> str | None:
    """Save the report (the object ``plan --json`` prints). Returns the path written, or None."""
    from viewer.export.report import build_report, with_footprint_subgraphs, write_report

    doc = w.document
    resp = doc.response
    if resp is None:
        return None
    if path is None:
        path = _ask_save(w, "Export JSON report", _default_name(w, "json"), "JSON (*.json)")
        if not path:
            return None
    if not dialogs.confirm_overwrite(w, path):
        return None
    notes = tuple(resp.notes) + ((resp.measure_note,) if resp.measure_note else ())
    report = build_report(resp.model, resp.request.subgraph, resp.analysis, resp.plans,
                          resp.best, notes=notes, edits=doc.edits_report())
    if getattr(resp, "footprint", None) is not None:  # the figures the window's budget shows
        with_footprint_subgraphs(report, resp.footprint)
    budget = _budget_json(w, resp)
    if budget is not None:
        report["budget"] = budget
    try:
        write_report(report, path, force=True)  # confirm_overwrite asked
    except (ViewerError, OSError) as e:
        dialogs.show_error(w, "Export failed", str(e))
        return None
    w.settings.setValue("export_dir", os.path.dirname(os.path.abspath(path)))
    w.status_label.setText(f"Wrote {path}")
    return path


def _budget_json(w, resp) -> dict | None:
    """The verdict the window shows while a budget is set, as ``check --json`` gives it for the
    same settings (its budget keys and ``check_command``); None without a budget, or under
    TFLite Micro (whose verdict is ``check --runtime tflm``'s)."""
    from viewer.ui.summary_text import budget_verdict

    settings = w.whatif.budget()
    if settings.limit_bytes is None or w.document.planner not in resp.plans:
        return None
    tiled = w.tiling.counted_arena()
    grid = None
    if tiled is not None:
        p = w.tiling.view.plan
        grid = f"{p.grid[0]}x{p.grid[1]}@{p.split}"
    return budget_verdict(settings, resp, w.document.planner, tiled, grid)[2]


def save_reordered(w, path: str | None = None) -> str | None:
    """Write a copy of the model with the reordered operators; never over the open model.

    Returns the path written, or None.
    """
    from viewer.export.model_copy import write_reordered

    full = w.document.full_response
    if full is None or full.reorder is None:
        return None
    src = full.model.path
    if path is None:
        folder = w.settings.value("export_dir", os.path.dirname(os.path.abspath(src)))
        path = _ask_save(w, "Save reordered model", str(Path(str(folder)) / f"{Path(src).stem}_reordered.tflite"),
                         MODEL_FILTER)
        if not path:
            return None
    same = os.path.abspath(path) == os.path.abspath(src)
    try:
        same = same or (os.path.exists(path) and os.path.samefile(path, src))
    except OSError:
        pass
    if same:
        dialogs.show_error(w, "Not saved", f"{path}: refusing to overwrite the open model; choose another file")
        return None
    if not dialogs.confirm_overwrite(w, path):
        return None
    try:
        n = write_reordered(src, path, full.request.subgraph, full.reorder.order,
                            force=True)  # confirm_overwrite asked
    except ViewerError as e:
        dialogs.show_error(w, "Not saved", str(e))
        return None
    w.status_label.setText(f"Wrote {path} ({n:,} bytes, operators reordered)")
    return path


def save_offline_plan(w, path: str | None = None) -> str | None:
    """Write a copy of the model with the shown plan as TFLM's ``OfflineMemoryAllocation``.

    Only under the TFLite Micro target: every tensor TFLM plans gets the shown plan's offset;
    kernel scratch buffers stay online (TFLM places them). Never over the open model.
    Returns the path written, or None.
    """
    from viewer.export.model_copy import write_offline_planned

    doc = w.document
    resp = doc.response
    if resp is None or doc.runtime != "tflm" or doc.planner not in resp.plans:
        return None
    plan = resp.plans[doc.planner]
    src = resp.model.path
    given = resp.plans.get("tflm_greedy")  # what TFLM does with the file as given
    fp = getattr(resp, "footprint", None)
    if (fp is not None and fp.problem.offline and given is not None and doc.planner != "tflm_greedy"
            and plan.arena_bytes >= given.arena_bytes):
        dialogs.show_error(w, "Not saved", (
            f"{os.path.basename(src)} already carries an offline plan giving TFLM a head of "
            f"{given.arena_bytes:,d} B; {doc.planner}'s plan needs {plan.arena_bytes:,d} B, so it "
            "would replace a better plan (arena-viewer offline-plan --replace-offline-plan does it "
            "anyway)"))
        return None
    if path is None:
        folder = w.settings.value("export_dir", os.path.dirname(os.path.abspath(src)))
        path = _ask_save(w, "Save with this plan (TFLite Micro offline plan)",
                         str(Path(str(folder)) / f"{Path(src).stem}_{doc.planner}_offline.tflite"), MODEL_FILTER)
        if not path:
            return None
    try:
        same = os.path.abspath(path) == os.path.abspath(src) or (os.path.exists(path) and os.path.samefile(path, src))
    except OSError:
        same = False
    if same:
        dialogs.show_error(w, "Not saved", f"{path}: refusing to overwrite the open model; choose another file")
        return None
    if not dialogs.confirm_overwrite(w, path):
        return None
    n_tensors = sum(len(g.tensors) for g in resp.model.subgraphs)
    offsets = [-1] * n_tensors
    for u in resp.analysis.usages:
        if u.tensor < n_tensors and u.tensor in plan.offsets:
            offsets[u.tensor] = int(plan.offsets[u.tensor])
    try:
        n = write_offline_planned(src, path, offsets, len(resp.model.subgraphs), force=True)  # asked above
    except ViewerError as e:
        dialogs.show_error(w, "Not saved", str(e))
        return None
    w.status_label.setText(f"Wrote {path} ({n:,} bytes): {doc.planner}'s plan as TFLM's offline plan, "
                           f"{sum(o >= 0 for o in offsets)} tensors fixed, scratch left online")
    return path


class RecentFiles:
    """The File > Open recent list, kept in ``settings["recent_files"]`` (newest first).

    Parameters
    ----------
    settings : QSettings
    menu : QMenu
        Rebuilt on every change.
    open_model : callable
        ``open_model(path)`` when an entry is chosen.
    """

    def __init__(self, settings, menu, open_model):
        self.settings, self.menu, self._open = settings, menu, open_model
        self.rebuild()

    def files(self) -> list[str]:
        v = self.settings.value("recent_files", [])
        if isinstance(v, str):
            v = [v]
        return [str(p) for p in (v or [])]

    def add(self, path: str) -> None:
        path = os.path.abspath(path)
        try:
            if Path(path).resolve() == resource_path(DEMO_MODEL).resolve():
                return  # the demo is always one click away
        except OSError:
            pass
        self.settings.setValue("last_open_folder", os.path.dirname(path))
        self._store([path] + [p for p in self.files() if p != path])

    def drop_failed(self, message: str) -> None:
        """Forget the files a one-line error ``message`` names ("PATH: ...")."""
        bad = [p for p in self.files() if message.startswith(p + ":")]
        if bad:
            self._store([p for p in self.files() if p not in bad])

    def clear(self) -> None:
        self._store([])

    def _store(self, items: list[str]) -> None:
        self.settings.setValue("recent_files", items[:MAX_RECENT])
        self.settings.sync()
        self.rebuild()

    def rebuild(self) -> None:
        self.menu.clear()
        self.menu.setToolTipsVisible(True)
        files = self.files()
        names = [os.path.basename(p) for p in files]
        for i, p in enumerate(files):
            label = names[i]
            if names.count(label) > 1:  # same name in other folders: say which folder
                label = f"{label}  ({_short_folder(p)})"
            a = self.menu.addAction(f"&{i + 1} {label}")
            a.setToolTip(p)
            a.setStatusTip(p)
            a.setData(p)
            a.triggered.connect(lambda _=False, p=p: self._open(p))
        if files:
            self.menu.addSeparator()
            self.menu.addAction("Clear list", self.clear)
        self.menu.setEnabled(bool(files))


def _short_folder(path: str) -> str:
    """The folder of ``path``, with the home folder written as ``~``."""
    folder = os.path.dirname(path)
    home = str(Path.home())
    if folder == home or folder.startswith(home + os.sep):
        folder = "~" + folder[len(home):]
    return folder


def open_dialog_folder(current_path: str | None, settings) -> str:
    """Where File > Open starts: the current model's folder, or the last folder a model was
    opened from, or the working folder — never the package's own folder of the demo model."""
    if current_path:
        try:
            if Path(current_path).resolve() != resource_path(DEMO_MODEL).resolve():
                return os.path.dirname(os.path.abspath(current_path))
        except OSError:
            pass
    last = settings.value("last_open_folder", "") if settings is not None else ""
    if last and os.path.isdir(str(last)):
        return str(last)
    return os.getcwd()
