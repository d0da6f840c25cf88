"""One row through a scorer's steps: run states, injection, not-scorable, targets. No Hamilton."""
