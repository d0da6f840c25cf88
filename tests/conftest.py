"""Test setup: litellm stays offline (no price-map download, no telemetry), and every test
module gets the ``judge_server`` fixture (a fresh scripted judge server per test)."""

import os

from judge_server import judge_server_fixture  # noqa: F401 (registers the fixture)

os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
