"""How far a build has come: the figures, their display on stderr, and the watcher that
learns them on the local runners.

The local FnApiRunner's ``run_pipeline`` blocks the launcher until the build is over,
and its result reports metrics only then. What the launcher can see while it runs is
the staging area: every encoded block leaves its spill file there, whole or not at all,
and the spill's header holds the block's figures (:meth:`Figures.to_dict`). A launcher
thread (:func:`watching`) lists the spills every half second, reads each new one's
header once and feeds the totals to a :class:`ProgressDisplay`. Remote runners count the
same figures as Beam counters in the ``mintdim`` namespace, which their UIs show and
the launcher prints when the runner reports them (``launcher``).

The figures of a block are those of the *planned* block it completes: a plain block's
bytes, or a compressed file's whole size once its last streamed block is spilled, so
the bytes and blocks done add up to the plan's totals. Progress is advisory: nothing
here may fail a build, so the watcher swallows its own errors and stops showing.

Everything but :func:`watching` and :class:`SpillWatcher` is pure formatting, tested
with a fake clock and stream.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from typing import Callable, Optional

from mintdim_beam.core.block_result import SPILL_SUFFIX, Figures, read_spill_header

#: Bytes read from the start of a spill for its header (a longer header is read whole).
HEADER_READ = 4096
#: Seconds between two plain lines (stderr not a terminal: a log, a CI job).
PLAIN_INTERVAL = 10.0
#: Seconds between two redraws of the terminal's line.
TTY_INTERVAL = 0.5
#: Seconds between two looks at the staging area.
POLL_INTERVAL = 0.5


# --------------------------------------------------------------------------- formatting


def _scaled(n: float, units: tuple, sep: str) -> str:
    """``n`` in steps of 1000 with three significant digits: ``12.3<sep>MB``."""
    for unit in units:
        n /= 1000
        if n < 1000 or unit == units[-1]:
            return f"{n:.3g}{sep}{unit}" if n < 100 else f"{n:.0f}{sep}{unit}"
    raise AssertionError("unreachable")


def format_size(n: float) -> str:
    """Decimal units, as the rates (MB/s) are: ``950 B``, ``12.3 MB``, ``1.07 GB``."""
    return f"{int(n)} B" if n < 1000 else _scaled(n, ("kB", "MB", "GB", "TB"), " ")


def format_count(n: float) -> str:
    """``950``, ``12.3k``, ``4.56M``, ``1.2G``: three significant digits."""
    return f"{n:.0f}" if n < 1000 else _scaled(n, ("k", "M", "G", "T"), "")


def format_duration(seconds: float) -> str:
    """``7s``, ``4m05s``, ``2h03m``: as precise as a person reads a remaining time."""
    s = max(0, int(round(seconds)))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def format_rate_mb(bytes_per_second: float) -> str:
    """``0.25 MB/s``, ``12.3 MB/s``, ``456 MB/s``."""
    mb = bytes_per_second / 1e6
    return f"{mb:.0f} MB/s" if mb >= 100 else f"{mb:.1f} MB/s" if mb >= 1 else f"{mb:.2f} MB/s"


def eta_seconds(done: int, total: int, elapsed: float) -> Optional[float]:
    """Seconds left at the average rate so far, or None before anything is done."""
    if done <= 0 or elapsed <= 0 or total <= 0:
        return None
    return max(0.0, elapsed * (total - done) / done)


def progress_line(done: Figures, total: Figures, elapsed: float) -> str:
    """One line: bytes and blocks done of the plan, percent, rates, and what is left."""
    percent = 100.0 * done.bytes / total.bytes if total.bytes else 100.0 * done.blocks / max(1, total.blocks)
    rate = elapsed if elapsed > 0 else float("inf")
    parts = [f"[unit-build] {format_size(done.bytes)} / {format_size(total.bytes)} ({min(percent, 100.0):.1f}%)",
             f"blocks {done.blocks}/{total.blocks}",
             format_rate_mb(done.bytes / rate),
             f"{format_count(done.samples / rate)} samples/s"]
    if done.blocks >= total.blocks:
        parts.append("encoded, writing outputs")
    else:
        eta = eta_seconds(done.bytes, total.bytes, elapsed)
        parts.append(f"ETA {format_duration(eta)}" if eta is not None else "ETA -")
    return ", ".join(parts)


def summary_line(elapsed: float, bytes_read: Optional[int], tokens: int, output_bytes: int) -> str:
    """The closing line: how long, how fast, how much was written. ``bytes_read`` None:
    the input's size is not known, and the line says so rather than show a false zero."""
    rate = elapsed if elapsed > 0 else float("inf")
    read = ("input size unknown" if bytes_read is None
            else f"{format_size(bytes_read)} read at {format_rate_mb(bytes_read / rate)}")
    return (f"[unit-build] finished in {format_duration(elapsed)}: {read}, "
            f"{format_count(tokens / rate)} tokens/s, {format_size(output_bytes)} on disk")


def counters_line(counters: dict) -> str:
    """The runner's ``mintdim`` counters, in a fixed order, as ``name=value``."""
    order = ("bytes_read", "blocks_done", "samples", "tokens", "bad_records", "shards")
    names = [n for n in order if n in counters] + sorted(set(counters) - set(order))
    return "[unit-build] counters: " + " ".join(f"{n}={counters[n]}" for n in names)


# --------------------------------------------------------------------------- display


class ProgressDisplay:
    """Writes progress lines to ``stream``: one line redrawn with ``\\r`` on a terminal,
    a plain line at most every ``interval`` seconds otherwise (and once when every
    block is done, so a short build shows one line too)."""

    def __init__(self, stream, total: Figures, interactive: Optional[bool] = None,
                 interval: float = PLAIN_INTERVAL, clock: Callable[[], float] = time.monotonic):
        self._stream = stream
        self._total = total
        if interactive is None:
            isatty = getattr(stream, "isatty", None)
            interactive = bool(isatty()) if isatty is not None else False
        self._interactive = interactive
        self._interval = TTY_INTERVAL if interactive else interval
        self._clock = clock
        self._started = clock()
        self._last = self._started
        self._width = 0          # of the terminal line drawn last
        self._finished = False   # the "every block done" line was written
        self.closed = False

    def update(self, done: Figures, force: bool = False) -> None:
        if self.closed:
            return
        now = self._clock()
        complete = done.blocks >= self._total.blocks
        if self._finished and not complete:
            return   # the spills of a finished build may already be gone: never show less
        due = force or now - self._last >= self._interval or (complete and not self._finished)
        if not due or (complete and self._finished and not force):
            return
        self._last = now
        self._finished = self._finished or complete
        line = progress_line(done, self._total, now - self._started)
        if self._interactive:
            line = line[:_columns(self._stream) - 1]   # a wrapped line would not be redrawn
            self._stream.write("\r" + line.ljust(self._width))
            self._width = len(line)
        else:
            self._stream.write(line + "\n")
        self._stream.flush()

    def close(self) -> None:
        """End the terminal's line, so what follows starts on its own."""
        if self.closed:
            return
        self.closed = True
        if self._interactive and self._width:
            with contextlib.suppress(Exception):   # a closed stderr fails no build
                self._stream.write("\n")
                self._stream.flush()


def _columns(stream) -> int:
    try:
        return os.get_terminal_size(stream.fileno()).columns or 80
    except (AttributeError, OSError, ValueError):
        return 200


# --------------------------------------------------------------------------- watching


class SpillWatcher:
    """The sum of the figures in the headers of the spills in local spill directories,
    each spill read once, those older than ``since`` (a previous build's leftovers)
    skipped."""

    def __init__(self, spill_dirs, since: float):
        self._dirs = list(spill_dirs)
        self._since = since
        self._seen: set = set()
        self._done = Figures()

    def poll(self) -> Figures:
        for directory in self._dirs:
            try:
                entries = os.scandir(directory)
            except FileNotFoundError:
                continue
            with entries:
                for entry in entries:
                    key = (directory, entry.name)
                    if key in self._seen or not entry.name.endswith(SPILL_SUFFIX):
                        continue
                    try:
                        if entry.stat().st_mtime < self._since:
                            continue
                        figures = Figures.from_dict(_read_header(entry.path)["progress"])
                    except (FileNotFoundError, ValueError, KeyError, TypeError):
                        continue   # gone, or not a spill of this build: next time
                    self._seen.add(key)
                    self._done = self._done + figures
        return self._done


def _read_header(path: str) -> dict:
    with open(path, "rb") as f:
        head = f.read(HEADER_READ)
        if len(head) >= 8 and int.from_bytes(head[:8], "little") + 8 > len(head):
            head += f.read(int.from_bytes(head[:8], "little") + 8 - len(head))
    return read_spill_header(head)


@contextlib.contextmanager
def watching(watcher: SpillWatcher, display: ProgressDisplay, period: float = POLL_INTERVAL):
    """Show ``watcher``'s figures on ``display`` from a thread while the block runs.

    Any error in the thread stops the display and nothing else. When the block ends
    without an exception, the figures are read a last time, so the final line shows
    every block done.
    """
    stop = threading.Event()

    def run():
        try:
            while not stop.wait(period):
                display.update(watcher.poll())
        except Exception:   # progress is advisory: never let it break the build
            display.close()

    thread = threading.Thread(target=run, name="mintdim-progress", daemon=True)
    thread.start()
    ok = False
    try:
        yield display
        ok = True
    finally:
        stop.set()
        thread.join(timeout=5)
        if ok and not display.closed:
            try:
                display.update(watcher.poll())
            except Exception:
                pass
        display.close()
