"""Exact tokenizer adapters (SentencePiece ``.model``, Hugging Face ``tokenizer.json``),
what a SentencePiece model declares, long texts cut where the tokenizer allows, the UNK
audit's columns, and :mod:`.accel`, the exact accelerators. Imports ``errors`` and
``format`` only.
"""
