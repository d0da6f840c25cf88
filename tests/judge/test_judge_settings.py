"""What ``judge=`` accepts, how step settings override scorer settings, and reading JSON replies."""

import subprocess
import sys

import pytest

from evaldag import EvalDagError, Judge
from evaldag._judge.contracts import StructuredOutputError, json_in_reply
from evaldag._judge.redaction import judge_secrets
from evaldag._judge.settings import as_judge, cache_location, resolved_judge


def test_judge_takes_the_model_positionally_and_extra_litellm_kwargs():
    judge = Judge("openai/gpt-4o-mini", instructions="Grade.", top_p=0.5, seed=1)
    assert judge.model == "openai/gpt-4o-mini"
    assert judge.litellm_kwargs == {"top_p": 0.5, "seed": 1}
    assert (judge.temperature, judge.timeout, judge.max_retries) == (0, 60, 4)
    assert judge.max_tokens is None and judge.api_base is None


def test_credentials_are_hidden_in_repr_and_dumps():
    judge = Judge(
        "bedrock/anthropic.claude-3-haiku",
        api_key="sk-very-secret",
        aws_secret_access_key="aws-very-secret",
        extra_headers={"Authorization": "Bearer header-secret"},
        max_tokens=5,
    )
    for shown in (repr(judge), str(judge), judge.model_dump_json(), str(judge.model_dump())):
        assert "very-secret" not in shown and "header-secret" not in shown
        assert "max_tokens" in shown  # a token count is not a credential
    assert judge.api_key.get_secret_value() == "sk-very-secret"
    assert judge.litellm_kwargs["aws_secret_access_key"] == "aws-very-secret"  # for the call


def test_credentials_within_a_setting_are_hidden_and_redacted_from_errors():
    """A key in the request body (extra_body={'api_key': ...}) is masked like one at the top;
    what is no credential stays. Every such value, a cookie's values and a provider's own
    token setting are among the texts redacted from the judge's errors and logs."""
    judge = Judge(
        "openai/x",
        extra_body={"api_key": "body-very-secret", "top_k": 3, "auth": {"user": "nested-user"}},
        extra_headers={
            "Cookie": "session=cookie-very-secret; theme=dark",
            "Authorization": "Bearer bearer-very-secret",
            "X-Title": "Support evaluation bot",
        },
        azure_ad_token="azure-very-secret",
    )
    for shown in (repr(judge), judge.model_dump_json()):
        assert "very-secret" not in shown and "nested-user" not in shown
        assert "top_k" in shown and "theme" not in shown
    secrets = judge_secrets(judge, None, None)
    for value in ("body-very-secret", "cookie-very-secret", "azure-very-secret", "nested-user"):
        assert value in secrets
    assert "bearer-very-secret" in secrets and "Support evaluation bot" in secrets
    assert "evaluation" not in secrets  # a word of a value is no secret: it would mask replies


@pytest.mark.parametrize(
    ("value", "model"),
    [
        ("ollama/qwen2.5", "ollama/qwen2.5"),
        ({"model": "openai/x", "api_base": "http://h/v1"}, "openai/x"),
        (Judge("anthropic/claude-3-5-haiku-latest"), "anthropic/claude-3-5-haiku-latest"),
        (None, None),
    ],
)
def test_what_judge_accepts(value, model):
    judge = as_judge(value, "judge= of create_scorer")
    assert (judge.model if judge else None) == model


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        (42, "must be an evaldag.Judge, a dict of its settings or a litellm model string"),
        ("  ", "is an empty string"),
        ({"model": "m", "timeout": -1}, "timeout: Input should be greater than 0"),
        ({"max_retries": "many"}, "max_retries: Input should be a valid integer"),
        ({"structured_output": "xml"}, "structured_output: Input should be 'auto'"),
    ],
)
def test_bad_judge_settings_name_the_argument_and_field(value, fragment):
    with pytest.raises(EvalDagError) as raised:
        as_judge(value, "judge= of create_scorer")
    assert raised.value.id == "EVALDAG_INVALID_JUDGE"
    assert raised.value.message.startswith("judge= of create_scorer")
    assert fragment in raised.value.message


def test_model_given_twice_is_an_error():
    with pytest.raises(EvalDagError, match="model twice"):
        Judge("openai/a", model="openai/b")


def test_step_settings_override_scorer_settings_field_by_field():
    scorer_judge = Judge("openai/a", instructions="Scorer.", temperature=0.2, seed=1, top_p=0.9)
    judge = resolved_judge({"instructions": "Step.", "seed": 2}, scorer_judge, "analyze")
    assert (judge.model, judge.instructions, judge.temperature) == ("openai/a", "Step.", 0.2)
    assert judge.litellm_kwargs == {"seed": 2, "top_p": 0.9}
    # a field the step sets explicitly wins, even when it equals the default
    assert resolved_judge(Judge(temperature=0), scorer_judge, "analyze").temperature == 0
    assert resolved_judge("openai/b", scorer_judge, "analyze").instructions == "Scorer."


def test_missing_model_or_instructions_names_the_step():
    with pytest.raises(EvalDagError) as raised:
        resolved_judge(None, Judge(instructions="x"), "generate_score")
    assert raised.value.id == "MASTR_SCORER_FAILED_TO_RUN_MISSING_MODEL_OR_INSTRUCTIONS"
    assert raised.value.message.startswith(
        'Step "generate_score" requires a model and instructions'
    )
    assert raised.value.details == {"step": "generate_score", "missing": ["model"]}


def test_cache_location(tmp_path, monkeypatch):
    monkeypatch.delenv("EVALDAG_CACHE_DIR", raising=False)
    assert cache_location(None) is None
    assert cache_location(False) is None
    assert cache_location(tmp_path) == tmp_path
    assert cache_location(True).name == "evaldag"
    monkeypatch.setenv("EVALDAG_CACHE_DIR", str(tmp_path / "env"))
    assert cache_location(None) == tmp_path / "env"
    assert cache_location(True) == tmp_path / "env"
    assert cache_location(False) is None
    assert cache_location(str(tmp_path / "own")) == tmp_path / "own"
    url = "postgresql://evals:s3cret@db.internal/evals"  # a database URL stays one
    assert cache_location(url) == url
    monkeypatch.setenv("EVALDAG_CACHE_DIR", url)
    assert cache_location(None) == url


@pytest.mark.parametrize(
    ("reply", "value"),
    [
        ('{"a": 1}', {"a": 1}),
        ("  [1, 2]  ", [1, 2]),
        ('Here you go:\n```json\n{"a": [1, 2]}\n```\nAnything else?', {"a": [1, 2]}),
        ('```\n{"a": 1}\n```', {"a": 1}),
        ('Sure! {"a": {"b": "}"}} Hope it helps.', {"a": {"b": "}"}}),
        ('{"results": [{"r": "yes"}, {"r": "no"}', {"results": [{"r": "yes"}, {"r": "no"}]}),
        ('{"results": [{"r": "yes"}, {"r": "n', {"results": [{"r": "yes"}]}),
        ('{"a": 1, "b": [1, 2,', {"a": 1, "b": [1, 2]}),
    ],
)
def test_json_is_found_in_prose_fences_and_cut_off_replies(reply, value):
    assert json_in_reply(reply) == value


@pytest.mark.parametrize(
    "reply",
    [
        "",
        "   ",
        "Claims found: (1) Jane Austen wrote it, (2) it was published in 1813.",
        '{"claims": ["a" "b"]}',  # missing comma
        "{'statements': ['a', 'b']}",  # single quotes
        '{"matches": [], // nothing extra\n "contradictions": []}',  # a comment
        '{"results": [{"r": "no"}]]}',  # an extra closing bracket
        '{"satisfied": True}',  # Python's True
        "{verdicts: [{verdict: 'no'}]}",  # unquoted keys
    ],
)
def test_malformed_json_is_rejected(reply):
    with pytest.raises(StructuredOutputError) as raised:
        json_in_reply(reply)
    assert raised.value.code == "STRUCTURED_OUTPUT_OBJECT_UNDEFINED"


def test_importing_evaldag_does_not_import_litellm():
    code = (
        "import sys, evaldag\n"
        "evaldag.Judge('openai/gpt-4o-mini'); evaldag.PromptStep; evaldag.JudgeError\n"
        "print('litellm' in sys.modules)"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert completed.stdout.strip() == "False"
