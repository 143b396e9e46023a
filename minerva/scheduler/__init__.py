"""Schedulers: the threaded DagScheduler and its synchronous twin, the naive engine."""
