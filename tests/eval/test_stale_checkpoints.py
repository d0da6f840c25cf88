"""A checkpoint cannot be stale: a changed helper, module constant, closure value, target or
agent refuses it, naming what changed; the same code resumes; ``resume="refresh"`` recomputes
only what changed. The eval code is real modules written to disk and imported as an eval file
is (``evaldag run`` loads it the same way), the helpers in a module beside it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from judge_server import Reply

import evaldag
from evaldag import EvalDagError, EvalResult, OnItemCompleteError, ScorerRun, run_evals
from evaldag._eval.eval_file import eval_definition

HELPERS = """\
def normalize(text):
    return {normalized}
"""

EVAL = """\
import os

import evaldag
from helpers import normalize

MIN_LENGTH = {min_length}
WORDS = frozenset({{"alpha", "beta", "gamma"}})
API_KEY = "{api_key}"


def _log(name, run):
    with open(os.environ["CALLS_LOG"], "a") as log:
        log.write(f"{{name}} {{run.input}}\\n")


def _by_length(factor):
    def length(run):
        _log("length", run)
        return min(1.0, len(normalize(run.output)) / factor)

    return length


def exact(run):
    _log("exact", run)
    return 1.0 if normalize(run.output) in WORDS else 0.0


def above(run):
    _log("above", run)
    return 1.0 if len(run.output) > MIN_LENGTH else 0.0


def shout(text):
    return text{target_change}


def target(input):
    with open(os.environ["CALLS_LOG"], "a") as log:
        log.write(f"target {{input}}\\n")
    return shout(input)


scorers = [
    evaldag.create_scorer("length").generate_score(_by_length({factor})),
    evaldag.create_scorer("exact").generate_score(exact),
    evaldag.create_scorer("above").generate_score(above),
]
"""

V1 = {
    "normalized": "text.strip().lower()",
    "min_length": 4,
    "factor": 10,
    "target_change": "",
    "api_key": "sk-first",
}
ITEMS = ["Alpha", "beta ", "Gamma", "delta", "EPSILON", "zeta"]
DATA = pd.DataFrame({"input": ITEMS, "output": ITEMS})


class _Stopped(Exception):
    pass


def _stop_after_the_first_batch(item, output, scorer_results):
    if item["input"] == ITEMS[1]:
        raise _Stopped


def _load(folder: Path, **changes) -> evaldag._eval.eval_file.EvalDefinition:
    """The eval file with ``changes`` to V1, written and imported afresh (as a new process
    would: its helpers module too)."""
    version = {**V1, **changes}
    (folder / "helpers.py").write_text(HELPERS.format(**version))
    (folder / "eval.py").write_text(EVAL.format(**version))
    sys.modules.pop("helpers", None)
    return eval_definition(str(folder / "eval.py"))


@pytest.fixture
def calls(tmp_path, monkeypatch):
    """The steps' and target's calls, in order: ``["length Alpha", ...]``."""
    log = tmp_path / "calls.log"
    monkeypatch.setenv("CALLS_LOG", str(log))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield lambda: log.read_text().splitlines() if log.exists() else []
    sys.modules.pop("helpers", None)


def _item(line: str) -> str:
    """The item of a line of the calls' log."""
    return line.split(" ", 1)[1]


def _run(tmp_path, definition, *, target=False, stop=False, **options):
    checkpoint = tmp_path / "run.parquet"
    data = DATA.drop(columns="output") if target else DATA
    return run_evals(
        data,
        scorers=definition.scorers,
        target=definition.target if target else None,
        checkpoint=checkpoint,
        batch_size=2,
        progress=False,
        on_item_complete=_stop_after_the_first_batch if stop else None,
        **options,
    )


def _interrupted(tmp_path, *, target=False, **changes) -> None:
    with pytest.raises(OnItemCompleteError):
        _run(tmp_path, _load(tmp_path, **changes), target=target, stop=True)
    assert list((tmp_path / "run.parquet.partial").glob("batch-*.parquet"))


_SCORE_STEP = "step 'generate_score' of scorer '%s'"


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (
            {"normalized": "text.strip()"},
            [
                "step 'generate_score' of scorer 'length': helper 'normalize' (helpers) changed",
                "step 'generate_score' of scorer 'exact': helper 'normalize' (helpers) changed",
            ],
        ),
        (
            {"min_length": 3},
            [f"{_SCORE_STEP % 'above'}: module constant MIN_LENGTH in eval.py changed"],
        ),
        (
            {"factor": 20},
            ["step 'generate_score' of scorer 'length': closure value 'factor' changed"],
        ),
    ],
    ids=["helper", "module-constant", "closure-value"],
)
def test_a_change_a_step_reaches_refuses_the_checkpoint_naming_it(tmp_path, calls, change, says):
    _interrupted(tmp_path)
    with pytest.raises(EvalDagError) as raised:
        _run(tmp_path, _load(tmp_path, **change))
    assert raised.value.id == "CHECKPOINT_MISMATCH"
    assert raised.value.details["differences"] == says
    message = raised.value.message
    assert all(s in message for s in says)
    assert "resume='refresh'" in message and "resume=False" in message


def test_the_same_code_loaded_again_resumes(tmp_path, calls):
    _interrupted(tmp_path)
    before = len(calls())
    result = _run(tmp_path, _load(tmp_path, api_key="sk-rotated"))  # a new key is no change
    scored_again = {_item(line) for line in calls()[before:]}
    assert scored_again == set(ITEMS[2:])  # the saved batch was not scored again
    _same_results(result, _fresh(tmp_path, _load(tmp_path)))


def _fresh(tmp_path, definition, *, target=False) -> EvalResult:
    """The same eval run whole, with no checkpoint."""
    data = DATA.drop(columns="output") if target else DATA
    return run_evals(
        data,
        scorers=definition.scorers,
        target=definition.target if target else None,
        batch_size=2,
        progress=False,
    )


def _same_results(resumed: EvalResult, fresh: EvalResult) -> None:
    assert resumed.scores == fresh.scores and resumed.verdict == fresh.verdict
    columns = [c for c in fresh.items.columns if c.endswith((".score", ".error")) or c == "output"]
    pd.testing.assert_frame_equal(resumed.items[columns], fresh.items[columns])


def test_refresh_scores_again_only_the_changed_scorers_on_the_saved_items(tmp_path, calls):
    _interrupted(tmp_path)
    before = len(calls())
    changed = _load(tmp_path, normalized="text.strip()")  # length and exact change, above not
    resumed = _run(tmp_path, changed, resume="refresh")
    again = calls()[before:]
    saved = ITEMS[:2]
    assert sorted(line for line in again if _item(line) in saved) == sorted(
        f"{sid} {item}" for sid in ("length", "exact") for item in saved
    )
    assert {_item(line) for line in again if line.startswith("above")} == set(ITEMS[2:])
    _same_results(resumed, _fresh(tmp_path, changed))
    assert not (tmp_path / "run.parquet.partial").exists()
    # the run ids of the saved items are kept
    assert resumed.items["run_id"].is_unique


def test_a_finished_run_is_refused_when_stale_and_refreshed_scorer_by_scorer(tmp_path, calls):
    first = _run(tmp_path, _load(tmp_path))
    assert _run(tmp_path, _load(tmp_path)) == first  # finished and unchanged: read back
    other_batches = {"checkpoint": tmp_path / "run.parquet", "batch_size": 4}
    assert run_evals(DATA, scorers=_load(tmp_path).scorers, **other_batches) == first
    with pytest.raises(EvalDagError, match="module constant MIN_LENGTH in eval.py changed"):
        _run(tmp_path, _load(tmp_path, min_length=5))
    before = len(calls())
    refreshed = run_evals(
        DATA, scorers=_load(tmp_path, min_length=5).scorers, resume="refresh", **other_batches
    )
    assert sorted(calls()[before:]) == sorted(f"above {item}" for item in ITEMS)
    _same_results(refreshed, _fresh(tmp_path, _load(tmp_path, min_length=5)))
    assert refreshed.items["run_id"].tolist() == first.items["run_id"].tolist()


def test_a_target_helper_change_is_refused_and_refresh_runs_everything_again(tmp_path, calls):
    _interrupted(tmp_path, target=True)
    changed = _load(tmp_path, target_change=".upper()")
    with pytest.raises(EvalDagError) as raised:
        _run(tmp_path, changed, target=True)
    assert raised.value.details["differences"] == ["the target: helper 'shout' (eval.py) changed"]
    before = len(calls())
    resumed = _run(tmp_path, changed, target=True, resume="refresh")
    again = calls()[before:]
    assert sorted(line for line in again if line.startswith("target")) == sorted(
        f"target {item}" for item in ITEMS
    )
    assert resumed.items["output"].tolist() == [item.upper() for item in ITEMS]
    _same_results(resumed, _fresh(tmp_path, changed, target=True))


def test_refresh_runs_again_the_batches_whose_rows_changed(tmp_path, calls):
    first = _run(tmp_path, _load(tmp_path))
    changed = DATA.assign(output=[*ITEMS[:3], "omega", *ITEMS[4:]])  # in the second batch
    with pytest.raises(EvalDagError, match="the data differs"):
        run_evals(changed, scorers=_load(tmp_path).scorers, checkpoint=tmp_path / "run.parquet")
    before = len(calls())
    refreshed = run_evals(
        changed,
        scorers=_load(tmp_path).scorers,
        checkpoint=tmp_path / "run.parquet",
        batch_size=2,
        resume="refresh",
    )
    assert {_item(line) for line in calls()[before:]} == set(ITEMS[2:4])
    assert refreshed.items["run_id"].tolist()[:2] == first.items["run_id"].tolist()[:2]
    assert refreshed.items["output"].tolist()[3] == "omega"


def test_resume_false_starts_afresh(tmp_path, calls):
    _interrupted(tmp_path)
    before = len(calls())
    _run(tmp_path, _load(tmp_path, min_length=5), resume=False)
    assert len(calls()[before:]) == 3 * len(ITEMS)


def test_resume_must_be_true_false_or_refresh(tmp_path):
    with pytest.raises(EvalDagError, match="resume must be True, False or 'refresh'"):
        run_evals(DATA, scorers=[evaldag.checks.matches("a")], resume="yes")
    with pytest.raises(EvalDagError, match="needs checkpoint="):
        run_evals(DATA, scorers=[evaldag.checks.matches("a")], resume="refresh")


# --- agents --------------------------------------------------------------------------------


def _weather_agent(server, instructions):
    def get_weather(location: str) -> dict:
        """Get current weather for a location.

        :param location: City name
        """
        return {"location": location, "temperature": 22}

    return evaldag.agent(server.judge(), tools=[get_weather], instructions=instructions)


def test_an_agent_with_other_instructions_is_refused(tmp_path, judge_server):
    judge_server.reply = Reply(content="It is sunny.")
    scorer = evaldag.checks.includes("sunny")
    options = {"checkpoint": tmp_path / "run.parquet", "batch_size": 2, "progress": False}
    data = pd.DataFrame({"input": ["Paris?", "London?", "Rome?", "Oslo?"]})
    with pytest.raises(OnItemCompleteError):
        run_evals(
            data,
            gates=[scorer],
            target=_weather_agent(judge_server, "Answer about the weather."),
            on_item_complete=lambda item, *_: item["input"] == "London?" and _raise(_Stopped),
            **options,
        )
    asked = len(judge_server.requests)
    with pytest.raises(EvalDagError) as raised:
        run_evals(data, gates=[scorer], target=_weather_agent(judge_server, "Be brief."), **options)
    assert raised.value.details["differences"] == ["the target: its instructions changed"]
    # the same agent built again resumes: only the two items not saved are asked
    again = _weather_agent(judge_server, "Answer about the weather.")
    assert run_evals(data, gates=[scorer], target=again, **options).gate_results[0].passed
    assert len(judge_server.requests) == asked + 2


def test_a_judge_routed_by_another_header_value_is_refused(tmp_path, judge_server):
    # A header can route a call to another deployment or model version: its value counts (as
    # in the reply cache's key); a credential's counts by its presence only.
    judge_server.reply = Reply({"score": 1})
    options = {"checkpoint": tmp_path / "run.parquet", "batch_size": 2, "progress": False}
    data = pd.DataFrame({"input": ["a", "b", "c", "d"], "output": ["1", "2", "3", "4"]})

    def judged(route: str, key: str):
        judge = judge_server.judge(
            instructions="Grade it.", extra_headers={"X-Route": route, "X-Api-Key": key}
        )
        step = evaldag.PromptStep("Grade", lambda run: f"Grade: {run.output}")
        return evaldag.create_scorer("graded", judge=judge).generate_score(step)

    with pytest.raises(OnItemCompleteError):
        run_evals(
            data,
            scorers=[judged("model-v1", "k1")],
            on_item_complete=lambda item, *_: item["input"] == "b" and _raise(_Stopped),
            **options,
        )
    with pytest.raises(EvalDagError) as raised:
        run_evals(data, scorers=[judged("model-v2", "k1")], **options)
    assert raised.value.details["differences"] == ["scorer 'graded': its judge settings changed"]
    asked = len(judge_server.requests)
    assert run_evals(data, scorers=[judged("model-v1", "k2")], **options).scores == {"graded": 1}
    assert len(judge_server.requests) == asked + 2  # a rotated key resumes: two items were saved


def _raise(error: type[Exception]) -> None:
    raise error


# --- the fingerprint itself -----------------------------------------------------------------

FINGERPRINT = """\
import json, sys
from evaldag._eval.eval_file import eval_definition
from evaldag._eval.eval_plan import eval_plan
from evaldag._eval.checkpoint import run_fingerprint

definition = eval_definition(sys.argv[1])
plan = eval_plan(definition.scorers, definition.gates, definition.target)
print(json.dumps(run_fingerprint(plan), sort_keys=True))
"""


@pytest.mark.slow
def test_the_fingerprint_is_the_same_in_every_process(tmp_path, calls):
    """No id(), address or set order in it: two interpreters with other hash seeds agree."""
    _load(tmp_path)
    script = tmp_path / "fingerprint.py"
    script.write_text(FINGERPRINT)
    printed = []
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": os.pathsep.join(sys.path)}
        done = subprocess.run(
            [sys.executable, str(script), str(tmp_path / "eval.py")],
            env=env,
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        printed.append(json.loads(done.stdout))
    assert printed[0] == printed[1]
    assert (
        "helper 'normalize' (helpers)"
        in printed[0]["scorers"]["exact"]["step 'generate_score' of scorer 'exact'"]
    )


REACH = """\
import functools
import json
import re

import pandas as pd

LIMIT = 3
PATTERN = re.compile(r"[a-z]+")
TABLE = pd.DataFrame({{"word": ["a", "b"], "weight": [{weight}, 2.0]}})
SETTINGS = {{"api_key": "{key}", "keywords": ["x", "{keyword}"]}}
LOOP = []
LOOP.append(LOOP)
CALLED = []  # state the step changes, not configuration
SEEN = {{}}


def ping(n):
    return pong(n - 1) if n else LOOP


def pong(n):
    return ping(n)


@functools.lru_cache
def cached(text):
    return json.dumps(PATTERN.findall(text))[:LIMIT]


class Weights:
    scale = {scale}

    def weight(self, word):
        return self.scale * TABLE.set_index("word")["weight"].get(word, 0)


def step(run, weights=Weights()):
    CALLED.append(run)
    SEEN[run.output] = SEEN.get(run.output, 0) + 1
    return ping(2), cached(run.output), weights.weight(run.output), SETTINGS
"""


def _reach(tmp_path, name, **values) -> dict[str, str]:
    from evaldag._scorer.fingerprint import reached_parts

    settings = {"weight": 1.0, "key": "k1", "keyword": "y", "scale": 2, **values}
    (tmp_path / f"{name}.py").write_text(REACH.format(**settings))
    sys.modules.pop(name, None)
    module = __import__(name)
    parts = reached_parts(module.step)
    module.step(ScorerRun(input="q", output="word"))  # the state it keeps changes, no part
    assert reached_parts(module.step) == parts
    return parts


def test_what_a_step_reaches_is_followed_through_cycles_decorators_and_classes(
    tmp_path, monkeypatch
):
    monkeypatch.syspath_prepend(str(tmp_path))
    parts = _reach(tmp_path, "reach_a")
    assert set(parts) == {
        "its code",
        "default argument 'weights'",
        "helper 'ping' (reach_a)",
        "helper 'pong' (reach_a)",
        "module constant LOOP in reach_a",
        "module constant cached in reach_a",
        "helper 'cached' (reach_a)",
        "module constant PATTERN in reach_a",
        "module constant LIMIT in reach_a",
        "class 'Weights' (reach_a)",
        "helper 'Weights.weight' (reach_a)",
        "module constant TABLE in reach_a",
        "module constant SETTINGS in reach_a",
    }

    def changed(**values) -> set[str]:
        before = _reach(tmp_path, "reach_c")
        after = _reach(tmp_path, "reach_c", **values)
        return {label for label in before if before[label] != after.get(label)}

    assert changed(weight=1.5) == {"module constant TABLE in reach_c"}
    assert changed(keyword="z") == {"module constant SETTINGS in reach_c"}
    assert changed(scale=3) == {"class 'Weights' (reach_c)"}
    assert changed(key="k2") == set()  # a credential counts by its presence only


# --- workflows -----------------------------------------------------------------------------

FLOW = """\
from hamilton.function_modifiers import config

SUFFIX = "{suffix}"


def _polished(text):
    return text.strip() + SUFFIX


def cleaned(input: str) -> str:
    return _polished(input)


@config.when(style="loud")
def reply__loud(cleaned: str) -> str:
    return cleaned.upper()


@config.when(style="quiet")
def reply__quiet(cleaned: str) -> str:
    return cleaned.lower()
"""


def _workflow(folder: Path, suffix: str = "!", style: str = "loud"):
    (folder / "flow.py").write_text(FLOW.format(suffix=suffix))
    sys.modules.pop("flow", None)
    import flow

    return evaldag.workflow(flow, ["reply"], config={"style": style})


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"suffix": "?"}, "the target: module constant SUFFIX in flow changed"),
        ({"style": "quiet"}, "the target: its config changed"),
    ],
)
def test_a_workflow_whose_nodes_or_config_changed_is_refused(tmp_path, monkeypatch, change, says):
    monkeypatch.syspath_prepend(str(tmp_path))
    options = {"checkpoint": tmp_path / "run.parquet", "batch_size": 2, "progress": False}
    data = pd.DataFrame({"input": ITEMS})
    gates = [evaldag.checks.matches(r"\S")]
    with pytest.raises(OnItemCompleteError):
        run_evals(
            data,
            gates=gates,
            target=_workflow(tmp_path),
            on_item_complete=_stop_after_the_first_batch,
            **options,
        )
    with pytest.raises(EvalDagError) as raised:
        run_evals(data, gates=gates, target=_workflow(tmp_path, **change), **options)
    assert says in raised.value.details["differences"]
    resumed = run_evals(data, gates=gates, target=_workflow(tmp_path), **options)
    assert resumed.items["output"].tolist() == [item.strip().upper() + "!" for item in ITEMS]
    sys.modules.pop("flow", None)
