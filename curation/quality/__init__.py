"""Quality of the labels: agreement statistics, consensus and adjudication, release gates, the
dashboard's numbers.

Reads labels through the store and computes; never writes labels (adjudications go through the store's
append-only log) and never imports the app or the CLI.
"""
