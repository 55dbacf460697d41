"""Which URLs a webhook may be sent to: the one check against server-side request forgery.

A subscription's host is resolved and every address it resolves to must be public
(not loopback, private, link-local, site-local, multicast, reserved or unspecified), when
the subscription is saved and again before each run of deliveries, since DNS may change in
between. An IPv6 address that carries an IPv4 one (IPv4-mapped or -compatible, 6to4,
Teredo, NAT64) is judged by that IPv4 address too. WEBHOOK_ALLOW_LOOPBACK admits
127.0.0.0/8 and ::1 (tests, local development); WEBHOOK_ALLOW_PRIVATE admits every
non-public address but multicast and unspecified.

target_refusal is the one check of a URL: every way of writing a subscription (the API,
the dashboard, the admin) goes through it, and so does every run of deliveries.
"""

from __future__ import annotations

import ipaddress
import re
import socket
import unicodedata
from urllib.parse import urlsplit

from django.conf import settings

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")


def embedded_ipv4(address: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address carries, which a packet to it may end up at:
    IPv4-mapped (::ffff:a.b.c.d), IPv4-compatible (::a.b.c.d), 6to4 (2002::/16), Teredo
    (2001::/32: its server and client) and NAT64 (64:ff9b::/96)."""
    found = []
    if address.ipv4_mapped is not None:
        found.append(address.ipv4_mapped)
    if address.sixtofour is not None:
        found.append(address.sixtofour)
    if address.teredo is not None:
        found.extend(address.teredo)
    # ::/96 without :: and ::1, which are themselves (unspecified, loopback).
    compatible = address in _IPV4_COMPATIBLE and int(address) > 1
    if compatible or address in _NAT64:
        found.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    return found


def address_refusal(address: Address, *, allow_loopback: bool, allow_private: bool) -> str | None:
    """Why this address may not be a target, or None (pure: settings are passed in)."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            # A socket to ::ffff:a.b.c.d talks IPv4 to a.b.c.d: it is that address.
            address = address.ipv4_mapped
        else:
            for ipv4 in embedded_ipv4(address):
                refusal = address_refusal(
                    ipv4, allow_loopback=allow_loopback, allow_private=allow_private
                )
                if refusal:
                    return f"{address} carries {ipv4}, and {refusal}"
    if address.is_multicast or address.is_unspecified:
        return f"{address} is a multicast or unspecified address."
    if address.is_loopback:
        return None if allow_loopback or allow_private else f"{address} is a loopback address."
    if address.is_link_local:
        return None if allow_private else f"{address} is a link-local address."
    if isinstance(address, ipaddress.IPv6Address) and address.is_site_local:
        # fec0::/10: deprecated, but still routed inside some networks, like a private one.
        return None if allow_private else f"{address} is a site-local address."
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


def _unwritten(character: str) -> bool:
    """A character no URL holds as is: whitespace, a control or an invisible format one."""
    return character.isspace() or unicodedata.category(character) in ("Cc", "Cf")


def target_refusal(url: str) -> str | None:
    """Why webhooks may not be sent to `url`, or None: http(s) only, nothing but printable
    characters, a port that is one, no credentials in it, a host that resolves, and every
    address allowed."""
    if any(_unwritten(character) for character in url):
        # Checked before urlsplit, which drops tabs and line breaks without a word; an
        # HTTP client refuses them, so the URL stored would be one nothing can reach.
        return "Not a valid URL: no spaces or control characters (percent-encode them)."
    try:
        parts = urlsplit(url)
        explicit_port = parts.port
    except ValueError:
        return "Not a valid URL."
    if explicit_port == 0:
        return "Not a valid URL: port 0 cannot be connected to."
    port = explicit_port or (443 if parts.scheme == "https" else 80)
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
