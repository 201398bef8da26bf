"""annotate_app."""
