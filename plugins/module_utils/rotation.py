# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""When an agent's credential is due for rotation: the one rule both fleet managers' ``decide`` ask (pure).

A credential that expires is renewed once ``RENEW_AFTER`` of its lifetime has passed (a re-run rotates it: the action
``rotate``) and warned about once ``WARN_AFTER`` has (the renewal was missed: scheduled runs stopped or failed). Its
lifetime is what it got (``exp`` - ``iat``), not what was asked for: the API server may have capped it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime

from typing import Any, Dict, List, Optional

from ansible_collections.fleetops.registration.plugins.module_utils.errors import ParameterError
from ansible_collections.fleetops.registration.plugins.module_utils.times import format_time, parse_duration, utcnow

RENEW_AFTER = 0.5   # of its lifetime: a re-run issues a new credential (member_info: action rotate)
WARN_AFTER = 0.75   # of its lifetime: member_info warns that the renewal is overdue


def rotation_reasons(present: bool, accepted: Optional[bool], age: Optional[int], desired: Dict[str, Any], what: str) -> List[str]:
    """Why the credential ``what`` (e.g. "the member agent's token") is due: ``desired`` has ``rotate`` (now) and
    ``credential_max_age`` (seconds; 0 or None: never); ``age`` is in seconds, None when not known.

    A missing or rejected credential is not rotated: that is a re-registration, which ``decide`` finds first."""
    if not present or accepted is False:
        return []
    if desired.get("rotate"):
        return ["credential rotation was asked for"]
    max_age = desired.get("credential_max_age")
    if not max_age:
        return []
    if age is None:
        return ["%s has no recorded issue time, and credentials older than %ds are rotated" % (what, max_age)]
    if age > max_age:
        return ["%s was issued %ds ago, more than the credential max age (%ds)" % (what, age, max_age)]
    return []


def expiry_plan(issued, expires, wanted=None):
    """``{lifetime, renew_at, warn_at}`` (seconds, datetimes) of a token issued at ``issued`` that expires at
    ``expires``; its lifetime is what it got (``wanted`` only when the issue time is unknown). None when it never expires."""
    if expires is None:
        return None
    lifetime = (expires - issued).total_seconds() if issued is not None and issued < expires else wanted
    if not lifetime:
        return {"lifetime": None, "renew_at": expires, "warn_at": expires}
    return {"lifetime": int(lifetime), "renew_at": expires - datetime.timedelta(seconds=lifetime * (1 - RENEW_AFTER)),
            "warn_at": expires - datetime.timedelta(seconds=lifetime * (1 - WARN_AFTER))}


def renewal_reasons(issued, expires, wanted, now=None, what="the member agent's token"):
    """Why a token is renewed now: it never expires while ``wanted`` (seconds; None: never) asks for one that does, it
    is past its renewal point, or it outlives the lifetime asked for (a shorter one was set). Pure."""
    now = now or utcnow()
    if expires is None:
        if wanted:
            return ["%s never expires; a rotation replaces it with one that expires after %ds" % (what, wanted)]
        return []
    plan = expiry_plan(issued, expires, wanted)
    if now >= plan["renew_at"]:
        return ["%s expires at %s, and tokens are renewed after half their lifetime (%s)" % (
            what, format_time(expires), format_time(plan["renew_at"]))]
    if wanted and (expires - now).total_seconds() > wanted + 60:
        return ["%s expires at %s, later than the token lifetime asked for (%ds) allows" % (what, format_time(expires), wanted)]
    return []


def expiry_warning(issued, expires, now=None, what="the member agent's token"):
    """A warning once a token is past ``WARN_AFTER`` of its lifetime and not yet expired (an expired one is a
    diagnosis of its own); None otherwise."""
    now = now or utcnow()
    plan = expiry_plan(issued, expires)
    if plan is None or now < plan["warn_at"] or now >= expires:
        return None
    return ("%s expires at %s (in %s) and was not renewed: a run of join_cluster.yml renews it; if scheduled runs have "
            "stopped, the member agent loses the hub when it expires" % (what, format_time(expires), _span(expires - now)))


def _span(delta):
    seconds = int(delta.total_seconds())
    if seconds >= 2 * 86400:
        return "%dd" % (seconds // 86400)
    if seconds >= 7200:
        return "%dh" % (seconds // 3600)
    return "%dm" % max(seconds // 60, 1)


# -- Rancher Fleet: re-registering an agent in place -------------------------------------------------------------------
#
# Fleet's agent registers only after it holds its leader Lease (internal/cmd/agent/root.go: OnStartedLeading runs the
# registration), and it reads its credential once, at start. So two agents never overlap: the old one must stop before
# the new one can register, and the new one checks in first ClusterRegisterDelay (15 s) after its registration. What the
# collection can do is everything else: have the new token ready on the member before the old agent stops, switch right
# after the old agent's check-in, release the departed agent's Lease at once, and never uninstall the agent.

FLEET_DEFAULT_CHECKIN_INTERVAL = 900.0  # s; Fleet's agent without CHECKIN_INTERVAL (durations.DefaultClusterCheckInterval)
# s from the old agent's stop to the new agent's first check-in: Fleet's ClusterRegisterDelay (15 s) plus the Lease,
# the registration (the agent polls for its granted Secret every 2 s) and the start of its controllers.
FLEET_RESTART_SECONDS = 20.0


def fleet_checkin_interval(deployment):
    """The check-in interval (seconds) of the Fleet agent ``deployment`` runs: its container's ``CHECKIN_INTERVAL``
    (Fleet sets it on the agent it manages), else Fleet's default. Pure."""
    containers = ((((deployment or {}).get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers") or []
    for container in containers:
        for env in container.get("env") or []:
            if env.get("name") == "CHECKIN_INTERVAL" and env.get("value"):
                try:
                    seconds = parse_duration(env["value"], "CHECKIN_INTERVAL")
                except ParameterError:
                    return FLEET_DEFAULT_CHECKIN_INTERVAL
                return seconds if seconds > 0 else FLEET_DEFAULT_CHECKIN_INTERVAL
    return FLEET_DEFAULT_CHECKIN_INTERVAL


def switch_wait(last_seen, interval, now=None, restart=FLEET_RESTART_SECONDS):
    """Seconds to wait for the old agent's next check-in before it is replaced (0: replace it now). Pure.

    Replacing it now leaves the Cluster without a check-in from ``last_seen`` until ``restart`` after now. When that
    is more than one ``interval`` and the old agent's next check-in is still to come (it checked in within the last
    interval, so its credential works), waiting for that check-in shortens the gap to ``restart``; the wait is at most
    until that check-in is due, plus a few seconds for a slow one. An agent that is silent is replaced at once."""
    if last_seen is None or not interval:
        return 0.0
    now = now or utcnow()
    since = (now - last_seen).total_seconds()
    if since < 0 or since > interval or since + restart <= interval:
        return 0.0
    return interval - since + min(5.0, interval / 3)
