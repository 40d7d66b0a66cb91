"""evalkit/programs/endpoint/media.py through the three wire formats: images and audio a program sends inline become
the call contract's media parts (the bytes' type, SHA-256 and size, never the bytes in the identity); a remote URL is
refused in one line and never fetched; a label that lies, bytes that are no image, and a part over its limit are
refused naming the field."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import anthropic
import openai
import pytest
from fakes.server import FakeOpenAI

from evalkit.live.providers.sdkwire import httpx_module
from evalkit.programs.endpoint import Endpoint, anthropic_messages, openai_chat, openai_responses
from evalkit.programs.endpoint.media import MediaStore
from evalkit.programs.endpoint.wire import WireError
from evalkit.records.call import AudioPart, ImagePart, Reply, Request, TextPart
from evalkit.run.recording import request_fingerprint

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(40))
JPEG = b"\xff\xd8\xff\xe0" + bytes(range(40))
WAV = b"RIFF\x24\x00\x00\x00WAVEfmt " + bytes(24)
HTML = b"<!doctype html><html><body>not an image</body></html>"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _chat(parts: list[dict[str, object]]) -> dict[str, object]:
    return {"messages": [{"role": "user", "content": [{"type": "text", "text": "What is this?"}, *parts]}]}


def _image_url(data: bytes, label: str = "image/png") -> dict[str, object]:
    return {"type": "image_url", "image_url": {"url": f"data:{label};base64,{_b64(data)}"}}


@pytest.fixture
def store(tmp_path: Path) -> MediaStore:
    return MediaStore(tmp_path / "media")


def test_a_chat_image_is_a_part_with_the_bytes_type_hash_and_size_and_its_bytes_kept_for_a_live_call(
        store: MediaStore) -> None:
    # labelled JPEG, and a PNG: the bytes decide, as they do for a dataset's files
    request = openai_chat.read_request(_chat([_image_url(PNG, "image/jpeg")]), "m", store)
    text, image = request.messages[0].content
    assert text == TextPart(text="What is this?")
    assert isinstance(image, ImagePart) and image.media_type == "image/png" and image.size == len(PNG)
    assert image.path.startswith("endpoint/") and image.path.endswith(".png")
    assert image.data() == PNG  # what a live call sends
    assert "base64" not in request.model_dump_json()  # the identity holds the hash, never the bytes


def test_the_same_image_is_the_same_call_and_one_changed_byte_is_another(store: MediaStore) -> None:
    first = openai_chat.read_request(_chat([_image_url(PNG)]), "m", store)
    again = openai_chat.read_request(_chat([_image_url(PNG)]), "m", store)
    changed = openai_chat.read_request(_chat([_image_url(PNG[:-1] + b"\xff")]), "m", store)
    assert request_fingerprint(first) == request_fingerprint(again)
    assert request_fingerprint(first) != request_fingerprint(changed)  # a replay of it is stale


def test_audio_in_chat_and_responses_and_an_image_in_anthropic_and_responses(store: MediaStore) -> None:
    audio = {"type": "input_audio", "input_audio": {"data": _b64(WAV), "format": "mp3"}}
    chat = openai_chat.read_request(_chat([audio]), "m", store)
    assert isinstance(chat.media[0], AudioPart) and chat.media[0].media_type == "audio/wav"
    responses = openai_responses.read_request(
        {"input": [{"role": "user", "content": [
            {"type": "input_text", "text": "What is this?"},
            {"type": "input_image", "image_url": f"data:image/png;base64,{_b64(PNG)}", "detail": "auto"},
            audio]}]}, "m", store)
    assert [part.kind for part in responses.messages[0].content] == ["text", "image", "audio"]
    claude = anthropic_messages.read_request(
        {"max_tokens": 5, "messages": [{"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": _b64(JPEG)}},
            {"type": "text", "text": "What is this?"}]}]}, "m", store)
    assert [part.kind for part in claude.messages[0].content] == ["image", "text"]
    assert claude.media[0].media_type == "image/jpeg"  # type: ignore[union-attr]
    # the same bytes through any wire format are the same part
    assert responses.media[0] == chat_image(store)


def chat_image(store: MediaStore) -> ImagePart:
    image = openai_chat.read_request(_chat([_image_url(PNG)]), "m", store).media[0]
    assert isinstance(image, ImagePart)
    return image


@pytest.mark.parametrize(("read", "body", "field"), [
    (openai_chat.read_request, _chat([_image_url(HTML)]), "messages[0].content[1].image_url.url: not a PNG"),
    (openai_chat.read_request, _chat([{"type": "image_url", "image_url": {"url": "data:image/png;base64,@@"}}]),
     "messages[0].content[1].image_url.url: the bytes are not valid base64"),
    (openai_chat.read_request, _chat([{"type": "image_url", "image_url": {"url": f"data:image/png;base64,"
                                                                               f"{_b64(PNG)}", "detail": "low"}}]),
     "image_url.detail: only detail=auto"),
    (openai_chat.read_request, _chat([{"type": "input_audio", "input_audio": {"data": _b64(PNG)}}]),
     "input_audio.data: not WAV or MP3"),
    (openai_chat.read_request, _chat([{"type": "file", "file": {}}]), "messages[0].content[1]: part type 'file'"),
    (openai_responses.read_request,
     {"input": [{"role": "user", "content": [{"type": "input_image", "file_id": "file-1"}]}]},
     "input[0].content[0].file_id"),
    (anthropic_messages.read_request,
     {"messages": [{"role": "user", "content": [{"type": "image", "source": {"type": "url", "url": "https://x/y"}}]}]},
     "messages[0].content[0].source.type: evalkit's endpoint takes images inline"),
])
def test_media_that_is_not_what_it_says_or_not_inline_is_refused_naming_the_field(
        store: MediaStore, read: object, body: dict[str, object], field: str) -> None:
    with pytest.raises(WireError) as refused:
        read(body, "m", store)  # type: ignore[operator]
    assert field in str(refused.value)


def test_an_image_over_the_limit_and_a_call_over_its_total_are_refused(tmp_path: Path) -> None:
    small = MediaStore(tmp_path / "m", max_image_bytes=len(PNG) - 1)
    with pytest.raises(WireError, match=r"image_url.url: the image is \d+ bytes, over the endpoint's limit"):
        openai_chat.read_request(_chat([_image_url(PNG)]), "m", small)
    total = MediaStore(tmp_path / "t", max_request_bytes=len(PNG) + 1)
    with pytest.raises(WireError, match="over the endpoint's limit of .* per call"):
        openai_chat.read_request(_chat([_image_url(PNG), _image_url(JPEG)]), "m", total)


def test_a_remote_image_url_is_refused_and_never_fetched(tmp_path: Path) -> None:
    asked: list[Request] = []
    with FakeOpenAI(lambda body: "an image host") as host, \
            Endpoint(tmp_path / "e.sock", "c", "m", lambda call_id, request: asked.append(request) or Reply(
                text="never")) as endpoint:
        httpx = httpx_module(getattr(openai, "DefaultHttpxClient", None))
        client = openai.OpenAI(base_url="http://endpoint/v1", api_key="dummy", max_retries=0,
                               http_client=httpx.Client(transport=httpx.HTTPTransport(uds=str(endpoint.socket_path))))
        url = f"{host.base_url}/image.png"
        with pytest.raises(openai.BadRequestError, match="never fetches a http URL; send the bytes"):
            client.chat.completions.create(model="x", messages=[{"role": "user", "content": [  # type: ignore
                {"type": "image_url", "image_url": {"url": url}}]}])
        assert host.calls == 0 and len(host.requests) == 0  # nothing reached the URL's host
    assert asked == [] and endpoint.rejected and "image_url.url" in endpoint.rejected[0]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Endpoint, list[Request]]]:
    asked: list[Request] = []

    def answer(call_id: str, request: Request) -> Reply:
        asked.append(request)
        # a live call reads the bytes now, from the case's media folder
        return Reply(text=" ".join(f"{part.media_type}:{len(part.data())}" for part in request.media))

    with Endpoint(tmp_path / "e.sock", "c", "m", answer) as endpoint:
        yield endpoint, asked
    assert not endpoint.media.folder.exists()  # the case's media go when its endpoint stops


def test_the_sdks_send_images_through_the_endpoint_and_the_run_reads_their_bytes(
        served: tuple[Endpoint, list[Request]]) -> None:
    endpoint, asked = served
    httpx = httpx_module(getattr(openai, "DefaultHttpxClient", None))
    transport = httpx.HTTPTransport(uds=str(endpoint.socket_path))
    client = openai.OpenAI(base_url="http://endpoint/v1", api_key="dummy", max_retries=0,
                           http_client=httpx.Client(transport=transport))
    url = f"data:image/png;base64,{_b64(PNG)}"
    chat = client.chat.completions.create(model="x", messages=[{"role": "user", "content": [  # type: ignore
        {"type": "text", "text": "What?"}, {"type": "image_url", "image_url": {"url": url}}]}])
    responses = client.responses.create(model="x", input=[{"role": "user", "content": [  # type: ignore
        {"type": "input_image", "image_url": url, "detail": "auto"}]}])
    claude = anthropic.Anthropic(base_url="http://endpoint", api_key="dummy", max_retries=0,
                                 http_client=httpx.Client(transport=httpx.HTTPTransport(  # type: ignore[arg-type]
                                     uds=str(endpoint.socket_path))))
    message = claude.messages.create(model="y", max_tokens=5, messages=[{"role": "user", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": _b64(JPEG)}}]}])
    assert chat.choices[0].message.content == f"image/png:{len(PNG)}"
    assert responses.output_text == f"image/png:{len(PNG)}"
    assert message.content[0].type == "text" and message.content[0].text == f"image/jpeg:{len(JPEG)}"
    assert asked[0].media == asked[1].media  # one image, one part, whichever API carried it


def test_a_live_call_sends_the_programs_image_bytes_to_the_provider_in_its_own_format(tmp_path: Path) -> None:
    from evalkit.core.config import ModelConfig
    from evalkit.live.providers import make_provider

    with FakeOpenAI(lambda body: "a receipt") as upstream:
        provider = make_provider(ModelConfig(name="m", provider="openai", base_url=upstream.base_url,
                                             api_key_env=None))
        with Endpoint(tmp_path / "e.sock", "c", "m", lambda call_id, request: provider.complete(request)) as endpoint:
            httpx = httpx_module(getattr(anthropic, "DefaultHttpxClient", None))
            claude = anthropic.Anthropic(base_url="http://endpoint", api_key="dummy", max_retries=0,
                                         http_client=httpx.Client(transport=httpx.HTTPTransport(  # type: ignore
                                             uds=str(endpoint.socket_path))))
            message = claude.messages.create(model="y", max_tokens=5, messages=[{"role": "user", "content": [
                {"type": "text", "text": "What is it?"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": _b64(PNG)}}]}])
        sent = upstream.chat_requests[0].body
    assert message.content[0].type == "text" and message.content[0].text == "a receipt"
    # what the program sent as an Anthropic image block reached an OpenAI-format provider as a data: URI, byte for byte
    parts = sent["messages"][0]["content"]
    assert parts[0] == {"type": "text", "text": "What is it?"}
    assert parts[1]["image_url"]["url"] == f"data:image/png;base64,{_b64(PNG)}"
