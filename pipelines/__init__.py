"""Launchable jobs: ``python -m pipelines.unit_build JOB.yaml [Beam flags]`` (see README.md here)."""
