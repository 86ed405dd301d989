"""A quiet build prints nothing but its result lines, also where nobody set up logging.

``run(quiet=True)`` turns off the progress display; what Beam logs is the caller's
logging's to show. A script that never configured logging has no handler on the root
logger, and then Python shows every warning anyway (its last-resort handler), and the
first module-level ``logging.warning`` (Beam's ``apitools not found`` while it is
imported) even installs a stderr handler for good (``logging.basicConfig``), after
which Beam's workers' warnings relayed to the launcher print too. :func:`silenced`
gives the root logger a handler that prints nothing for the duration of a quiet build,
only when it has none: a caller's own logging setup is never touched, and after the
build the process is as it was.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging


@contextlib.contextmanager
def silenced(quiet: bool):
    """While a quiet build runs (and imports Beam) in a process without logging
    handlers, log records go nowhere instead of to stderr."""
    root = logging.getLogger()
    if not quiet or root.handlers:
        yield
        return
    handler = logging.NullHandler()
    root.addHandler(handler)
    try:
        yield
    finally:
        root.removeHandler(handler)


def quiet_when_asked(launch):
    """``launch`` (a function with a ``quiet`` argument), run inside :func:`silenced`
    when it is called with ``quiet`` true."""
    signature = inspect.signature(launch)

    @functools.wraps(launch)
    def run(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        with silenced(bool(bound.arguments.get("quiet", False))):
            return launch(*args, **kwargs)

    return run
