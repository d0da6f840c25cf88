"""Test setup: litellm stays offline (no price-map download, no telemetry)."""

import os

os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
