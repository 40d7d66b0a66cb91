"""Receipt reading: each case is one receipt image; the model returns the shop and the total as JSON.

The dataset names each receipt's image file (dataset.images: [receipt]), so `case.receipt` is an image part: the
request carries its SHA-256 and size, and its bytes are read from the file only when the request is sent.
"""

from __future__ import annotations

from pydantic import BaseModel

from evalkit import Case, Message, ModelConfig, Request
from evalkit.records import TextPart


class Receipt(BaseModel):
    """The reply the prompt asks for."""

    shop: str
    total: str


def build_task(case: Case, prompt: str, model: ModelConfig) -> Request:
    return Request(
        model=model.name,
        messages=(Message(role="system", content=prompt),
                  Message(role="user", content=(TextPart(text="Read this receipt."), case.receipt))),
        response_schema=Receipt.model_json_schema(),
        options=model.options,
    )
