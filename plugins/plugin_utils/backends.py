# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which fleet managers a run needs, from what the members ask for: the one rule the roles share."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible.errors import AnsibleFilterError

from ansible_collections.fleetops.registration.plugins.module_utils.errors import FleetOpsError
from ansible_collections.fleetops.registration.plugins.module_utils.registry import MANAGERS, manager


ORDER = list(MANAGERS)


def _names(value, variable):
    """A list of manager names from a list or text (an AWX multiselect may arrive as lines); None when blank."""
    if value is None or value == "" or value == []:
        return None
    items = re.split(r"[\s,]+", value.strip()) if isinstance(value, str) else list(value)
    names = [str(item).strip() for item in items if str(item).strip()]
    try:
        return [manager(name, variable).name for name in names] or None
    except FleetOpsError as exc:
        raise AnsibleFilterError(exc.message())


def backend_request(asks, chosen=None, hostvars=None, served=None):
    """Which fleet managers a run acts in: ``{"backends": [...], "detect": bool}``, in the registry's order.

    ``chosen`` (a survey's answer) wins when it is not blank. Otherwise each item of ``asks`` (a member's
    ``fleetops_backends``, or with ``hostvars`` a member's name) adds what it asks for; a blank one (not set, or
    ``""`` as AWX injects an empty field) asks for each fleet manager the hub serves: ``served`` when it is known
    (hub_prepare's ``backends``), else ``detect`` is true and the modules find out (``detect_backends``).
    """
    if hostvars is not None:
        asks = [hostvars[name].get("fleetops_backends") for name in asks or []]
    picked = _names(chosen, "fleetops_survey_backends")
    if picked:
        return {"backends": [name for name in ORDER if name in picked], "detect": False}
    wanted, detect = set(), False
    for ask in asks or []:
        named = _names(ask, "fleetops_backends")
        if named is None and served is None:
            detect = True
        wanted.update(named or served or [])
    return {"backends": [name for name in ORDER if name in wanted], "detect": detect}


def requested_backends(asks, chosen=None, hostvars=None):
    """The fleet managers ``backend_request`` names, a blank ask counting as every manager (no detection)."""
    request = backend_request(asks, chosen, hostvars)
    return ORDER if request["detect"] else request["backends"]
