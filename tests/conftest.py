"""Shared fixtures: an isolated run store, small synthetic data, fixture MovieLens files."""

from __future__ import annotations

import os

import pytest
import torch

from fmlib.data import split, synthetic

torch.set_num_threads(1)  # tiny tensors: one thread is as fast, and robust on a busy machine
os.environ.setdefault("FMLIB_STARTER_RUNS", "0")  # no background starter runs in tests (and their servers)


@pytest.fixture(autouse=True)
def isolated_runs(tmp_path, monkeypatch):
    """Every test gets its own run store, so saved runs never leak between tests."""
    monkeypatch.setenv("FMLIB_RUNS", str(tmp_path / "runs"))


@pytest.fixture(autouse=True)
def _clear_streamlit_caches():
    import streamlit as st

    st.cache_data.clear()
    st.cache_resource.clear()


@pytest.fixture
def small_split():
    torch.manual_seed(0)
    data = synthetic.make(synthetic.block_R(6), n_samples=3000, cardinality=12, dim=3, seed=0)
    return split(data, seed=0)


@pytest.fixture(scope="module")
def browser():
    """Debian's Chromium under Playwright, one per test module (the projector and lesson browser tests)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox", "--disable-gpu"])
        yield chromium
        chromium.close()
