"""An OTLP/HTTP receiver that scores the traces apps export to it, as they finish: ``evaldag
serve`` and :class:`OtlpReceiver` (``docs/traces.md``)."""

from evaldag._receiver.receiver import OtlpReceiver, ReceiverStats
from evaldag._receiver.serving import serve

__all__ = ["OtlpReceiver", "ReceiverStats", "serve"]
