"""A paper's own findings over its background (the passage choice of
chat/backends/extractive/passages.py, for chunks of PDFs).

Asked what a paper found, built or showed, its introduction competes with the answer:
"Several schemes have been proposed for the generation of entangled states [14-22]." is
as close to "Which states does the Ikram and Saif scheme generate?" as "This work enables
us to generate a complete set of Bell basis states ...". A sentence in which the authors
speak of their own work (we, our, this paper) gains :data:`OWN_WORK`; one that cites
other work (a reference number in brackets, an author and a year in parentheses) loses
:data:`OTHERS_WORK`; a sentence doing both is neither. A sentence of a structured abstract
whose label the question names ("Methods: A mix of quantitative and qualitative methods was
applied ..." for "Which methods did the situational analysis use?") gains as much as a
field line whose label holds what is asked (:data:`.fits.FIELD_FOR_SHAPE`): its cosine to
the question (0.45) stays under the introduction's (0.59).
"""

from __future__ import annotations

import re

from .fits import FIELD_FOR_SHAPE
from .text import terms

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


# The labels of a structured abstract's sentences.
_ABSTRACT_LABEL = re.compile(
    r"^(?P<label>background|introduction|objectives?|aims?|purpose|design|setting|participants|methods?|"
    r"materials and methods|results?|findings|conclusions?|interpretation|significance)\s*[:.]\s+\S",
    re.IGNORECASE,
)


def label_asked(text: str, wanted: set[str]) -> float:
    """:data:`.fits.FIELD_FOR_SHAPE` when ``text`` opens with a structured abstract's label
    ("Methods: ...", "Results. ...") whose words are among the question's terms ``wanted``, else 0.

    >>> label_asked("Methods: A mix of methods was applied.", {"method", "hospital"})
    0.25
    """
    match = _ABSTRACT_LABEL.match(text.lstrip())
    return FIELD_FOR_SHAPE if match and terms(match.group("label")) <= wanted else 0.0


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
