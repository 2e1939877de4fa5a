# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Time: the API's RFC 3339 timestamps, ages, and Go durations.

All datetimes here are timezone-aware UTC, so they compare with each other safely.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import re
from typing import Any, Optional

from ansible_collections.fleetops.registration.plugins.module_utils.errors import ParameterError

# A run lives three of its waits (wait_timeout): the member lock it holds and the registration token it makes.
RUN_LIFETIME_WAITS = 3

_UTC = datetime.timezone.utc
_RFC3339 = re.compile(r"^(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2}:\d{2})(?:\.(\d+))?(Z|z|[+-]\d{2}:\d{2})?$")

_DURATION_UNITS = {
    "ns": 1e-9, "us": 1e-6, "\u00b5s": 1e-6, "ms": 1e-3,
    "s": 1.0, "m": 60.0, "h": 3600.0,
}
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|\u00b5s|ms|s|m|h)")


def utcnow() -> datetime.datetime:
    """Now, as an aware UTC datetime."""
    return datetime.datetime.now(_UTC)


def parse_time(text: Any) -> Optional[datetime.datetime]:
    """An RFC 3339 timestamp (``2026-01-02T03:04:05Z``, fractional seconds, offsets) as an aware UTC datetime, or None."""
    if not text or not isinstance(text, str):
        return None
    match = _RFC3339.match(text.strip())
    if not match:
        return None
    day, clock, fraction, zone = match.groups()
    micro = (fraction or "")[:6].ljust(6, "0")
    if not zone or zone in ("Z", "z"):
        zone = "+00:00"
    try:
        value = datetime.datetime.fromisoformat("%sT%s.%s%s" % (day, clock, micro, zone))
    except ValueError:
        return None
    return value.astimezone(_UTC)


def age_seconds(text: Any, now: Optional[datetime.datetime] = None) -> Optional[int]:
    """Whole seconds since the timestamp ``text`` (negative if it lies ahead), or None when it does not parse."""
    when = parse_time(text)
    if when is None:
        return None
    return int(((now or utcnow()) - when).total_seconds())


def contact_age_seconds(text: Any, now: Optional[datetime.datetime] = None) -> Optional[int]:
    """Whole seconds since a member's last contact, never negative (a member's clock may run ahead of this one's),
    or None when there was none or it does not parse."""
    age = age_seconds(text, now)
    return None if age is None else max(0, age)


def format_time(value: datetime.datetime) -> str:
    """An aware datetime as the API writes it (``2026-01-02T03:04:05Z``)."""
    return value.astimezone(_UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_duration(text: Any, param: str = "ttl") -> float:
    """Parse a Go duration string (``240h``, ``1h30m``, ``90s``, ``0``) into seconds.

    Kubernetes' metav1.Duration uses Go's syntax, so that is what is accepted;
    an int is taken as seconds. Raises ParameterError naming ``param``.
    """
    if isinstance(text, bool):
        raise ParameterError(param, "expected a duration such as 240h, 1h30m or 90s, got %r" % (text,))
    if isinstance(text, (int, float)):
        return float(text)
    raw = str(text).strip()
    if raw in ("0", "+0", "-0"):
        return 0.0
    sign = 1.0
    body = raw
    if body[:1] in ("+", "-"):
        sign = -1.0 if body[0] == "-" else 1.0
        body = body[1:]
    if not body:
        raise ParameterError(param, "empty duration", "Use e.g. 240h, 1h30m or 90s")
    total = 0.0
    pos = 0
    while pos < len(body):
        match = _DURATION_PART.match(body, pos)
        if not match:
            raise ParameterError(
                param, "%r is not a duration" % raw,
                "Use Go duration syntax: a number and a unit (h, m, s, ms), e.g. 240h, 1h30m or 90s",
            )
        total += float(match.group(1)) * _DURATION_UNITS[match.group(2)]
        pos = match.end()
    return sign * total
