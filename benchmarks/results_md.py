"""``benchmarks/RESULTS.md``: the sections benchmarks write themselves, each between its markers."""

from __future__ import annotations

from pathlib import Path

RESULTS_MD = Path(__file__).resolve().parent / "RESULTS.md"


def markers(name: str) -> tuple[str, str]:
    """The comments that open and close benchmark ``name``'s section."""
    return f"<!-- {name}: start -->", f"<!-- {name}: end -->"


def write_section(name: str, section: str) -> None:
    """Put ``section`` (its markers included) in place of the file's section ``name``, or at
    its end."""
    start, end = markers(name)
    text = RESULTS_MD.read_text() if RESULTS_MD.exists() else "# Benchmark results\n"
    if start in text:
        head, rest = text.split(start, 1)
        text = head + section + rest.split(end, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    RESULTS_MD.write_text(text)
