"""The HTML report of an eval result: ``html`` puts the page together from ``summary`` (each
scorer and gate summed up, shared with the CLI), ``items`` (the worst items) and ``svg`` (the
pictures); ``text`` escapes and formats what they all show."""
