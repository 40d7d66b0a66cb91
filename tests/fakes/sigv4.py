"""AWS Signature Version 4, checked from the request a fake server received, written from AWS's published
description of the algorithm (canonical request, string to sign, derived signing key), not with botocore's signer:
a Bedrock test then proves the request is signed as AWS would verify it, not merely as botocore signed it."""

from __future__ import annotations

import hashlib
import hmac
import re
from urllib.parse import parse_qsl, quote

__all__ = ["sigv4_problem"]

_AUTHORIZATION = re.compile(r"^AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<date>\d{8})/(?P<region>[^/]+)/"
                            r"(?P<service>[^/]+)/aws4_request, ?SignedHeaders=(?P<signed>[a-z0-9;-]+), ?"
                            r"Signature=(?P<signature>[0-9a-f]{64})$")


def sigv4_problem(method: str, target: str, headers: dict[str, str], body: bytes, *, access_key: str,
                  secret_key: str, region: str, service: str = "bedrock") -> str | None:
    """Why the request is not signed by `access_key`/`secret_key` for `service` in `region`; None when it is.
    `target` is the request target as received (path and query, percent-encoded); `headers` lower-cased."""
    found = _AUTHORIZATION.match(headers.get("authorization", ""))
    if found is None:
        return f"no SigV4 Authorization header: {headers.get('authorization')!r}"
    if (found["key"], found["region"], found["service"]) != (access_key, region, service):
        return f"signed for {found['key']}/{found['region']}/{found['service']}"
    amz_date = headers.get("x-amz-date", "")
    if not amz_date.startswith(found["date"]):
        return f"x-amz-date {amz_date!r} is not the credential's date {found['date']}"
    signed = found["signed"].split(";")
    if "host" not in signed or "x-amz-date" not in signed:
        return f"host and x-amz-date must be signed (signed: {signed})"
    path, _, query = target.partition("?")
    # every service but S3 encodes the (already encoded) path once more
    canonical_uri = quote(path, safe="/-_.~")
    canonical_query = "&".join(f"{quote(k, safe='-_.~')}={quote(v, safe='-_.~')}"
                               for k, v in sorted(parse_qsl(query, keep_blank_values=True)))
    canonical_headers = "".join(f"{name}:{' '.join(headers.get(name, '').split())}\n" for name in signed)
    payload = headers.get("x-amz-content-sha256") or hashlib.sha256(body).hexdigest()
    canonical = "\n".join([method, canonical_uri, canonical_query, canonical_headers, found["signed"], payload])
    scope = f"{found['date']}/{region}/{service}/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = f"AWS4{secret_key}".encode()
    for part in (found["date"], region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    expected = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, found["signature"]):
        return "the signature does not match the request"
    return None
