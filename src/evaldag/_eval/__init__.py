"""An eval run: ``run_evals``, dataset loading, checkpoints and progress."""
