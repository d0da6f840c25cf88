"""The judge's transports by name: what a transport does, and the registry ``Judge(transport=...)``
names one in.

A transport makes one model call. Everything around the call is the same for every transport
(:mod:`evaldag._judge.transport`): the reply cache, retries with backoff, the shared limit,
prices, the judge records, credentials masked in errors. Two are built in, loaded on first use:
``http`` (:mod:`evaldag._judge.via_http`) and ``litellm`` (:mod:`evaldag._judge.via_litellm`);
``Judge(transport="auto")`` picks one of them (:mod:`evaldag._judge.endpoints`).
:func:`register_transport` adds one under a name of its own, which judges then name.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import inspect
from abc import abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import orjson

from evaldag.errors import EvalDagError

if TYPE_CHECKING:
    from evaldag._judge.endpoints import Endpoint
    from evaldag._judge.settings import Judge

#: The transport ``Judge(transport="auto")`` stands for: one of the built-in ones.
AUTO = "auto"
#: The built-in transports and the modules that hold them (as ``TRANSPORT``).
_BUILT_IN = {"http": "evaldag._judge.via_http", "litellm": "evaldag._judge.via_litellm"}
_PRICE_TABLE = "model_prices_and_context_window_backup.json"

_registered: dict[str, Transport] = {}


@dataclass(frozen=True)
class Route:
    """Where a judge's calls go, as a transport reads the judge's settings."""

    #: The model as its provider names it (``gpt-4o-mini`` for ``openai/gpt-4o-mini``).
    model_name: str
    #: The provider, as litellm's price table names it (``openai``); None if unknown.
    provider: str | None
    #: The server's base URL; None for the provider's default.
    api_base: str | None
    #: The key the calls carry; masked in every error and log.
    api_key: str | None = field(default=None, repr=False)


class Transport(Protocol):
    """How a judge's model calls are made: :meth:`reply` makes one call.

    Subclass it and write ``reply``, then register an instance with
    ``evaldag.register_transport(name, transport)``; a judge uses it with
    ``Judge(..., transport=name)``. ``route`` and ``price_entry`` have defaults a subclass
    inherits. The cache, retries, the shared limit, prices and records do not depend on the
    transport: ``reply`` makes one attempt and never retries or sleeps.
    """

    def route(self, judge: Judge) -> Route:
        """Where ``judge``'s calls go. The default: its model read as ``provider/name``, its
        ``api_base`` and ``api_key``. Raise ``EvalDagError`` for a judge this transport
        cannot call: ``run_evals`` routes every judge before its first item, and stops with
        that message (a scorer run on its own fails before any call)."""
        provider, _, model_name = (judge.model or "").rpartition("/")
        api_key = judge.api_key.get_secret_value() if judge.api_key is not None else None
        return Route(model_name, provider or None, judge.api_base, api_key)

    def price_entry(self, model_name: str, provider: str | None) -> dict[str, Any] | None:
        """The model's entry in litellm's price table (``input_cost_per_token``,
        ``output_cost_per_token``, ``supports_response_schema``...), or None: its calls are then
        unpriced and asked for ``json_schema`` output first. The default reads the table
        litellm ships, without importing litellm."""
        return price_table_entry(model_name, provider)

    @abstractmethod
    async def reply(
        self, endpoint: Endpoint, request: dict[str, Any], timeout: float
    ) -> dict[str, Any]:
        """The model's reply to one ``request``, within ``timeout`` seconds.

        :param endpoint: where the call goes: ``model`` (the judge's model string),
            ``model_name``, ``provider``, ``api_base`` and ``api_key`` (from :meth:`route`).
        :param request: the call's arguments under litellm's names: ``messages`` (chat
            completions), and when set ``temperature``, ``max_tokens``, ``response_format``,
            ``tools`` and the judge's extra settings.
        :return: ``{"content": text or None, "usage": {"input_tokens": n, "output_tokens": n,
            ...}}``, with ``finish_reason``, ``model`` and ``tool_calls`` (each ``id``,
            ``name``, ``arguments`` as JSON text) when the reply has them.
        :raises: ``CallFault`` for a failed call, with its kind: ``transient`` faults (429,
            5xx, timeouts, lost connections) are retried with backoff, others are not. Any
            other exception fails the call without a retry.
        """
        ...


def register_transport(name: str, transport: Transport) -> None:
    """Make ``transport`` the one judges name with ``Judge(..., transport=name)``.

    Register it where it is defined, at import: a process that scores (a Dask worker, the
    process of ``evaldag.live(..., worker="process")``) must import that module too.
    Registering a name again replaces its transport; ``auto``, ``http`` and ``litellm`` are
    evaldag's own.

    :param transport: an instance with the methods of :class:`Transport` (``reply`` async).
    """
    if not isinstance(name, str) or not name.strip():
        raise _invalid(f"a transport's name must be a non-empty string, got {name!r}")
    if name == AUTO or name in _BUILT_IN:
        raise _invalid(
            f"{name!r} is one of evaldag's transports; register yours under another name"
        )
    if inspect.isclass(transport):
        raise _invalid(
            f"register an instance of {transport.__name__}, not the class: "
            f"register_transport({name!r}, {transport.__name__}())"
        )
    missing = [
        m for m in ("route", "price_entry", "reply") if not callable(getattr(transport, m, None))
    ]
    if missing:
        raise _invalid(
            f"transport {name!r} lacks {', '.join(missing)}: subclass evaldag.Transport, which "
            "gives route and price_entry defaults, and write an async reply"
        )
    if not inspect.iscoroutinefunction(transport.reply):
        raise _invalid(f"reply of transport {name!r} must be async (async def reply(...))")
    _registered[name] = transport


def transport_names() -> tuple[str, ...]:
    """The names a judge's ``transport`` may take."""
    return (AUTO, *_BUILT_IN, *sorted(_registered))


def named_transport(name: str) -> Transport:
    """The transport registered as ``name`` (a built-in one is imported on first use)."""
    transport = _registered.get(name)
    if transport is None and name in _BUILT_IN:
        transport = _registered[name] = importlib.import_module(_BUILT_IN[name]).TRANSPORT
    if transport is None:
        raise _invalid(unknown_transport(name))
    return transport


def unknown_transport(name: str) -> str:
    """The message for a transport name nothing registered."""
    return (
        f"no transport is registered as {name!r} in this process; give one of "
        f"{', '.join(map(repr, transport_names()))}, or register yours with "
        "evaldag.register_transport(name, transport) when its module is imported"
    )


def price_table_entry(model_name: str, provider: str | None) -> dict[str, Any] | None:
    """``provider/model_name``'s entry in the price table litellm ships, or None."""
    table = _price_table()
    for key in (f"{provider}/{model_name}", model_name):
        entry = table.get(key)
        if isinstance(entry, dict) and entry.get("litellm_provider") == provider:
            return entry
    return None


@functools.cache
def _price_table() -> dict[str, Any]:
    """The price table litellm ships (the one ``configured_litellm`` makes litellm use)."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or spec.origin is None:
        return {}
    try:
        return orjson.loads((Path(spec.origin).parent / _PRICE_TABLE).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}


def _invalid(message: str) -> EvalDagError:
    return EvalDagError("EVALDAG_INVALID_TRANSPORT", message, category="USER")
