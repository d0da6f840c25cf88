"""The ``evaldag`` command: ``run``, ``report``, ``demo``."""
