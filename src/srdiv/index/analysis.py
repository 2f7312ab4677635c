"""Text analysis shared by every index: tokens, stopwords and a light stemmer.

One analyser serves documents, queries and suggestions, so a term means the same
thing everywhere:

1. lowercase;
2. split into maximal runs of ASCII letters and digits (``[a-z0-9]+``); every
   other character separates tokens (``bass_fiddle`` -> ``bass``, ``fiddle``);
3. drop English stopwords (:data:`STOPWORDS`, a short function-word list) and
   one-character tokens;
4. stem with Harman's S-stemmer (Harman, JASIS 1991): a deterministic,
   plural-only stemmer that never merges unrelated words the way Porter can
   (``bases`` -> ``base``, ``ponies`` -> ``pony``, ``glass`` stays ``glass``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been
    before being below between both but by can could did do does doing down during
    each few for from further had has have having he her here hers herself him
    himself his how i if in into is it its itself just me more most my myself no
    nor not now of off on once only or other our ours ourselves out over own same
    she should so some such than that the their theirs them themselves then there
    these they this those through to too under until up very was we were what when
    where which while who whom why will with would you your yours yourself
    yourselves
    """.split()
)
"""English function words removed from every text (a short, fixed list)."""

_TOKEN = re.compile(r"[a-z0-9]+")


@lru_cache(maxsize=1 << 18)
def s_stem(word: str) -> str:
    """Harman's S-stemmer: strip English plural endings (first matching rule only).

    ``-ies`` (not ``-eies``/``-aies``) -> ``-y``; ``-es`` (not ``-aes``/``-ees``/
    ``-oes``) -> ``-e``; ``-s`` (not ``-us``/``-ss``) -> drop the ``s``.
    """
    if word.endswith("ies") and not word.endswith(("eies", "aies")):
        return word[:-3] + "y"
    if word.endswith("es") and not word.endswith(("aes", "ees", "oes")):
        return word[:-1]
    if word.endswith("s") and not word.endswith(("us", "ss")):
        return word[:-1]
    return word


def tokenize(text: str, stem: bool = True) -> list[str]:
    """Analysed tokens of one text, in order (duplicates kept); ``stem=False`` skips step 4."""
    tokens = [tok for tok in _TOKEN.findall(text.lower()) if len(tok) > 1 and tok not in STOPWORDS]
    return [s_stem(tok) for tok in tokens] if stem else tokens


def tokenize_many(texts: Iterable[str], stem: bool = True) -> list[list[str]]:
    """:func:`tokenize` applied to each text."""
    return [tokenize(text, stem) for text in texts]
