"""Which URLs a webhook may be sent to: the one check against server-side request forgery.

A subscription's host is resolved and every address it resolves to must be public
(not loopback, private, link-local, multicast, reserved or unspecified), when the
subscription is saved and again before each run of deliveries, since DNS may change in
between. WEBHOOK_ALLOW_LOOPBACK admits 127.0.0.0/8 and ::1 (tests, local development);
WEBHOOK_ALLOW_PRIVATE admits every non-public address but multicast and unspecified.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from urllib.parse import urlsplit

from django.conf import settings

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def address_refusal(address: Address, *, allow_loopback: bool, allow_private: bool) -> str | None:
    """Why this address may not be a target, or None (pure: settings are passed in)."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if address.is_multicast or address.is_unspecified:
        return f"{address} is a multicast or unspecified address."
    if address.is_loopback:
        return None if allow_loopback or allow_private else f"{address} is a loopback address."
    if address.is_link_local:
        return None if allow_private else f"{address} is a link-local address."
    if address.is_private or address.is_reserved or not address.is_global:
        return None if allow_private else f"{address} is a private or reserved address."
    return None


def resolve(host: str, port: int) -> list[Address]:
    """Every address `host` resolves to (an address literal is itself)."""
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        pass
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [ipaddress.ip_address(info[4][0].split("%")[0]) for info in infos]


_HOST_NAME = re.compile(r"[\w-]+(\.[\w-]+)*\.?")


def _ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def target_refusal(url: str) -> str | None:
    """Why webhooks may not be sent to `url`, or None: http(s) only, no credentials in
    it, a host that resolves, and every address allowed."""
    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return "Not a valid URL."
    if parts.scheme not in ("http", "https"):
        return "Only http and https URLs."
    if parts.username or parts.password:
        return "No credentials in the URL; the signature authenticates the sender."
    host = parts.hostname
    if not host:
        return "The URL has no host."
    if not _HOST_NAME.fullmatch(host) and not _ip_literal(host):
        # A name no DNS could hold ("exa mple.com") is a mistyped URL, not an unreachable
        # host. Single-label names (a private network's "receiver") are names.
        return "Not a valid URL."
    try:
        addresses = resolve(host, port)
    except (OSError, UnicodeError):
        return f"The host {host} does not resolve."
    if not addresses:
        return f"The host {host} does not resolve."
    for address in addresses:
        refusal = address_refusal(
            address,
            allow_loopback=settings.WEBHOOK_ALLOW_LOOPBACK,
            allow_private=settings.WEBHOOK_ALLOW_PRIVATE,
        )
        if refusal:
            return f"Refused: {refusal} Webhooks go to public addresses only."
    return None
