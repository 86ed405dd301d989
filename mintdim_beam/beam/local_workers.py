"""The local runner's worker processes, started with this module as their entry point.

In multi-process mode Beam's FnApiRunner starts each worker as ``python -m
apache_beam.runners.worker.sdk_worker_main``. Importing Beam logs a warning at module
level (``apitools not found ...``) in a process whose logging nobody configured, and
``logging.warning`` then installs a stderr handler on the root logger
(``logging.basicConfig``) for good: every later record of the worker, INFO included
(the worker sets its level to INFO), went straight to the build's stderr, past
``--quiet`` and ``--log-level``. Yet the worker also sends each record to the launcher
(Beam's logging service), where the launcher's logging decides what is shown.

So the workers start here instead (:func:`main`): the worker's root logger gets a
handler that prints nothing before Beam is imported, then Beam's own worker main
runs, unchanged; a worker's records reach the user only through the launcher.
:func:`worker_processes` hands the FnApiRunner this entry point through Beam's public
``FnApiRunner(default_environment=SubprocessSDKEnvironment...)``. Beam's
``--direct_running_mode=multi_processing`` would replace that environment with its own
command, so the mode reads ``in_memory`` while the pipeline runs (the workers are
``--direct_num_workers`` processes all the same), and the note Beam logs about that
combination is left out.

Nothing here imports Beam at module level: as a worker's ``__main__``, the handler must
be in place before Beam's first import.
"""

from __future__ import annotations

import contextlib
import logging
import sys

#: The local runner's mode whose worker processes start here.
MULTI_PROCESSING = "multi_processing"
#: The message FnApiRunner logs when it runs several workers in a mode other than its two
#: multi-worker modes: true of its defaults, not of the environment given here.
_MODE_NOTE = "If direct_num_workers is not equal to 1"
_FN_RUNNER_LOG = "apache_beam.runners.portability.fn_api_runner.fn_runner"


class _WithoutModeNote(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(_MODE_NOTE)


def command() -> str:
    """The command line of one worker process."""
    return f"{sys.executable} -m {__name__}"


def pipeline_runner(runner, given, options):
    """A context giving the runner to build and run the pipeline on: ``runner``, or, for
    an FnApiRunner the launcher made (``given``, the runner the caller asked for, was
    None or a name) in multi-process mode, the one of :func:`worker_processes`."""
    from apache_beam.options.pipeline_options import DirectOptions

    own = given is None or isinstance(given, str)
    if own and type(runner).__name__ == "FnApiRunner" and \
            options.view_as(DirectOptions).direct_running_mode == MULTI_PROCESSING:
        return worker_processes(options)
    return contextlib.nullcontext(runner)


@contextlib.contextmanager
def worker_processes(options):
    """While the pipeline is built and run: the FnApiRunner whose worker processes start
    with :func:`main`, ``options`` reading ``in_memory`` for the runner (restored after)."""
    from apache_beam.options.pipeline_options import DirectOptions
    from apache_beam.runners.portability.fn_api_runner import FnApiRunner
    from apache_beam.transforms.environments import SubprocessSDKEnvironment

    direct = options.view_as(DirectOptions)
    mode = direct.direct_running_mode
    note, without = logging.getLogger(_FN_RUNNER_LOG), _WithoutModeNote()
    direct.direct_running_mode = "in_memory"
    note.addFilter(without)
    try:
        yield FnApiRunner(default_environment=SubprocessSDKEnvironment.from_command_string(command()))
    finally:
        note.removeFilter(without)
        direct.direct_running_mode = mode


def main(argv=None) -> None:
    """A worker process: Beam's ``sdk_worker_main``, its records sent to the launcher only."""
    logging.getLogger().addHandler(logging.NullHandler())     # before Beam's first import
    from apache_beam.runners.worker import sdk_worker_main

    sdk_worker_main.main(sys.argv if argv is None else argv)


if __name__ == "__main__":
    main()
