# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether an agent judged silent is silent: after a hub outage every agent's last contact is old, though each
contacts the hub again at its next heartbeat. A member whose only reason to re-register is silence is given its
manager's contact period (``FleetManager.contact``) to be heard from; only then is its agent re-registered. That
covers an agent whose next try falls within the period; after a long hub outage KubeFleet's agent backs off its
heartbeat for longer, and is still re-registered (``make soak``, docs/testing.md)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

SILENT = "silent"
POLL_SECONDS = 2


def silent_only(findings):
    """Whether the re-registration the findings ask for rests on silence alone."""
    again = [item.get("cause") for item in findings or [] if item.get("action") == "reregister"]
    return bool(again) and set(again) == {SILENT}


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
