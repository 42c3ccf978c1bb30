"""The two VQA answer normalisers upstream uses, with the official word lists.

- ``vqa_v2_normalise`` (VQA-v2): lower-case, strip, tabs and newlines to spaces; the official
  punctuation pass (a mark is deleted when it touches a space in the original text or the text
  has a ``digit,digit`` anywhere, else replaced by a space); the official period strip
  ``(?!<=\\d)(\\.)(?!\\d)`` (the lookahead typo means "a period not followed by a digit"), whose
  ``re.UNICODE`` count argument caps it at 32 periods; then articles dropped, number words
  ``none``..``ten`` mapped to digits, and contractions restored from the official table.
- ``evalai_normalise`` (TextVQA, EvalAI's processor): lower-case, delete ``,`` and ``?``, split
  ``'s``; tabs and newlines to spaces; the same punctuation pass with the comma rule
  ``(?<=\\d)(\\,)+(?=\\d)`` (which never fires, commas being gone); the same period strip; number
  words, articles and contractions.

Both mirror the official evaluation code, so both modes use them unchanged.
"""

from __future__ import annotations

import re

CONTRACTIONS = {
    "aint": "ain't", "arent": "aren't", "cant": "can't", "couldve": "could've",
    "couldnt": "couldn't", "couldn'tve": "couldn't've", "couldnt've": "couldn't've",
    "didnt": "didn't", "doesnt": "doesn't", "dont": "don't", "hadnt": "hadn't",
    "hadnt've": "hadn't've", "hadn'tve": "hadn't've", "hasnt": "hasn't", "havent": "haven't",
    "hed": "he'd", "hed've": "he'd've", "he'dve": "he'd've", "hes": "he's", "howd": "how'd",
    "howll": "how'll", "hows": "how's", "Id've": "I'd've", "I'dve": "I'd've", "Im": "I'm",
    "Ive": "I've", "isnt": "isn't", "itd": "it'd", "itd've": "it'd've", "it'dve": "it'd've",
    "itll": "it'll", "let's": "let's", "maam": "ma'am", "mightnt": "mightn't",
    "mightnt've": "mightn't've", "mightn'tve": "mightn't've", "mightve": "might've",
    "mustnt": "mustn't", "mustve": "must've", "neednt": "needn't", "notve": "not've",
    "oclock": "o'clock", "oughtnt": "oughtn't", "ow's'at": "'ow's'at", "'ows'at": "'ow's'at",
    "'ow'sat": "'ow's'at", "shant": "shan't", "shed've": "she'd've", "she'dve": "she'd've",
    "she's": "she's", "shouldve": "should've", "shouldnt": "shouldn't",
    "shouldnt've": "shouldn't've", "shouldn'tve": "shouldn't've", "somebody'd": "somebodyd",
    "somebodyd've": "somebody'd've", "somebody'dve": "somebody'd've",
    "somebodyll": "somebody'll", "somebodys": "somebody's", "someoned": "someone'd",
    "someoned've": "someone'd've", "someone'dve": "someone'd've", "someonell": "someone'll",
    "someones": "someone's", "somethingd": "something'd", "somethingd've": "something'd've",
    "something'dve": "something'd've", "somethingll": "something'll", "thats": "that's",
    "thered": "there'd", "thered've": "there'd've", "there'dve": "there'd've",
    "therere": "there're", "theres": "there's", "theyd": "they'd", "theyd've": "they'd've",
    "they'dve": "they'd've", "theyll": "they'll", "theyre": "they're", "theyve": "they've",
    "twas": "'twas", "wasnt": "wasn't", "wed've": "we'd've", "we'dve": "we'd've",
    "weve": "we've", "werent": "weren't", "whatll": "what'll", "whatre": "what're",
    "whats": "what's", "whatve": "what've", "whens": "when's", "whered": "where'd",
    "wheres": "where's", "whereve": "where've", "whod": "who'd", "whod've": "who'd've",
    "who'dve": "who'd've", "wholl": "who'll", "whos": "who's", "whove": "who've",
    "whyll": "why'll", "whyre": "why're", "whys": "why's", "wont": "won't",
    "wouldve": "would've", "wouldnt": "wouldn't", "wouldnt've": "wouldn't've",
    "wouldn'tve": "wouldn't've", "yall": "y'all", "yall'll": "y'all'll", "y'allll": "y'all'll",
    "yall'd've": "y'all'd've", "y'alld've": "y'all'd've", "y'all'dve": "y'all'd've",
    "youd": "you'd", "youd've": "you'd've", "you'dve": "you'd've", "youll": "you'll",
    "youre": "you're", "youve": "you've",
}  # fmt: skip
NUMBER_WORDS = {
    "none": "0", "zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5",
    "six": "6", "seven": "7", "eight": "8", "nine": "9", "ten": "10",
}  # fmt: skip
ARTICLES = frozenset({"a", "an", "the"})
PUNCTUATION = (
    ";", "/", "[", "]", '"', "{", "}", "(", ")", "=", "+", "\\", "_", "-", ">", "<", "@", "`",
    ",", "?", "!",
)  # fmt: skip

_PERIOD_STRIP = re.compile(r"(?!<=\d)(\.)(?!\d)")
_VQA_COMMA = re.compile(r"(\d)(,)(\d)")
_EVALAI_COMMA = re.compile(r"(?<=\d)(\,)+(?=\d)")
_PERIOD_LIMIT = int(re.UNICODE)  # upstream passes re.UNICODE (32) as the count argument


def _punctuation(text: str, comma_rule: re.Pattern[str]) -> str:
    digit_comma = comma_rule.search(text) is not None
    out = text
    for mark in PUNCTUATION:
        if mark + " " in text or " " + mark in text or digit_comma:
            out = out.replace(mark, "")
        else:
            out = out.replace(mark, " ")
    return _PERIOD_STRIP.sub("", out, count=_PERIOD_LIMIT)


def _words(text: str) -> str:
    words = [NUMBER_WORDS.get(word, word) for word in text.lower().split()]
    kept = [word for word in words if word not in ARTICLES]
    return " ".join(CONTRACTIONS.get(word, word) for word in kept)


def vqa_v2_normalise(answer: str | None) -> str:
    """The official VQA-v2 answer normalisation."""
    if not answer:
        return ""
    text = answer.lower().strip().replace("\n", " ").replace("\t", " ").strip()
    return _words(_punctuation(text, _VQA_COMMA))


def evalai_normalise(answer: str) -> str:
    """EvalAI's answer processor (the official TextVQA normalisation)."""
    text = answer.lower().replace(",", "").replace("?", "").replace("'s", " 's").strip()
    text = text.replace("\n", " ").replace("\t", " ").strip()
    return _words(_punctuation(text, _EVALAI_COMMA))
