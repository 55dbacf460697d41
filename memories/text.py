"""Text folding shared by signatures, MMR and the search fields.

One folding rule everywhere means a query and a stored memory meet on the same tokens
whatever their case, accents or compatibility forms ("Ｃａｆé" and "cafe" match).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

WORD = re.compile(r"\w+")

# English function words: the union of the usual IR stop lists (PostgreSQL's english
# dictionary, Lucene, NLTK) trimmed to words that never carry a query's meaning.
_STOP_WORDS = """a about above after again against all am an and any are aren as at be because been
    before being below between both but by can cannot could couldn d did didn do does doesn
    doing don down during each few for from further had hadn has hasn have haven having he
    her here hers herself him himself his how i if in into is isn it its itself just ll m me
    more most mustn my myself no nor not now of off on once only or other ought our ours
    ourselves out over own re s same shan she should shouldn so some such t than that the
    their theirs them themselves then there these they this those through to too under until
    up ve very was wasn we were weren what when where which while who whom why will with won
    would wouldn y you your yours yourself yourselves"""
# Recall skips them in queries; review never hides them in a cloze (review.cloze).
STOP_WORDS = frozenset(_STOP_WORDS.split())

# Kana's voicing marks are not accents: が (か + U+3099) is another sound, and かき
# (persimmon) and がき (brat) are other words. fold keeps them on the kana they follow.
_KANA_VOICING = "\u3099\u309a"
_VOICED_KANA = re.compile("[\u3040-\u30ff][\u3099\u309a]")
_STRAY_VOICING = re.compile("[\u3099\u309a]")


def _voiced(match: re.Match[str]) -> str:
    """A kana and its voicing mark as the one character they compose (か + U+3099: が);
    the bare kana when they compose none."""
    composed = unicodedata.normalize("NFC", match.group())
    return composed if len(composed) == 1 else match.group()[0]


def fold(text: str) -> str:
    """Fold text for matching: compatibility-decompose, drop accents, casefold, one space.

    Casefolding runs between two NFKD passes because it can itself produce decomposable
    characters (for example "İ" folds to "i" plus a combining dot), which must go too.
    ASCII text takes a shortcut with the same result: NFKD leaves it unchanged, it has
    no combining marks, and its casefold is its lower case. Kana keep their voicing marks
    (が stays が, ｶﾞ becomes ガ): they are not accents.
    """
    if text.isascii():
        return " ".join(text.lower().split())
    decomposed = unicodedata.normalize("NFKD", unicodedata.normalize("NFKD", text).casefold())
    stripped = "".join(
        ch for ch in decomposed if not unicodedata.combining(ch) or ch in _KANA_VOICING
    )
    if any(mark in stripped for mark in _KANA_VOICING):
        stripped = _STRAY_VOICING.sub("", _VOICED_KANA.sub(_voiced, stripped))
    return " ".join(stripped.split())


def words(text: str) -> list[str]:
    """Folded word tokens (runs of \\w: letters, digits, underscore), in text order."""
    return WORD.findall(fold(text))


# Scripts written without spaces between words: kana and Han ideographs (folded text, so
# halfwidth kana are already fullwidth). Korean (Hangul) is written with spaces: not here.
_CJK = (
    "\u3040-\u30ff"  # Hiragana, Katakana (with the prolonged sound mark)
    "\u31f0-\u31ff"  # Katakana phonetic extensions
    "\u3400-\u4dbf\u4e00-\u9fff"  # CJK ideographs, extension A and unified
    "\uf900-\ufaff"  # compatibility ideographs (NFKD maps most to unified ones)
    "\U00020000-\U0003134f"  # extensions B to G
)
CJK_CHARACTERS = _CJK  # a character class's inside, for a regex on either engine
CJK_RUN = re.compile(f"[{_CJK}]{{2,}}")
_CJK_RUNS = re.compile(f"[{_CJK}]+")
_CJK_ONLY = re.compile(f"[{_CJK}]+")


def cjk_pairs(folded: str) -> list[str]:
    """Overlapping character pairs of every unspaced CJK run of folded text, in order
    ("東京タワー" gives 東京 京タ タワ ワー), as Lucene's CJK bigram analyser indexes them.

    Both engines' full-text tokenizers take a whole run as one word, so "東京" (most
    Chinese words are two characters) is not found inside "東京タワーに行った"; indexed and
    queried as pairs, it is. Other text has none.
    """
    if folded.isascii():
        return []
    pairs: list[str] = []
    for run in CJK_RUN.findall(folded):
        pairs.extend(run[i : i + 2] for i in range(len(run) - 1))
    return pairs


def cjk_tokens(folded: str) -> list[str]:
    """What the index column search_pairs holds: each unspaced CJK run's pairs, then its
    last character alone ("我的猫" gives 我的 的猫 猫; a lone "猫" gives 猫).

    So every CJK character of the text begins some token, and a one-character query is
    the prefix of a token wherever the character stands ("猫" finds 我的猫 through 猫 and
    猫が好き through 猫が); a pair query matches a pair exactly, as before. Other text has none.
    """
    if folded.isascii():
        return []
    tokens: list[str] = []
    for run in _CJK_RUNS.findall(folded):
        tokens.extend(run[i : i + 2] for i in range(len(run) - 1))
        tokens.append(run[-1])
    return tokens


def is_cjk_character(word: str) -> bool:
    """Whether a folded word is one CJK character: a query word on its own (recall matches
    it as the prefix of cjk_tokens), where other one-character words are not."""
    return len(word) == 1 and is_cjk(word)


def is_cjk(word: str) -> bool:
    """Whether a folded word is all CJK characters: a word of unspaced text, found inside
    a run rather than as a run of its own."""
    return _CJK_ONLY.fullmatch(word) is not None


def content_key(content: str) -> str:
    """The key two memories share when their contents are the same text: SHA-256 of the
    folded content (case, accents and runs of whitespace do not count). The write path
    answers a create whose key a live memory of the namespace has with that memory."""
    return hashlib.sha256(fold(content).encode()).hexdigest()


# Words that turn a statement into its opposite ("don't" folds to "don" + "t": the bare "t"
# marks the contraction). Recall's interference warning and near-duplicates both use them.
_NEGATIONS = (
    "not no never none nobody nothing neither nor cannot without isn aren wasn weren don "
    "doesn didn won wouldn shouldn couldn hasn haven hadn stopped quit"
)
NEGATIONS = frozenset(_NEGATIONS.split())


def negated(tokens: list[str]) -> bool:
    """Whether folded word tokens (words()) hold a negation."""
    return "t" in tokens or any(token in NEGATIONS for token in tokens)
