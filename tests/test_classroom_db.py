"""The class's database: a restart loses nothing, one answer is one row, an unreachable database leaves the class in
memory with a warning, a teacher's unlock lasts until it expires or is locked. (Two servers on PostgreSQL:
test_browser_class.py.)"""

from __future__ import annotations

import threading
import time

from browser_app import free_port

from fmapp.lessons.classroom import ClassAnswers, open_class


def test_a_restarted_server_finds_the_class_where_it_was(tmp_path):
    path = tmp_path / "runs-classroom.sqlite"
    url = f"sqlite:///{path}"
    before = ClassAnswers(url)
    assert path.exists(), "the file is made on first use"
    before.answer("intro", 2, "a", 1)
    before.answer("intro", 2, "b", 0)
    before.set_paced("intro", True)
    before.reveal("intro", 2)
    before.unlock("teacher-1", time.time() + 3600)
    before.engine.dispose()  # the server stops

    after = ClassAnswers(url)  # and starts again on the same file
    assert after.counts("intro", 2, 3) == [1, 1, 0] and after.voted("intro", 2, "a") == 1
    assert after.paced("intro") and after.revealed("intro", 2) and not after.revealed("intro", 3)
    assert after.unlocked("teacher-1")


def test_the_same_answer_written_by_two_servers_at_once_is_one_row(tmp_path):
    url = f"sqlite:///{tmp_path / 'class.sqlite'}"
    servers = [ClassAnswers(url), ClassAnswers(url)]
    start = threading.Barrier(6)
    outcomes = []

    def answer(store, choice):
        start.wait()
        outcomes.append(store.answer("intro", 1, "one-browser", choice))

    threads = [threading.Thread(target=answer, args=(servers[i % 2], i % 3)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["changed"] * 5 + ["counted"]
    assert sum(servers[0].counts("intro", 1, 3)) == 1 == sum(servers[1].counts("intro", 1, 3))


def test_reveal_closes_answers_and_hiding_reopens_them():
    answers = ClassAnswers()
    assert answers.answer("l", 1, "v", 0) == "counted"
    assert answers.answer("l", 1, "v", 2) == "changed"
    assert answers.answer("l", 1, "w", 2) == "counted"
    assert answers.counts("l", 1, 3) == [0, 0, 2]
    answers.reveal("l", 1)
    answers.reveal("l", 1)  # twice (two servers' buttons): still one reveal
    assert answers.answer("l", 1, "x", 0) == "closed" and answers.counts("l", 1, 3) == [0, 0, 2]
    answers.reveal("l", 1, False)
    assert answers.answer("l", 1, "x", 0) == "counted"
    answers.clear("l")
    assert answers.counts("l", 1, 3) == [0, 0, 0] and not answers.revealed("l", 1)


def test_an_unreachable_database_keeps_the_class_in_memory_with_a_one_line_warning():
    port = free_port()  # nothing listens there
    answers, warning = open_class(f"postgresql+psycopg://teacher:s3cret@127.0.0.1:{port}/class")
    assert answers.description == "this server's memory"
    assert warning == (
        f"The class database (postgresql on 127.0.0.1:{port}) cannot be reached: the class is kept in this "
        "server's memory, and a restart of the server loses it."
    )
    assert answers.answer("intro", 1, "a", 0) == "counted" and answers.counts("intro", 1, 2) == [1, 0]
    _, warning = open_class("sqlite:////no/such/folder/class.sqlite")
    assert "(a SQLite file)" in warning and "/no/such" not in warning  # no server path for students


def test_an_unlock_ends_when_it_expires_or_is_locked():
    answers = ClassAnswers()
    answers.unlock("kept", time.time() + 3600)
    answers.unlock("old", time.time() - 1)
    assert answers.unlocked("kept") and not answers.unlocked("old") and not answers.unlocked("never")
    answers.lock("kept")
    assert not answers.unlocked("kept")
