"""The probe's battery: texts on which an accelerator must give the library's ids.

Shared by gigatoken's two gates (``gigatoken_bpe`` for ``tokenizer.json`` files,
``gigatoken_sp`` for SentencePiece models): the texts where splits, normalizers, byte
fallback and added or special tokens decide differently, and a tokenizer's own
vocabulary entries as texts. Deterministic for a seed, so every process probes alike.
"""

from __future__ import annotations

import random
from typing import Sequence

#: SentencePiece's word boundary, as SentencePiece models and HF's converted files spell it.
SPIECE_SPACE = "\u2581"

#: Every kind of whitespace the splits treat apart (``\s`` of the library, line
#: breaks of the Llama 3 pattern), and characters that are not whitespace but look so.
WHITESPACE = (" ", "\t", "\n", "\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x85", "\xa0", "\u1680",
              "\u2000", "\u2009", "\u200a", "\u2028", "\u2029", "\u202f", "\u205f", "\u3000")
NOT_WHITESPACE = ("\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u180e")
RUN_LENGTHS = (1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 23, 24, 25, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255,
               256, 257, 511, 512, 513, 1000)

#: Short texts where splits, contractions and merges decide differently.
EDGE = (
    "", "a", "A", "1", "!", "hello world", " hello", "hello ", "  hello  ", "Hello, World!",
    "it's", "IT'S", "It'S", "we're", "they've", "I'm", "you'll", "he'd", "'s", "'", "''", "'''s",
    "don't", "DON'T", "l'amour", "rock'n'roll", "it\u2019s", "\u2019s", "a's b't c're d've e'm f'll g'd",
    "1", "12", "123", "1234", "12345", "123456", "1234567", "12345678901234567890", "3.14159",
    "1,000,000", "1e10", "-42", "0x1F", "v1.2.3", "\u0663\u0664\u0665", "\uff11\uff12\uff13", "\u00bd", "\u2163", "\u00b2\u00b3", "\u2460\u2461",
    "a1b2c3", "abc123def", "ABC", "aBcDeF", "\u00c0\u00c9\u00ce\u00d5\u00dc", "stra\u00dfe", "\ufb01", "\u01c4\u01c5\u01c6", "\u0130\u0131",
    "e\u0301", "a\u0308\u0301", "\u0301", "\u0301a", " \u0301", "n\u0303o", "\uac01", "\u1100\u1161\u11a8",
    "\u00c5", "\u00c5", "\u03a9", "\u1e31", "\u0344", "q\u0307\u0323", "\u1e9b\u0323",
    "\U0001f600", "\U0001f600\U0001f600\U0001f600", "\U0001f44d\U0001f3fd", "\U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466", "\U0001f1fb\U0001f1f3", "\U0001f1fb\U0001f1f3\U0001f1fa\U0001f1f8", "1\ufe0f\u20e3", "\u2764\ufe0f", "\U0001f3f3\ufe0f\u200d\U0001f308", " \U0001f600", "a\U0001f600b",
    "\u6f22\u5b57", "\u4f60\u597d\uff0c\u4e16\u754c\uff01", "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8", "\ud55c\uad6d\uc5b4 \ud14d\uc2a4\ud2b8", "\u0e20\u0e32\u0e29\u0e32\u0e44\u0e17\u0e22", "\u0627\u0644\u0639\u0631\u0628\u064a\u0629", "\u05e2\u05d1\u05e8\u05d9\u05ea",
    "\u0939\u093f\u0928\u094d\u0926\u0940", "Ti\u1ebfng Vi\u1ec7t c\u00f3 d\u1ea5u", "\u0395\u03bb\u03bb\u03b7\u03bd\u03b9\u03ba\u03ac", "\u0440\u0443\u0441\u0441\u043a\u0438\u0439 \u044f\u0437\u044b\u043a", "\u10e5\u10d0\u10e0\u10d7\u10e3\u10da\u10d8", "\u12a0\u121b\u122d\u129b", "\u182e\u1823\u1829\u182d\u1823\u182f",
    "\x00", "\x01\x02\x03", "\x07\x08", "\x1b[31mred\x1b[0m", "\x7f", "\x80\x81\x9f", "a\x00b",
    "\ufffd", "\ufffe", "\uffff", "\U0010fffd", "\U0010ffff", "\ue000", "\uf8ff", "\U000f0000",
    "\U000e0001\U000e0041", "\ufe0f", "\U000e0100", "\u200e\u200f", "\u202e", "\u2066\u2069",
    "\\ud83d", "\\ud83d\\ude00", "\\u0000", "\\n\\t", "&#55357;", "%ED%A0%80", "\\x80",
    "<|endoftext|>", "<s>", "</s>", "<unk>", "<pad>", "[UNK]", "<<>>", "<|", "|>", "|||",
    "http://example.com/a/b?c=d&e=f#g", "user@example.com", "C:\\path\\to\\file.txt",
    "def f(x):\n    return x + 1\n", "{\"a\": [1, 2, 3]}", "<div class=\"x\">y</div>",
    "SELECT * FROM t WHERE a = 'b';", "#!/bin/sh\n\necho \"$1\"\n", "\tindented\n\t\tmore",
    "---", "...", "!!!", "???", "***", "___", "===", "~~~", "```python\nx\n```", "$$", "%%",
    "a\nb", "a\n\nb", "a \nb", "a\n b", "a\r\nb", "a \r\n b", "a\t\nb", "\n\n\n", " \n \n ",
    "\u2581", "\u2581\u2581a", " \u2581 ", "a\u2581b", "<0x00>", "<0x41>", "<0xFF>", "<0x0A>\n", "<0xZZ>",
)

#: Long words: runs the model merges far from any split.
def _long_texts(rng: random.Random) -> list:
    letters = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(20000))
    mixed = "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
                    for _ in range(12000))
    return ["a" * 5000, "ab" * 6000, letters, mixed, "1" * 3000, "!" * 3000, "-" * 2000, "." * 2000,
            "\u6f22" * 3000, "\U0001f600" * 1000, "\u00e9" * 3000, "\u0301" * 500, " " * 3000, "\n" * 2000,
            "\t" * 1000, " a" * 3000, "a " * 3000, "word " * 2000]


def _code_point_sweep(step: int) -> list:
    """Texts holding code points of every script (every one below U+0800, then one in
    ``step`` of each assigned range), each in contexts where the splits decide: next to
    letters, digits, spaces, apostrophes and itself."""
    from mintdim_beam.tokenization.accel.unicode14 import ASSIGNED

    points = []
    for start, end in ASSIGNED:
        for cp in range(start, end + 1):
            if cp < 0x800 or (cp - start) % step == 0 or cp == end:
                points.append(chr(cp))
    texts, group = [], 24
    for i in range(0, len(points), group):
        texts.append("".join(f"a{c}a {c}1{c}{c} {c}'s{c}\n" for c in points[i:i + group]))
    return texts


def probe_texts(added: Sequence[str], vocab_texts: Sequence[str] = (), seed: int = 0,
                sweep_step: int = 199, randoms: int = 1500) -> list:
    """The probe's battery for a tokenizer with these added tokens' contents and these
    vocabulary entries (as texts). Deterministic for a seed."""
    rng = random.Random(seed)
    texts = list(EDGE)
    for ws in WHITESPACE:
        lengths = RUN_LENGTHS if ws in (" ", "\n", "\t") else RUN_LENGTHS[:12]
        for n in lengths:
            run = ws * n
            texts += [run, "a" + run + "b", run + "a", "a" + run, "1" + run + "!"]
    for ws in NOT_WHITESPACE:
        texts += [ws, "a" + ws + "b", " " + ws + " ", ws * 3]
    for a in WHITESPACE[:8]:
        for b in WHITESPACE[:8]:
            texts += [a + b, "x" + a + b + "y", "x" + a + a + b + b + "y"]
    for content in added:
        if not content:
            continue
        texts += [content, "a" + content + "b", " " + content + " ", content + content, "x" + content,
                  content + "x", "\n" + content + "\n", content + " " + content, "  " + content + "  ",
                  "1" + content + "1", content[:-1], content[1:], "'" + content + "'s"]
    if added:
        texts += ["".join(added), " ".join(added), "\n".join(added), "a".join(added)]
    texts += _long_texts(rng)
    texts += _code_point_sweep(sweep_step)
    texts += list(vocab_texts)
    alphabet = (list("abcdefghijklmnopqrstuvwxyz ABCXYZ 0123456789 .,;:!?-'\"()[]{}<>/\\|@#$%^&*_=+~`")
                + list(WHITESPACE) + list(NOT_WHITESPACE) + ["'s", "'ll", "'D", "\u2019", "  ", "   ", "\n\n"]
                + list("\u00e9\u00df\u03a9\u0436\u3042\u4e2d\ud55c\u0627\u0663\u00bd\u2163\U0001f600") + ["e\u0301", "\U0001f1fb\U0001f1f3", "\U0001f44d\U0001f3fd", "\x00", "\x7f", "\ufffd"]
                + [c for c in added if c][:200])
    for _ in range(randoms):
        texts.append("".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 48))))
    return texts


def vocab_texts(expected: dict, count: int = 1500) -> list:
    """Up to ``count`` vocabulary entries that are UTF-8 text, spread over the ids."""
    entries = [raw for _, raw in sorted(expected.items())]
    step = max(1, len(entries) // count)
    texts = []
    for raw in entries[::step]:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            continue
        texts.append(text)
        if SPIECE_SPACE in text:      # a SentencePiece word, as the text it comes from
            texts.append(text.replace(SPIECE_SPACE, " ").lstrip(" "))
    return texts
