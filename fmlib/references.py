"""The papers the project explains, by the short keys that docstrings, derivations, pages and
notebooks cite ("[DPLR] eq. 10"). The README's References section gives each one's authors,
venue, year and arXiv id.
"""

from __future__ import annotations

import re

TITLES = {
    "DPLR": "Low Rank Field-Weighted Factorization Machines for Low Latency Item Recommendation",
    "RaFM": "RaFM: Rank-Aware Factorization Machines",
    "RFM": "Rotative Factorization Machines",
    "FMGrad": "FM O(dk) weight gradient calculation",
    "AttnInv": "Unmasking Transformers: A Theoretical Approach to Data Recovery via Attention Weights",
    "Rendle2010": "Factorization Machines",
    "Rendle2012": "Factorization Machines with libFM",
    "Rendle2013": "Scaling Factorization Machines to Relational Data",
    "Koren2008": "Factorization Meets the Neighborhood: a Multifaceted Collaborative Filtering Model",
    "FwFM": "Field-weighted Factorization Machines for Click-Through Rate Prediction in Display Advertising",
}

KEY = re.compile(r"\[(\w+)\]")


def keys(text: str) -> list[str]:
    """The reference keys cited in ``text``, in order: "[DPLR], eq. (1); [FMGrad] eq. 8" -> ["DPLR", "FMGrad"]."""
    return KEY.findall(text)


def with_titles(text: str) -> str:
    """``text`` with each known key followed by its paper's title: "[RaFM], eq. (7)" ->
    "[RaFM] *RaFM: Rank-Aware Factorization Machines*, eq. (7)"."""
    return KEY.sub(lambda m: f"{m.group(0)} *{TITLES[m.group(1)]}*" if m.group(1) in TITLES else m.group(0), text)
