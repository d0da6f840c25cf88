"""Evals in pytest: the failure lines of ``evaldag.testing`` and the plugin that collects eval
files as tests."""
