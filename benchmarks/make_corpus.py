"""Deterministic benchmark corpus: instruction records with long-tailed lengths.

    python benchmarks/make_corpus.py OUT.jsonl --mb 100 [--seed 0] [--no-pathological] [--latin-only]
    python benchmarks/make_corpus.py OUT.jsonl --mb 100 --tile REAL.jsonl [--recombine [--unique]]

What it models, and why:

* sample lengths follow a Pareto tail (most samples short, a few very long), because
  padding and unit assignment are only interesting on long-tailed data;
* several scripts: mostly Latin-script English-like text, plus Vietnamese (diacritics)
  and CJK, because tokenizers without byte fallback turn much of the latter into UNK,
  and the UNK audit path must be measured too (``--latin-only`` leaves them out);
* about 2% exact duplicates (a record repeated later), for the duplicate index;
* one pathological record: a single ~1 MB line without whitespace, the worst case for
  tokenizers and for block-based reading (it spans several blocks).

The same seed and size always give the same bytes.
"""

from __future__ import annotations

import argparse
import json
import random

_CONSONANTS = "bcdfghjklmnprstvwz"
_VOWELS = "aeiou"
_VI_WORDS = (
    "người dùng trả lời câu hỏi của bạn hôm nay trời đẹp chúng tôi học tiếng Việt "
    "thành phố Hồ Chí Minh Hà Nội dữ liệu mô hình ngôn ngữ được huấn luyện trên nhiều "
    "văn bản khác nhau những điều quan trọng nhất là sự kiên nhẫn và chăm chỉ mỗi ngày"
).split()
_CJK = [chr(c) for c in range(0x4E00, 0x4E00 + 1500)]
_PUNCT = [".", ",", "?", "!", ";", ":"]


def _latin_vocab(rng: random.Random, size: int = 5000) -> list[str]:
    words = set()
    while len(words) < size:
        n = rng.choice((1, 1, 2, 2, 2, 3, 3, 4))
        words.add("".join(rng.choice(_CONSONANTS) + rng.choice(_VOWELS) for _ in range(n)))
    common = ["the", "of", "and", "to", "a", "in", "is", "that", "for", "it", "with", "as", "on", "data"]
    return common * 40 + sorted(words)


def _length(rng: random.Random) -> int:
    """Words per sample: Pareto tail, median about 40, capped for sanity."""
    return min(6000, int(8 * rng.paretovariate(1.2)) + rng.randint(1, 20))


def _text(rng: random.Random, latin: list[str], n_words: int, mixed: bool = True) -> str:
    script = rng.random() if mixed else 0.0
    if script < 0.75:
        words = rng.choices(latin, k=n_words)
    elif script < 0.90:
        words = rng.choices(_VI_WORDS, k=n_words)
    else:
        words = ["".join(rng.choices(_CJK, k=rng.randint(1, 4))) for _ in range(n_words)]
    out = []
    for i, w in enumerate(words):
        out.append(w)
        if i % 12 == 11:
            out[-1] += rng.choice(_PUNCT)
    return " ".join(out)


def generate(path: str, megabytes: float, seed: int = 0, pathological: bool = True,
             mixed: bool = True) -> dict:
    rng = random.Random(seed)
    latin = _latin_vocab(rng)
    target = int(megabytes * 1_000_000)
    written = records = duplicates = 0
    recent: list[str] = []
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        if pathological:
            blob = "".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=1_000_000))
            line = json.dumps({"instruction": "Repeat the string.", "input": "", "output": blob}) + "\n"
            # Placed a little into the file so that it spans blocks in the middle.
            pathological_line: str | None = line
        else:
            pathological_line = None
        while written < target:
            if recent and rng.random() < 0.02:
                line = rng.choice(recent)
                duplicates += 1
            else:
                n = _length(rng)
                record = {
                    "instruction": _text(rng, latin, max(3, n // 4), mixed),
                    "input": "" if rng.random() < 0.4 else _text(rng, latin, max(1, n // 5), mixed),
                    "output": _text(rng, latin, n, mixed),
                }
                line = json.dumps(record, ensure_ascii=False) + "\n"
                recent.append(line)
                if len(recent) > 2000:
                    recent.pop(rng.randrange(len(recent)))
            f.write(line)
            written += len(line.encode("utf-8"))
            records += 1
            if pathological_line is not None and written > target // 3:
                f.write(pathological_line)
                written += len(pathological_line)
                records += 1
                pathological_line = None
    return {"path": path, "bytes": written, "records": records, "duplicates": duplicates}


def tile(path: str, source: str, megabytes: float) -> dict:
    """``source``'s lines repeated in order until ``megabytes``: real text, whose
    repetitions are exact duplicates (every record once per copy)."""
    with open(source, encoding="utf-8") as f:
        lines = [line.rstrip("\n") + "\n" for line in f if line.strip()]
    target = int(megabytes * 1_000_000)
    written = records = 0
    with open(path, "w", encoding="utf-8", newline="\n") as out:
        while written < target:
            for line in lines:
                out.write(line)
                written += len(line.encode("utf-8"))
                records += 1
    return {"path": path, "bytes": written, "records": records, "copies": records // len(lines)}


def recombine(path: str, source: str, megabytes: float, seed: int, unique: bool = False) -> dict:
    """Real text without repeated samples: each record takes each field from a record
    of ``source`` drawn at random (seeded), so samples hardly ever repeat while the
    words, sentences and field values are all real (999 Alpaca records give ~10^9
    combinations; 100 MB is ~120k records). Field values do repeat (each about 120
    times at 100 MB); ``unique`` also ends every non-empty value with its record's
    number ("(record 1234)"), so that no value repeats either."""
    rng = random.Random(seed)
    with open(source, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    rows = [r for r in rows if isinstance(r, dict)]
    fields = list(rows[0])
    target = int(megabytes * 1_000_000)
    written = records = 0
    with open(path, "w", encoding="utf-8", newline="\n") as out:
        while written < target:
            record = {name: rows[rng.randrange(len(rows))].get(name, "") for name in fields}
            if unique:
                record = {name: f"{value} (record {records + 1})" if value else value
                          for name, value in record.items()}
            line = json.dumps(record, ensure_ascii=False) + "\n"
            out.write(line)
            written += len(line.encode("utf-8"))
            records += 1
    return {"path": path, "bytes": written, "records": records, "fields": fields}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out")
    parser.add_argument("--mb", type=float, default=100.0, help="approximate size in MB (10^6 bytes)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-pathological", action="store_true")
    parser.add_argument("--latin-only", action="store_true",
                        help="only Latin-script text (no Vietnamese or CJK records)")
    parser.add_argument("--tile", metavar="JSONL",
                        help="instead: repeat this real dataset (e.g. ../shared/realdata/data/"
                             "alpaca_en_demo.jsonl) up to the size")
    parser.add_argument("--recombine", action="store_true",
                        help="with --tile: draw each field of each record from a random record of the "
                             "dataset instead (real text, no repeated samples)")
    parser.add_argument("--unique", action="store_true",
                        help="with --recombine: end each non-empty field with the record's number, "
                             "so that no field value repeats either")
    args = parser.parse_args(argv)
    if args.tile and args.recombine:
        print(json.dumps(recombine(args.out, args.tile, args.mb, args.seed, args.unique)))
    elif args.tile:
        print(json.dumps(tile(args.out, args.tile, args.mb)))
    else:
        print(json.dumps(generate(args.out, args.mb, args.seed, not args.no_pathological,
                                  not args.latin_only)))


if __name__ == "__main__":
    main()
