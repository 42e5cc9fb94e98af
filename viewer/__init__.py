"""Arena Viewer: plan and show the tensor arena of a TensorFlow Lite / LiteRT model.

Layers, one direction only (a test checks it)::

    ui -> export -> whatif / runtime -> planning -> analysis -> model

Nothing below ``viewer.ui`` imports Qt, except ``viewer.export`` where rendering needs it.
"""

__version__ = "0.1.0"
