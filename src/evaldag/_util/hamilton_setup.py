"""Hamilton without the extensions evaldag does not use.

Hamilton imports an extension for every library it supports that is installed (``dask.dataframe``
and ``dask.array``, polars, pyspark, xgboost, ...) the first time its decorators are imported:
in a full environment that was most of a first run's CPU (1,250 modules, 1.7 s). evaldag uses
none of them, so it has Hamilton skip them, unless the process imported Hamilton first or the
user chose (``HAMILTON_AUTOLOAD_EXTENSIONS`` set, or set in ``~/.hamilton.conf``). Code of one's
own that needs an extension then loads it: ``hamilton.registry.load_extension("pandas")``.
"""

from __future__ import annotations

import os

_SETTING = "HAMILTON_AUTOLOAD_EXTENSIONS"


def hamilton_without_autoload() -> None:
    """Mark Hamilton's extensions loaded, loading none (see the module); the environment is
    left as it was."""
    from hamilton import registry  # reads ~/.hamilton.conf into the environment

    if registry.INITIALIZED or _SETTING in os.environ:
        return
    os.environ[_SETTING] = "0"
    try:
        registry.initialize()
    finally:
        os.environ.pop(_SETTING, None)
