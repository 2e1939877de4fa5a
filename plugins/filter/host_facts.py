# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What each host of a batch noted for a run_once task: one fact per host, in the hosts' order."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections.abc import Mapping


def host_facts(hosts, hostvars, name):
    """The fact ``name`` of each of ``hosts`` that has it (hosts without it are left out). A dotted name, such as
    ``member_join_summary.line``, is a key of that fact."""
    fact, dummy, key = name.partition(".")
    found = []
    for host in hosts or []:
        variables = hostvars[host] if host in hostvars else {}
        if fact not in variables:
            continue
        value = variables[fact]
        if not key:
            found.append(value)
        elif isinstance(value, Mapping) and key in value:
            found.append(value[key])
    return found


class FilterModule:
    """fleetops.registration filters."""

    def filters(self):
        return {"host_facts": host_facts}
