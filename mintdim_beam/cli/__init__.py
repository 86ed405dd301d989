"""The ``mintdim-beam`` command: flags, the build commands and the commands that read a
dataset. May import any layer.
"""
