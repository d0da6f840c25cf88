"""Streams under live scoring: a generator or async generator a call returns is relayed to the
app, which reads it as before (lazily, with ``send``, ``throw`` and ``close`` reaching the
stream), while a copy of each chunk it reads is kept. When the stream ends, ``ended`` gets the
chunks and, unless it was read to its end, why not: closed by the app, raised, or a chunk that
could not be copied.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Generator
from typing import Any

from evaldag._live.worker import snapshot
from evaldag.errors import error_message

#: What a stream's end is told: the chunks read, and why the stream was not read to its end
#: (None when it was).
Ended = Callable[[list[Any], str | None], None]


def joined(chunks: list[Any]) -> Any:
    """A stream's output: its chunks concatenated when all are strings (an empty stream gives
    ``""``), else the list of them."""
    if all(type(chunk) is str for chunk in chunks):
        return "".join(chunks)
    return chunks


class _Chunks:
    """The chunks of one stream, kept as they are read, and the report of its end."""

    def __init__(self, ended: Ended) -> None:
        self._ended: Ended | None = ended
        self.chunks: list[Any] = []
        self._uncopied: str | None = None

    def kept(self, chunk: Any) -> Any:
        """``chunk``, a copy of it kept (the app may change its own later)."""
        if self._uncopied is None:
            try:
                self.chunks.append(snapshot(chunk))
            except Exception as error:
                self._uncopied = (
                    f"chunk {len(self.chunks) + 1} of the stream could not be copied when it "
                    f"was read ({type(error).__name__}: {error_message(error)})"
                )
        return chunk

    def end(self, problem: str | None) -> None:
        """Tell ``ended`` once: the chunks, and ``problem`` (or a chunk not copied) if any."""
        ended, self._ended = self._ended, None
        if ended is not None:
            ended(self.chunks, self._uncopied or problem)

    def closed(self) -> None:
        self.end(f"the app closed the stream after {len(self.chunks)} chunks, before its end")

    def raised(self, error: BaseException) -> None:
        text = f" ({error})" if str(error) else ""
        self.end(f"the stream raised {type(error).__name__}{text} after {len(self.chunks)} chunks")


class _Recorder:
    """An iterator over a generator that relays ``send``, ``throw`` and ``close`` to it and keeps
    the chunks it yields; ``yield from`` one relays a generator exactly (PEP 380)."""

    def __init__(self, stream: Generator[Any, Any, Any], ended: Ended) -> None:
        self._stream = stream
        self._chunks = _Chunks(ended)

    def __iter__(self) -> _Recorder:
        return self

    def __next__(self) -> Any:
        return self.send(None)

    def send(self, value: Any) -> Any:
        return self._relayed(self._stream.send, value)

    def throw(self, kind: Any, value: Any = None, traceback: Any = None) -> Any:
        error = value if isinstance(value, BaseException) else kind
        if isinstance(error, type):
            error = error() if value is None else error(value)
        if traceback is not None:
            error = error.with_traceback(traceback)
        return self._relayed(self._stream.throw, error)

    def close(self) -> None:
        try:
            self._stream.close()
        finally:
            self._chunks.closed()

    def _relayed(self, step: Callable[[Any], Any], argument: Any) -> Any:
        try:
            chunk = step(argument)
        except StopIteration:
            self._chunks.end(None)
            raise
        except BaseException as error:
            self._chunks.raised(error)
            raise
        return self._chunks.kept(chunk)


def relayed(stream: Generator[Any, Any, Any], ended: Ended) -> Generator[Any, Any, Any]:
    """``stream`` as the app reads it, its chunks kept for ``ended``."""
    return (yield from _Recorder(stream, ended))


def async_relay(
    opened: Callable[
        [tuple[Any, ...], dict[str, Any]], tuple[AsyncGenerator[Any, Any], Ended | None]
    ],
) -> Callable[..., AsyncGenerator[Any, Any]]:
    """An async generator function relaying the stream ``opened`` gives for its arguments, with
    the function to tell its end (None: its chunks are not kept). Async generators have no
    ``yield from``: this is its expansion (PEP 380), for ``asend``, ``athrow`` and ``aclose``."""

    async def relay(*args: Any, **kwargs: Any) -> AsyncGenerator[Any, Any]:
        stream, ended = opened(args, kwargs)
        chunks = None if ended is None else _Chunks(ended)
        step, argument = stream.asend, None
        try:
            while True:
                try:
                    chunk = await step(argument)
                except StopAsyncIteration:
                    if chunks is not None:
                        chunks.end(None)
                    return
                except BaseException as error:
                    if chunks is not None:
                        chunks.raised(error)
                    raise
                if chunks is not None:
                    chunks.kept(chunk)
                try:
                    argument = yield chunk
                except GeneratorExit:
                    await stream.aclose()
                    raise
                except BaseException as thrown:  # the app threw it in: the stream's to handle
                    step, argument = stream.athrow, thrown
                else:
                    step = stream.asend
        finally:
            if chunks is not None:
                chunks.closed()  # a no-op once its end was told

    return relay
