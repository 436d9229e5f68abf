"""The word tokenizer shared by the lexical indexes (BM25, TF-IDF).

Identifiers are split (``getWeatherForecast`` -> ``get weather forecast``), text is lower-cased, English
stop words are dropped, and an optional light "s-stemmer" (Harman 1991: plural endings only) folds
``flights``/``flight`` together without the surprises of an aggressive stemmer.

>>> tokenize("searchFlightPrices for 2 cities")
['search', 'flight', 'prices', '2', 'cities']
>>> tokenize("searchFlightPrices for 2 cities", stem=True)
['search', 'flight', 'price', '2', 'city']
"""

from __future__ import annotations

import re

from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

from rated.catalog.text import split_camel

__all__ = ["STOP_WORDS", "s_stem", "tokenize"]

STOP_WORDS = frozenset(ENGLISH_STOP_WORDS)
_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)


def s_stem(word: str) -> str:
    """Harman's s-stemmer: ``ies``->``y``, ``es``->``e``, ``s``->"" with its exceptions."""
    if len(word) > 3 and word.endswith("ies") and not word.endswith(("eies", "aies")):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("es") and not word.endswith(("aes", "ees", "oes")):
        return word[:-1]
    if len(word) > 2 and word.endswith("s") and not word.endswith(("us", "ss")):
        return word[:-1]
    return word


def tokenize(text: str, *, stem: bool = False, stop_words: frozenset[str] = STOP_WORDS) -> list[str]:
    """Lower-cased word tokens of ``text``, identifiers split, stop words removed."""
    words = _TOKEN.findall(split_camel(text).lower())
    out = [w for w in words if w not in stop_words]
    return [s_stem(w) for w in out] if stem else out
