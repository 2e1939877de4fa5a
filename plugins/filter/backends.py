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


def requested_backends(asks, chosen=None, hostvars=None):
    """The fleet managers needed, in the registry's order (Rancher Fleet first).

    ``chosen`` (a survey's answer) wins when it is not blank; otherwise each item of ``asks`` (a member's
    ``fleetops_backends``, or with ``hostvars`` a member's name) adds what it asks for, and a blank one (not set,
    ``""`` as AWX injects an empty field) asks for every manager.
    """
    if hostvars is not None:
        asks = [hostvars[name].get("fleetops_backends") for name in asks or []]
    picked = _names(chosen, "fleetops_survey_backends")
    if picked:
        return [name for name in ORDER if name in picked]
    wanted = set()
    for ask in asks or []:
        wanted.update(_names(ask, "fleetops_backends") or ORDER)
    return [name for name in ORDER if name in wanted]


class FilterModule:
    """fleetops.registration filters."""

    def filters(self):
        return {"requested_backends": requested_backends}
