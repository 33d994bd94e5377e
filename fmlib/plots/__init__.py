"""Plotly figure builders shared by pages and notebooks (one module per topic)."""
