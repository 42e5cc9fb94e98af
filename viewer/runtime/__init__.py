"""The real LiteRT runtime, always run in a subprocess (a crash or hang never reaches the caller).

- :mod:`viewer.runtime.probe`: ``probe_model`` reads back the runtime's tensor arena (shapes,
  offsets, kernel temporaries and the operator that owns each, in-place aliases, what lies
  outside the arena); ``measured_plan`` and ``probe_analysis`` turn it into our types.
- :mod:`viewer.runtime.replay`: the ``litert`` planner fed the runtime's tensors, compared
  offset by offset with the runtime.
- :mod:`viewer.runtime.measure`: VmHWM, Rss/Pss split and page faults of a real inference
  process (with and without XNNPACK), and cgroup v2 limits.
- :mod:`viewer.runtime._child`: the subprocess itself (``python -m viewer.runtime._child``).

Kept import-free so that the child starts without loading the planners.
"""
