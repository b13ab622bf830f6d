"""Keyword retrieval over the chunks' tsvector (English stemming, stop words removed)."""

from __future__ import annotations

from django.db import connection

from domains.models import SEARCH_CONFIG


def query_lexemes(text: str) -> list[str]:
    """The distinct lexemes of ``text`` under the search configuration, in text order.

    Any text is valid: tsquery operators are never parsed from user input. A query made
    only of stop words gives ``[]``.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT lexeme FROM unnest(to_tsvector(%s::regconfig, %s)) ORDER BY positions[1]",
            [SEARCH_CONFIG, text],
        )
        return [row[0] for row in cursor.fetchall()]


def tsquery_literal(lexemes: list[str]) -> str:
    """OR of quoted lexemes in tsquery syntax (quotes and backslashes escaped)."""
    quoted = ("'" + lex.replace("\\", "\\\\").replace("'", "''") + "'" for lex in lexemes)
    return " | ".join(quoted)


def keyword_search(store_id: int, lexemes: list[str], k: int) -> list[tuple[int, float]]:
    """The ``k`` chunks of a store ranked by ``ts_rank`` for the OR of ``lexemes``.

    :returns: [(chunk_id, ts_rank score)] best first; [] when ``lexemes`` is empty.
    """
    if not lexemes:
        return []
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT id, ts_rank(search_vector, q) AS score
            FROM domains_chunk, CAST(%(q)s AS tsquery) AS q
            WHERE store_id = %(store)s AND search_vector @@ q
            ORDER BY score DESC, id
            LIMIT %(k)s
            """,
            {"q": tsquery_literal(lexemes), "store": store_id, "k": k},
        )
        return [(cid, float(score)) for cid, score in cursor.fetchall()]
