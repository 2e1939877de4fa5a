# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ``clusters`` items of fleet_cluster / kubefleet_member_cluster, from inventory hosts."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.validation import check_type_str

from ansible_collections.fleetops.registration.plugins.plugin_utils.backends import requested_backends
from ansible_collections.fleetops.registration.plugins.module_utils.errors import FleetOpsError
from ansible_collections.fleetops.registration.plugins.module_utils.labels import parse_survey_labels
from ansible_collections.fleetops.registration.plugins.module_utils.registry import manager


def cluster_specs(hosts, hostvars, extra_labels=None, backends=None):
    """``[{name, labels}]`` for ``hosts``: each host's fleetops_cluster_name (or its name) and fleetops_labels. With
    ``backends`` (a list or text, as fleetops_backends; blank: every manager), each name is checked by those fleet
    managers' own rule, before any of them is written to."""
    managers = [] if backends is None else [manager(name) for name in requested_backends([backends])]
    specs = []
    for host in hosts or []:
        host_vars = hostvars[host]
        name = host_vars.get("fleetops_cluster_name") or host
        try:
            labels = parse_survey_labels(host_vars.get("fleetops_labels") or {}, "fleetops_labels of %s" % host)
            labels.update(parse_survey_labels(extra_labels or {}, "extra_labels"))
            for fleet_manager in managers:
                fleet_manager.check_member_name(check_type_str(name, allow_conversion=True), "fleetops_cluster_name of %s" % host)
        except FleetOpsError as exc:
            raise AnsibleFilterError(exc.message())
        specs.append({"name": name, "labels": labels})
    return specs


class FilterModule:
    """fleetops.registration filters."""

    def filters(self):
        return {"cluster_specs": cluster_specs}
