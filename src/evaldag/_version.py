"""evaldag's version, at the bottom of the package order: the CLI, the report and anything else
that writes it read it here, not from ``evaldag/__init__.py``, which sits on top."""

__version__ = "0.1.0"
