"""The naming rules of domains and stores, in one place: the model validators, the
``stores`` command, admin uploads and the Python API all check names here.

A store name is the ``--collection`` argument: letters, digits, ``_``, ``.``, ``-``,
starting with a letter or digit, at most 100 characters. A domain name is free text
without leading or trailing spaces or control characters, at most 100 characters, and
never ``undefined`` (the classifier's "no domain" answer).
"""

from __future__ import annotations

import re

STORE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
RESERVED_DOMAIN_NAMES = {"undefined"}  # the classifier's "no domain" answer
NAME_LENGTH = 100
STORE_RULE = "letters, digits, '_', '.', '-', starting with a letter or digit, at most 100 characters"
DOMAIN_RULE = (
    "not empty, no leading or trailing spaces, no control characters (newlines, tabs), at most 100 characters"
)
RESERVED_RULE = "reserved (the classifier's 'no domain' answer)"


def store_name_problem(name) -> str:
    """"" when ``name`` may name a store, else the rule it breaks (:data:`STORE_RULE`)."""
    # fullmatch: STORE_NAME ends in $, which would let a trailing newline through
    if not isinstance(name, str) or len(name) > NAME_LENGTH or not STORE_NAME.fullmatch(name):
        return STORE_RULE
    return ""


def domain_name_problem(name) -> str:
    """"" when ``name`` may name a domain, else the rule it breaks (:data:`DOMAIN_RULE`
    or :data:`RESERVED_RULE`)."""
    if (
        not isinstance(name, str)
        or not name.strip()
        or name != name.strip()
        or len(name) > NAME_LENGTH
        or not name.isprintable()
    ):
        return DOMAIN_RULE
    if name.lower() in RESERVED_DOMAIN_NAMES:
        return RESERVED_RULE
    return ""
