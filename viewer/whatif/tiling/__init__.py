"""Tiling what-ifs: patch-based execution of the high-resolution prefix (MCUNetV2-style) and
whole-input tiling. No Qt.

- :mod:`~viewer.whatif.tiling.geometry`: patchable prefix, cut, per-patch regions;
- :mod:`~viewer.whatif.tiling.graph`: the patch graphs (explicit PAD + VALID) and the tail;
- :mod:`~viewer.whatif.tiling.plan`: memory of each stage, peak, overhead, the search;
- :mod:`~viewer.whatif.tiling.write`: patch.tflite, tail.tflite, tiling.json.
"""

from viewer.whatif.tiling.plan import RESIDENT, STREAMED, SearchResult, TilePlan, Tiler, search

__all__ = ["RESIDENT", "STREAMED", "SearchResult", "TilePlan", "Tiler", "search"]
