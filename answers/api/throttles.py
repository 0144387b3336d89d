"""Rate limits for asking, and for reader feedback: one rate for anonymous clients (per address), one for
signed-in users. Feedback has the same rates as asking, counted apart (sending feedback does not use up
questions).

An anonymous client is known by the address that connected, REMOTE_ADDR. Only when that
address is a reverse proxy listed in ANSWERS_TRUSTED_PROXIES is X-Forwarded-For read, from
the right (what the nearest proxy appended) past every trusted proxy: the first address not
trusted is the client. Whatever a client writes into the header itself stays to the left of
that and is never believed. (DRF's own get_ident believes the whole header unless NUM_PROXIES
is set, so a new made-up address per request would escape the limit.)
"""

from __future__ import annotations

import ipaddress
from functools import lru_cache
from typing import Any

from django.http import HttpRequest
from rest_framework.request import Request
from rest_framework.throttling import AnonRateThrottle, UserRateThrottle

from answers.conf import conf

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@lru_cache(maxsize=8)
def _networks(proxies: tuple[str, ...]) -> tuple[Network, ...]:
    # Invalid entries are reported by the system check answers.E025; here they trust nothing.
    networks: list[Network] = []
    for proxy in proxies:
        try:
            networks.append(ipaddress.ip_network(proxy, strict=False))
        except ValueError:
            continue
    return tuple(networks)


def _trusted(address: str, networks: tuple[Network, ...]) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in network for network in networks)


def client_address(request: HttpRequest | Request) -> str:
    """The address of the client behind the request, believing only the trusted proxies."""
    remote = str(request.META.get("REMOTE_ADDR", ""))
    networks = _networks(conf.TRUSTED_PROXIES)
    if not networks or not _trusted(remote, networks):
        return remote
    hops = [hop.strip() for hop in str(request.META.get("HTTP_X_FORWARDED_FOR", "")).split(",")]
    hops = [hop for hop in hops if hop]
    for hop in reversed(hops):
        if not _trusted(hop, networks):
            return hop
    # Every hop is a trusted proxy (or there is no header): the farthest one is the client.
    return hops[0] if hops else remote


class AskAnonThrottle(AnonRateThrottle):
    scope = "ask_anon"

    def get_rate(self) -> str:
        # Read lazily (not DRF's import-time copy) so the setting can change in tests.
        return conf.ANON_RATE

    def get_ident(self, request: Request) -> str:
        return client_address(request)


class AskUserThrottle(UserRateThrottle):
    scope = "ask_user"

    def get_rate(self) -> str:
        return conf.USER_RATE

    def get_ident(self, request: Request) -> str:
        return client_address(request)

    def allow_request(self, request: Request, view: Any) -> bool:
        if not request.user or not request.user.is_authenticated:
            return True  # anonymous clients are AskAnonThrottle's business
        return super().allow_request(request, view)


class FeedbackAnonThrottle(AskAnonThrottle):
    scope = "feedback_anon"


class FeedbackUserThrottle(AskUserThrottle):
    scope = "feedback_user"
