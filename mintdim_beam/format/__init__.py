"""The output contract that writer and reader share: the record codec, the file names
and patterns of an output directory, the checks a record read back must pass, and the
template grammar. Imports only :mod:`mintdim_beam.errors`.
"""
