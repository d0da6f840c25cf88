"""An eval run: ``run_evals``, dataset loading, checkpoints and progress."""

from evaldag._util.hamilton_setup import hamilton_without_autoload

# Before the package's modules import Hamilton (their imports of it come first).
hamilton_without_autoload()
