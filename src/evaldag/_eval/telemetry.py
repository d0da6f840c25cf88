"""evaldag's own runs as OpenTelemetry spans (the ``otel`` extra; ``docs/traces.md``, "evaldag's
runs as traces").

When a tracer provider is configured (``opentelemetry.trace.set_tracer_provider``), a run is a
span, and under it each item scored in this process is a span holding one span per scorer, one
per step the scorer ran and one per judge call, with the attributes of OpenTelemetry's GenAI
semantic conventions (``gen_ai.request.model``, ``gen_ai.usage.*``, ``gen_ai.evaluation.*``).
The engine scores columns of rows, so an item's spans are made once its batch is scored, at the
times its steps and judge calls took (``evaldag._engine.step_clock``). With no provider, a run
looks up one module and makes nothing.

Texts (prompts, replies, reasons, error messages) are attributes only when
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` is ``true``, as OpenTelemetry's GenAI
instrumentations do; judge settings (its ``api_base``, keys, headers) never are.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import orjson
import pandas as pd

from evaldag._engine.step_clock import CLOCK, StepClock, Times
from evaldag._graph.plan import EvalPlan, last_node
from evaldag._judge.records import JudgeExecution
from evaldag._results.eval_result import EvalResult, verdict_word
from evaldag._scorer.steps import ScorerSpec
from evaldag._version import __version__

logger = logging.getLogger("evaldag")
#: The environment variable that lets texts into attributes (OpenTelemetry's GenAI one).
CONTENT_VARIABLE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
#: The item columns that say which span an item was read from (``read_traces``): its span
#: links to that one.
_TRACE_COLUMNS = ("trace_id", "span_id")


def configured_tracer() -> Any | None:
    """evaldag's tracer from the configured tracer provider; None when none is configured.

    A provider is configured by code that imported ``opentelemetry.trace``, so a run where it
    is not imported imports nothing."""
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:
        return None
    provider = trace.get_tracer_provider()
    if isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider):
        return None
    return provider.get_tracer("evaldag", __version__)


@contextmanager
def traced_run(
    plan: EvalPlan, name: str | None, experiment_id: str
) -> Iterator[RunTelemetry | None]:
    """The run's span around the block, current in it (the spans of HTTP clients a judge call
    makes go under it), with the engine's clock set; None without a tracer provider."""
    tracer = configured_tracer()
    if tracer is None:
        yield None
        return
    from opentelemetry import trace

    telemetry = RunTelemetry(tracer, plan, name, experiment_id)
    clock = CLOCK.set(telemetry.clock)
    try:
        with trace.use_span(telemetry.span, end_on_exit=True):
            yield telemetry
    finally:
        CLOCK.reset(clock)


def traced_result(telemetry: RunTelemetry | None, result: EvalResult) -> EvalResult:
    """``result``, its outcome set on the run's span when it is traced."""
    if telemetry is not None:
        telemetry.finished(result)
    return result


class RunTelemetry:
    """A traced run: its span, the clock the engine notes times on, and its items' spans."""

    def __init__(self, tracer: Any, plan: EvalPlan, name: str | None, experiment_id: str) -> None:
        self.tracer = tracer
        self.clock = StepClock()
        self.content = os.environ.get(CONTENT_VARIABLE, "").strip().lower() == "true"
        self._scorers = plan.all_scorers
        self._gates = set(plan.gate_ids)
        self.span = tracer.start_span(
            f"evaldag run {name}" if name else "evaldag run",
            attributes={
                "evaldag.experiment.id": experiment_id,
                **({"evaldag.run.name": name} if name else {}),
                "evaldag.scorers": [s.id for s in plan.scorers],
                "evaldag.gates": list(plan.gate_ids),
            },
        )

    @property
    def wanted(self) -> list[str]:
        """The nodes whose runs an executed batch must give: every scorer's and gate's last."""
        return [last_node(s) for s in self._scorers]

    def batch_scored(self, rows: pd.DataFrame, values: Mapping[str, Any]) -> None:
        """Spans for each item of a scored batch, from its rows' states. A failure here is
        logged: the run's scores matter more than its spans."""
        try:
            self._batch_spans(rows, values)
        except Exception:
            logger.exception("evaldag: the spans of a scored batch could not be made")

    def _batch_spans(self, rows: pd.DataFrame, values: Mapping[str, Any]) -> None:
        from opentelemetry import trace

        parent = trace.set_span_in_context(self.span)
        states = {s.id: values.get(last_node(s), {}) for s in self._scorers}
        for label in rows.index:
            per_scorer = []
            for scorer in self._scorers:
                state = states[scorer.id].get(label)
                if state is not None:
                    steps, calls = self.clock.popped(scorer.id, state.run)
                    if steps:
                        per_scorer.append((scorer, state, steps, calls))
            if per_scorer:
                self._item(label, rows.loc[label], per_scorer, parent)

    def finished(self, result: EvalResult) -> None:
        """The run's outcome on its span."""
        span = self.span
        span.set_attribute("evaldag.items", result.summary.total_items)
        verdict = verdict_word(result)
        if verdict is not None:
            span.set_attribute("evaldag.verdict", verdict)
        for scorer_id, average in result.scores.items():
            span.set_attribute(f"evaldag.score.{scorer_id}", average)
        total = result.usage.get("total")
        if total is not None and total.calls:
            _usage(span, total.input_tokens, total.output_tokens)
            span.set_attribute("evaldag.judge.calls", total.calls)
            span.set_attribute("evaldag.judge.cost_usd", total.cost_usd)

    # --- one item ----------------------------------------------------------------------------

    def _item(self, label: Any, row: pd.Series, per_scorer: list[tuple], parent: Any) -> None:
        from opentelemetry import trace

        start = min(steps[0][1] for _, _, steps, _ in per_scorer)
        end = max(times[2] for _, _, steps, calls in per_scorer for times in (*steps, *calls))
        item = self.tracer.start_span(
            "evaldag item",
            context=parent,
            start_time=start,
            links=_links(row),
            attributes={"evaldag.item.index": _plain(label)},
        )
        inside = trace.set_span_in_context(item)
        for scorer, state, steps, calls in per_scorer:
            self._scorer(scorer, state, steps, calls, inside)
        item.end(end_time=end)

    def _scorer(
        self, scorer: ScorerSpec, state: Any, steps: list[Times], calls: list[Times], parent: Any
    ) -> None:
        from opentelemetry import trace
        from opentelemetry.trace import Status, StatusCode

        attributes: dict[str, Any] = {
            "gen_ai.evaluation.name": scorer.id,
            "evaldag.scorer.role": "gate" if scorer.id in self._gates else "scorer",
        }
        score = state.results.get("generate_score_step_result")
        if state.error is None and state.not_scorable is None and score is not None:
            attributes["gen_ai.evaluation.score.value"] = float(score)
            reason = state.results.get("generate_reason_step_result")
            if self.content and isinstance(reason, str):
                attributes["gen_ai.evaluation.explanation"] = reason
        if state.not_scorable is not None:
            attributes["evaldag.not_scorable.step"] = state.not_scorable.step
        span = self.tracer.start_span(
            f"evaldag score {scorer.id}",
            context=parent,
            start_time=steps[0][1],
            attributes=attributes,
        )
        if state.error is not None:
            cause = state.error.cause
            span.set_attribute("error.type", type(cause).__qualname__)
            span.set_attribute("evaldag.failed_step", state.error.failed_step)
            span.set_status(Status(StatusCode.ERROR, self._error_text(state.error)))
        inside = trace.set_span_in_context(span)
        executions = {stage: list(found) for stage, found in state.judge.items()}
        for stage, started, ended in steps:
            step = self.tracer.start_span(
                f"evaldag step {stage}",
                context=inside,
                start_time=started,
                attributes={"evaldag.step": stage, "gen_ai.evaluation.name": scorer.id},
            )
            if state.error is not None and state.error.failed_step == stage:
                step.set_status(Status(StatusCode.ERROR, self._error_text(state.error)))
            within = trace.set_span_in_context(step)
            for call_stage, call_start, call_end in calls:
                if call_stage == stage and executions.get(stage):
                    self._judge_call(executions[stage].pop(0), call_start, call_end, within)
            step.end(end_time=ended)
        span.end(end_time=max(times[2] for times in (*steps, *calls)))

    def _judge_call(self, execution: JudgeExecution, start: int, end: int, parent: Any) -> None:
        from opentelemetry.trace import SpanKind, Status, StatusCode

        model = execution.judge_model_id
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": model,
            "evaldag.judge.attempts": execution.attempt_count,
            "evaldag.judge.model_calls": execution.model_call_count,
        }
        if execution.judge_provider:
            attributes["gen_ai.provider.name"] = execution.judge_provider
        if execution.finish_reason:
            attributes["gen_ai.response.finish_reasons"] = [execution.finish_reason]
        if execution.cost is not None:
            attributes["evaldag.judge.cost_usd"] = execution.cost.total_usd
        if execution.cache_hit is not None:
            attributes["evaldag.judge.cache_hit"] = execution.cache_hit
        if self.content:
            attributes["gen_ai.input.messages"] = _messages("user", execution.prompt)
            reply = execution.raw_output
            if reply is None and execution.output is not None:  # kept parsed only
                reply = orjson.dumps(execution.output, default=str).decode()
            if reply is not None:
                attributes["gen_ai.output.messages"] = _messages(
                    "assistant", reply, execution.finish_reason
                )
        span = self.tracer.start_span(
            f"chat {model}",
            context=parent,
            kind=SpanKind.CLIENT,
            start_time=start,
            attributes=attributes,
        )
        usage = execution.usage
        if usage is not None:
            _usage(span, usage.input_tokens, usage.output_tokens)
            if usage.cached_input_tokens is not None:
                span.set_attribute(
                    "gen_ai.usage.cache_read.input_tokens", usage.cached_input_tokens
                )
        if execution.error is not None:
            span.set_attribute("error.type", execution.error.code or execution.error.name)
            message = execution.error.name + (
                f": {execution.error.message}" if self.content else ""
            )
            span.set_status(Status(StatusCode.ERROR, message))
        span.end(end_time=end)

    def _error_text(self, error: Any) -> str:
        """What a span's status says of a step's error: its type, and its message with content
        (a message may quote what was scored)."""
        text = f"{error.failed_step}: {type(error.cause).__qualname__}"
        return f"{text}: {error.cause}" if self.content else text


def _usage(span: Any, input_tokens: int | None, output_tokens: int | None) -> None:
    if input_tokens is not None:
        span.set_attribute("gen_ai.usage.input_tokens", input_tokens)
    if output_tokens is not None:
        span.set_attribute("gen_ai.usage.output_tokens", output_tokens)


def _messages(role: str, text: str, finish_reason: str | None = None) -> str:
    """A message as the GenAI conventions write ``gen_ai.input/output.messages`` (JSON)."""
    message: dict[str, Any] = {"role": role, "parts": [{"type": "text", "content": text}]}
    if finish_reason:
        message["finish_reason"] = finish_reason
    return orjson.dumps([message]).decode()


def _links(row: pd.Series) -> Sequence[Any]:
    """A link to the span an item was read from (``read_traces``' ``trace_id``/``span_id``)."""
    trace_id, span_id = (row.get(column) for column in _TRACE_COLUMNS)
    if not isinstance(trace_id, str) or not isinstance(span_id, str):
        return ()
    from opentelemetry.trace import Link, SpanContext, TraceFlags

    try:
        context = SpanContext(
            int(trace_id, 16), int(span_id, 16), is_remote=True, trace_flags=TraceFlags(1)
        )
    except ValueError:
        return ()
    return [Link(context)] if context.is_valid else ()


def _plain(label: Any) -> Any:
    """An item's label as an attribute value (a number or a text)."""
    if isinstance(label, bool | int | float | str):
        return label
    item = getattr(label, "item", None)
    return item() if callable(item) else str(label)
