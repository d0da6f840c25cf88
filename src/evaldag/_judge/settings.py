"""Judge settings: which LLM judges a prompt step, how, and how hard to try.

``judge=`` on ``create_scorer`` and on a ``PromptStep`` takes a :class:`Judge`, a dict of its
fields or a bare litellm model string. A step's settings override the scorer's field by field:
only the fields the step sets win.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_serializer,
    model_validator,
)

from evaldag._judge.redaction import headers_without_credentials, is_secret_setting
from evaldag._judge.transports import transport_names, unknown_transport
from evaldag._util.credentials import MASK, url_without_credentials
from evaldag.errors import EvalDagError

#: The model name that selects the bundled local judge (``evaldag.local_judge``).
LOCAL_MODEL = "local"

#: The largest reply body a judge call reads, unless the judge sets ``max_reply_bytes``.
MAX_REPLY_BYTES = 4 * 1024 * 1024

StructuredOutput = Literal["auto", "json_schema", "json_object", "prompt"]


class Judge(BaseModel):
    """An LLM judge, named by a litellm model string.

    ``Judge("openai/gpt-4o-mini")``, ``Judge("ollama/qwen2.5")``,
    ``Judge("openai/<name>", api_base="http://host:8000/v1")`` or ``Judge("local")`` for the
    bundled llama.cpp judge. Keyword arguments that are not fields below go with every call as
    they are (``top_p=...``, ``seed=...``, ``extra_headers=...``): to ``litellm.acompletion``, or
    into the request body on the http transport (``extra_headers`` as headers, ``extra_body``
    merged into the body).
    """

    model_config = ConfigDict(extra="allow", frozen=True)

    model: str | None = Field(
        default=None, description="litellm model string, e.g. 'openai/gpt-4o-mini', or 'local'."
    )
    instructions: str | None = Field(default=None, description="The judge's system prompt.")
    api_base: str | None = Field(default=None, description="Base URL of the provider's API.")
    api_key: SecretStr | None = Field(
        default=None, description="Provider key; never cached, recorded or logged."
    )
    temperature: float | None = Field(
        default=0, description="Sampling temperature; None leaves it to the provider."
    )
    max_tokens: int | None = Field(default=None, ge=1, description="Cap on the reply's tokens.")
    timeout: float = Field(
        default=60,
        gt=0,
        description="Seconds a model call may take, from sending it to the last byte of the "
        "reply: a deadline, however slowly the server sends.",
    )
    max_reply_bytes: int = Field(
        default=MAX_REPLY_BYTES,
        ge=1,
        description="The largest reply body a call reads (4 MiB): a larger one fails the call "
        "(not retried) instead of filling memory.",
    )
    max_retries: int = Field(
        default=4, ge=0, description="Retries of a call after 429, 5xx, timeouts, lost connections."
    )
    max_concurrency: int = Field(
        default=16,
        ge=1,
        description="Calls in flight at once, shared by every scorer using the same model, "
        "api_base and max_concurrency.",
    )
    structured_output: StructuredOutput = Field(
        default="auto",
        description="How the first attempt asks for JSON: 'json_schema' (OpenAI response_format), "
        "'json_object' (llama.cpp's {'type': 'json_object', 'schema': ...}), 'prompt' (the "
        "schema in the system prompt) or 'auto' (json_schema unless litellm knows the model "
        "lacks it, json_object for the local judge). The fallback attempt always uses 'prompt'.",
    )
    transport: str = Field(
        default="auto",
        description="How calls are made: 'http' posts chat-completions JSON to an "
        "OpenAI-compatible api_base over a pooled aiohttp session; 'litellm' calls "
        "litellm.acompletion (every provider, 7-10 ms of CPU per call); 'auto' picks 'http' for "
        "'openai/<name>' and 'hosted_vllm/<name>' with api_base and for the local judge, unless "
        "the judge has a setting only litellm understands, and 'litellm' otherwise. Any other "
        "name is one given to evaldag.register_transport.",
    )
    input_cost_per_token: float | None = Field(
        default=None,
        ge=0,
        allow_inf_nan=False,
        description="US dollars per input token, for a model litellm's price table lacks (or "
        "prices otherwise); given with output_cost_per_token. Calls of an unpriced model cost "
        "$0 in usage, and a run with budget_usd refuses them.",
    )
    output_cost_per_token: float | None = Field(
        default=None,
        ge=0,
        allow_inf_nan=False,
        description="US dollars per output token; given with input_cost_per_token.",
    )
    cache: bool | str | Path | None = Field(
        default=None,
        description="Reply cache: a directory, a database URL ('postgresql://user@host/db', "
        "shared by several machines), True for $EVALDAG_CACHE_DIR (else ~/.cache/evaldag), "
        "False for none; None uses $EVALDAG_CACHE_DIR when it is set.",
    )

    @model_validator(mode="after")
    def _both_prices(self) -> Judge:
        if (self.input_cost_per_token is None) != (self.output_cost_per_token is None):
            raise ValueError(
                "input_cost_per_token and output_cost_per_token are given together (US dollars "
                "per token), or neither (litellm's price table)"
            )
        return self

    @property
    def prices(self) -> tuple[float, float] | None:
        """The judge's own prices (USD per input and output token), if it gives them."""
        if self.input_cost_per_token is None or self.output_cost_per_token is None:
            return None
        return self.input_cost_per_token, self.output_cost_per_token

    @field_validator("transport")
    @classmethod
    def _registered(cls, transport: str) -> str:
        if transport not in transport_names():
            raise ValueError(unknown_transport(transport))
        return transport

    def __init__(self, model: str | None = None, /, **settings: Any) -> None:
        if model is not None:
            if "model" in settings:
                raise EvalDagError(
                    "EVALDAG_INVALID_JUDGE",
                    "Judge got the model twice: pass it positionally or as model=..., not both",
                )
            settings["model"] = model
        try:
            super().__init__(**settings)
        except ValidationError as error:
            raise _invalid_judge(error, "Judge(...)") from None

    @property
    def litellm_kwargs(self) -> dict[str, Any]:
        """The extra keyword arguments sent with every call."""
        return dict(self.model_extra or {})

    @model_serializer(mode="wrap")
    def _masked(self, handler: Any) -> dict[str, Any]:
        """Dumps (and so files and logs) show credentials as a mask."""
        return {name: _shown(name, value) for name, value in handler(self).items()}

    def overridden_by(self, other: Judge) -> Judge:
        """This judge with the fields ``other`` sets explicitly taken from ``other``."""
        settings = {name: getattr(self, name) for name in self.model_fields_set}
        settings.update(self.litellm_kwargs)
        settings.update({name: getattr(other, name) for name in other.model_fields_set})
        return Judge.model_construct(_fields_set=set(settings), **settings)

    def __repr__(self) -> str:
        shown = ", ".join(
            f"{name}={_shown(name, getattr(self, name))!r}"
            for name in sorted(self.model_fields_set)
        )
        return f"Judge({shown})"

    __str__ = __repr__


def _shown(name: str, value: Any) -> Any:
    """A setting as dumps and reprs show it: URLs and headers without credentials, other
    credentials masked, also within a dict (``extra_body={'api_key': ...}``)."""
    if value is None:
        return None
    if name == "api_base" or (name == "cache" and isinstance(value, str) and "://" in value):
        return url_without_credentials(value)
    if name == "extra_headers" and isinstance(value, dict):
        return headers_without_credentials(value)
    if is_secret_setting(name):
        return MASK
    if isinstance(value, dict):
        return {key: _shown(str(key), item) for key, item in value.items()}
    return value


def as_judge(value: Any, where: str) -> Judge | None:
    """``value`` (a Judge, a dict of its fields, a model string or None) as a Judge.

    :param where: names the argument in error messages, e.g. "judge of scorer 'x'".
    """
    if value is None or isinstance(value, Judge):
        return value
    if isinstance(value, str):
        if not value.strip():
            raise EvalDagError(
                "EVALDAG_INVALID_JUDGE",
                f"{where} is an empty string; give a litellm model string such as "
                "'openai/gpt-4o-mini', a dict or evaldag.Judge(...)",
            )
        return Judge(value)
    if isinstance(value, dict):
        unknown_keys = [key for key in value if not isinstance(key, str)]
        if unknown_keys:
            raise EvalDagError(
                "EVALDAG_INVALID_JUDGE", f"{where}: dict keys must be strings, got {unknown_keys!r}"
            )
        try:
            return Judge(**value)
        except EvalDagError as error:  # name the argument, not the constructor
            raise EvalDagError(
                error.id, error.message.replace("Judge(...)", where, 1), details=error.details
            ) from None
    raise EvalDagError(
        "EVALDAG_INVALID_JUDGE",
        f"{where} must be an evaldag.Judge, a dict of its settings or a litellm model string "
        f"such as 'openai/gpt-4o-mini', got {type(value).__name__}",
    )


def resolved_judge(step_judge: Any, scorer_judge: Any, where: str) -> Judge:
    """The judge a prompt step uses: the scorer's settings overridden by the step's.

    :param where: the step, for error messages, e.g. ``'analyze'``.
    """
    scorer_level = as_judge(scorer_judge, "judge= of create_scorer")
    step_level = as_judge(step_judge, f'judge= of the PromptStep of step "{where}"')
    if scorer_level is None:
        judge = step_level
    elif step_level is None:
        judge = scorer_level
    else:
        judge = scorer_level.overridden_by(step_level)
    if judge is None or not judge.model or not judge.instructions:
        missing = [
            name for name in ("model", "instructions") if judge is None or not getattr(judge, name)
        ]
        raise EvalDagError(
            "MASTR_SCORER_FAILED_TO_RUN_MISSING_MODEL_OR_INSTRUCTIONS",
            f'Step "{where}" requires a model and instructions; missing: {", ".join(missing)}. '
            "Set them on the scorer (create_scorer(..., judge=Judge('openai/gpt-4o-mini', "
            "instructions='You are ...'))) or on the step (PromptStep(..., judge=...)).",
            details={"step": where, "missing": missing},
        )
    return judge


def call_limit(judge: Judge) -> int:
    """How many of the judge's calls may be in flight at once: ``max_concurrency``, or 1 for the
    local judge unless set (llama.cpp answers one request at a time; more would only queue into
    timeouts)."""
    if judge.model == LOCAL_MODEL and "max_concurrency" not in judge.model_fields_set:
        return 1
    return judge.max_concurrency


#: Judge settings that say how a call travels or what it costs, not what the judge answers: a
#: checkpoint made with one transport, time limit, retry count, concurrency, cache, reply size
#: limit or price resumes with another.
_HOW_CALLED = frozenset(
    {
        "transport",
        "timeout",
        "max_retries",
        "num_retries",
        "max_concurrency",
        "cache",
        "max_reply_bytes",
        "input_cost_per_token",
        "output_cost_per_token",
    }
)


def reply_settings(judge: Judge | None) -> dict[str, Any] | None:
    """The settings that decide a judge's replies: no keys or URL credentials, nor how calls
    travel (``http`` and ``litellm`` ask the same endpoint the same question, and a lower
    ``max_concurrency`` after a storm of 429s asks it the same questions more slowly).

    Extra headers can route a call (another deployment, another model version), as the reply
    cache's key counts them: each header counts by its name, and by a hash of its value unless
    its name is a credential's (``Authorization``, ``X-Api-Key``: a rotated key is no change).
    """
    if judge is None:
        return None
    settings = judge.model_dump(exclude_none=True)
    kept = {k: v for k, v in settings.items() if k not in _HOW_CALLED and not is_secret_setting(k)}
    headers = judge.litellm_kwargs.get("extra_headers")  # a dump masks their values
    if isinstance(headers, dict) and headers:
        kept["extra_headers"] = {
            str(name): None if is_secret_setting(str(name)) else _hashed(value)
            for name, value in headers.items()
        }
    return kept


def _hashed(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, default=repr).encode()).hexdigest()


def cache_location(setting: bool | str | os.PathLike[str] | None) -> Path | str | None:
    """Where a judge's reply cache lives: a directory, a database URL (``postgresql://...``,
    ``sqlite:///...``), or None when caching is off."""
    if setting is False:
        return None
    if isinstance(setting, str | Path):
        return _cache_location(os.fspath(setting))
    from_environment = os.environ.get("EVALDAG_CACHE_DIR", "").strip()
    if from_environment:
        return _cache_location(from_environment)
    if setting is True:
        return Path("~/.cache/evaldag").expanduser()
    return None


def _cache_location(text: str) -> Path | str:
    return text if "://" in text else Path(text).expanduser()


def _invalid_judge(error: ValidationError, where: str) -> EvalDagError:
    problems = "; ".join(
        f"{'.'.join(str(part) for part in item['loc']) or 'value'}: {item['msg']}"
        for item in error.errors()
    )
    return EvalDagError(
        "EVALDAG_INVALID_JUDGE",
        f"{where}: invalid judge settings ({problems}). See help(evaldag.Judge) for the fields.",
        details={
            "errors": [{"field": list(e["loc"]), "message": e["msg"]} for e in error.errors()]
        },
    )
