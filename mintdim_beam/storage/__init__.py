"""Bytes through Beam's ``FileSystems`` for build and reader alike: local paths go straight
to ``os``, ``s3://`` takes a fast path, everything else goes through ``FileSystems``
(imported inside the functions that need it, so a local read never loads Beam). Also
compressed inputs, server-side joins (compose) and access probes. Imports ``errors`` only.
"""
