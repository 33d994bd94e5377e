"""Reproductions of the papers' tables on MovieLens (``python -m fmlib reproduce ...``)."""
