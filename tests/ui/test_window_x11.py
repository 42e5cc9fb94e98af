"""The main window under a real X server (Xvfb + a window manager when one is installed),
driven by the real pointer through XTest (xdotool): what a user sees, not what offscreen Qt
reports. Issue 12 item 1: offscreen, the hover tooltip passed; under X it vanished ~0.7 s after
the pointer came to rest (QGraphicsScene.helpEvent hid it).

The window runs in its own process (``tests/ui/x11_window_probe.py``), which reports QToolTip's
state and the selection to a file; the X server's own view of the tooltip window is read with
xwininfo. Skips with the reason when Xvfb, xdotool or xwininfo is absent.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
TOOLS = ("Xvfb", "xdotool", "xwininfo")
#: Well past Qt's tooltip wake-up (700 ms) + QToolTip's hide delay (300 ms), when the old code
#: had hidden the tooltip, with a margin for a loaded machine.
REST_S = 1.5


class XSession:
    """An Xvfb display with the probe's window on it."""

    def __init__(self, out: Path):
        self.out = out
        self.procs: list[subprocess.Popen] = []
        self.display = ""

    def start(self) -> None:
        r, w = os.pipe()
        xvfb = subprocess.Popen(["Xvfb", "-displayfd", str(w), "-screen", "0", "1600x1000x24",
                                 "-nolisten", "tcp"], pass_fds=(w,),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(w)
        self.procs.append(xvfb)
        with os.fdopen(r) as f:
            number = f.readline().strip()
        if not number:
            pytest.skip("Xvfb did not start (no display number)")
        self.display = ":" + number
        self.env = {**os.environ, "DISPLAY": self.display, "QT_QPA_PLATFORM": "xcb"}
        if shutil.which("openbox"):  # a window manager gives focus like a desktop does
            self.procs.append(subprocess.Popen(
                ["openbox", "--sm-disable"], env=self.env,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            time.sleep(0.3)
        log = self.out / "probe.log"
        with open(log, "w") as f:
            self.probe = subprocess.Popen(
                [sys.executable, str(HERE / "x11_window_probe.py"), str(self.out)], env=self.env,
                stdout=f, stderr=subprocess.STDOUT)
        self.procs.append(self.probe)
        deadline = time.monotonic() + 40
        while not (self.out / "targets.json").exists():
            if self.probe.poll() is not None or time.monotonic() > deadline:
                self.probe.kill()
                self.probe.wait()
                text = log.read_text()
                if "platform plugin" in text and "xcb" in text:  # e.g. libxcb-cursor0 missing
                    pytest.skip("Qt's xcb platform plugin cannot load here: " + text.strip()[-300:])
                pytest.fail("the window did not come up under Xvfb:\n" + text)
            time.sleep(0.1)
        self.targets = json.loads((self.out / "targets.json").read_text())

    def stop(self) -> None:
        (self.out / "quit").touch()
        for p in reversed(self.procs):
            try:
                p.wait(timeout=3 if p is self.probe else 0.1)
            except subprocess.TimeoutExpired:
                p.terminate()
                try:
                    p.wait(timeout=3)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()

    def xdotool(self, *args) -> None:
        subprocess.run(["xdotool", *map(str, args)], env=self.env, check=True, timeout=10)

    def move(self, x: int, y: int) -> None:
        self.xdotool("mousemove", "--sync", x, y)

    def state_after(self, seconds: float) -> dict:
        """The window's state reported at least ``seconds`` from now."""
        after = time.time() + seconds
        while True:
            time.sleep(0.05)
            s = json.loads((self.out / "state.json").read_text())
            if s["time"] >= after:
                return s

    def assert_tooltip_on_screen(self, s: dict) -> None:
        """The X server's word: the tooltip's X window is viewable, where Qt says it is."""
        r = subprocess.run(["xwininfo", "-id", str(s["tip_handle"])], env=self.env,
                           capture_output=True, text=True, timeout=10)
        info = r.stdout + r.stderr
        assert "Map State: IsViewable" in info, info
        fields = {k.strip(): v.strip() for k, v in
                  (line.split(": ", 1) for line in info.splitlines() if ": " in line)}
        x, y, w, h = s["tip_geometry"]
        assert (fields["Absolute upper-left X"], fields["Absolute upper-left Y"],
                fields["Width"], fields["Height"]) == (str(x), str(y), str(w), str(h)), info
        assert w > 100 and h > 50  # several lines of text, not an empty box


@pytest.fixture(scope="module")
def x(tmp_path_factory):
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        pytest.skip(f"needs {', '.join(missing)} on PATH for a real X server and pointer")
    s = XSession(tmp_path_factory.mktemp("x11"))
    try:
        s.start()
        yield s
    finally:
        s.stop()


def _rect(x, temporary: bool, skip: int = 0) -> dict:
    rects = [r for r in x.targets["rects"] if r["temporary"] == temporary]
    if len(rects) <= skip:
        pytest.skip(f"the demo chart has no {'kernel temporary' if temporary else 'tensor'} to aim at")
    return rects[skip]


def test_tooltip_appears_stays_and_follows_the_real_pointer(x):
    """Rest on a rectangle: the tooltip is up, with that tensor's name/shape/dtype/bytes, and the
    X server shows its window, well after Qt's wake-up delay; another rectangle changes the
    text; empty chart area hides it."""
    a = _rect(x, temporary=False)
    temporaries = [r for r in x.targets["rects"] if r["temporary"]]
    b = temporaries[0] if temporaries else _rect(x, temporary=False, skip=1)  # unmeasured: none
    x.move(*x.targets["empty"])
    x.move(a["x"], a["y"])
    s = x.state_after(REST_S)
    assert s["active"], "the window is not the active one: Qt sends no tooltip events"
    assert s["tip_visible"] and s["tip_text"] == a["text"], s
    assert "shape " in a["text"] and " B)" in a["text"]
    x.assert_tooltip_on_screen(s)
    x.move(a["x"] + 2, a["y"] + 1)  # small moves on the same rectangle keep it
    s = x.state_after(REST_S)
    assert s["tip_visible"] and s["tip_text"] == a["text"], s
    x.move(b["x"], b["y"])
    s = x.state_after(REST_S)
    assert s["tip_visible"] and s["tip_text"] == b["text"] != a["text"], s
    x.assert_tooltip_on_screen(s)
    x.move(*x.targets["empty"])
    s = x.state_after(REST_S)
    assert not s["tip_visible"], s


def test_click_selects_the_rectangle_in_the_table(x):
    a = _rect(x, temporary=False, skip=1)
    x.move(a["x"], a["y"])
    x.xdotool("click", 1)
    s = x.state_after(0.3)
    assert s["selected"] == s["table_selected"] == a["tensor"], s


def test_right_click_on_a_kernel_temporary_opens_the_tensor_menu(x):
    t = _rect(x, temporary=True)
    x.move(t["x"], t["y"])
    x.xdotool("click", 3)
    s = x.state_after(0.5)
    x.xdotool("key", "Escape")
    assert s["popup"] and s["popup"][0].endswith(f"(tensor {t['tensor']})"), s
    assert "View All" not in s["popup"]


def test_breadth_curve_hover_shows_the_operator_and_click_its_profile(x):
    b = x.targets["breadth"]
    x.move(*x.targets["empty"])
    x.move(b["x"], b["y"])
    s = x.state_after(REST_S)
    assert s["tip_visible"] and s["tip_text"] == x.targets["breadth_text"], s
    assert f"<b>#{b['op']} " in s["tip_text"].split("<br>")[0]
    x.xdotool("click", 1)
    s = x.state_after(0.3)
    assert s["profile"].startswith(f"#{b['op']} "), s
