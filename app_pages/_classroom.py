"""What a class shares: the training queue, saved runs by author, the teacher's passcode and unlock.

Not a page. The Train page submits trainings here, the frame's sidebar shows this session's
training and the run picker, the Teacher page checks the passcode and unlocks this browser (a signed,
expiring token in a cookie, its unlock kept in the class's database, so that a reload keeps it). A training belongs to its
session: its token stays in the URL (``?training=...``) while it is queued or running, so a reload
follows it again; one that no session has looked at for FMLIB_ORPHAN_SECONDS is cancelled.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
import time
import unicodedata

import streamlit as st

from app_pages._lesson import class_answers, class_warning
from app_pages._queue import job_queue, progress_of
from app_pages._replay import training_controls
from app_pages._ui import run_store
from app_pages._view import SIDEBAR, chart, note_dropped, without_paths
from fmapp.jobs import Job
from fmlib.plots.training import learning_curves
from fmlib.runs import RunError
from fmlib.snapshots import Snapshots
from fmlib.train import MONITOR, train_model

TEACHER_COOKIE = "fmlib_teacher"
TOKEN = re.compile(r"[A-Za-z0-9_-]{22}")  # a training's token (fmapp.jobs: secrets.token_urlsafe(16))


def submit_training(model: str, data, config, hp: dict) -> None:
    """Queue this session's training (replacing a pending one of the same session); its token goes into
    the URL, so that a reload of the page finds it again."""
    previous = st.session_state.get("train_job")
    if previous is not None:
        job_queue().cancel(previous)
    st.session_state.pop("train_message", None)
    live = Snapshots()  # filled epoch by epoch: what the page shows while the training is paused
    job = job_queue().submit(
        lambda job: train_model(model, data, config, job.report, snapshots=live, **hp), watched=True, live=live
    )
    st.session_state["train_job"] = job
    st.query_params["training"] = job.token


def session_training() -> Job | None:
    """This session's training while it is queued or running (or has just ended): after a reload (a new
    session), the one whose token the URL's ``training`` holds. A token the server no longer knows is
    dropped from the URL with a note."""
    job = st.session_state.get("train_job")
    token = st.query_params.get("training")
    if job is None and token is not None:
        job = job_queue().find(token)
        if job is None:
            why = (
                "it is not a training's token"
                if not TOKEN.fullmatch(token)
                else "that training is no longer on the server (it ended, or nobody followed it for "
                f"{job_queue().orphan_seconds:.0f} s and it was cancelled)"
            )
            note_dropped("training", why)
            return None
        st.session_state["train_job"] = job
    elif job is not None and token != job.token and not job.done:  # the URL lost it (another page's link)
        st.query_params["training"] = job.token
    return job


def follow_training() -> None:
    """This session's training: its place in line (with Cancel), then live curves; at the end the run
    is kept in ``st.session_state["trained"]`` and a line says how it went."""
    if session_training() is not None:
        _training_status()
    kind, text = st.session_state.pop("train_message", (None, None))
    if kind:
        getattr(st, kind)(text)


def training_in_sidebar() -> None:
    """Sidebar of every page: this session's training (place in line or epoch, with Cancel); once it
    ended, a link to the Train page until that page has shown how it went."""
    if session_training() is not None:
        _sidebar_status()
    elif "train_message" in st.session_state:
        st.page_link(
            "app_pages/train.py", label="Your training ended: see it on Train", icon=":material/model_training:"
        )


def _poll() -> Job | None:
    """A follower's look at this session's training: it is seen (kept alive); once ended, its outcome
    goes into the session and the whole page runs again. None: nothing to follow any more."""
    job = st.session_state.get("train_job")
    if job is None:  # ended in the other follower's run
        return None
    job.seen()
    if job.done:
        _finish(job)
        st.rerun()
    return job


def _finish(job: Job) -> None:
    """Keep an ended training's run and a line on how it went; its token leaves the URL."""
    del st.session_state["train_job"]
    st.query_params.pop("training", None)
    if job.state == "done":
        run = job.result
        best = max(r["epoch"] for r in run.history if r["best"])
        st.session_state["trained"] = run
        st.session_state["train_message"] = (
            "success",
            f"Done: {len(run.history)} epochs in {run.seconds:.1f} s (best epoch {best}) "
            f"after {job.wait_seconds:.1f} s in line.",
        )
    elif job.state == "cancelled":
        st.session_state["train_message"] = ("info", "Training cancelled.")
    else:
        st.session_state["train_message"] = ("error", job.error)


@st.fragment(run_every=1.0)
def _training_status() -> None:
    job = _poll()
    if job is None:
        return
    queue = job_queue()
    position = queue.position(job)
    if position:
        st.info(f"Queued, position {position}: this server trains {queue.workers} model(s) at a time.")
    elif job.records:
        last = job.records[-1]
        metric = next(m for m in MONITOR.values() if f"valid_{m}" in last)
        st.progress(
            last["epoch"] / last["epochs"],
            text=f"epoch {last['epoch']}/{last['epochs']} · valid {metric} {last['valid_' + metric]:.4f}",
        )
        chart(learning_curves(list(job.records)), key="live_curves")
    else:
        st.progress(0.0, text="starting ...")
    training_controls(job)  # pause after an epoch, one more epoch, resume; the epochs so far while paused
    st.button("Cancel training", key="cancel_training", on_click=queue.cancel, args=(job,))


@st.fragment(run_every=1.0)
def _sidebar_status() -> None:
    job = _poll()
    if job is None:
        return
    queue = job_queue()
    position = queue.position(job)
    if position:
        st.progress(0.0, text=f"Your training: queued, position {position}")
    elif job.records:
        fraction, text = progress_of(job.records[-1])
        st.progress(fraction, text=f"Your training: {text}")
    else:
        st.progress(0.0, text="Your training: starting ...")
    st.button("Cancel training", key="sidebar_cancel_training", on_click=queue.cancel, args=(job,))


def author() -> str | None:
    """The name this session saved its runs under, if it saved any."""
    return st.session_state.get("classroom_author")


def slug(text: str) -> str:
    """``text`` as part of a run id: accents dropped, every run of spaces or other characters that a run id cannot
    hold made one '-', no '-' or '.' at either end ("my fwfm" → "my-fwfm", "../x" → "x")."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", ascii_text).strip("-.")


def run_id_of(who: str, name: str) -> str:
    """The id of ``who``'s run named ``name`` (a slug): ``<author slug>-<name>``, so that names are unique per
    author and two students may both save "my-fwfm"."""
    return f"{slug(who).lower() or 'student'}-{name}"


def run_name(run_id: str, who: str | None) -> str:
    """The name an author gave a run (its id without the author's prefix), for the message after saving."""
    return run_id.removeprefix(f"{slug(who).lower() or 'student'}-") if who else run_id


def save_run(run) -> None:
    """Save button callback: save under the author's name, make it the sidebar's pick, leave a message.
    A name is made a slug (shown in the message); the same run saved again under the same name (a double
    click) is not saved twice."""
    given = (st.session_state.get("save_name") or "").strip()
    who = (st.session_state.get("save_author") or "").strip()
    if not who:
        st.session_state["save_message"] = ("error", "Your name: required, so that your runs are listed as yours.")
        return
    name = slug(given) if given else None
    if given and not name:
        st.session_state["save_message"] = ("error", f"Run name {given!r}: use letters or digits.")
        return
    run_id = run_id_of(who, name) if name else None
    if run_id is not None and len(run_id) > 80:
        room = 80 - len(run_id) + len(name)
        st.session_state["save_message"] = ("error", f"Run name: at most {room} letters, digits, '-', '_' or '.'.")
        return
    saved = _saved_already(run, run_id, who)
    if saved is None:
        if run_id is not None and run_id in run_store().ids():
            st.session_state["save_message"] = (
                "error",
                f"You already have a run named {name}: choose another name, or leave it empty for a dated one.",
            )
            return
        try:
            saved = run_store().save(run, run_id, author=who)
        except (ValueError, OSError) as err:  # bad author, a full store: nothing was written
            st.session_state["save_message"] = ("error", without_paths(str(err)))
            return
        st.session_state["saved_run"] = (run, saved, who)
    st.session_state["classroom_author"] = who
    st.session_state["run_owner"], st.session_state["run_id"] = who, saved
    made = f" (from {given!r}: a run name keeps letters, digits, '-', '_' and '.')" if name not in (None, given) else ""
    st.session_state["save_message"] = (
        "success",
        f"Saved as {run_name(saved, who)}{made}: it appears in the sidebar under your name.",
    )


def _saved_already(run, run_id: str | None, who: str) -> str | None:
    """The id this session saved ``run`` under, if this click asks for that same save again."""
    last, saved, by = st.session_state.get("saved_run", (None, None, None))
    if last is run and by == who and run_id in (None, saved) and saved in run_store().ids():
        return saved
    return None


def save_message() -> None:
    kind, text = st.session_state.pop("save_message", (None, None))
    if kind:
        getattr(st, kind)(text)


def run_picker() -> None:
    """Sidebar: whose runs (yours, shared, then each author), then one of them, newest first.

    With neither runs of its own nor shared ones, a session picks none: another author's run is
    never its default. The store is read on every run: a run deleted meanwhile (on the Teacher page,
    by another server process) is gone from the lists, and if it was the selected one a note says so."""
    store = run_store()
    groups = {"" if a is None else a: ids for a, ids in store.by_author().items()}  # "": shared
    owner_of = {run_id: a for a, ids in groups.items() for run_id in ids}
    if groups:  # before a deleted pick leaves the session: a link's run id is checked on its first run only
        SIDEBAR.check("run_id", check=(owner_of.__contains__, "no saved run has that id"))
    deleted = st.session_state.get("run_id")
    if deleted is None or deleted in owner_of:
        deleted = None
    else:
        del st.session_state["run_id"]
    run_id = _pick(groups, owner_of) if groups else None
    if not groups:
        st.caption("No saved runs yet: train one on the Train page.")
    if deleted is not None:
        showing = f"showing {run_id}" if run_id else "no run is selected"
        st.warning(f"The run {deleted} you had selected was deleted by the teacher; {showing}.")
    if run_id is None:
        return
    try:
        info = store.info(run_id)
        test = info["metrics"].get("test", {})
        st.caption(
            f"{info['config']['model']} on {info['config']['dataset']} · "
            + ", ".join(f"test {k} {v:.4f}" for k, v in test.items())
        )
    except RunError as err:
        st.error(str(err))


def _pick(groups: dict[str, list[str]], owner_of: dict[str, str]) -> str | None:
    """The run picker's two select boxes (author, then run); the picked run id, or None."""
    me = author()
    owners = [a for a in (me, "") if a in groups] + sorted(a for a in groups if a not in (me, ""))
    if "run_id" not in st.session_state and st.query_params.get("run_id") in owner_of:  # a linked run: its author
        st.session_state["run_owner"] = owner_of[st.query_params["run_id"]]
    if st.session_state.get("run_owner") not in (None, *owners):  # that author's runs were deleted
        del st.session_state["run_owner"]
    owner = st.selectbox(
        "Whose runs",
        owners,
        index=0 if owners[0] in (me, "") else None,
        key="run_owner",
        placeholder="pick an author",
        format_func=lambda a: "shared" if a == "" else f"{a} (you)" if a == me else a,
    )
    if owner is None:
        st.session_state.pop("run_id", None)
        return None
    if st.session_state.get("run_id", groups[owner][0]) not in groups[owner]:
        del st.session_state["run_id"]
    return SIDEBAR.widget(  # its link was checked before (run_picker), even if no author is picked
        "run_id",
        st.selectbox,
        "Saved run",
        groups[owner],
        default=groups[owner][0],  # shown by id: a bound box writes the label it shows into the URL, and reads it back
    )


def teacher_passcode() -> str | None:
    """The passcode from Streamlit secrets (teacher_passcode) or FMLIB_TEACHER_PASSCODE; None: not set."""
    try:
        secret = st.secrets.get("teacher_passcode")
    except Exception:  # no secrets file: Streamlit raises instead of returning None
        secret = None
    return secret or os.environ.get("FMLIB_TEACHER_PASSCODE") or None


def teacher_or_alone() -> bool:
    """Whether this session may run teacher actions: it unlocked the Teacher page, or the server
    has no passcode (one person's own app, not a class)."""
    return teacher_passcode() is None or teacher_unlocked()


def passcode_ok(given: str) -> bool:
    expected = teacher_passcode()
    return expected is not None and hmac.compare_digest(given.encode(), expected.encode())


# --- the teacher's unlock: a signed, expiring token in a cookie, kept in the class's database ---------------------


def class_hours() -> float:
    """How long an unlock lasts (FMLIB_CLASS_HOURS, default 3): a class's length."""
    return float(os.environ.get("FMLIB_CLASS_HOURS", "3"))


def _signature(body: str) -> str:
    """HMAC-SHA256 of ``body`` under a key derived from the passcode: a new passcode voids every token."""
    key = hashlib.sha256(b"fmlib teacher unlock\0" + teacher_passcode().encode()).digest()
    return hmac.new(key, body.encode(), "sha256").hexdigest()


def unlock_teacher() -> None:
    """After the right passcode: this session is the teacher's, and so is every later session of this browser (a
    reload, a lesson's URL typed in) until the class's length has passed or Lock ends it. The browser keeps the
    token ``<unlock id>.<expiry>.<signature>`` in a cookie; the class's database keeps the unlock id, so every
    server of the class accepts it and Lock on any of them ends it."""
    unlock, expires = secrets.token_hex(16), int(time.time() + class_hours() * 3600)
    class_answers().unlock(unlock, expires)
    token = f"{unlock}.{expires}.{_signature(f'{unlock}.{expires}')}"
    st.session_state.update(teacher=True, teacher_token=token, teacher_cookie=(token, expires - int(time.time())))


def lock_teacher() -> None:
    """Lock: end this browser's unlock, on every server of the class, and forget its cookie."""
    token = st.session_state.pop("teacher_token", None)
    if token:
        class_answers().lock(token.split(".")[0])
    st.session_state.update(teacher=False, teacher_cookie=("", 0))


def teacher_unlocked() -> bool:
    """Whether this session is the unlocked teacher's. A new session (a reload, a typed URL) takes the browser's
    token from its cookie; a token is checked on every run, and one that was altered, has expired or was ended
    by Lock leaves the session locked, with a note in the sidebar."""
    if teacher_passcode() is None:
        return False
    state = st.session_state
    if "teacher" not in state:  # this session's first look: the browser's cookie, if any
        state["teacher"] = False
        cookie = st.context.cookies.get(TEACHER_COOKIE)
        if isinstance(cookie, str) and cookie:  # a browser's cookie is text (AppTest's client has none)
            state["teacher_token"] = cookie
    token = state.get("teacher_token")
    if token is not None:
        refused = _refused(token)
        if refused:
            lock_teacher()
            state["teacher_note"] = refused
        else:
            state["teacher"] = True
    return bool(state["teacher"])


def _refused(token: str) -> str | None:
    """Why ``token`` does not unlock the teacher's controls, or None when it does."""
    parts = token.split(".")
    if len(parts) != 3 or not hmac.compare_digest(parts[2], _signature(f"{parts[0]}.{parts[1]}")):
        return "The teacher's unlock in this browser was not accepted (altered, or from before a new passcode): locked."
    if not parts[1].isdigit() or int(parts[1]) < time.time():
        return f"The teacher's unlock in this browser has expired (it lasts {class_hours():g} h): locked."
    if not class_answers().unlocked(parts[0]):
        return "The teacher's unlock in this browser was ended (Lock, or the class's database was reset): locked."
    return None


def class_in_sidebar() -> None:
    """Sidebar of every page: a line when the class's database cannot be reached, a note when a teacher's token was
    refused, and the teacher's cookie written or cleared after an Unlock or a Lock."""
    if warning := class_warning():
        st.warning(warning)
    teacher_unlocked()
    if note := st.session_state.pop("teacher_note", None):
        st.info(note + " Unlock again on the Teacher page.")
    if pending := st.session_state.pop("teacher_cookie", None):
        value, seconds = pending
        cookie = f"{TEACHER_COOKIE}={value}; Max-Age={seconds}; Path=/; SameSite=Strict"
        st.html(f"<script>document.cookie = {json.dumps(cookie)};</script>", unsafe_allow_javascript=True)
