"""AppTest: a model of the user's own module (registered as FMLIB_MODELS would) is on the Train page and trains
there; a registered model that breaks the contract is one error line, and the page goes on with the others."""

from __future__ import annotations

import sys

import pytest
from apptest import app_page, button, wait_for_training
from test_own_model import example

from fmlib import models


@pytest.fixture
def registered(tmp_path, monkeypatch):
    (tmp_path / "my_models.py").write_text(example())
    monkeypatch.syspath_prepend(str(tmp_path))
    entries = models.user_models("my_models:FmFM, no_such_module_anywhere:Gone")
    monkeypatch.setattr(models, "MODELS", {**models.MODELS, **entries})
    sys.modules.pop("my_models", None)  # another test's my_models.py (test_contract.py's) may be imported already
    yield
    sys.modules.pop("my_models", None)


def test_the_train_page_offers_and_trains_your_model_and_names_a_broken_one(registered):
    at = app_page("app_pages/train.py", dataset="synthetic")
    at.run()
    assert not at.exception
    assert [e.value for e in at.error] == [
        "model gone: module 'no_such_module_anywhere' cannot be imported (No module named 'no_such_module_anywhere')"
    ]
    menu = at.selectbox(key="model")
    assert "fmfm" in menu.options and "gone" not in menu.options
    menu.set_value("fmfm").run()
    assert {n.label for n in at.number_input} >= {"dim (embedding size k)"}
    at.number_input(key="epochs").set_value(2)
    wait_for_training(button(at, "Train").click().run())
    assert not at.exception
    table = at.table[0].value
    assert list(table.columns) == ["valid", "test"] and "rmse" in table.index
