"""Lessons as data: one TOML file per lesson, a list of stops a teacher walks a class through.

    from fmapp.lessons import lesson_files, load_lesson
    lesson = load_lesson(lesson_files()[0])      # Lesson(title, summary, stops, path)
    stop = lesson.stops[0]                        # Stop(title, minutes, goal, question, ...)

A stop asks one "predict, then reveal" question. Its answer is either written in the file
(``answer``, one of the ``choices``) or computed by fmlib (``compute`` names a function of
``fmapp.lessons.answers.ANSWERS``, called with ``compute_args``; the choice closest to the
computed number is the right one). ``page`` and ``params`` build the link that opens the
page that shows it, in a prepared state (the params are the page's URL query parameters);
``takeaway`` is the one sentence the lesson's closing summary keeps of the stop.
The README's "Writing a lesson" section documents the format. A malformed file raises
``LessonError`` naming the file, the stop and the field.
"""

from __future__ import annotations

import inspect
import math
import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from .answers import ANSWERS, Answer

__all__ = ["Answer", "ANSWERS", "Lesson", "LessonError", "Stop", "default_dir", "lesson_files", "load_lesson"]

PAGE_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
STOP_FIELDS = {
    "title": str,
    "minutes": int,
    "goal": str,
    "question": str,
    "choices": list,
    "answer": (str, int, float),
    "compute": str,
    "compute_args": dict,
    "reveal": str,
    "notice": str,
    "takeaway": str,
    "page": str,
    "params": dict,
}
REQUIRED = ("title", "minutes", "goal", "question", "choices", "reveal", "notice", "takeaway", "page")


class LessonError(ValueError):
    """A lesson file that cannot be read; the message names the file and the field."""


@dataclass(frozen=True)
class Stop:
    title: str
    minutes: int
    goal: str
    question: str
    choices: tuple
    reveal: str
    notice: str
    takeaway: str
    page: str
    params: dict
    answer: str | float | None = None
    compute: str | None = None
    compute_args: dict | None = None

    def solve(self) -> tuple[object, Answer | None]:
        """The right choice, and fmlib's computation behind it (None for an answer written in the file)."""
        if self.compute is None:
            return self.answer, None
        result = ANSWERS[self.compute](**(self.compute_args or {}))
        return closest(self.choices, result.value), result


@dataclass(frozen=True)
class Lesson:
    title: str
    summary: str
    stops: tuple[Stop, ...]
    path: Path

    @property
    def minutes(self) -> int:
        return sum(s.minutes for s in self.stops)


def closest(choices, value: float):
    """The choice nearest ``value``: on a log scale when every choice and the value are positive."""
    if value > 0 and all(c > 0 for c in choices):
        return min(choices, key=lambda c: abs(math.log(c) - math.log(value)))
    return min(choices, key=lambda c: abs(c - value))


def default_dir() -> Path:
    return Path(os.environ.get("FMLIB_LESSONS", "lessons"))


def lesson_files(directory: str | Path | None = None) -> list[Path]:
    """The lesson files (``*.toml``) of a directory, sorted by name."""
    directory = Path(directory) if directory is not None else default_dir()
    return sorted(directory.glob("*.toml")) if directory.is_dir() else []


def load_lesson(path: str | Path) -> Lesson:
    """Read and validate one lesson file; LessonError names the file, the stop and the field."""
    path = Path(path)
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise LessonError(f"{path}: no such lesson file") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise LessonError(f"{path}: not valid TOML ({err})") from None
    for key in ("title", "summary"):
        if not isinstance(doc.get(key), str) or not doc[key].strip():
            raise LessonError(f"{path}: field '{key}': a non-empty string is required")
    unknown = set(doc) - {"title", "summary", "stop"}
    if unknown:
        raise LessonError(f"{path}: unknown field(s) {', '.join(sorted(unknown))}; allowed: title, summary, [[stop]]")
    stops = doc.get("stop")
    if not isinstance(stops, list) or not 1 <= len(stops) <= 12:
        raise LessonError(f"{path}: field 'stop': write 1 to 12 [[stop]] tables")
    return Lesson(
        title=doc["title"],
        summary=doc["summary"],
        stops=tuple(_stop(path, i, s) for i, s in enumerate(stops, 1)),
        path=path,
    )


def _stop(path: Path, number: int, raw: dict) -> Stop:
    where = f"{path}: stop {number}"

    def fail(field, message):
        raise LessonError(f"{where}, field '{field}': {message}")

    for field in set(raw) - set(STOP_FIELDS):
        fail(field, f"unknown field; allowed: {', '.join(STOP_FIELDS)}")
    for field in REQUIRED:
        if field not in raw:
            fail(field, "missing")
    for field, kind in STOP_FIELDS.items():
        value = raw.get(field)
        if value is not None and (not isinstance(value, kind) or isinstance(value, bool)):
            fail(field, f"must be {_kind_name(kind)}, got {value!r}")
        if isinstance(value, str) and not value.strip():
            fail(field, "must not be empty")
    if not 1 <= raw["minutes"] <= 50:
        fail("minutes", f"must be an integer in 1..50, got {raw['minutes']}")
    if not PAGE_NAME.match(raw["page"]):
        fail("page", f"a page's file name without .py (e.g. 'train'), got {raw['page']!r}")
    params = raw.get("params", {})
    for key, value in params.items():
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            fail("params", f"{key} = {value!r}: values must be strings or numbers")

    choices = raw["choices"]
    if not 2 <= len(choices) <= 6 or len(set(map(str, choices))) != len(choices):
        fail("choices", "write 2 to 6 different choices")
    if ("answer" in raw) == ("compute" in raw):
        fail("answer", "write exactly one of 'answer' (one of the choices) and 'compute' (an fmlib computation)")
    if "answer" in raw:
        if raw["answer"] not in choices:
            fail("answer", f"{raw['answer']!r} is not one of the choices {choices}")
        if "compute_args" in raw:
            fail("compute_args", "only with 'compute'")
    else:
        name = raw["compute"]
        if name not in ANSWERS:
            fail("compute", f"unknown computation {name!r}; known: {', '.join(ANSWERS)}")
        if not all(isinstance(c, (int, float)) and not isinstance(c, bool) for c in choices):
            fail("choices", "a computed answer needs numbers as choices")
        args = raw.get("compute_args", {})
        accepted = inspect.signature(ANSWERS[name]).parameters
        for key in args:
            if key not in accepted:
                fail("compute_args", f"{name} takes no argument {key!r}; it takes {', '.join(accepted) or 'none'}")
    return Stop(
        title=raw["title"],
        minutes=raw["minutes"],
        goal=raw["goal"],
        question=raw["question"],
        choices=tuple(choices),
        reveal=raw["reveal"],
        notice=raw["notice"],
        takeaway=raw["takeaway"],
        page=raw["page"],
        params={k: str(v) for k, v in params.items()},
        answer=raw.get("answer"),
        compute=raw.get("compute"),
        compute_args=raw.get("compute_args"),
    )


def _kind_name(kind) -> str:
    names = {str: "a string", int: "an integer", list: "a list", dict: "a table"}
    if isinstance(kind, tuple):
        return "a string or a number"
    return names[kind]
