"""A class's answers to a lesson, kept by the server: a count per choice, no names.

    answers = ClassAnswers()
    answers.answer("intro", 3, voter="a1f3…", choice=1)   # "counted"; again from the same voter: "changed"
    answers.counts("intro", 3, n_choices=3)                # [0, 1, 0]
    answers.set_paced("intro", True)                       # students wait for the teacher's reveal
    answers.reveal("intro", 3)                             # now every student sees the answer
    answers.answer("intro", 3, voter="b2…", choice=0)      # "closed": after the reveal nothing is counted

A voter is an opaque token (one per browser, hashed by the page), so a second tab of the same
browser replaces its answer instead of counting twice. One object serves every session of a
server, so every method takes the lock.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field


@dataclass
class StopAnswers:
    """One stop's answers: the latest choice of each voter, and whether the teacher revealed it."""

    votes: dict[str, int] = field(default_factory=dict)
    revealed: bool = False


class ClassAnswers:
    def __init__(self):
        self._lock = threading.Lock()
        self._stops: dict[tuple[str, int], StopAnswers] = {}
        self._paced: set[str] = set()

    def _stop(self, lesson: str, stop: int) -> StopAnswers:
        return self._stops.setdefault((lesson, stop), StopAnswers())

    def answer(self, lesson: str, stop: int, voter: str, choice: int) -> str:
        """Record ``voter``'s choice (an index into the stop's choices): "counted" the first time,
        "changed" when it replaces the voter's earlier choice, "closed" (nothing recorded) once the
        teacher has revealed the stop."""
        with self._lock:
            answers = self._stop(lesson, stop)
            if answers.revealed:
                return "closed"
            outcome = "changed" if voter in answers.votes else "counted"
            answers.votes[voter] = choice
            return outcome

    def counts(self, lesson: str, stop: int, n_choices: int) -> list[int]:
        """How many voters chose each of the stop's ``n_choices`` choices."""
        with self._lock:
            votes = list(self._stop(lesson, stop).votes.values())
        return [votes.count(i) for i in range(n_choices)]

    def voted(self, lesson: str, stop: int, voter: str) -> int | None:
        """The choice ``voter`` has counted at this stop, if any."""
        with self._lock:
            return self._stop(lesson, stop).votes.get(voter)

    def reveal(self, lesson: str, stop: int, revealed: bool = True) -> None:
        """Show the answer to every student (``revealed=False``: hide it again and reopen the answers)."""
        with self._lock:
            self._stop(lesson, stop).revealed = revealed

    def revealed(self, lesson: str, stop: int) -> bool:
        with self._lock:
            return self._stop(lesson, stop).revealed

    def set_paced(self, lesson: str, paced: bool) -> None:
        """Paced: students see an answer only once the teacher reveals it; otherwise each reveals their own."""
        with self._lock:
            (self._paced.add if paced else self._paced.discard)(lesson)

    def paced(self, lesson: str) -> bool:
        with self._lock:
            return lesson in self._paced

    def clear(self, lesson: str) -> None:
        """Forget every answer and reveal of ``lesson`` (a new class)."""
        with self._lock:
            for key in [k for k in self._stops if k[0] == lesson]:
                del self._stops[key]
