"""A paper's own findings over its background (the passage choice of
chat/backends/extractive/passages.py, for chunks of PDFs).

Asked what a paper found, built or showed, its introduction competes with the answer:
"Several schemes have been proposed for the generation of entangled states [14-22]." is
as close to "Which states does the Ikram and Saif scheme generate?" as "This work enables
us to generate a complete set of Bell basis states ...". A sentence in which the authors
speak of their own work (we, our, this paper) gains :data:`OWN_WORK`; one that cites
other work (a reference number in brackets, an author and a year in parentheses) loses
:data:`OTHERS_WORK`; a sentence doing both is neither.
"""

from __future__ import annotations

import re

OWN_WORK = 0.05
OTHERS_WORK = -0.05

_OWN = re.compile(
    r"\b(?:we|our|us)\b|\b(?:this|the present)\s+(?:paper|work|letter|article|study|report|note|talk)\b",
    re.IGNORECASE,
)
# "[14-22]", "[3, 7]", "[41]"; "(Persson and Skoog, 1996; ...)", "(Nilsson et al., 1997)", "Smith (2004)".
_CITES = re.compile(
    r"\[\d{1,3}(?:\s*[,;\u2013\u2014-]\s*\d{1,3})*\]"
    r"|\(\s*[A-Z][\w'\u2019-]+(?:\s+(?:et al\.|and|&)\s*[A-Z]?[\w'\u2019.-]*)?,?\s+(?:1[89]|20)\d\d[a-z]?\s*[;)]"
    r"|\b[A-Z][\w'\u2019-]+(?:\s+et al\.)?\s+\((?:1[89]|20)\d\d[a-z]?\)"
)


def finding(text: str) -> float:
    """:data:`OWN_WORK` when ``text`` speaks of the authors' own work and cites nothing,
    :data:`OTHERS_WORK` when it cites other work and does not speak of their own, else 0.

    >>> finding("This work enables us to generate a complete set of Bell basis states.")
    0.05
    >>> finding("Several schemes have been proposed for the generation of entangled states [14-22].")
    -0.05
    """
    own, cites = bool(_OWN.search(text)), bool(_CITES.search(text))
    if own == cites:
        return 0.0
    return OWN_WORK if own else OTHERS_WORK
