"""Run store for a class: authors, default runs, the quota, tampered run ids; nothing written on refusal."""

from __future__ import annotations

import pytest

from fmlib.runs import Quota, QuotaError, RunError, RunStore
from fmlib.train import TrainConfig, train_model


@pytest.fixture(scope="module")
def run():
    from fmlib.data import split, synthetic

    data = synthetic.make(synthetic.block_R(4), n_samples=600, cardinality=6, dim=2, seed=0)
    return train_model("fm", split(data, seed=0), TrainConfig(epochs=1, batch_size=256), dim=2)


def listing(root):
    return sorted(p.name for p in root.iterdir()) if root.exists() else []


def test_runs_list_newest_first_per_author_and_shared(run, tmp_path):
    store = RunStore(tmp_path)
    for run_id, author in [("s1", None), ("a1", "Ada"), ("b1", "Bo"), ("a2", "Ada"), ("s2", None), ("b2", "Bo")]:
        store.save(run, run_id, author=author)
    assert store.by_author() == {None: ["s2", "s1"], "Ada": ["a2", "a1"], "Bo": ["b2", "b1"]}
    assert store.info("a1")["author"] == "Ada" and store.info("s1")["author"] is None


def test_the_default_run_is_ones_own_or_shared_never_another_authors_latest(run, tmp_path):
    store = RunStore(tmp_path)
    assert store.default_id("Ada") is None
    store.save(run, "shared", author=None)
    store.save(run, "bos-latest", author="Bo")
    assert store.default_id("Ada") == "shared" and store.default_id(None) == "shared"
    store.save(run, "adas", author="Ada")
    store.save(run, "bos-newer", author="Bo")
    assert store.default_id("Ada") == "adas" and store.default_id("Cy") == "shared"


@pytest.mark.parametrize("bad", ["../evil", "a/b", ".hidden", "..", "x" * 81, "a b", "run\n"])
def test_run_ids_with_path_characters_are_refused_and_nothing_is_written(run, tmp_path, bad):
    (tmp_path / "evil").mkdir()  # a directory a tampered id could reach
    store = RunStore(tmp_path / "store")
    with pytest.raises(ValueError, match="run name"):
        store.save(run, bad)
    for action in (store.info, store.load, store.delete):
        with pytest.raises(RunError, match="run name"):
            action(bad)
    assert listing(tmp_path) == ["evil"] and listing(tmp_path / "evil") == []


def test_bad_author_names_are_refused(run, tmp_path):
    store = RunStore(tmp_path)
    for bad in ["", " lead", "a/b", "x" * 41, "name\n"]:
        with pytest.raises(ValueError, match="author"):
            store.save(run, "r", author=bad)
    assert listing(tmp_path) == []
    store.save(run, "r", author="Zoë O'Neil")
    assert store.info("r")["author"] == "Zoë O'Neil"


def test_a_full_store_by_count_refuses_and_writes_nothing(run, tmp_path):
    store = RunStore(tmp_path, Quota(runs=2, bytes=1 << 30))
    store.save(run, "r1")
    store.save(run, "r2")
    with pytest.raises(QuotaError, match=r"full: 2 of 2 runs \(FMLIB_MAX_RUNS\); nothing was saved"):
        store.save(run, "r3")
    assert listing(tmp_path) == ["r1", "r2"]


def test_a_full_store_by_bytes_refuses_and_writes_nothing(run, tmp_path):
    probe = RunStore(tmp_path / "probe")
    size = sum(f.stat().st_size for f in (tmp_path / "probe" / probe.save(run, "p")).iterdir())
    store = RunStore(tmp_path / "store", Quota(runs=100, bytes=size + size // 2))
    store.save(run, "r1")
    with pytest.raises(QuotaError, match="FMLIB_MAX_RUN_BYTES"):
        store.save(run, "r2")
    assert listing(tmp_path / "store") == ["r1"]


def test_quota_comes_from_the_environment_and_is_checked(monkeypatch):
    monkeypatch.setenv("FMLIB_MAX_RUNS", "7")
    monkeypatch.setenv("FMLIB_MAX_RUN_BYTES", "1000")
    assert Quota.from_env() == Quota(runs=7, bytes=1000)
    monkeypatch.setenv("FMLIB_MAX_RUNS", "-1")
    with pytest.raises(ValueError, match="FMLIB_MAX_RUNS must be a positive integer"):
        Quota.from_env()


def test_delete_removes_a_run(run, tmp_path):
    store = RunStore(tmp_path)
    store.save(run, "gone")
    store.delete("gone")
    assert store.ids() == []
    with pytest.raises(RunError, match="no such run"):
        store.delete("gone")


def test_runs_saved_in_the_same_second_without_a_name_all_keep_their_own_id(run, tmp_path, monkeypatch):
    monkeypatch.setattr("time.strftime", lambda fmt, *a: "20260101-120000" if "%H%M%S" in fmt else "2026-01-01")
    store = RunStore(tmp_path)
    ids = [store.save(run, author=a) for a in ("Ada", "Bo", "Cy")]
    assert ids == ["fm-synthetic-20260101-120000", "fm-synthetic-20260101-120000-2", "fm-synthetic-20260101-120000-3"]
    assert [store.info(i)["run_id"] for i in ids] == ids and [store.info(i)["author"] for i in ids] == [
        "Ada",
        "Bo",
        "Cy",
    ]


def test_concurrent_saves_under_one_name_keep_one_run_and_refuse_the_others(run, tmp_path):
    import threading

    store, outcomes = RunStore(tmp_path), []

    def save(author):
        try:
            outcomes.append(store.save(run, "same", author=author))
        except ValueError as err:
            outcomes.append(str(err))

    threads = [threading.Thread(target=save, args=(a,)) for a in ("Ada", "Bo", "Cy", "Di")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert outcomes.count("same") == 1 and all("already exists" in o for o in outcomes if o != "same")
    assert listing(tmp_path) == ["same"]


def test_info_parses_each_version_of_run_json_once_and_sees_every_change(run, tmp_path):
    """The sidebar lists every run on every rerun: an unchanged run.json is not parsed again, a changed,
    corrupted or removed one is seen at once."""
    import json

    store = RunStore(tmp_path)
    run_id = store.save(run, "cached", author="ada")
    first = store.info(run_id)
    assert store.info(run_id) is first  # the same version: parsed once, shared
    path = tmp_path / run_id / "run.json"
    meta = json.loads(path.read_text())
    meta["author"] = "grace, renamed"
    path.write_text(json.dumps(meta))
    assert store.info(run_id)["author"] == "grace, renamed"
    path.write_text("{not json")
    with pytest.raises(RunError, match="corrupt"):
        store.info(run_id)
    path.unlink()
    with pytest.raises(RunError, match="missing"):
        store.info(run_id)
    assert store.by_author() == {None: [run_id]}  # a run without its run.json is listed with the shared ones
