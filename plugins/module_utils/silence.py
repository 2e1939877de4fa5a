# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether an agent judged silent is silent: after a hub outage every agent's last contact is old, though each
contacts the hub again at its next heartbeat. A member whose only reason to re-register is silence is given its
manager's contact period (``FleetManager.contact``) to be heard from; only then is its agent re-registered. That
covers an agent whose next try falls within the period; after a long hub outage KubeFleet's agent backs off its
heartbeat for longer (``make soak``, docs/testing.md): then an agent whose token the hub accepts is restarted, which ends
the back-off, and only one whose token is not known to work is registered again.

A member whose agent has missed its contact but is not silent yet (``FleetManager.overdue``) is waited for until it
would be: after a hub outage KubeFleet's agent may be quiet for longer than its staleness bound, and a run that called
it healthy from a heartbeat made before the outage would be contradicted by the hub moments later. Once the bound is
passed it is silent, and repaired as above without a further wait. While a member is waited for, a manager may read a
newer record of the contact than its member object's (``FleetManager.newest_contact``: KubeFleet's hub agent copies
the heartbeat onto the MemberCluster late after a hub outage).

Both waits are longer for an agent that runs on the member (``FleetManager.reconnect_grace``: KubeFleet's agent renews
its leader Lease there): after a hub restart its cache may miss the hub for minutes, and it heartbeats once, then not
until it lists again (soak seed 9461, round 40). Restarting it then would change a member that is about to
be heard from; a frozen or stopped agent renews nothing and is repaired after its period, as before.

An agent is also silent when the hub's last contact is older than the agent that runs now
(``unheard_since_start``): that contact was its predecessor's. A run that restored the agent and then lost the hub
leaves such a member, and the staleness rules alone would call it healthy for up to an hour (Fleet's)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import time

from ansible_collections.fleetops.registration.plugins.module_utils import findings
from ansible_collections.fleetops.registration.plugins.module_utils.times import parse_time

SILENT = "silent"
# What silence asks for: a re-registration, or (an agent whose credential works) a restart, which the install does.
REPAIRS = ("reregister", "install")
POLL_SECONDS = 2
# The agent's clock stamps its contacts, the member's controller-manager the Deployment's conditions: a contact is
# counted as the current agent's unless it is older than the agent's start by more than this.
CLOCK_SLACK_SECONDS = 5


def available_since(deployment):
    """When the agent Deployment last became available (its Available condition's move to True), as the API wrote it;
    None when it is not available or does not say."""
    conditions = ((deployment or {}).get("status") or {}).get("conditions") or []
    available = next((c for c in conditions if c.get("type") == "Available"), None)
    if not available or available.get("status") != "True":
        return None
    return available.get("lastTransitionTime") or None


def unheard_since_start(last_contact, started):
    """Why the agent that runs now has not been heard from: the hub's ``last_contact`` is older than ``started`` (the
    agent Deployment's ``available_since``), so it was an earlier agent's. None when either is unknown."""
    contact, since = parse_time(last_contact), parse_time(started)
    if contact is None or since is None or contact >= since - datetime.timedelta(seconds=CLOCK_SLACK_SECONDS):
        return None
    return "the hub's last contact from the agent (%s) is older than the agent that runs now (available since %s)" % (
        last_contact, started)


def repairs(findings):
    """The causes of the findings that ask for a re-registration or a restart."""
    return [item.get("cause") for item in findings or [] if item.get("action") in REPAIRS]


def silent_only(findings):
    """Whether the repair the findings ask for (a re-registration, or a restart of an agent whose credential works)
    rests on silence alone."""
    causes = repairs(findings)
    return bool(causes) and set(causes) == {SILENT}


def heard_from(read, last_contact, before, grace, clock=time.monotonic, sleep=time.sleep):
    """The hub object (``read()``) once ``last_contact`` of it differs from ``before``, or None after ``grace`` seconds."""
    deadline = clock() + grace
    while True:
        obj = read()
        if obj is not None and last_contact(obj) not in (None, before):
            return obj
        left = deadline - clock()
        if left <= 0:
            return None
        sleep(min(POLL_SECONDS, left))


def judged_silent(rules, hub_view):
    """Why a manager's rule table (``rules``) judges its agent silent from the hub view alone, by the manager's own bound
    (None: it does not): an agent step's own judgement when member_info's is not given to it."""
    return findings.evidence(findings.judge(rules, hub_view, None, {}), SILENT)
