# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ``clusters`` items of fleet_cluster / kubefleet_member_cluster, from inventory hosts."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.fleetops.registration.plugins.module_utils.errors import FleetOpsError
from ansible_collections.fleetops.registration.plugins.module_utils.labels import parse_survey_labels


def cluster_specs(hosts, hostvars, extra_labels=None):
    """``[{name, labels}]`` for ``hosts``: each host's fleetops_cluster_name (or its name) and fleetops_labels."""
    specs = []
    for host in hosts or []:
        host_vars = hostvars[host]
        try:
            labels = parse_survey_labels(host_vars.get("fleetops_labels") or {}, "fleetops_labels of %s" % host)
            labels.update(parse_survey_labels(extra_labels or {}, "extra_labels"))
        except FleetOpsError as exc:
            raise AnsibleFilterError(exc.message())
        specs.append({"name": host_vars.get("fleetops_cluster_name") or host, "labels": labels})
    return specs


class FilterModule:
    """fleetops.registration filters."""

    def filters(self):
        return {"cluster_specs": cluster_specs}
