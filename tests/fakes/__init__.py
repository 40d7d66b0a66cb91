"""Loopback fake model servers (Ollama, OpenAI-compatible, Azure OpenAI, Gemini, Anthropic, Bedrock Converse)
with seeded fault injection.

Used in-process by the provider tests (`with FakeOpenAI(reply) as server: ...`) and as a separate
process by benchmarks (`python -m tests.fakes.serve --protocol ollama --port-file F`).
"""

from .faults import Fault, Faults
from .protocols import PROTOCOLS, FakeCall, FakeReply, Protocol
from .server import (
    LOOPBACK,
    FakeAnthropic,
    FakeAzureOpenAI,
    FakeBedrock,
    FakeError,
    FakeGemini,
    FakeOllama,
    FakeOpenAI,
    FakeServer,
    RawReply,
    RecordedRequest,
    ReplyFunction,
)
from .sigv4 import sigv4_problem

__all__ = ["Fault", "Faults", "PROTOCOLS", "FakeCall", "FakeReply", "Protocol", "LOOPBACK", "FakeAnthropic",
           "FakeAzureOpenAI",
           "FakeBedrock", "FakeError", "FakeGemini", "FakeOllama", "FakeOpenAI", "FakeServer", "RawReply",
           "RecordedRequest", "ReplyFunction", "sigv4_problem"]
