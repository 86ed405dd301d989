"""Launching a build: the fluent API and job files, runner choice, preflight checks,
input patterns, progress and the launcher itself. Imports ``beam`` and below, never
``reader``.
"""
