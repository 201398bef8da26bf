"""The Label Studio bridge: labeling configs per task kind (config.py) and push/pull/status (bridge.py)."""
