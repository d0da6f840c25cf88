"""Helpers that know nothing of scorers or results: the event loop every wait runs on."""
