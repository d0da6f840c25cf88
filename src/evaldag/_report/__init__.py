"""The HTML report of an eval result."""
