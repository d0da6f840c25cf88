"""Judge replies as small models write them: read as Mastra reads them (tests/fixtures/judge).

Each case is faithfulness run by the real Mastra through the oracle with one sloppy reply (a
trailing comma, a second object, a BOM, NaN, single quotes ...). evaldag reads what Mastra
reads and refuses what it refuses, but for the deviations below (docs/differences-from-mastra.md).
"""

import json

import pytest
from repo_paths import FIXTURES

from evaldag import EvalDagError
from evaldag.scorers import faithfulness

CASES = json.loads((FIXTURES / "judge/sloppy_json.json").read_text())["cases"]
#: Where evaldag differs on purpose, and what it does instead.
DEVIATIONS = {
    # Mastra's repair of partial JSON stops at the first trailing comma inside an object, so
    # the reply is lost; every trailing comma has one meaning, so evaldag drops them all.
    "sloppy-trailing-comma-nested": {"ok": True, "score": 0.5},
    # JSON.parse refuses a byte-order mark; it carries no meaning, so evaldag skips it.
    "sloppy-bom": {"ok": True, "score": 0.5},
    # Mastra's repair drops a key whose value is NaN and goes on; evaldag refuses a reply with
    # a number JSON does not have, rather than guess which keys to keep.
    "sloppy-nan": {"ok": False, "score": None},
}


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_sloppy_replies_are_read_as_mastra_reads_them(case, judge_server):
    judge_server.on("List every claim", case["preprocess"])
    judge_server.on("Check each claim", case["analyze"])
    judge_server.reply = "Because."
    scorer = faithfulness(
        judge_server.judge(cache=False), context=["The sky is blue.", "Grass is green."]
    )
    expected = DEVIATIONS.get(case["name"], case["mastra"])
    if expected["ok"]:
        result = scorer.run(input="Tell me about colors.", output="The sky is blue. Grass is red.")
        assert result.score == expected["score"]
    else:
        with pytest.raises(EvalDagError):
            scorer.run(input="Tell me about colors.", output="The sky is blue. Grass is red.")
