"""What a reader is told when something is missing or wrong: one sentence on what to do, no server paths,
no invalid value left in the link."""

from __future__ import annotations

import re

from apptest import app_page

from app_pages._view import shown_path, without_paths

SERVER_PATH = re.compile(r"(?<![\w:/.])/(root|home|tmp|work|usr)/")


def test_without_paths_shortens_server_paths_but_keeps_urls():
    text = "no such run in /srv/app/runs; fetch https://files.grouplens.org/datasets/movielens/ml-1m.zip"
    assert without_paths(text) == "no such run in runs; fetch https://files.grouplens.org/datasets/movielens/ml-1m.zip"
    assert shown_path("README.md") == "README.md" and shown_path("/elsewhere/x.csv") == "x.csv"


def test_a_dataset_not_available_offline_says_how_to_get_it_without_server_paths(monkeypatch, tmp_path):
    monkeypatch.setenv("FMLIB_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.setattr("urllib.request.urlopen", lambda *a, **k: (_ for _ in ()).throw(OSError("offline")))
    at = app_page("app.py", dataset="ml-1m")
    at.run()
    shown = [e.value for e in at.error]
    assert shown and "ml-1m is not on this machine" in shown[0] and "--data-dir" in shown[0]
    assert "ml-1m.zip" in shown[0] and "urlopen" not in shown[0]
    assert not SERVER_PATH.search(shown[0]), shown[0]


def test_an_invalid_link_value_leaves_the_url_after_the_fallback():
    at = app_page("app.py", dataset="synthetic")
    at.run()
    at.switch_page("app_pages/train.py")
    at.query_params["seed"] = "1e9"
    at.run()
    assert any("seed = '1e9' is not valid" in w.value for w in at.warning)
    assert "seed" not in at.query_params and at.number_input(key="seed").value == 0
    at.run()
    assert any("seed = '1e9' is not valid" in w.value for w in at.warning), "the note stays until the seed changes"
