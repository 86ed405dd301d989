"""Launch a unit build from a job file with standard Beam pipeline options.

    python pipelines/unit_build.py JOB.yaml [--on-overflow truncate] [--runner ...] [Beam flags]

A thin wrapper over ``mintdim-beam build``: everything the CLI does not know is passed
to Beam as a pipeline option (``--runner``, ``--temp_location``, ``--setup_file``, ...).
"""

import sys

from mintdim_beam.cli import main as cli_main


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    return cli_main(["build", *argv])


if __name__ == "__main__":
    sys.exit(main())
