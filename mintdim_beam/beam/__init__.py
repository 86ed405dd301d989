"""The Beam layer: the :class:`~mintdim_beam.beam.transforms.UnitBuild` composite transform,
its stages' DoFns, publishing, claims and the build's pipeline options. Imports every
layer below it but ``reader``.
"""
