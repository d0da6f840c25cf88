"""Traces apps already emit, as items to score: ``table.read_traces`` turns OpenTelemetry spans
(OTLP JSON or protobuf files, a table of spans) or Mastra's span records into a DataFrame for
``run_evals``; ``matching`` finds spans for the span checks. The package imports neither, so a
check that only reads ``matching`` does not load the readers."""
