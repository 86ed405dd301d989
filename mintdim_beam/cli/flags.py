"""What every ``mintdim-beam`` command shares: exit codes, the parser, and the flag check.

Beam pipeline options follow the commands that run a pipeline (``--runner``,
``--temp_location``, ..., and the build's ``--encode_threads``). Beam itself drops a flag
it does not know, so a typo such as ``--on-overlfow truncate`` would vanish and the build
would run on the default policy. :func:`check_flags` therefore accepts only flags that
are ours (argparse has already taken those) or pipeline options of the installed Beam,
its installed extras and this package, found through Beam's public API: a flag is
unknown when ``get_all_options(retain_unknown_options=True)`` keeps it and
``get_all_options()`` does not. Anything else is a usage error that names the flag and
suggests the closest known one.

Usage errors exit with 64 (``EX_USAGE`` of sysexits.h), apart from the spec's errors in
a job or its data (2) and ``verify`` finding problems (1).
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import io
import logging
import re
import sys
from typing import Sequence

EXIT_OK = 0
EXIT_PROBLEMS = 1       # verify found problems
EXIT_ERROR = 2          # the job or the data is wrong: the spec's errors, bilingual
EXIT_USAGE = 64         # the command line is wrong (sysexits.h EX_USAGE)
EXIT_INTERRUPTED = 130  # Ctrl-C or SIGTERM

EXIT_CODES_HELP = """exit status:
  0    success
  1    verify found problems in a dataset
  2    the job or its data is wrong (the spec's errors, in English and Vietnamese)
  64   usage error: an unknown option, a missing or bad argument
  130  interrupted (Ctrl-C or SIGTERM); outputs are marked UNIT_BUILD_FAILED.md"""

#: Which flags besides a command's own it takes: every Beam pipeline option, or only
#: those that configure file systems (reading ``s3://`` and ``gs://`` outputs).
BEAM, FILESYSTEM = "beam", "filesystem"


class Parser(argparse.ArgumentParser):
    """argparse, with usage errors exiting 64 and abbreviated flags refused (an
    abbreviation could take a Beam flag for one of ours)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message):
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def version_text() -> str:
    """``mintdim-beam X (apache-beam Y, Python Z)``, without importing Beam."""
    import platform
    from importlib import metadata

    from mintdim_beam.version import __version__

    try:
        beam = metadata.version("apache-beam")
    except metadata.PackageNotFoundError:
        beam = "not installed"
    return f"mintdim-beam {__version__} (apache-beam {beam}, Python {platform.python_version()})"


LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def _log_level(value: str) -> str:
    """A logging level name, any case; a typo used to fall back to ERROR unsaid."""
    if str(value).upper() not in LOG_LEVELS:
        raise argparse.ArgumentTypeError(f"invalid level {value!r} (choose from {', '.join(LOG_LEVELS)})")
    return str(value).upper()


def add_log_level(parser: argparse.ArgumentParser, subcommand: bool = False) -> None:
    """``--log-level``, before or after the subcommand. A subcommand's copy has no default
    of its own: argparse would let it replace the value given before the subcommand."""
    parser.add_argument("--log-level", type=_log_level,
                        default=argparse.SUPPRESS if subcommand else "ERROR", metavar="LEVEL",
                        help="Python logging level for Beam and the build: DEBUG, INFO, WARNING, ERROR "
                             "(default: ERROR)")


def check_flags(parser: argparse.ArgumentParser, extra: Sequence[str], scope: str) -> list:
    """``extra`` (what argparse left) when every flag in it is a Beam pipeline option
    allowed in ``scope``; otherwise ``parser.error`` (exit 64) naming the first that is
    not, with the closest known option."""
    extra = [str(a) for a in extra]
    if not extra:
        return extra
    flags = []
    for k, token in enumerate(extra):
        if token.startswith("--") and len(token) > 2:
            flags.append(token.partition("=")[0])
        elif token.startswith("-") and token != "-" and not _is_number(token):
            parser.error(f"unknown option {token}{_suggest(token, parser, {})}")
        elif k == 0 or not extra[k - 1].startswith("--") or "=" in extra[k - 1]:
            parser.error(f"unexpected argument {token!r}")
    known, unknown = _beam_options(extra, parser)
    for flag in flags:
        if _dest(flag) in unknown:
            parser.error(f"unknown option {flag}{_suggest(flag, parser, known)}")
    if scope == FILESYSTEM:
        from mintdim_beam.storage.clients import filesystem_option_names

        allowed = filesystem_option_names()
        for flag in flags:
            if _dest(flag) not in allowed:
                parser.error(f"option {flag} is a Beam pipeline option, which this command does not use; "
                             f"only file-system options (such as --s3_endpoint_url, --project) apply here")
    return extra


def _is_number(token: str) -> bool:
    return re.fullmatch(r"-\d+(\.\d*)?", token) is not None


def _dest(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


def _beam_options(extra: list, parser: argparse.ArgumentParser) -> tuple[dict, set]:
    """(every option Beam knows, the names in ``extra`` it does not), through
    ``PipelineOptions``; a bad value for a known option is a usage error too."""
    from apache_beam.options.pipeline_options import PipelineOptions

    _import_option_extras()
    errors = io.StringIO()
    # Beam logs every flag it discards; the unknown ones are reported here instead.
    beam_log = logging.getLogger("apache_beam.options.pipeline_options")
    level = beam_log.level
    beam_log.setLevel(logging.ERROR)
    try:
        with contextlib.redirect_stderr(errors):
            given = PipelineOptions(extra)
            retained = given.get_all_options(retain_unknown_options=True)
            parsed = given.get_all_options()
            known = PipelineOptions([]).get_all_options()
    except SystemExit:
        lines = [line for line in errors.getvalue().splitlines() if "error:" in line]
        reason = lines[-1].split("error:", 1)[1].strip() if lines else "a Beam pipeline option is malformed"
        parser.error(reason)
    finally:
        beam_log.setLevel(level)
    return known, set(retained) - set(parsed)


def _import_option_extras() -> None:
    """Define the option classes that live outside Beam's ``pipeline_options``: the
    build's own and those of installed runner extras (Dask)."""
    from mintdim_beam.beam import options  # noqa: F401  (BuildOptions)

    try:
        from apache_beam.runners.dask import dask_runner  # noqa: F401  (DaskOptions)
    except ImportError:
        pass


def _suggest(flag: str, parser: argparse.ArgumentParser, known: dict) -> str:
    ours = set(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", parser.format_usage()))
    candidates = sorted(ours | {f"--{name}" for name in known})
    match = difflib.get_close_matches(flag, candidates, n=1, cutoff=0.6)
    if not match and flag.startswith("--"):
        # Ours use dashes, Beam's underscores: compare the names alone as well.
        by_name = {_dest(c): c for c in candidates}
        names = difflib.get_close_matches(_dest(flag), list(by_name), n=1, cutoff=0.6)
        match = [by_name[names[0]]] if names else []
    return f"; did you mean {match[0]}?" if match else ""
