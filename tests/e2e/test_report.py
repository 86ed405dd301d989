"""The HTML report: one self-contained page whose charts a real browser renders.

The dataset has duplicates, UNK characters, an overflow and a bad record, so every
chart is drawn. The browser test loads the page from disk in headless Chromium with
networking off and counts the inline SVG charts in the DOM it built.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from test_reader import make_dataset

pytest.importorskip("matplotlib")

from mintdim_beam.cli.consumer_commands import main as consumer_main  # noqa: E402
from mintdim_beam.reader.report import gather, render_html, write_report  # noqa: E402

CHARTS = ("lengths", "padding", "duplicates", "unkchars", "overflow")


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("report")
    out = make_dataset(root)
    target = root / "report.html"
    assert consumer_main(["report", out, "-o", str(target)]) == 0
    return target


def test_page_is_self_contained(page):
    text = page.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>")
    for name in CHARTS:
        assert f'id="chart-{name}"' in text
    assert text.count("<svg") == len(CHARTS)
    assert "<script" not in text and "<link" not in text and "<img" not in text
    # nothing to fetch: the only URLs are XML namespace names
    urls = set(re.findall(r"""(?:src|href)\s*=\s*["']([^"'#][^"']*)""", text))
    assert not urls, urls
    assert "@import" not in text and "url(http" not in text
    # ids of different charts never collide
    ids = re.findall(r'\bid="([^"]+)"', text)
    assert len(ids) == len(set(ids))


def test_page_shows_the_figures(page, tmp_path):
    text = page.read_text(encoding="utf-8")
    assert "漢" in text and "U+6F22" in text and "U+1F642" in text      # top UNK characters
    assert "1 content hash shared by 2 samples" in text
    assert "1 truncate" in text and "SourceParseError" in text
    assert "padding-optimal units" in text
    # current and suggested sizes compared on the same samples: the 25 that fit 96
    assert "Overflow: 1 of 26 samples longer than 96, the largest current size. On the 25 samples that fit" in text
    assert "On all 26 samples, with nothing overflowing, they are <b>" in text


def test_report_is_deterministic(page, tmp_path):
    out = str(page.parent / "out")
    again = tmp_path / "again.html"
    write_report(out, str(again))
    assert again.read_text(encoding="utf-8") == page.read_text(encoding="utf-8")


def test_empty_sections_render_without_charts(tmp_path):
    rows = [{"q": "the bees", "a": "make honey"}, {"q": "the queen", "a": "lays eggs in the hive"}]
    out = make_dataset(tmp_path, rows=rows)
    html = render_html(gather(out))
    assert html.count("<svg") == 2                   # lengths and padding only
    assert "No duplicate content." in html and "No UNK token" in html


def test_missing_matplotlib_is_a_clear_error(tmp_path, monkeypatch, capsys, page):
    import sys

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert consumer_main(["report", str(page.parent / "out"), "-o", str(tmp_path / "r.html")]) == 2
    assert "pip install 'mintdim-beam[report]'" in capsys.readouterr().err
    assert not (tmp_path / "r.html").exists()


def _chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


@pytest.mark.skipif(_chromium() is None, reason="headless Chromium is not installed (Debian package chromium)")
def test_charts_render_in_headless_chromium(page, tmp_path):
    cmd = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--no-first-run", "--disable-extensions",
           f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", page.as_uri()]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    dom = done.stdout
    assert dom.count("<svg") == len(CHARTS), dom[:500]
    for name in CHARTS:
        assert re.search(rf'<figure class="chart" id="chart-{name}"><svg', dom), name
    # the charts hold drawn data, not empty frames
    assert dom.count("<path") > 50
