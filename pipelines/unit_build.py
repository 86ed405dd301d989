"""Launch a unit build from a job file with standard Beam pipeline options.

    python -m pipelines.unit_build JOB.yaml [--on-overflow truncate] [--runner ...] [Beam flags]
    python pipelines/unit_build.py JOB.yaml ...              # the same, as a script

A thin wrapper over ``mintdim-beam build``: Beam pipeline options (``--runner``,
``--temp_location``, ``--sdk_container_image``, ``--flink_master``,
``--dask_client_address``, the build's ``--encode_threads``, ...) are passed to Beam, any
other unknown flag is a usage error (exit 64), and ``--versioned`` /
``--skip-unchanged`` publish into versioned roots for scheduled rebuilds.
``pipelines/README.md`` has a command line for each runner.
"""

import sys

from mintdim_beam.cli.commands import main as cli_main


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    return cli_main(["build", *argv])


if __name__ == "__main__":
    sys.exit(main())
