"""Benchmark scenarios of tools/bench.py; each module registers its scenarios."""
