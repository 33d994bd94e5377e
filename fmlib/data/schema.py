"""Field schema: which fields a sample has, and where each field's features live.

A *field* is one categorical attribute (user_id, genres, hour, ...). Every field owns a
contiguous block of rows in one shared embedding table, starting at ``offset``; local index 0
of every field is its *rare bucket* (features seen fewer than ``min_count`` times in train,
and features never seen in train). A ``single`` field takes one slot per sample; a ``multi``
field (genres) takes ``slots`` slots whose weights average the values' embeddings
(DPLR paper §3.2), padding slots having weight 0. A ``block`` field is a relation block
([Rendle2013]): a set of values shared by every sample of one entity — the movies a user rated
(SVD++'s implicit feedback N(u), [Koren2008] eq. 15), keyed by the sample's value of the field ``key``
— stored once per key value (``starts``, ``members``: local index j's set is
``members[starts[j]:starts[j + 1]]``), each value weighing 1/√|set|; it takes one slot of
``Dataset.index`` holding its rare bucket's row, which models read as "look the set up".
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

ROLES = ("context", "item")
KINDS = ("single", "multi", "block")


@dataclass(frozen=True)
class Field:
    name: str
    role: str  # "context" (user + time) or "item" (movie)
    kind: str  # "single" or "multi"
    cardinality: int  # rows in the embedding table, rare bucket included
    offset: int  # first row of this field in the shared table
    slots: int = 1  # columns this field takes in Dataset.index
    values: tuple[str, ...] = ()  # label of each local index (values[0] is the rare bucket)
    key: str = ""  # block fields: the field whose value picks the set
    starts: tuple[int, ...] = ()  # block fields: CSR row starts, one per local index of ``key`` (+ 1)
    members: tuple[int, ...] = ()  # block fields: the sets' values (local indices of this field)

    def __post_init__(self):
        if self.role not in ROLES:
            raise ValueError(f"field {self.name!r}: role must be one of {ROLES}, got {self.role!r}")
        if self.kind not in KINDS:
            raise ValueError(f"field {self.name!r}: kind must be one of {KINDS}, got {self.kind!r}")
        if self.cardinality < 1 or self.slots < 1:
            raise ValueError(f"field {self.name!r}: cardinality and slots must be >= 1")
        if (self.kind == "block") != bool(self.key) or (self.kind == "block" and self.slots != 1):
            raise ValueError(f"field {self.name!r}: a block field, and only it, names its key field and takes one slot")


@dataclass(frozen=True)
class Schema:
    fields: tuple[Field, ...]

    @property
    def num_fields(self) -> int:
        """m in the papers."""
        return len(self.fields)

    @property
    def num_features(self) -> int:
        """Rows of the shared embedding table (n in the papers)."""
        last = self.fields[-1]
        return last.offset + last.cardinality

    @property
    def names(self) -> list[str]:
        return [f.name for f in self.fields]

    @property
    def num_slots(self) -> int:
        return sum(f.slots for f in self.fields)

    def slot_fields(self) -> list[int]:
        """Field number of every column of Dataset.index."""
        return [i for i, f in enumerate(self.fields) for _ in range(f.slots)]

    def field_indices(self, role: str) -> list[int]:
        """Positions of the context or item fields."""
        if role not in ROLES:
            raise ValueError(f"role must be one of {ROLES}, got {role!r}")
        return [i for i, f in enumerate(self.fields) if f.role == role]

    def field(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"no field {name!r}; fields are {self.names}")

    def to_dict(self) -> dict:
        return {"fields": [asdict(f) for f in self.fields]}

    @classmethod
    def from_dict(cls, d: dict) -> "Schema":
        tuples = ("values", "starts", "members")
        return cls(tuple(Field(**{**f, **{t: tuple(f.get(t, ())) for t in tuples}}) for f in d["fields"]))

    @classmethod
    def build(cls, specs: list[tuple[str, str, str, int, int]], values=None) -> "Schema":
        """Lay out fields from (name, role, kind, cardinality, slots) tuples, offsets in order."""
        fields, offset = [], 0
        for j, (name, role, kind, card, slots) in enumerate(specs):
            vals = tuple(values[j]) if values is not None else ()
            fields.append(Field(name, role, kind, card, offset, slots, vals))
            offset += card
        return cls(tuple(fields))
