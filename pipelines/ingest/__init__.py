"""Importers of the real formats (CUPID, AlpsBench; WildChat to come)."""
