"""evalkit's loopback endpoint: a candidate program's model calls, read from the OpenAI Chat Completions, the OpenAI
Responses or the Anthropic Messages wire format (images and audio included), answered by the run (replayed from the
recording, or called live and recorded)."""

from evalkit.programs.endpoint.server import MAX_BODY_BYTES, Answer, Endpoint, Unserved

__all__ = ["MAX_BODY_BYTES", "Answer", "Endpoint", "Unserved"]
