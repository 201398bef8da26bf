"""Curation: the project store (`store`), the annotation process (`annotation`) and label quality
(`quality`), composed by :mod:`prefkit.curation.project`."""
