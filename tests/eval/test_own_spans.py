"""evaldag's own runs as OpenTelemetry spans: with a tracer provider configured (the SDK's, its
spans kept by its InMemorySpanExporter), a run, each item, scorer, step and judge call is a span
with GenAI attributes; texts only when the user lets them in; nothing without a provider."""

import json
import subprocess
import sys

import pandas as pd
import pytest
from judge_server import API_KEY, MODEL
from repo_paths import FIXTURES

from evaldag import PromptStep, checks, create_scorer, read_traces, run_evals
from evaldag._eval.telemetry import CONTENT_VARIABLE, configured_tracer

trace = pytest.importorskip("opentelemetry.trace")
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)
from opentelemetry.util._once import Once  # noqa: E402

TRACES = FIXTURES / "traces"
SECRET_INPUT = "my card number is 4111 1111 1111 1111"


@pytest.fixture
def spans():
    """A configured tracer provider whose spans the test reads; the global provider is put back
    after (OpenTelemetry lets a process set it once: its test utilities reset it so too)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    before = trace._TRACER_PROVIDER
    trace._TRACER_PROVIDER_SET_ONCE = Once()
    trace.set_tracer_provider(provider)
    yield exporter
    trace._TRACER_PROVIDER = before
    trace._TRACER_PROVIDER_SET_ONCE = Once()


def words(run):
    return {"words": len(str(run.output).split())}


def short(preprocess_step_result):
    if preprocess_step_result["words"] > 5:
        raise ValueError(f"too long: {preprocess_step_result}")
    return 1.0


def reason(score):
    return f"short enough ({score})"


def _judged(judge_server):
    judge_server.reply = {"score": 0.75}
    return create_scorer(
        "judged", judge=judge_server.judge(instructions="Grade it.")
    ).generate_score(PromptStep("score", lambda run: f"Score this answer: {run.output}"))


def _run(judge_server, **options):
    data = pd.DataFrame(
        {
            "input": [SECRET_INPUT] * 3,
            "output": ["fine", "also fine", "far too many words here now"],
        }
    )
    brevity = (
        create_scorer("brevity").preprocess(words).generate_score(short).generate_reason(reason)
    )
    return run_evals(
        data,
        scorers=[brevity, _judged(judge_server)],
        gates=[checks.includes("fine", id="contains")],
        name="nightly",
        **options,
    )


def _by_name(finished):
    found = {}
    for span in finished:
        found.setdefault(span.name, []).append(span)
    return found


def test_a_run_its_items_scorers_steps_and_judge_calls_are_spans(spans, judge_server):
    result = _run(judge_server)
    finished = spans.get_finished_spans()
    named = _by_name(finished)
    (run,) = named["evaldag run nightly"]
    assert run.parent is None
    assert run.attributes["evaldag.experiment.id"] == result.experiment_id
    assert run.attributes["evaldag.items"] == 3
    assert run.attributes["evaldag.verdict"] == result.verdict
    assert run.attributes["evaldag.score.judged"] == pytest.approx(0.75)
    assert run.attributes["gen_ai.usage.input_tokens"] == 30  # the server's 10 a call
    assert run.attributes["gen_ai.usage.output_tokens"] == 15
    items = named["evaldag item"]
    assert sorted(span.attributes["evaldag.item.index"] for span in items) == [0, 1, 2]
    assert {span.parent.span_id for span in items} == {run.context.span_id}
    assert all(span.context.trace_id == run.context.trace_id for span in finished)
    by_id = {span.context.span_id: span for span in finished}
    for scorer_id, steps in (
        ("brevity", ["preprocess", "generate_score", "generate_reason"]),
        ("judged", ["generate_score"]),
        ("contains", ["preprocess", "generate_score"]),
    ):
        scored = named[f"evaldag score {scorer_id}"]
        assert len(scored) == 3
        for span in scored:
            assert by_id[span.parent.span_id].name == "evaldag item"
            assert span.attributes["gen_ai.evaluation.name"] == scorer_id
            children = [
                s for s in finished if s.parent and s.parent.span_id == span.context.span_id
            ]
            if span.status.status_code.name != "ERROR":
                assert sorted(s.name for s in children) == sorted(
                    f"evaldag step {s}" for s in steps
                )
    assert named["evaldag score contains"][0].attributes["evaldag.scorer.role"] == "gate"
    # Each span lies within its parent's time.
    for span in finished:
        if span.parent is not None:
            parent = by_id[span.parent.span_id]
            assert parent.start_time <= span.start_time <= span.end_time <= parent.end_time
    brevity = sorted(named["evaldag score brevity"], key=lambda s: s.start_time)
    scores = [span.attributes.get("gen_ai.evaluation.score.value") for span in brevity]
    assert sorted(score for score in scores if score is not None) == [1.0, 1.0]
    steps_of = {
        span.context.span_id: sorted(
            s.name for s in finished if s.parent and s.parent.span_id == span.context.span_id
        )
        for span in brevity
    }
    failed = next(span for span in brevity if span.status.status_code.name == "ERROR")
    assert failed.attributes["error.type"] == "ValueError"
    assert failed.attributes["evaldag.failed_step"] == "generate_score"
    assert failed.status.description == "generate_score: ValueError"  # no message: no content
    assert steps_of[failed.context.span_id] == [
        "evaldag step generate_score",
        "evaldag step preprocess",
    ]
    calls = named[f"chat {MODEL}"]
    assert len(calls) == 3
    for call in calls:
        step = by_id[call.parent.span_id]
        assert step.name == "evaldag step generate_score"
        assert by_id[step.parent.span_id].name == "evaldag score judged"
        assert call.kind == trace.SpanKind.CLIENT
        assert call.attributes["gen_ai.operation.name"] == "chat"
        assert call.attributes["gen_ai.request.model"] == MODEL
        assert call.attributes["gen_ai.provider.name"] == "openai"
        assert call.attributes["gen_ai.usage.input_tokens"] == 10
        assert call.attributes["gen_ai.usage.output_tokens"] == 5
    # No text of an item, prompt, reply or reason, and no judge setting, is an attribute.
    shown = json.dumps(
        [[dict(span.attributes), span.status.description] for span in finished], default=str
    )
    for text in (SECRET_INPUT, "far too many", "Score this answer", "short enough", API_KEY):
        assert text not in shown
    assert judge_server.url.split("//")[1] not in shown


def test_texts_are_attributes_once_the_user_lets_them_in(spans, judge_server, monkeypatch):
    monkeypatch.setenv(CONTENT_VARIABLE, "true")
    _run(judge_server)
    named = _by_name(spans.get_finished_spans())
    call = named[f"chat {MODEL}"][0]
    (message,) = json.loads(call.attributes["gen_ai.input.messages"])
    assert message["role"] == "user"
    assert message["parts"][0]["content"].startswith("Score this answer: ")
    (answer,) = json.loads(call.attributes["gen_ai.output.messages"])
    assert json.loads(answer["parts"][0]["content"]) == 0.75  # the reply as the record keeps it
    reasons = {
        span.attributes.get("gen_ai.evaluation.explanation")
        for span in named["evaldag score brevity"]
    }
    assert reasons == {"short enough (1.0)", None}
    failed = next(s for s in named["evaldag score brevity"] if s.status.description)
    assert failed.status.description.startswith("generate_score: ValueError: too long")
    shown = json.dumps([dict(span.attributes) for span in spans.get_finished_spans()])
    assert API_KEY not in shown


def test_an_item_read_from_a_trace_links_to_its_span(spans):
    items = read_traces(TRACES / "openai_v2_latest" / "multi_step.jsonl")
    run_evals(items, gates=[checks.no_error_spans()])
    (item,) = _by_name(spans.get_finished_spans())["evaldag item"]
    (link,) = item.links
    assert f"{link.context.trace_id:032x}" == items["trace_id"][0]
    assert f"{link.context.span_id:016x}" == items["span_id"][0]


def test_an_untrustworthy_runs_span_says_so(spans, judge_server):
    """A run whose gate passed but whose scorer failed on every item raises; its span said no
    verdict at all, so a trace's reader could not tell it from a run that asserted nothing."""
    from judge_server import refused

    from evaldag import UntrustworthyRunError

    judge_server.on("Score this answer", refused(401))  # before the run's default reply
    with pytest.raises(UntrustworthyRunError):
        _run(judge_server, cache=False)  # no reply an earlier test cached
    (run,) = _by_name(spans.get_finished_spans())["evaldag run nightly"]
    assert run.attributes["evaldag.verdict"] == "untrustworthy"
    assert run.attributes["evaldag.items"] == 3
    assert run.status.status_code.name == "ERROR"


def test_no_provider_is_no_tracer(monkeypatch):
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", None)  # the proxy: none set
    assert configured_tracer() is None
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", trace.NoOpTracerProvider())
    assert configured_tracer() is None


def test_a_run_without_opentelemetry_imports_none_and_makes_no_clock():
    code = (
        "import sys, pandas as pd\n"
        "from evaldag import run_evals, checks\n"
        "from evaldag._engine.step_clock import StepClock\n"
        "StepClock.__init__ = None  # a run that made a clock would fail\n"
        "data = pd.DataFrame({'input': ['a'], 'output': ['fine']})\n"
        "result = run_evals(data, gates=[checks.includes('fine')])\n"
        "assert result.verdict == 'passed', result.verdict\n"
        "print('opentelemetry.trace' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_traced_runs_score_as_untraced_ones_with_trials_and_a_checkpoint(spans, tmp_path):
    data = pd.DataFrame({"input": ["a"] * 4, "output": ["fine", "not", "fine", "fine"]})
    gates = [checks.includes("fine")]
    brevity = create_scorer("brevity").preprocess(words).generate_score(short)
    options = {"scorers": [brevity], "gates": gates, "trials": 2}
    traced = run_evals(data, **options, checkpoint=tmp_path / "run.parquet")
    assert traced.verdict == "failed"
    assert len(_by_name(spans.get_finished_spans())["evaldag item"]) == 4
    resumed = run_evals(data, **options, checkpoint=tmp_path / "run.parquet")
    trace._TRACER_PROVIDER = None  # untraced from here
    untraced = run_evals(data, **options)
    assert traced.scores == resumed.scores == untraced.scores
    pd.testing.assert_frame_equal(
        traced.items.filter(like="score"), untraced.items.filter(like="score")
    )
