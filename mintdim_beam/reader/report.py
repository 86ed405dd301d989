"""One self-contained HTML page that shows what a build produced.

The page is for a person deciding whether a dataset is fit for training: how token
lengths fall against the unit boundaries, how much of every unit is padding (and what
the padding-optimal sizes would give), duplicates, UNK tokens and the characters behind
them, overflow and bad records. Everything it shows is read back from the output
directory (shards are not decoded: the indexes and summaries hold every figure).

The page must open anywhere, offline: no script, no stylesheet or font to fetch. Charts
are drawn with matplotlib (the optional ``report`` extra) as SVG with text turned into
paths, and inlined; each chart's element ids get a prefix so that several SVGs can live
in one document. matplotlib is driven through ``Figure`` objects, never ``pyplot``, so
rendering a report leaves no global state behind in the caller's process.
"""

from __future__ import annotations

import heapq
import html
import io
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from mintdim_beam.version import __version__
from mintdim_beam.reader import dataset as rd
from mintdim_beam.errors.read_errors import ReportError  # noqa: F401  (raised here; importable from here)
from mintdim_beam.reader.unit_planner import LengthHistogram, fit, optimal_sizes
from mintdim_beam.reader import output_files
from mintdim_beam.format import names
from mintdim_beam.format.chat import ABSENT, MESSAGE_PARTS, PARTS_PER_MESSAGE
from mintdim_beam.reader import chat_view

TOP_UNK_CHARS = 20
TOP_DUPLICATE_GROUPS = 10
LISTED_ROWS = 10
_COLORS = {"tokens": "#4c72b0", "pad": "#dd8452", "overflow": "#c44e52", "unit": "#55a868", "bar": "#8172b3"}


@dataclass
class ReportData:
    """Figures gathered from one output directory."""

    path: str
    manifest: dict
    stats: dict
    sizes: tuple
    lengths: np.ndarray                     # written token_count per sample_index row
    unit_of: np.ndarray                     # unit per row
    overflow_actions: Counter = field(default_factory=Counter)
    overflow_lengths: list = field(default_factory=list)   # (original count, action)
    overflow_rows: list = field(default_factory=list)
    max_declared: Optional[int] = None
    dup_groups: int = 0
    dup_samples: int = 0
    dup_sizes: Counter = field(default_factory=Counter)
    dup_top: list = field(default_factory=list)
    unk_samples: int = 0
    unk_tokens: int = 0
    unk_chars: Counter = field(default_factory=Counter)
    unk_char_samples: Counter = field(default_factory=Counter)
    unk_segments: Counter = field(default_factory=Counter)
    bad: Counter = field(default_factory=Counter)
    bad_rows: list = field(default_factory=list)
    #: A chat output's: per role, its messages and the tokens written of each part
    #: (after truncation), ``{role: {"messages", "prefix", "content", "suffix", "tokens"}}``.
    roles: Optional[dict] = None


def gather(path: str) -> ReportData:
    """Read every figure the report shows from the output directory.

    The figures come from the indexes, so the records are read once and checked against
    them (as an export checks them): a report must not vouch for a dataset whose shards
    disagree with its index. A dataset that cannot be read raises its
    :class:`~mintdim_beam.reader.dataset.ReaderError`, which names the file, shard and record.
    """
    reader = rd.OutputReader(path)
    path = reader.path            # the build a versioned root's LATEST names
    index = reader.index
    stats = reader.json(names.STATS)
    roles = _RoleCounts(reader)
    for unit in reader.unit_sizes:
        rows, done = reader.unit_rows(unit), 0
        for batch in reader.batches(unit):
            roles.add(rows[done:done + len(batch.sample_ids)], batch.records)
            done += len(batch.sample_ids)
    manifest = reader.manifest
    data = ReportData(path, manifest, stats, reader.unit_sizes, index.token_count, index.unit)
    data.roles = roles.figures()
    declared = (manifest.get("units") or {}).get("declared_sizes") or list(reader.unit_sizes)
    data.max_declared = max(declared)

    def rows(name):
        for _, row in output_files.iter_index(path, name, manifest):
            if isinstance(row, dict):
                yield row

    top: list = []
    for k, row in enumerate(rows(names.DUPLICATE_INDEX)):
        n = int(row.get("count", 0))
        data.dup_groups += 1
        data.dup_samples += n
        data.dup_sizes[n] += 1
        item = (n, -k, row)
        if len(top) < TOP_DUPLICATE_GROUPS:
            heapq.heappush(top, item)
        else:
            heapq.heappushpop(top, item)
    data.dup_top = [row for _, _, row in sorted(top, key=lambda t: (-t[0], -t[1]))]
    template = reader.sequence_template
    for row in rows(names.UNK_INDEX):
        data.unk_samples += 1
        data.unk_tokens += len(row.get("unk_positions") or [])
        seen = set()
        for chars in row.get("unk_chars") or []:
            for ch in chars:
                data.unk_chars[ch] += 1
                seen.add(ch)
        for ch in seen:
            data.unk_char_samples[ch] += 1
        for j in row.get("unk_field_indices") or []:
            name = template[j] if 0 <= j < len(template) else f"#{j}"
            data.unk_segments[(j, name)] += 1
    for row in rows(names.OVERFLOW_INDEX):
        action = row.get("action", "?")
        data.overflow_actions[action] += 1
        data.overflow_lengths.append((int(row.get("token_count", 0)), action))
        if len(data.overflow_rows) < LISTED_ROWS:
            data.overflow_rows.append(row)
    for row in rows(names.BAD_RECORD_INDEX):
        data.bad[(row.get("error", "?"), row.get("reason", "?"))] += 1
        if len(data.bad_rows) < LISTED_ROWS:
            data.bad_rows.append(row)
    return data


class _RoleCounts:
    """Messages and written tokens per role of a chat output, from the record headers
    and the index rows' roles (nothing decoded); a no-op for any other output."""

    def __init__(self, reader):
        self.reader = reader
        self.layout = reader.chat_layout
        if self.layout is not None:
            self.tokens = np.zeros((len(self.layout.roles), PARTS_PER_MESSAGE), np.int64)
            self.messages = np.zeros(len(self.layout.roles), np.int64)

    def add(self, rows: np.ndarray, records: np.ndarray) -> None:
        if self.layout is None or not len(rows):
            return
        codes = self.reader.role_codes(rows)
        chat_view.raise_unlisted(self.reader, rows, records, codes)
        codes = codes.astype(np.int64)
        n = self.reader.meta.n_segments
        lengths = records[:, 1:1 + n].astype(np.int64).reshape(len(rows), -1, PARTS_PER_MESSAGE)
        present = codes != ABSENT
        self.messages += np.bincount(codes[present], minlength=len(self.messages))
        for part in range(PARTS_PER_MESSAGE):
            self.tokens[:, part] += np.bincount(codes[present], weights=lengths[:, :, part][present],
                                                minlength=len(self.messages)).astype(np.int64)

    def figures(self) -> Optional[dict]:
        if self.layout is None:
            return None
        out = {}
        for k, role in enumerate(self.layout.roles):
            parts = dict(zip(MESSAGE_PARTS, self.tokens[k].tolist()))
            out[role] = {"messages": int(self.messages[k]), **parts, "tokens": int(self.tokens[k].sum())}
        return out


# --------------------------------------------------------------------------- charts


def _matplotlib():
    try:
        import matplotlib
        from matplotlib.figure import Figure
    except ImportError:
        raise ReportError("no_matplotlib") from None
    return matplotlib, Figure


_ID = re.compile(r'\bid="([^"]+)"')


def _svg(fig, prefix: str) -> str:
    """The figure as inline SVG: no XML prolog, ids prefixed, deterministic bytes."""
    matplotlib, _ = _matplotlib()
    buf = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "path", "svg.hashsalt": "mintdim-report"}):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None}, bbox_inches="tight")
    text = buf.getvalue()
    text = text[text.index("<svg"):]
    text = re.sub(r"\s*<metadata>.*?</metadata>", "", text, flags=re.S)  # RDF boilerplate
    ids = set(_ID.findall(text))
    for name in sorted(ids, key=len, reverse=True):
        esc = re.escape(name)
        text = re.sub(rf'\bid="{esc}"', f'id="{prefix}-{name}"', text)
        text = re.sub(rf'#{esc}\b(?=[")])', f'#{prefix}-{name}', text)
    return text


def _new_figure(width=8.0, height=3.2):
    _, Figure = _matplotlib()
    fig = Figure(figsize=(width, height))
    ax = fig.subplots()
    ax.spines[["top", "right"]].set_visible(False)
    from matplotlib.ticker import MaxNLocator

    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    return fig, ax


def _bin_edges(max_value: int, target_bins: int = 80) -> np.ndarray:
    width = max(1, -(-max_value // target_bins))
    return np.arange(0, max_value + 2 * width, width)


def chart_lengths(data: ReportData) -> str:
    """Token lengths as written, overflow originals apart, and a line per unit size."""
    fig, ax = _new_figure(9, 3.6)
    over = np.asarray([n for n, a in data.overflow_lengths if a in ("truncate", "skip")], np.int64)
    top = int(max([data.lengths.max() if len(data.lengths) else 0, over.max() if len(over) else 0,
                   max(data.sizes)]))
    edges = _bin_edges(top)
    written_lengths = data.lengths
    ax.hist(written_lengths, bins=edges, color=_COLORS["tokens"], label="samples (written length)")
    if len(over):
        ax.hist(over, bins=edges, color=_COLORS["overflow"], alpha=0.8,
                label="overflow (original length, truncated or skipped)")
    for size in data.sizes:
        ax.axvline(size, color=_COLORS["unit"], linestyle="--", linewidth=1)
        ax.annotate(str(size), (size, 1.0), xycoords=("data", "axes fraction"), va="bottom", ha="center",
                    fontsize=8, color=_COLORS["unit"])
    ax.set_xlabel("tokens per sample")
    ax.set_ylabel("samples")
    ax.set_title("Token-length histogram and unit boundaries", pad=14)
    ax.legend(loc="upper right", fontsize=8, frameon=False)
    return _svg(fig, "lengths")


def chart_padding(data: ReportData) -> str:
    units = data.stats.get("units") or {}
    sizes = [str(s) for s in data.sizes]
    tokens = np.asarray([units.get(s, {}).get("tokens", 0) for s in sizes], np.int64)
    pads = np.asarray([units.get(s, {}).get("pad_tokens", 0) for s in sizes], np.int64)
    fig, ax = _new_figure(8, 3.2)
    x = np.arange(len(sizes))
    ax.bar(x, tokens, color=_COLORS["tokens"], label="tokens")
    ax.bar(x, pads, bottom=tokens, color=_COLORS["pad"], label="padding")
    for i, s in enumerate(sizes):
        ratio = units.get(s, {}).get("padding_ratio", 0.0)
        ax.annotate(f"{ratio:.1%}", (x[i], tokens[i] + pads[i]), ha="center", va="bottom", fontsize=8)
    ax.set_xticks(x, [f"unit {s}" for s in sizes])
    ax.set_ylabel("payload slots")
    ax.set_title("Padding per unit (label: padding ratio)")
    ax.legend(fontsize=8, frameon=False)
    return _svg(fig, "padding")


def chart_unk_chars(data: ReportData) -> str:
    top = data.unk_chars.most_common(TOP_UNK_CHARS)[::-1]
    fig, ax = _new_figure(8, max(2.0, 0.28 * len(top) + 1))
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    # Labels are code points: the chart's font has no glyph for most UNK characters
    # (that is why they are UNK); the table next to the chart shows the characters.
    ax.barh(np.arange(len(top)), [c for _, c in top], color=_COLORS["bar"])
    ax.set_yticks(np.arange(len(top)), [f"U+{ord(ch):04X}" for ch, _ in top], fontsize=8)
    ax.set_xlabel("occurrences behind UNK tokens")
    ax.set_title(f"Top {len(top)} UNK characters")
    return _svg(fig, "unkchars")


def chart_overflow(data: ReportData) -> str:
    fig, ax = _new_figure(8, 3.0)
    by_action: dict = {}
    for n, action in data.overflow_lengths:
        by_action.setdefault(action, []).append(n)
    edges = _bin_edges(max(n for n, _ in data.overflow_lengths))
    for action in sorted(by_action):
        ax.hist(by_action[action], bins=edges, alpha=0.8, label=action)
    ax.axvline(data.max_declared, color=_COLORS["unit"], linestyle="--", linewidth=1)
    ax.annotate(f"max declared size {data.max_declared}", (data.max_declared, 1),
                xycoords=("data", "axes fraction"), rotation=90, va="top", ha="right", fontsize=8)
    ax.set_xlabel("original tokens per sample")
    ax.set_ylabel("samples")
    ax.set_title("Overflow samples by policy action")
    ax.legend(fontsize=8, frameon=False)
    return _svg(fig, "overflow")


def chart_duplicates(data: ReportData) -> str:
    sizes = sorted(data.dup_sizes)
    fig, ax = _new_figure(6, 2.6)
    x = np.arange(len(sizes))
    ax.bar(x, [data.dup_sizes[s] for s in sizes], color=_COLORS["bar"], width=0.6)
    ax.set_xticks(x, [str(s) for s in sizes])
    ax.set_xlim(-0.8, len(sizes) - 0.2)
    ax.set_xlabel("samples sharing one content hash")
    ax.set_ylabel("groups")
    ax.set_title("Duplicate group sizes")
    return _svg(fig, "duplicates")


# --------------------------------------------------------------------------- page


def _unk(tok: dict) -> str:
    """The manifest's unk id; null: a vocabulary that cannot emit UNK (DESIGN.md §8)."""
    return "none (cannot occur)" if "unk_id" in tok and tok["unk_id"] is None else str(tok.get("unk_id"))


def _e(value) -> str:
    return html.escape(str(value), quote=True)


def _table(headers, rows, cls: str = "") -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _figure(name: str, svg: str, caption: str) -> str:
    return f'<figure class="chart" id="chart-{name}">{svg}<figcaption>{_e(caption)}</figcaption></figure>'


def _n(count: int, word: str, plural: Optional[str] = None) -> str:
    return f"{count:,} {word if count == 1 else (plural or word + 's')}"


def _pct(x: float) -> str:
    return f"{x:.2%}"


def _char_label(ch: str) -> str:
    name = unicodedata.name(ch, "")
    shown = ch if ch.isprintable() and not ch.isspace() else ""
    return f"<span class='char'>{_e(shown)}</span>", f"U+{ord(ch):04X}", _e(name.lower() or "(unnamed)")


_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:2rem auto;max-width:1100px;
color:#222;padding:0 1rem}
h1{font-size:1.5rem;margin-bottom:.2rem} h2{margin-top:2.2rem;border-bottom:1px solid #ddd;padding-bottom:.2rem}
.path{color:#555;font-family:ui-monospace,monospace;word-break:break-all}
.cards{display:flex;flex-wrap:wrap;gap:.6rem;margin:1rem 0}
.card{border:1px solid #ddd;border-radius:6px;padding:.5rem .8rem;min-width:8rem}
.card b{display:block;font-size:1.25rem}.card span{color:#666;font-size:.8rem}
table{border-collapse:collapse;margin:.6rem 0;font-size:.9rem}
th,td{border:1px solid #ddd;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#f5f5f5} td.num,th.num{text-align:right}
figure.chart{margin:1rem 0} figure.chart svg{max-width:100%;height:auto}
figcaption{color:#666;font-size:.85rem}
.char{font-size:1.2rem} code{font-family:ui-monospace,monospace;font-size:.85rem}
.none{color:#666;font-style:italic}
"""


def render_html(data: ReportData, k: Optional[int] = None) -> str:
    """The page as a string (charts inline)."""
    st, mf = data.stats, data.manifest
    tok = mf.get("tokenizer") or {}
    storage = mf.get("token_storage") or {}
    parts = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
             f"<meta name='viewport' content='width=device-width,initial-scale=1'>"
             f"<title>mintdim report: {_e(data.path)}</title><style>{_CSS}</style></head><body>"]
    parts.append(f"<h1>mintdim dataset report</h1><div class='path'>{_e(data.path)}</div>")
    cards = [("samples", f"{st.get('total_samples', 0):,}"), ("tokens", f"{st.get('total_tokens', 0):,}"),
             ("padding", _pct(st.get("padding_ratio", 0.0))), ("shards", st.get("shards", 0)),
             ("duplicate groups", data.dup_groups), ("samples with UNK", data.unk_samples),
             ("UNK tokens", data.unk_tokens), ("overflow", sum(data.overflow_actions.values())),
             ("bad records", sum(data.bad.values()))]
    parts.append("<div class='cards'>" + "".join(f"<div class='card'><b>{_e(v)}</b><span>{_e(n)}</span></div>"
                                                 for n, v in cards) + "</div>")
    policies = mf.get("policies") or {}
    parts.append(_table(["setting", "value"], [
        ["tokenizer", f"{_e(tok.get('type'))} <code>{_e(tok.get('path'))}</code> (vocab {_e(tok.get('vocab_size'))}, "
                      f"unk {_e(_unk(tok))}, pad {_e(tok.get('pad_id'))})"],
        ["token storage", f"{_e(storage.get('dtype'))}, magic {_e(storage.get('magic'))}"],
        ["sequence_template", " · ".join(f"<code>{_e(s)}</code>" for s in mf.get("sequence_template") or [])],
        ["unit sizes", _e(", ".join(str(s) for s in data.sizes))
         + (f" (declared {_e(', '.join(map(str, (mf.get('units') or {}).get('declared_sizes') or [])))})"
            if (mf.get('units') or {}).get('declared_sizes') not in (None, list(data.sizes)) else "")],
        ["samples per shard", _e((mf.get("output") or {}).get("samples_per_shard"))],
        ["sources", "<br>".join(f"<code>{_e(f)}</code>" for f in (mf.get("source") or {}).get("files") or [])],
        ["policies", _e(", ".join(f"{k}={v}" for k, v in policies.items()))],
    ]))

    # lengths and units
    parts.append("<h2 id='lengths'>Token lengths and units</h2>")
    if len(data.lengths) or data.overflow_lengths:
        parts.append(_figure("lengths", chart_lengths(data),
                             "Samples per token length; dashed lines are the unit sizes. A sample is padded "
                             "up to the first line at or right of it."))
    units = st.get("units") or {}
    parts.append(_table(["unit", "samples", "tokens", "pad tokens", "padding ratio", "shards"], [
        [f"unit {_e(s)}", f"{u.get('samples', 0):,}", f"{u.get('tokens', 0):,}", f"{u.get('pad_tokens', 0):,}",
         _pct(u.get("padding_ratio", 0.0)), _e(u.get("shards", 0))]
        for s, u in ((str(s), units.get(str(s), {})) for s in data.sizes)]))
    if st.get("total_samples"):
        parts.append(_figure("padding", chart_padding(data), "Payload slots per unit: tokens and padding."))
    parts.append(_suggestion(data, k))

    if data.roles is not None:
        parts.append(_roles_section(data.roles))

    # duplicates
    parts.append("<h2 id='duplicates'>Duplicates</h2>")
    if data.dup_groups:
        parts.append(f"<p>{_n(data.dup_groups, 'content hash', 'content hashes')} shared by "
                     f"{_n(data.dup_samples, 'sample')} "
                     f"(samples later skipped by the overflow policy included).</p>")
        parts.append(_figure("duplicates", chart_duplicates(data), "How many samples share each duplicated hash."))
        parts.append(_table(["samples", "hash", "first members (sample: file:line)"], [
            [_e(r.get("count")), f"<code>{_e(str(r.get('hash'))[:16])}…</code>",
             "<br>".join(f"{_e(m.get('sample_id'))}: <code>{_e(m.get('source_file'))}:{_e(m.get('source_line'))}</code>"
                         for m in (r.get("samples") or [])[:5])]
            for r in data.dup_top]))
    else:
        parts.append("<p class='none'>No duplicate content.</p>")

    # UNK
    parts.append("<h2 id='unk'>UNK tokens</h2>")
    if data.unk_samples:
        parts.append(f"<p>{_n(data.unk_tokens, 'UNK token')} in the written payload of "
                     f"{_n(data.unk_samples, 'sample')}.</p>")
        parts.append(_figure("unkchars", chart_unk_chars(data),
                             "Characters of the source text behind UNK tokens, by code point."))
        parts.append(_table(["character", "code point", "name", "occurrences", "samples"], [
            [*_char_label(ch), f"{n:,}", f"{data.unk_char_samples[ch]:,}"]
            for ch, n in data.unk_chars.most_common(TOP_UNK_CHARS)], "unk-chars"))
        parts.append(_table(["segment", "name", "UNK tokens"], [
            [_e(j), f"<code>{_e(name)}</code>", f"{n:,}"] for (j, name), n in sorted(data.unk_segments.items())]))
    else:
        parts.append("<p class='none'>No UNK token in any written payload.</p>")

    # overflow
    parts.append("<h2 id='overflow'>Overflow</h2>")
    if data.overflow_lengths:
        parts.append("<p>" + ", ".join(f"{n:,} {_e(a)}" for a, n in sorted(data.overflow_actions.items()))
                     + f" (samples longer than the largest declared size, {_e(data.max_declared)}).</p>")
        parts.append(_figure("overflow", chart_overflow(data), "Original token counts of the overflow samples."))
        parts.append(_table(["sample", "source", "tokens", "action", "new unit"], [
            [_e(r.get("sample_id")), f"<code>{_e(r.get('source_file'))}:{_e(r.get('source_line'))}</code>",
             _e(r.get("token_count")), _e(r.get("action")), _e(r.get("new_unit_size", ""))]
            for r in data.overflow_rows]))
    else:
        parts.append("<p class='none'>No sample exceeded the declared unit sizes.</p>")

    # bad records
    parts.append("<h2 id='bad'>Bad records</h2>")
    if data.bad:
        parts.append(_table(["error", "reason", "lines"], [
            [_e(e), _e(r), f"{n:,}"] for (e, r), n in data.bad.most_common()]))
        parts.append(_table(["sample", "source", "error", "reason"], [
            [_e(r.get("sample_id")), f"<code>{_e(r.get('source_file'))}:{_e(r.get('source_line'))}</code>",
             _e(r.get("error")), _e(r.get("reason"))] for r in data.bad_rows]))
    else:
        parts.append("<p class='none'>No bad record was skipped.</p>")
    parts.append(f"<p class='none'>Made by mintdim-beam {_e(__version__)} from the files in this directory; "
                 f"the page needs no network.</p></body></html>\n")
    return "".join(parts)


def _roles_section(roles: dict) -> str:
    """A chat output's messages and written tokens per role (what a loss by role covers)."""
    total = sum(r["tokens"] for r in roles.values()) or 1
    return ("<h2 id='roles'>Messages by role</h2><p>Tokens written per role after truncation; prefix and "
            "suffix are what the role's template puts around the content.</p>"
            + _table(["role", "messages", "prefix tokens", "content tokens", "suffix tokens", "tokens", "share"], [
                [f"<code>{_e(role)}</code>", f"{r['messages']:,}", f"{r['prefix']:,}", f"{r['content']:,}",
                 f"{r['suffix']:,}", f"{r['tokens']:,}", _pct(r["tokens"] / total)]
                for role, r in roles.items()], "roles"))


def _suggestion(data: ReportData, k: Optional[int]) -> str:
    """What the padding-optimal sizes would give for the same lengths."""
    counts = Counter(data.lengths.tolist())
    for n, action in data.overflow_lengths:
        if action in ("truncate", "skip"):   # back to the original length
            counts[n] += 1
        if action == "truncate":             # its row says max(declared sizes)
            counts[data.max_declared] -= 1
    hist = LengthHistogram.from_counts(counts)
    if not hist.samples:
        return ""
    k = k or len(data.sizes)
    suggested = optimal_sizes(hist, k)
    now, best = fit(hist, data.sizes), fit(hist, suggested)
    sizes = lambda f: _e(", ".join(map(str, f.sizes)))  # noqa: E731
    tail = "<code>mintdim-beam plan</code> computes this with rounding options.</p>"
    if not now.overflow_samples:
        return (f"<p>With {len(suggested)} sizes, the padding-optimal units for these lengths are "
                f"<b>{sizes(best)}</b>: padding ratio {_pct(best.padding_ratio)} against "
                f"{_pct(now.padding_ratio)} for the current sizes. " + tail)
    # The current sizes pad only the samples that fit them: compare on those samples.
    inside = hist.upto(max(data.sizes))
    fitting = inside.samples
    text = (f"<p>Overflow: {now.overflow_samples:,} of {hist.samples:,} samples longer than {max(data.sizes)}, "
            f"the largest current size. ")
    if fitting:
        same = fit(inside, optimal_sizes(inside, k))
        text += (f"On the {fitting} samples that fit, the padding-optimal units are <b>{sizes(same)}</b>: "
                 f"padding ratio {_pct(same.padding_ratio)} against {_pct(now.padding_ratio)} for the "
                 f"current sizes. ")
    return text + (f"On all {hist.samples} samples, with nothing overflowing, they are <b>{sizes(best)}</b>: "
                   f"padding ratio {_pct(best.padding_ratio)}. " + tail)


def write_report(path: str, out: str, k: Optional[int] = None) -> str:
    """Gather, render and write the page to ``out`` (a local path); returns ``out``."""
    _matplotlib()
    data = gather(path)
    page = render_html(data, k)
    with open(out, "w", encoding="utf-8") as f:
        f.write(page)
    return out
