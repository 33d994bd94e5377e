"""A class's shared state in a database: answers (a count per choice, no names), reveals, pacing, teacher unlocks.

    answers = ClassAnswers("sqlite:////srv/fmlib/runs-classroom.sqlite")
    answers.answer("intro", 3, voter="a1f3…", choice=1)   # "counted"; again from the same voter: "changed"
    answers.counts("intro", 3, n_choices=3)                # [0, 1, 0]
    answers.set_paced("intro", True)                       # students wait for the teacher's reveal
    answers.reveal("intro", 3)                             # now every student sees the answer
    answers.answer("intro", 3, voter="b2…", choice=0)      # "closed": after the reveal nothing is counted

A voter is an opaque token (one per browser, hashed by the page), so a second tab of the same browser replaces
its answer instead of counting twice. The state lives in the database the SQLAlchemy URL names: a SQLite file
survives a restart of the server; a database server (PostgreSQL) lets several app servers share one class. A
voter's answer to a stop is one row (the primary key is lesson, stop, voter), so the same answer sent through two
servers at once is counted once. ``open_class`` falls back to memory when the database cannot be reached.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.pool import StaticPool

log = logging.getLogger(__name__)
IN_MEMORY = "sqlite://"
CONNECT_SECONDS = 5  # a database server that does not answer within this is unreachable

schema = sa.MetaData()
answers_table = sa.Table(
    "class_answers",
    schema,
    sa.Column("lesson", sa.String(200), primary_key=True),
    sa.Column("stop", sa.Integer, primary_key=True),
    sa.Column("voter", sa.String(64), primary_key=True),
    sa.Column("choice", sa.Integer, nullable=False),
)
reveals_table = sa.Table(  # a row: the teacher revealed that stop to the class
    "class_reveals",
    schema,
    sa.Column("lesson", sa.String(200), primary_key=True),
    sa.Column("stop", sa.Integer, primary_key=True),
)
paced_table = sa.Table(  # a row: students of that lesson wait for the teacher's reveal
    "class_paced",
    schema,
    sa.Column("lesson", sa.String(200), primary_key=True),
)
unlocks_table = sa.Table(  # a row: a teacher's unlock in one browser, until it expires or the teacher locks
    "class_unlocks",
    schema,
    sa.Column("unlock", sa.String(64), primary_key=True),
    sa.Column("expires", sa.Float, nullable=False),  # seconds since the epoch
)


def engine_for(url: str) -> sa.Engine:
    """An engine for ``url``: SQLite waits for another writer instead of failing, in memory one shared connection;
    a database server is given CONNECT_SECONDS to answer."""
    if url == IN_MEMORY:
        return sa.create_engine(url, poolclass=StaticPool, connect_args={"check_same_thread": False})
    if url.startswith("sqlite"):
        return sa.create_engine(url, connect_args={"timeout": 30, "check_same_thread": False})
    return sa.create_engine(url, pool_pre_ping=True, connect_args={"connect_timeout": CONNECT_SECONDS})


class ClassAnswers:
    """Every session's answers to every lesson, the reveals, the pacing and the teacher's unlocks, in one database.

    The tables are created on first use. One object serves every session of a server; SQLite takes one writer at
    a time, so the object's transactions on it run one at a time too."""

    def __init__(self, url: str = IN_MEMORY):
        self.url = url
        self.engine = engine_for(url)
        self._lock = threading.Lock() if url.startswith("sqlite") else contextlib.nullcontext()
        schema.create_all(self.engine)

    @property
    def description(self) -> str:
        """Where the class is kept, in words: "this server's memory", "a SQLite file", "postgresql on host:5432"."""
        return "this server's memory" if self.url == IN_MEMORY else _shown(self.url)

    @contextlib.contextmanager
    def _transaction(self):
        with self._lock, self.engine.begin() as db:
            yield db

    # --- answers ---------------------------------------------------------------------------------

    def answer(self, lesson: str, stop: int, voter: str, choice: int) -> str:
        """Record ``voter``'s choice (an index into the stop's choices): "counted" the first time,
        "changed" when it replaces the voter's earlier choice, "closed" (nothing recorded) once the
        teacher has revealed the stop."""
        mine = _where(answers_table, lesson=lesson, stop=stop, voter=voter)
        with self._transaction() as db:
            if db.execute(sa.select(reveals_table).where(*_where(reveals_table, lesson=lesson, stop=stop))).first():
                return "closed"
            if db.execute(sa.update(answers_table).where(*mine).values(choice=choice)).rowcount:
                return "changed"
        try:
            with self._transaction() as db:
                db.execute(sa.insert(answers_table).values(lesson=lesson, stop=stop, voter=voter, choice=choice))
            return "counted"
        except IntegrityError:  # the same voter's answer arrived meanwhile, through another server: one row
            with self._transaction() as db:
                db.execute(sa.update(answers_table).where(*mine).values(choice=choice))
            return "changed"

    def counts(self, lesson: str, stop: int, n_choices: int) -> list[int]:
        """How many voters chose each of the stop's ``n_choices`` choices."""
        query = (
            sa.select(answers_table.c.choice, sa.func.count())
            .where(*_where(answers_table, lesson=lesson, stop=stop))
            .group_by(answers_table.c.choice)
        )
        with self._transaction() as db:
            counted = dict(db.execute(query).all())
        return [counted.get(i, 0) for i in range(n_choices)]

    def voted(self, lesson: str, stop: int, voter: str) -> int | None:
        """The choice ``voter`` has counted at this stop, if any."""
        query = sa.select(answers_table.c.choice).where(*_where(answers_table, lesson=lesson, stop=stop, voter=voter))
        with self._transaction() as db:
            return db.execute(query).scalar()

    # --- the teacher's reveals and pacing --------------------------------------------------------

    def reveal(self, lesson: str, stop: int, revealed: bool = True) -> None:
        """Show the answer to every student (``revealed=False``: hide it again and reopen the answers)."""
        self._mark(reveals_table, revealed, lesson=lesson, stop=stop)

    def revealed(self, lesson: str, stop: int) -> bool:
        return self._marked(reveals_table, lesson=lesson, stop=stop)

    def set_paced(self, lesson: str, paced: bool) -> None:
        """Paced: students see an answer only once the teacher reveals it; otherwise each reveals their own."""
        self._mark(paced_table, paced, lesson=lesson)

    def paced(self, lesson: str) -> bool:
        return self._marked(paced_table, lesson=lesson)

    def clear(self, lesson: str) -> None:
        """Forget every answer and reveal of ``lesson`` (a new class)."""
        with self._transaction() as db:
            for table in (answers_table, reveals_table):
                db.execute(sa.delete(table).where(table.c.lesson == lesson))

    # --- teacher unlocks -------------------------------------------------------------------------

    def unlock(self, unlock: str, expires: float) -> None:
        """Keep a teacher's unlock (an opaque id) until ``expires`` (seconds since the epoch); expired ones go."""
        with self._transaction() as db:
            db.execute(sa.delete(unlocks_table).where(unlocks_table.c.expires < time.time()))
            db.execute(sa.insert(unlocks_table).values(unlock=unlock, expires=expires))

    def unlocked(self, unlock: str) -> bool:
        """Whether the unlock is kept and has not expired: Lock (``lock``) ends it on every server."""
        query = sa.select(unlocks_table.c.expires).where(unlocks_table.c.unlock == unlock)
        with self._transaction() as db:
            expires = db.execute(query).scalar()
        return expires is not None and expires > time.time()

    def lock(self, unlock: str) -> None:
        with self._transaction() as db:
            db.execute(sa.delete(unlocks_table).where(unlocks_table.c.unlock == unlock))

    # --- helpers ---------------------------------------------------------------------------------

    def _mark(self, table: sa.Table, on: bool, **key) -> None:
        """A row of ``table`` for ``key`` (present: on); setting it twice, from two servers at once, keeps one."""
        with self._transaction() as db:
            present = db.execute(sa.select(table).where(*_where(table, **key))).first() is not None
            if present and not on:
                db.execute(sa.delete(table).where(*_where(table, **key)))
        if on and not present:
            with contextlib.suppress(IntegrityError), self._transaction() as db:  # set meanwhile elsewhere: kept
                db.execute(sa.insert(table).values(**key))

    def _marked(self, table: sa.Table, **key) -> bool:
        with self._transaction() as db:
            return db.execute(sa.select(table).where(*_where(table, **key))).first() is not None


def _where(table: sa.Table, **key) -> list:
    return [table.c[name] == value for name, value in key.items()]


def open_class(url: str) -> tuple[ClassAnswers, str | None]:
    """The class kept in the database at ``url``, or, where it cannot be reached, in memory with a one-line
    warning that says so (a restart of the server then loses the class). The warning names the database by its
    kind and host only (no path, no password): students see it; the driver's own message goes to the log."""
    try:
        return ClassAnswers(url), None
    except (SQLAlchemyError, ImportError, OSError) as err:  # no server, refused, a missing driver, a bad path
        log.warning("class database %s unreachable: %s", _shown(url), err)
        return ClassAnswers(IN_MEMORY), (
            f"The class database ({_shown(url)}) cannot be reached: the class is kept in this server's memory, "
            "and a restart of the server loses it."
        )


def _shown(url: str) -> str:
    """The database's kind and host, e.g. "postgresql on db.school:5432", or "a SQLite file"."""
    try:
        parsed = sa.engine.make_url(url)
    except SQLAlchemyError:
        return "a malformed URL"
    if parsed.get_backend_name() == "sqlite":
        return "a SQLite file"
    where = f"{parsed.host}:{parsed.port}" if parsed.port else parsed.host or "a local socket"
    return f"{parsed.get_backend_name()} on {where}"
