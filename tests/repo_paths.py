"""Where the tests find the repository's files, wherever in ``tests/`` a test module lives."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
FIXTURES = TESTS / "fixtures"
