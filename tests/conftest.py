"""Shared fixtures: an isolated run store, small synthetic data, a tenth of MovieLens 100K; what the suite shares per
session (one app server for the browser tests, the derivation catalogue checked once); how `make test`
spreads the suite over its workers and what `make test-fast` leaves out (markers).

Markers, set here by file so that a new test in a file gets them: ``browser`` (tests/test_browser*.py, drives
Chromium), ``notebook`` (a notebook executed by nbmake), ``app`` (tests/test_pages_*.py, AppTests of the pages) and
``slow`` (the tests in ``SLOW``: more than about 5 s each on an idle 2-core machine). `make test-fast` deselects all
four: what is left are the unit, property and sympy tests.

Workers (`make test`: ``-n 2 --dist loadgroup``): the tests are dealt to the workers in groups, and a group runs
on one worker (``GroupScheduling``, which conftest makes xdist use for ``--dist loadgroup``: xdist's own marks a
group in the test's node id, which pytest 9 no longer lets it change). The files ``GROUPS`` names share one group:
every browser test one app server, the derivation tests one checked catalogue. A file with a
module- or class-scoped fixture is one group, so that the fixture is built once; so is a notebook; every other test
is a group of its own, so that a heavy file spreads over both workers. The heavy files go first (``HEAVY_FIRST``,
longest first as measured; then the rest in collection order), so that the last groups to finish are short ones
and neither worker waits long on the other.
"""

from __future__ import annotations

import atexit
import functools
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from queue import Empty
from urllib.parse import urlsplit

import pytest
import torch
from patience import slowdown

from fmlib import trainings
from fmlib.data import split, synthetic

torch.set_num_threads(1)  # tiny tensors: one thread is as fast, and robust on a busy machine
os.environ.setdefault("FMLIB_STARTER_RUNS", "0")  # no background starter runs in tests (and their servers)
# no warm-up either: each app server and each worker that runs app.py would check every derivation's first line
# again, in forked children (test_pages_foundation.py tests the warm-up itself)
os.environ.setdefault("FMLIB_WARM_UP", "0")


@pytest.fixture(autouse=True)
def _main_module_kept():
    """Restore ``__main__`` after each test. AppTest runs a page as ``__main__`` and leaves it there, and a process
    that multiprocessing spawns later in the same test worker (``tune --workers 2``) imports ``__main__`` again: it ran
    the field-interactions page and failed, whenever xdist gave that worker a page test first."""
    main = sys.modules["__main__"]
    yield
    sys.modules["__main__"] = main


def _patient_client():
    """A kernel client whose wait for a message wakes once a second to look for itself.

    pyzmq's asyncio poll can miss the wakeup of a message that has arrived: the message is then read only when the
    wait's time limit runs out, and that limit is nbmake's per-cell 300 s. Notebooks passed after idling that long (03
    at 316 s instead of 27 s, 02 at 343 s instead of 47 s this way; 05, 08 and 01 in earlier runs): the kernel idle, its
    reply sent, the test's worker asleep in the poll. Polled in slices of a second, a missed wakeup costs a second."""
    from jupyter_client.asynchronous import AsyncKernelClient
    from jupyter_client.channels import AsyncZMQSocketChannel

    class PatientChannel(AsyncZMQSocketChannel):
        async def get_msg(self, timeout: float | None = None) -> dict:
            deadline = None if timeout is None else time.monotonic() + timeout
            while True:
                left = 1.0 if deadline is None else max(0.0, min(1.0, deadline - time.monotonic()))
                if await self.socket.poll(int(left * 1000)):  # its end looks at the socket, missed wakeup or not
                    return await self._recv()
                if deadline is not None and time.monotonic() >= deadline:
                    raise Empty

    class PatientClient(AsyncKernelClient):
        shell_channel_class = iopub_channel_class = stdin_channel_class = control_channel_class = PatientChannel

    return PatientClient


def _notebook_kernels_configured():
    """nbmake's kernels talk to this worker over Unix sockets in a folder of its own, not over TCP ports: a kernel's
    manager picks free ports by binding and releasing them, so two workers starting kernels at the same moment could
    pick the same port, and one kernel died with "ZMQError: Address already in use". The worker waits for their
    messages with ``_patient_client``."""
    from jupyter_client.manager import KernelManager
    from nbmake import nb_run
    from traitlets.config import Config

    folder = tempfile.mkdtemp(prefix="fmlib-kernels-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    sockets = Path(folder) / "kernel"  # kernel-1, kernel-2, ...: this worker's notebooks run one at a time
    client = _patient_client()
    config = Config({KernelManager.__name__: {"transport": "ipc", "ip": str(sockets), "client_factory": client}})
    nb_run.NotebookClient = functools.partial(nb_run.NotebookClient, config=config)


_notebook_kernels_configured()


def _installed_components_scanned_once():
    """Every new AppTest scans the metadata of every installed package for Streamlit components, 0.2-0.25 s of CPU
    each (tests/test_pages_links.py alone: 78 s with it, 54 s without); the installed packages do not change during a
    run, so each worker scans them once."""
    from streamlit.components.v2 import manifest_scanner

    manifest_scanner.scan_component_manifests = functools.cache(manifest_scanner.scan_component_manifests)


_installed_components_scanned_once()

ROOT = Path(__file__).resolve().parent.parent

# Files whose tests share a session fixture, run on one worker: the browser tests one app server
# (browser_app.py), the derivation tests the catalogue checked once (``derivation_results``).
GROUPS = {
    "browser": ("test_browser.py", "test_browser_lesson.py", "test_browser_playground.py", "test_browser_projector.py"),
    "derivations": ("test_derivations.py", "test_pages_derivations.py", "test_pages_math.py", "test_pages_measured.py"),
}
GROUP_OF = {f"tests/{name}": group for group, names in GROUPS.items() for name in names}

# The groups that take longest, longest first (seconds of one worker on an idle 2-core machine, from `make test`'s
# --durations and the README's test section); every other group starts after them, in collection order.
HEAVY_FIRST = (
    "browser",
    "derivations",
    "notebooks/02_field_interactions.ipynb",
    "tests/test_browser_class.py",
    "tests/test_recompute.py",
    "notebooks/05_derivations.ipynb",
    "notebooks/06_attention_inversion.ipynb",
    "tests/test_pages_links.py",
    "tests/test_derivations_autograd.py",
    "tests/test_bench_classroom.py",
    "tests/test_derivations_checker.py",
    "tests/test_pages_state.py",
    "tests/test_pages_classroom.py",
    "tests/test_pages_inversion.py",
    "tests/test_tune.py",
    "tests/test_pages_interactions.py",
    "notebooks/01_fm_from_scratch.ipynb",
    "notebooks/07_feature_sets.ipynb",
    "notebooks/03_rank_aware_fm.ipynb",
    "notebooks/04_rotations_and_gradients.ipynb",
    "notebooks/08_your_own_model.ipynb",
)

# Tests `make test-fast` leaves out although they are neither browser, notebook nor app tests: file -> prefixes of
# the test names ("" for the whole file). Each trains on MovieLens, runs the CLI or a class in subprocesses, or
# checks a derivation at length.
SLOW = {
    "tests/test_tune.py": ("test_cli_", "test_two_studies", "test_the_seeded_recipe", "test_workers_share"),
    "tests/test_recompute.py": ("",),
    "tests/test_bench_classroom.py": ("test_a_small_class", "test_a_class_on_the_playground"),
    "tests/test_cli.py": ("test_bench_train",),
    "tests/test_derivations_autograd.py": ("test_rfm_part_ii",),
    "tests/test_data_large.py": ("test_data_info_exits_2",),
    "tests/test_dplr_experiment.py": ("test_reproduce_writes",),
}


def _relative(item) -> str:
    return Path(item.path).resolve().relative_to(ROOT).as_posix()


@pytest.hookimpl(tryfirst=True)  # before the mark plugin deselects by marker
def pytest_collection_modifyitems(config, items):
    for item in items:
        path = _relative(item)
        name = Path(path).name
        if path.endswith(".ipynb"):
            item.add_marker(pytest.mark.notebook)
        if name.startswith("test_browser"):
            item.add_marker(pytest.mark.browser)
        if name.startswith("test_pages_"):
            item.add_marker(pytest.mark.app)
        if any(item.name.startswith(prefix) for prefix in SLOW.get(path, ())):
            item.add_marker(pytest.mark.slow)
    heavy = {group: rank for rank, group in enumerate(HEAVY_FIRST)}
    order = {}  # group -> position of its first test: a group's tests stay together, in their order
    for i, item in enumerate(items):
        order.setdefault(group_of(item.nodeid), i)
    items.sort(key=lambda item: (heavy.get(heavy_key(item.nodeid), len(heavy)), order[group_of(item.nodeid)]))


def heavy_key(nodeid: str) -> str:
    path = nodeid.split("::")[0]
    return GROUP_OF.get(path, path)


@functools.cache
def shares_a_fixture(path: str) -> bool:
    """Whether the test file ``path`` defines a fixture that outlives a test but not the session."""
    return bool(re.search(r"scope=[\"'](module|class|package)[\"']", (ROOT / path).read_text(errors="replace")))


def group_of(nodeid: str) -> str:
    """The group of the test ``nodeid``: its files' shared group, its file, or the test alone."""
    path = nodeid.split("::")[0]
    if path in GROUP_OF:
        return GROUP_OF[path]
    if not path.endswith(".py") or shares_a_fixture(path):
        return path
    return nodeid


def pytest_xdist_make_scheduler(config, log):
    """``--dist loadgroup`` deals whole groups (``group_of``) to the workers, in collection order (heaviest first)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid)

    config.option.loadscopereorder = False  # keep the collection's order: heaviest groups first
    return GroupScheduling(config, log)


@pytest.hookimpl(hookwrapper=True, tryfirst=True)  # before pytest-timeout reads the test's limit
def pytest_runtest_protocol(item, nextitem):
    """pytest-timeout's limit (pytest.ini: 600 s, a test's own ``timeout`` mark) guards against a hang: it is
    stretched by how busy the machine is when the test starts (patience.slowdown)."""
    mark = item.get_closest_marker("timeout")
    base = (mark.args[0] if mark.args else mark.kwargs.get("timeout")) if mark else None
    base = base or item.config.getoption("timeout", None)
    if base:
        item.add_marker(pytest.mark.timeout(float(base) * slowdown()), append=False)  # the closest mark: first
    yield


@pytest.fixture(autouse=True)
def isolated_runs(tmp_path, monkeypatch):
    """Every test gets its own run store and its own cache of trainings (``fmlib.trainings``), so saved runs never
    leak between tests and a test that waits for a training's progress never finds it kept by an earlier one. The
    processes the tests start (notebook kernels, app servers) share this machine's cache: notebook 02 and the
    lesson walk's stop 4 train the same tuned FwFM, and the second to ask loads it."""
    monkeypatch.setenv("FMLIB_RUNS", str(tmp_path / "runs"))
    monkeypatch.setattr(trainings, "root", lambda: tmp_path / "trainings")


@pytest.fixture(autouse=True)
def one_torch_thread():
    """A test fails if it leaves its worker with more than one torch thread (conftest sets one): a thread count
    is the process's, and every later test of the worker would pay for it. A tuning test did so once (tune set
    a thread a core), and the worker's later tests spent two cores' spin beside the other worker's."""
    yield
    threads = torch.get_num_threads()
    if threads != 1:
        torch.set_num_threads(1)
        pytest.fail(f"the test left torch with {threads} threads (set once per process: conftest sets 1)")


@pytest.fixture(autouse=True)
def _clear_streamlit_caches():
    import streamlit as st

    st.cache_data.clear()
    st.cache_resource.clear()


@pytest.fixture(autouse=True)
def no_request_leaves_the_room(request):
    """A browser test fails if its pages sent any request to a host other than the app's server (browser_app
    notes them): a classroom without internet must lose nothing."""
    if request.node.get_closest_marker("browser") is None:
        yield
        return
    from browser_app import ELSEWHERE

    ELSEWHERE.clear()
    yield
    hosts = sorted({urlsplit(url).hostname for url in ELSEWHERE})
    assert not ELSEWHERE, f"requests left the server for {hosts}: {ELSEWHERE[:5]}"


@pytest.fixture(autouse=True)
def no_console_error(request):
    """A browser test fails if its pages logged a console error or warning or threw an uncaught exception
    (browser_app notes them): what a class's browser would show in its console."""
    if request.node.get_closest_marker("browser") is None:
        yield
        return
    from browser_app import CONSOLE

    CONSOLE.clear()
    yield
    assert not CONSOLE, f"{len(CONSOLE)} console problem(s): {CONSOLE[:5]}"


@pytest.fixture
def small_split():
    torch.manual_seed(0)
    data = synthetic.make(synthetic.block_R(6), n_samples=3000, cardinality=12, dim=3, seed=0)
    return split(data, seed=0)


SAMPLE_FRACTION = 10  # movielens_sample keeps one rating in this many


@functools.cache
def _movielens_sample():
    """A seeded tenth of MovieLens 100K's ratings, drawn once per process; its schema (every user, movie and field)
    and its name are the data set's."""
    from fmlib.data import movielens

    full = movielens.load("ml-100k")
    rows = torch.randperm(len(full), generator=torch.Generator().manual_seed(0))[: len(full) // SAMPLE_FRACTION]
    return full.subset(rows.sort().values)


@pytest.fixture
def movielens_sample(monkeypatch):
    """MovieLens 100K served as a seeded tenth of its ratings wherever it is loaded (a command, a page), for the
    tests of what a command or page does with it: they train on it for a few epochs, each a tenth of the steps. Its
    name, fields and features (``rated``, ``raters``) stay MovieLens's."""
    from fmlib.data import movielens

    load, sample = movielens.load, _movielens_sample()

    def sampled(name="ml-100k", data_dir=None, cache_dir=None, log=None):
        if name == "ml-100k" and data_dir is None and cache_dir is None:
            return sample
        return load(name, data_dir, cache_dir, log)

    monkeypatch.setattr(movielens, "load", sampled)


@pytest.fixture(scope="session")
def derivation_check_seconds():
    """Every line of the derivation catalogue (each step's corrected line, its printed slip, its wrong variants)
    checked once per session, here, one after another: [(derivation, step number, line, CPU seconds)]. In one
    process the checks share sympy's cache, and no child is forked for each (24 s of CPU for the catalogue, where a
    forked child per line took 44 s); the checker's time limit is asserted on these CPU seconds instead
    (test_derivations.py). The checker keeps every result, so that ``derivation_results`` and the page tests of the
    same worker (the group "derivations") find every line already checked."""
    from fmlib.derivations import catalog
    from fmlib.derivations.checker import run_check

    seconds = []
    for derivation in catalog():
        for number, step in enumerate(derivation.steps, 1):
            printed = [("printed", step.printed.check)] if step.printed else []
            for line, check in [("corrected", step.check), *printed, *((w.label, w.check) for w in step.wrong)]:
                start = time.process_time()
                run_check(check, timeout=None)  # in this process: its CPU time is the check's
                seconds.append((derivation.key, number, line, time.process_time() - start))
    return seconds


@pytest.fixture(scope="session")
def derivation_results(derivation_check_seconds):
    """Every step of the derivation catalogue with its checked lines (``derivation_check_seconds`` checked them)."""
    from fmlib.derivations import catalog, check_derivations

    return check_derivations(catalog())


@pytest.fixture(scope="module")
def browser():
    """Debian's Chromium under Playwright, one per test module (it starts in about a second): every test opens its own
    context in it. Not one per session: Playwright's synchronous API keeps an asyncio loop running in the worker's
    thread while it is open, and later tests of the same worker that run a loop of their own (the classroom bench's
    asyncio.run, a notebook's kernel client) would fail or hang."""
    from browser_app import launch

    with launch() as chromium:
        yield chromium


@pytest.fixture(scope="module")
def window(browser):
    """One tab for the tests of a module that each open the app as a browser new to it (browser_app.as_new_browser),
    so that its context's cache keeps the app's scripts compiled from one test to the next."""
    from browser_app import new_tab

    tab = new_tab(browser, {"width": 1280, "height": 720})
    yield tab
    tab.context.close()


@pytest.fixture(scope="session")
def app_server(tmp_path_factory):
    """The app, one server for every browser test of the session (browser_app.serve_app)."""
    from browser_app import serve_app

    with serve_app(tmp_path_factory.mktemp("app")) as server:
        yield server
