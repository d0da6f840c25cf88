"""Experiments: eval runs compared with each other, per scorer and item by item."""
