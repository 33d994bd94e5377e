"""The glossary: one meaning per key, every term sourced, a readable line per symbol."""

from __future__ import annotations

import re

import pytest

from fmlib import glossary
from fmlib.glossary import FMLIB, GLOSSARY, cited, define, lookup, markdown_table
from fmlib.references import TITLES


def test_every_term_is_complete_and_sourced():
    for key, term in GLOSSARY.items():
        assert term.symbol and term.latex and term.name, key
        assert key == term.symbol or key.startswith(f"{term.symbol} ["), key
        # one sentence: a capital or a symbol first, one final full stop, no second sentence
        assert term.definition.rstrip().endswith("."), f"{key}: the definition is not a sentence"
        plain = re.sub(r"\$[^$]*\$", "x", term.definition)  # math may hold dots
        plain = re.sub(r"\b(e\.g|i\.e|eq|Thm|App|Fig)\.", "x", plain)
        assert plain.count(". ") == 0, f"{key}: more than one sentence: {term.definition!r}"
        assert term.papers or term.source.startswith(FMLIB + ":"), f"{key}: no paper key and not fmlib's own"
    assert glossary.unknown_papers() == []


def test_a_letter_with_two_meanings_is_keyed_by_its_paper():
    by_symbol: dict[str, list[str]] = {}
    for key, term in GLOSSARY.items():
        by_symbol.setdefault(term.symbol, []).append(key)
    for symbol, keys in by_symbol.items():
        bare = [k for k in keys if k == symbol]
        assert len(bare) <= 1, symbol
        for key in keys:
            if key != symbol:  # a scoped meaning names a paper the term cites
                paper = key.split(" [")[1].rstrip("]")
                assert paper in TITLES and paper in GLOSSARY[key].papers, key


def test_renamed_letters_name_the_papers_letter():
    # the project's notation differs from a paper here; the definition must say what the paper writes
    for key, paper_letter in [("ω", "e"), ("h", "m"), ("β_V", "γ"), ("τ", "ε"), ("Π", "M")]:
        assert f"writes {paper_letter}" in define(key) or f"call it {paper_letter}" in define(key), key


def test_define_and_lookup():
    line = define("ρ")
    assert line.startswith("ρ — DPLR rank: ") and line.endswith("([DPLR] eq. 10)")
    assert lookup("e_f").source == "[DPLR] eq. 3"
    with pytest.raises(KeyError, match=r"one meaning per paper.*X \[AttnInv\]"):
        lookup("X")
    with pytest.raises(KeyError, match="did you mean"):
        lookup("R_gf")
    with pytest.raises(KeyError, match="not in the glossary"):
        lookup("no such symbol")


def test_markdown_table_and_cited():
    table = markdown_table(["R", "ρ", "①"])
    rows = table.splitlines()
    assert rows[0] == "| symbol | name | definition | source |" and len(rows) == 5
    assert rows[2].startswith("| $R$ | field interaction matrix |")
    assert rows[4].startswith("| $\\text{\\textcircled{1}}$ | rotation scores |")
    assert cited(["ŷ", "R", "ρ", "t"]) == ["Rendle2010", "DPLR", "FwFM"]


def test_the_papers_central_symbols_are_defined():
    for key in [
        "R",
        "R_fg",
        "ρ",
        "e_f",
        "v_i",
        "w_i",
        "w_0",
        "k",
        "k_i",
        "D_p",
        "γ",
        "d",
        "U",
        "M",
        "m",
        "ε",
        "K",
        "Q",
    ]:
        assert key in GLOSSARY, key
    assert "free variables" in GLOSSARY and "dependent variables" in GLOSSARY


def test_no_math_holds_a_circled_digit():
    """KaTeX warns "Unrecognized Unicode character" on ① (U+2460 onwards) in math: math writes
    \\text{\\textcircled{1}}, the plain symbol keeps ①."""
    enclosed = re.compile("[\u2460-\u24ff]")
    for key, term in GLOSSARY.items():
        for math in [term.latex, *re.findall(r"\$([^$]+)\$", term.definition)]:
            assert not enclosed.search(math), f"{key}: {math!r}"
    assert GLOSSARY["①"].symbol == "①"
