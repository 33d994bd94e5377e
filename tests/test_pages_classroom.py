"""AppTest of a class on one server: the training queue, saving under a name, the run picker, the Teacher page."""

from __future__ import annotations

import threading
import time

import pytest
from apptest import app_page, button, wait_for_training
from patience import limit

from app_pages._classroom import job_queue
from fmlib.runs import RunStore
from fmlib.train import TrainConfig, train_model


@pytest.fixture(scope="module")
def run():
    from fmlib.data import split, synthetic

    data = synthetic.make(synthetic.block_R(4), n_samples=600, cardinality=6, dim=2, seed=0)
    return train_model("fm", split(data, seed=0), TrainConfig(epochs=1, batch_size=256), dim=2)


@pytest.fixture
def busy_server(monkeypatch):
    """One training at a time, and that one is taken until the test ends."""
    monkeypatch.setenv("FMLIB_TRAIN_WORKERS", "1")
    gate = threading.Event()
    queue = job_queue()
    blocker = queue.submit(lambda job: gate.wait(60))
    yield queue
    gate.set()
    queue.cancel(blocker)


def train_page(**state):
    at = app_page("app_pages/train.py", dataset="synthetic", **state)
    at.run()
    assert not at.exception
    return at


def test_a_busy_server_shows_the_place_in_line_and_cancel_drops_the_training(busy_server):
    first, second = train_page(), train_page()
    button(first, "Train").click().run()
    button(second, "Train").click().run()
    assert "Queued, position 1" in first.info[0].value and "Queued, position 2" in second.info[0].value
    first.button(key="cancel_training").click().run()
    assert "Training cancelled." in first.info[0].value and "trained" not in first.session_state
    second.run()
    assert "Queued, position 1" in second.info[0].value, "the line moved up"
    second.button(key="cancel_training").click().run()
    assert busy_server.waiting() == 0


def test_a_queued_training_runs_when_the_server_frees_up(monkeypatch):
    monkeypatch.setenv("FMLIB_TRAIN_WORKERS", "1")
    at = train_page()
    at.number_input(key="epochs").set_value(2)
    wait_for_training(button(at, "Train").click().run())
    assert "Done: 2 epochs" in at.success[0].value and at.session_state["trained"] is not None


def save(at, name: str, author: str):
    at.text_input(key="save_name").input(name)
    at.text_input(key="save_author").input(author)
    button(at, "Save run").click().run()
    assert not at.exception
    return at


def test_saving_needs_a_name_and_files_the_run_under_it(run):
    at = save(train_page(trained=run), "r1", "")
    assert "Your name: required" in at.error[0].value and RunStore().ids() == []
    at = save(at, "r1", "Ada")
    assert "Saved as r1:" in at.success[0].value
    assert RunStore().by_author() == {"Ada": ["ada-r1"]}
    assert at.session_state["run_owner"] == "Ada" and at.session_state["run_id"] == "ada-r1", "the sidebar picks it"


@pytest.mark.parametrize(("name", "made"), [("my fwfm", "my-fwfm"), ("../escape", "escape"), ("a/b", "a-b")])
def test_a_name_with_spaces_or_path_characters_is_saved_as_its_slug_inside_the_store(run, name, made):
    at = save(train_page(trained=run), name, "Ada")
    assert at.success[0].value.startswith(f"Saved as {made} (from {name!r}: a run name keeps letters")
    assert RunStore().ids() == [f"ada-{made}"] and not (RunStore().root.parent / "escape").exists()


def test_two_students_may_save_the_same_name_and_one_student_only_once(run):
    save(train_page(trained=run), "my-fwfm", "Ada")
    bob = save(train_page(trained=run), "my-fwfm", "Bob")
    assert "Saved as my-fwfm:" in bob.success[0].value
    assert RunStore().by_author() == {"Ada": ["ada-my-fwfm"], "Bob": ["bob-my-fwfm"]}
    again = save(train_page(trained=run), "my fwfm", "Ada")  # another training of Ada's, the same name
    assert [e.value for e in again.error] == [
        "You already have a run named my-fwfm: choose another name, or leave it empty for a dated one."
    ]
    assert "/" not in again.error[0].value, "no server path"


def test_a_full_store_says_so_and_writes_nothing(run, monkeypatch):
    monkeypatch.setenv("FMLIB_MAX_RUNS", "1")
    RunStore().save(run, "first")
    at = save(train_page(trained=run), "second", "Ada")
    assert "the run store is full: 1 of 1 runs" in at.error[0].value and RunStore().ids() == ["first"]


def frame(**state):
    at = app_page("app.py", dataset="synthetic", **state)
    at.run()
    assert not at.exception
    return at


def test_a_fresh_session_defaults_to_the_shared_run_never_another_authors_latest(run):
    store = RunStore()
    store.save(run, "bos-run", author="Bo")
    at = frame()
    assert at.sidebar.selectbox(key="run_owner").value is None and "run_id" not in at.session_state
    store.save(run, "shared-run")
    store.save(run, "bos-newer", author="Bo")
    at = frame()
    assert at.sidebar.selectbox(key="run_owner").value == "" and at.session_state["run_id"] == "shared-run"


def test_a_session_with_its_own_runs_defaults_to_its_newest(run):
    store = RunStore()
    store.save(run, "shared-run")
    store.save(run, "ada-old", author="Ada")
    store.save(run, "ada-new", author="Ada")
    store.save(run, "bos-newest", author="Bo")
    at = frame(classroom_author="Ada")
    assert at.sidebar.selectbox(key="run_owner").value == "Ada" and at.session_state["run_id"] == "ada-new"
    at.sidebar.selectbox(key="run_owner").set_value("Bo").run()
    assert at.session_state["run_id"] == "bos-newest" and not at.exception


def test_a_selected_run_deleted_meanwhile_leaves_the_sidebar_with_a_note(run):
    store = RunStore()
    store.save(run, "shared-run")
    store.save(run, "ada-old", author="Ada")
    store.save(run, "ada-new", author="Ada")
    at = frame(classroom_author="Ada")
    assert at.session_state["run_id"] == "ada-new" and not at.sidebar.warning
    RunStore().delete("ada-new")  # the teacher, in another session or server process
    at.run()
    assert not at.exception and at.session_state["run_id"] == "ada-old"
    assert "ada-new" not in at.sidebar.selectbox(key="run_id").options
    assert [w.value for w in at.sidebar.warning] == [
        "The run ada-new you had selected was deleted by the teacher; showing ada-old."
    ]
    RunStore().delete("ada-old")
    at.run()
    assert at.sidebar.selectbox(key="run_owner").value == "" and at.session_state["run_id"] == "shared-run"
    assert "showing shared-run." in at.sidebar.warning[0].value
    at.run()
    assert not at.sidebar.warning, "a note, not a standing warning"
    RunStore().delete("shared-run")
    at.run()
    assert not at.exception and "run_id" not in at.session_state
    assert [w.value for w in at.sidebar.warning] == [
        "The run shared-run you had selected was deleted by the teacher; no run is selected."
    ]


def teacher(monkeypatch, passcode: str | None):
    if passcode is None:
        monkeypatch.delenv("FMLIB_TEACHER_PASSCODE", raising=False)
    else:
        monkeypatch.setenv("FMLIB_TEACHER_PASSCODE", passcode)
    at = app_page("app_pages/teacher.py")
    at.run()
    assert not at.exception
    return at


def unlock(at, given: str):
    at.text_input(key="teacher_given").input(given)
    button(at, "Unlock").click().run()
    assert not at.exception
    return at


def test_without_a_passcode_teacher_actions_are_off(monkeypatch):
    at = teacher(monkeypatch, None)
    assert "Teacher actions are off" in at.info[0].value and not at.multiselect


def test_a_wrong_passcode_is_refused_and_nothing_changes(run, monkeypatch):
    RunStore().save(run, "kept", author="Ada")
    at = unlock(teacher(monkeypatch, "s3cret"), "guess")
    assert "Wrong passcode" in at.error[0].value and not at.multiselect
    assert RunStore().ids() == ["kept"]
    assert not [b for b in at.button if b.label in ("Recompute results", "Rebuild default runs")]
    assert job_queue().waiting() == 0, "nothing was started"


def test_the_teacher_deletes_runs_after_unlocking(run, monkeypatch):
    store = RunStore()
    for name in ("a", "b", "c"):
        store.save(run, name, author="Ada")
    at = unlock(teacher(monkeypatch, "s3cret"), "s3cret")
    assert any(c.value.startswith("Run store") and "3 of" in c.value for c in at.caption)
    at.multiselect(key="teacher_delete").set_value(["a", "c"]).run()
    at.button(key="teacher_delete_button").click().run()
    assert not at.exception and "Deleted 2 run(s): a, c." in at.success[0].value
    assert store.ids() == ["b"]


def test_a_pages_quick_run_waits_in_the_same_line_and_can_be_cancelled(busy_server):
    at = app_page("app_pages/field_interactions.py", dataset="synthetic")
    at.run()
    at.button(key="quick_train").click().run()
    assert not at.exception
    assert any("Your quick FwFM: queued, position 1" in i.value for i in at.info)
    assert busy_server.waiting() == 1, "the quick run is in the server's one queue"
    at.button(key="interactions_quick_run_job_cancel").click().run()
    assert any("The quick FwFM was cancelled." in i.value for i in at.info)
    assert busy_server.waiting() == 0 and at.button(key="quick_train"), "offered again"


def rerun_until(at, predicate, timeout: float = 120):
    import time

    deadline = time.monotonic() + limit(timeout)  # a guard against a hang, stretched on a busy machine
    while not predicate(at):
        assert time.monotonic() < deadline, "the job did not end in time"
        time.sleep(0.2)
        at.run()
    assert not at.exception
    return at


def test_the_teacher_recomputes_the_results_one_command_after_another(monkeypatch):
    from fmapp import recompute

    ran = []

    def fake_command(argv, report, cancelled):  # the real one runs `python -m fmlib reproduce …` for minutes
        ran.append(argv)
        report(f"training {argv[1]} ...")
        return f"written: {argv[1]}.csv"

    monkeypatch.setattr(recompute, "run_command", fake_command)
    at = unlock(teacher(monkeypatch, "s3cret"), "s3cret")
    button(at, "Recompute results").click().run()
    at = rerun_until(at, lambda at: at.success)
    assert ["reproduce", "dplr"] in ran and ["reproduce", "rafm"] in ran and ["reproduce", "fm-ablation"] in ran
    assert at.success[0].value == "Results recomputed: " + " · ".join(f"written: {argv[1]}.csv" for argv in ran)
    assert button(at, "Recompute results"), "offered again once finished"


@pytest.fixture
def tiny_starters(monkeypatch):
    """Starter runs on a small synthetic split, one epoch each."""
    import app_pages._ui
    from fmapp import starter
    from fmlib.data import split, synthetic

    data = split(synthetic.make(synthetic.block_R(4), n_samples=600, cardinality=6, dim=2, seed=0), seed=0)
    monkeypatch.setattr(app_pages._ui, "starter_split", lambda: data)
    monkeypatch.setattr(
        starter.Starter, "settings", lambda self, model, size: (TrainConfig(epochs=1, batch_size=128), {}, "test")
    )


def test_the_teacher_rebuilds_the_default_runs_in_the_queue(run, monkeypatch, busy_server, tiny_starters):
    store = RunStore()
    store.save(run, "fm-ml-100k-starter")
    store.save(run, "kept", author="Ada")
    at = unlock(teacher(monkeypatch, "s3cret"), "s3cret")
    button(at, "Rebuild default runs").click().run()
    assert any("Rebuild default runs: queued, position 1" in i.value for i in at.info), "behind the busy server's job"
    at.button(key="teacher_rebuild_cancel").click().run()
    assert any("Rebuild default runs: cancelled." in i.value for i in at.info)
    assert sorted(store.ids()) == ["fm-ml-100k-starter", "kept"], "a cancelled rebuild changes nothing"


def test_a_rebuild_replaces_the_starter_runs_and_keeps_the_others(run, monkeypatch, tiny_starters):
    store = RunStore()
    store.save(run, "fm-ml-100k-starter")
    store.save(run, "kept", author="Ada")
    old = store.info("fm-ml-100k-starter")
    at = unlock(teacher(monkeypatch, "s3cret"), "s3cret")
    button(at, "Rebuild default runs").click().run()
    at = rerun_until(at, lambda at: at.success or at.error)
    assert not at.error, at.error[0].value
    assert (
        "Default runs rebuilt: fm-ml-100k-starter, fwfm-ml-100k-starter, dplr-ml-100k-starter." in at.success[0].value
    )
    assert sorted(store.ids()) == ["dplr-ml-100k-starter", "fm-ml-100k-starter", "fwfm-ml-100k-starter", "kept"]
    assert store.info("fm-ml-100k-starter")["config"]["hp"] != old["config"]["hp"], "the old dim-2 FM was replaced"


def test_every_page_training_waits_in_the_one_line(busy_server):
    """The Rank-aware FM page's seed and the Ranking page's quick DPLR queue behind the busy server's job."""
    rafm = app_page("app_pages/rank_aware_fm.py", dataset="synthetic", rafm_ranks="2,4")
    rafm.run()
    next(b for b in rafm.button if b.label.startswith("Run one seed here")).click().run()
    ranking = app_page("app_pages/ranking.py", dataset="synthetic")
    ranking.run()
    ranking.button(key="quick_train").click().run()
    assert not rafm.exception and not ranking.exception
    assert any("Your seed of FM at each rank and RaFM(2, 4): queued, position 1" in i.value for i in rafm.info)
    assert any("Your quick DPLR (ρ = 2): queued, position 2" in i.value for i in ranking.info)
    rafm.button(key="rafm_seed_job_cancel").click().run()
    ranking.run()
    assert any("queued, position 1" in i.value for i in ranking.info), "the line moved up"
    ranking.button(key="ranking_quick_run_job_cancel").click().run()
    assert busy_server.waiting() == 0


def test_the_unlock_is_a_signed_token_that_a_reload_keeps_and_lock_ends(monkeypatch):
    at = unlock(teacher(monkeypatch, "s3cret"), "s3cret")
    token = at.session_state["teacher_token"]
    assert "s3cret" not in token and button(at, "Lock")
    # a reload is a new session that finds the token in the browser's cookie (AppTest sends no cookies: the session
    # is handed the token as the cookie hands it)
    reloaded = app_page("app_pages/teacher.py", teacher_token=token)
    reloaded.run()
    assert not reloaded.exception and button(reloaded, "Lock"), "still the teacher"
    button(reloaded, "Lock").click().run()
    assert reloaded.text_input(key="teacher_given"), "locked: the passcode form again"
    after_lock = app_page("app_pages/teacher.py", teacher_token=token)
    after_lock.run()
    assert after_lock.text_input(key="teacher_given"), "Lock ended the token for every later session"


@pytest.mark.parametrize("how", ["altered", "expired"])
def test_an_altered_or_expired_token_leaves_the_teacher_locked_with_a_note(monkeypatch, how):
    from app_pages._classroom import _signature

    at = unlock(teacher(monkeypatch, "s3cret"), "s3cret")
    unlock_id, expires, signature = at.session_state["teacher_token"].split(".")
    if how == "altered":  # pushed a day on, the signature kept
        token = f"{unlock_id}.{int(expires) + 86400}.{signature}"
    else:  # signed with the passcode, but its time is up
        past = int(time.time()) - 1
        token = f"{unlock_id}.{past}.{_signature(f'{unlock_id}.{past}')}"
    frame = app_page("app.py", teacher_token=token)
    frame.run()
    note = {"altered": "was not accepted", "expired": "has expired (it lasts 3 h)"}[how]
    assert any(note in i.value and "Unlock again on the Teacher page" in i.value for i in frame.sidebar.info)
    frame.switch_page("app_pages/teacher.py").run()
    assert not frame.exception and frame.text_input(key="teacher_given"), "locked"


def test_the_training_is_shown_in_one_readable_line_without_a_server_path(run):
    from dataclasses import replace
    from pathlib import Path

    cache = Path.home() / ".cache" / "fmlib" / "ml-100k"
    served = replace(run, config={**run.config, "data_source": f"cache {cache} (from PyPI wheel recbole==1.2.1)"})
    (line,) = [c.value for c in train_page(trained=served).caption if c.value.startswith("data:")]
    assert line == (
        "data: cache ml-100k (from PyPI wheel recbole==1.2.1) · split seed 0 · rating, up to 1 epoch (patience 3), "
        "batch 256 · lr 0.005, weight decay 0.0003, seed 0 · dim 2"
    )
