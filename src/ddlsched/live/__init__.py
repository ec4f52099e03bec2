"""Live runs: the same policies and core driving real (or twin) executors; see docs/live.md."""
