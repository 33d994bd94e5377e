"""Benchmarks (``python -m fmlib bench ...``): ratios against a baseline measured in the same run."""
