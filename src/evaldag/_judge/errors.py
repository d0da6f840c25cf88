"""How a judge execution fails: the error the engine sees and what it is made from."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evaldag.errors import Category, EvalDagError

if TYPE_CHECKING:
    from evaldag._judge.records import JudgeExecution


class JudgeError(EvalDagError):
    """A prompt step's judge call failed.

    ``execution`` is the failed judge record, or None when no attempt started (bad settings,
    a missing model or instructions, a prompt that is not text).
    """

    def __init__(
        self,
        id: str,
        message: str,
        *,
        execution: JudgeExecution | None = None,
        category: Category = "THIRD_PARTY",
        details: dict[str, Any] | None = None,
        cause: BaseException | None = None,
    ) -> None:
        super().__init__(id, message, category=category, details=details, cause=cause)
        self.execution = execution


class JudgeCallError(Exception):
    """A failed model call as litellm reported it: class name, HTTP status and message.

    It stands in for litellm's exception as a ``JudgeError``'s ``cause`` because litellm's
    exceptions cannot be unpickled, and results (errors included) must survive pickling; the
    original stays chained as ``__cause__`` for tracebacks.
    """

    def __init__(self, name: str, status: int | None, message: str) -> None:
        super().__init__(f"{name}: {message}")
        self.name = name
        self.status = status
        self.detail = message

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.name, self.status, self.detail))


class ExecutionFailure(Exception):
    """Why an execution's attempts failed: the judge record's error and the JudgeError's
    id, category and cause."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        name: str,
        category: Category = "THIRD_PARTY",
        cause: JudgeCallError | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.name = name
        self.category = category
        self.cause = cause


class CallFault(Exception):
    """A model call that failed, as a transport reports it (``Transport.reply`` raises it).

    :param name: the error's name as the OpenAI SDK and litellm call it (``RateLimitError``,
        ``Timeout``, ...), shown in messages and judge records.
    :param status: the HTTP status; None when no response came.
    :param kind: ``transient`` (retried: 408, 429, 5xx, timeouts, lost connections, broken
        bodies), ``refused`` (another 4xx: not retried), ``missing_key`` (not sent: the client
        has no key) or ``failed`` (anything else: not retried).
    :param retry_after: the server's ``retry-after-ms`` and ``Retry-After`` header values.
    """

    def __init__(
        self,
        name: str,
        status: int | None,
        detail: str,
        kind: str,
        retry_after: tuple[str | None, str | None] = (None, None),
    ) -> None:
        super().__init__(f"{name}: {detail}")
        self.name = name
        self.status = status
        self.detail = detail
        self.kind = kind
        self.retry_after = retry_after


def reply_too_large(limit: int) -> CallFault:
    """The fault of a reply body over the judge's ``max_reply_bytes`` (not retried)."""
    return CallFault(
        "ReplyTooLarge",
        None,
        f"the reply is larger than the judge's max_reply_bytes ({limit:,} bytes), and was not "
        "read further; a judge's reply is a few kB: check api_base, or raise "
        "Judge(max_reply_bytes=...) for an endpoint whose replies are that large",
        "failed",
    )
