"""The README's "Add a model" example, as a reader runs it: the class from the README's code block, named in
FMLIB_MODELS, trained by the CLI and judged against the FM by ``reproduce compare``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fmlib import models
from fmlib.cli import main
from fmlib.data import load, split
from fmlib.runs import RunStore
from fmlib.train import loss_fn

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
SECTION = README[README.index("## Add a model") :].split("\n## ", 1)[0]


def example() -> str:
    """The section's Python code block: the whole ``my_models.py``."""
    return re.search(r"```python\n(.*?)```", SECTION, re.S).group(1)


@pytest.fixture
def my_models(tmp_path, monkeypatch):
    """``my_models.py`` written from the README, importable, and registered as FMLIB_MODELS=my_models:FmFM would."""
    (tmp_path / "my_models.py").write_text(example())
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(models, "MODELS", {**models.MODELS, **models.user_models("my_models:FmFM")})
    sys.modules.pop("my_models", None)  # another test's my_models.py (test_contract.py's) may be imported already
    yield tmp_path
    sys.modules.pop("my_models", None)


def test_the_example_is_about_twenty_lines_and_fills_the_contract(my_models):
    assert len(example().strip().splitlines()) <= 25
    data = split(load("synthetic"), seed=0)
    model = models.build_for("fmfm", data.train, dim=4).train()
    assert models.hyperparameters("fmfm") == {"dim": 8} and model.hparams() == {"dim": 4}
    index, weight = data.train.batch(slice(None))
    model.loss(index, weight, data.train.rating, loss_fn("rating")).backward()
    for name, p in model.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, f"{name} gets no gradient"


@pytest.mark.slow
def test_the_readme_verdict_is_what_the_command_prints(my_models, capsys):
    command = re.search(r"python -m fmlib (reproduce compare [^\n]*)", SECTION).group(1)
    assert main(command.split()) == 0
    printed = capsys.readouterr().out.strip()
    shown = re.search(r"it printed:\n\n```\n(.*?)\n```", SECTION, re.S).group(1).strip()
    assert printed.splitlines()[-1] == shown.splitlines()[-1]  # the verdict sentence, numbers included
    assert ": holds;" in printed


@pytest.mark.slow
def test_the_environment_variable_registers_it_for_the_command_line(tmp_path):
    (tmp_path / "my_models.py").write_text(example())
    env = {**os.environ, "FMLIB_MODELS": "my_models:FmFM", "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    args = ["train", "--model", "fmfm", "--dataset", "synthetic", "--epochs", "1", "--batch-size", "128"]
    done = subprocess.run(
        [sys.executable, "-m", "fmlib", *args, "--runs-dir", str(tmp_path / "runs")],
        env=env,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["model"] == "fmfm" and out["config"]["hp"] == {"dim": 8}
    assert (tmp_path / "runs" / out["run_id"] / "model.safetensors").is_file()
    assert RunStore(tmp_path / "runs").info(out["run_id"])["config"]["model"] == "fmfm"
