"""Per-epoch snapshots of what the pages draw, so that a run can be replayed epoch by epoch.

``fmlib.train.fit`` takes one snapshot before the first epoch (epoch 0: the initial weights, or for a
fine-tune the weights it starts from) and one after every epoch, of the weights it evaluates that
epoch (with weight averaging, the running mean). A snapshot keeps only what a replay draws:

- R, the m×m field interaction matrix of an FwFM ([DPLR] eq. 3, learned) or of a DPLR ([DPLR]
  eq. 10, implied by U, e): the model's ``interaction_matrix()``, when it has one;
- the embeddings v_m of the ``MOVIES`` movies rated most often in training: rows of the model's
  ``feature_table()`` (the shared table, [DPLR] eq. 4; RaFM: the level-1 table, [RaFM] eq. 6 — the
  table ``fmlib.analysis.movie_map.movie_vectors`` reads), with their titles.

The learning curves need no snapshot: they are the run's history. A 40-epoch FwFM of 12 fields
and 16-dimensional embeddings keeps 41 · (144 + 40 · 16) numbers, about 130 KB as float32.

**Why a fixed projection, not one per epoch.** The movie map is a 2-D picture of k-dimensional
vectors. A principal-component projection fitted anew at every epoch fixes each axis only up to
sign and order, so the picture could flip or swap axes from one epoch to the next though the
embeddings barely moved. ``movie_map.movie_paths`` therefore fits one projection — the first two principal
axes of the final epoch's (centred) embeddings, oriented as the movie map orients them —
and applies that same linear map to every epoch's centred embeddings. A point moves
on the replay only when its vector moves; early epochs, whose embeddings are still close to their
small random initialisation, show as a cloud near the origin that unfolds into the final map.
(Procrustes alignment of per-epoch projections would also remove the flips, but it rotates each
epoch's picture by a different matrix, so a movement on screen would mix the vectors' motion with
the alignment's.) The share of each epoch's variance that the final axes capture is returned with
the paths, so a reader sees when an early epoch's picture hides most of its spread.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

MOVIES = 40  # movies on the replayed map: the most rated in training
MOVIE_FIELD = "movie_id"


def movie_rows(model, rows: torch.Tensor) -> torch.Tensor:
    """The embeddings v_i of the feature rows ``rows``, from the model's ``feature_table()``."""
    V = model.feature_table().V
    return V[rows.to(V.device)]


def most_rated(train, count: int = MOVIES) -> tuple[np.ndarray, list[str], list[str]]:
    """(table rows, labels, titles) of the ``count`` movies rated most often in ``train`` (ties: lower
    row first), the rare bucket (the field's local index 0) left out. Empty when ``train`` has no
    movie_id field. Titles come from ``train.movies`` where it has them, else "movie <label>"."""
    schema = train.schema
    if MOVIE_FIELD not in schema.names:
        return np.zeros(0, dtype=np.int64), [], []
    f = schema.names.index(MOVIE_FIELD)
    movie = schema.fields[f]
    column = train.index[:, schema.slot_fields().index(f)].long() - movie.offset
    counts = torch.bincount(column, minlength=movie.cardinality).numpy()
    counts[0] = 0  # the rare bucket is not a movie
    order = np.argsort(-counts, kind="stable")[:count]
    local = order[counts[order] > 0]
    labels = [str(movie.values[i]) if i < len(movie.values) else str(i) for i in local]  # a schema without values: i
    titles = [f"movie {label}" for label in labels]
    if train.movies is not None:
        table = train.movies.assign(key=train.movies["movie_id"].astype(str)).set_index("key")["title"]
        titles = [str(table.get(label, f"movie {label}")) for label in labels]
    return movie.offset + local, labels, titles


@dataclass
class Snapshots:
    """A run's snapshots: ``epochs`` [0, 1, 2, ...]; per epoch ``R`` (m×m, if the model has one) and
    ``vectors`` (n×k embeddings of the movies ``labels``/``titles``, if it has movie embeddings).

    ``fit`` fills it while it trains (``start``, then ``take`` per epoch); another thread may read it
    meanwhile (``count``): the arrays of an epoch are appended before its epoch number."""

    fields: list[str] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    titles: list[str] = field(default_factory=list)
    epochs: list[int] = field(default_factory=list)
    R: list[np.ndarray] = field(default_factory=list)
    vectors: list[np.ndarray] = field(default_factory=list)
    _rows: np.ndarray | None = field(default=None, repr=False)

    def start(self, model, train) -> None:
        """Choose what to keep for ``model`` trained on ``train``: R if it has one, the most rated movies."""
        self.fields = list(model.schema.names) if model.interaction_matrix() is not None else []
        rows, self.labels, self.titles = most_rated(train) if model.feature_table() is not None else ([], [], [])
        self._rows = torch.as_tensor(np.asarray(rows, dtype=np.int64))

    @torch.no_grad()
    def take(self, model, epoch: int) -> None:
        """Keep R and the chosen movies' embeddings of ``model`` as it is now, as epoch ``epoch``."""
        if self.fields:
            self.R.append(model.interaction_matrix().detach().float().cpu().numpy())
        if self.labels:
            self.vectors.append(movie_rows(model, self._rows).detach().float().cpu().numpy())
        self.epochs.append(int(epoch))

    @property
    def count(self) -> int:
        """Epochs kept so far (safe to read while ``fit`` is still taking them)."""
        return len(self.epochs)

    @property
    def has_R(self) -> bool:
        return bool(self.fields)

    @property
    def has_movies(self) -> bool:
        return bool(self.labels)

    def R_stack(self, upto: int | None = None) -> np.ndarray:
        """(epochs, m, m): R after each kept epoch (the first ``upto`` of them)."""
        n = self.count if upto is None else upto
        return np.stack(self.R[:n])

    # saving: arrays into a safetensors file, the rest into run.json
    def tensors(self) -> dict[str, torch.Tensor]:
        out = {}
        if self.has_R and self.R:
            out["R"] = torch.from_numpy(np.stack(self.R[: self.count]))
        if self.has_movies and self.vectors:
            out["vectors"] = torch.from_numpy(np.stack(self.vectors[: self.count]))
        return out

    def meta(self) -> dict:
        return {
            "epochs": self.epochs[: self.count],
            "fields": self.fields,
            "labels": self.labels,
            "titles": self.titles,
        }

    @classmethod
    def from_saved(cls, meta: dict, tensors: dict[str, torch.Tensor]) -> Snapshots:
        """Rebuild what ``meta``/``tensors`` saved; a ValueError says what does not fit together."""
        epochs = [int(e) for e in meta["epochs"]]
        snap = cls(list(meta["fields"]), list(meta["labels"]), list(meta["titles"]), epochs)
        if snap.fields:
            R = tensors["R"].numpy()
            if R.shape != (len(epochs), len(snap.fields), len(snap.fields)):
                raise ValueError(
                    f"snapshots: R has shape {R.shape}, expected {len(epochs)} epochs of m = {len(snap.fields)}"
                )
            snap.R = list(R)
        if snap.labels:
            V = tensors["vectors"].numpy()
            if V.ndim != 3 or V.shape[:2] != (len(epochs), len(snap.labels)) or len(snap.titles) != len(snap.labels):
                raise ValueError(
                    f"snapshots: movie vectors have shape {V.shape}, expected {len(epochs)} epochs of {len(snap.labels)} movies"
                )
            snap.vectors = list(V)
        return snap


def absent(run, what: str) -> str | None:
    """One line on why ``run`` cannot replay ``what`` ("R", "movies" or "curves"), or None when it can."""
    if what not in ("R", "movies", "curves"):
        raise ValueError(f"what must be R, movies or curves, got {what!r}")
    model = run.config.get("model", "this model")
    if what == "curves":
        return None if run.history else "This run has no epochs to replay."
    snap = run.snapshots
    if snap is None or snap.count == 0:
        if model == "bfm":
            return (
                "A Bayesian FM is trained by Gibbs sampling, not by epochs of Adam: there are no snapshots to replay."
            )
        return (
            "This run was saved before runs kept per-epoch snapshots (or trained with them off): "
            "train it again to watch it learn."
        )
    if what == "R" and not snap.has_R:
        return f"A {model} run has no learned field interaction matrix R to replay (an FM's R is 11ᵀ − I, fixed)."
    if what == "movies" and not snap.has_movies:
        return f"This {model} run has no movie embeddings to replay (its data has no movie_id field)."
    return None
