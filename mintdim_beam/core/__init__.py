"""The pure build: configuration, JSONL lines to laid-out records, the caches, the block
plan and the global plan, index rows. No Beam, no storage: imports ``errors``,
``format`` and ``tokenization`` only, so every piece unit-tests in milliseconds.
"""
