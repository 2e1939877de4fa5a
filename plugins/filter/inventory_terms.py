# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A module's message in the words a role user wrote: the option it names, followed by the variable it came from."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible.errors import AnsibleFilterError


# Per role: the module option (as member_info's batch items name it) -> the inventory variable behind it, then the
# role variable that carries it (a user may have set either).
def _connection_sources(role):
    return {
        "name": "fleetops_cluster_name, or the inventory host name (%s_cluster_name)" % role,
        "kubeconfig": "fleetops_kubeconfig, or the member credential's fleetops_member_kubeconfig (%s_kubeconfig)" % role,
        "context": "fleetops_context (%s_context)" % role,
        "hub_kubeconfig": "the hub host's fleetops_kubeconfig, or the hub credential's fleetops_hub_kubeconfig "
                          "(%s_hub_kubeconfig)" % role,
        "hub_context": "the hub host's fleetops_context, or the hub credential's fleetops_hub_context (%s_hub_context)" % role,
        "helm_binary": "fleetops_helm_binary (%s_helm_binary)" % role,
        "wait_timeout": "%s_wait_timeout" % role,
    }


SOURCES = {
    "member_join": dict(
        _connection_sources("member_join"),
        hub_api_server_ca="the hub host's fleetops_ca_file (member_join_hub_ca_file)",
        hub_api_server_url="the hub host's fleetops_api_server_url (member_join_hub_api_server_url)",
        labels="fleetops_labels (member_join_labels)",
        backends="fleetops_backends, or the survey's fleetops_survey_backends (member_join_backends)",
        fleet_namespace="fleetops_fleet_namespace (member_join_fleet_namespace)",
        stale_after="member_join_fleet_agent_stale_after",
        replace_rebuilt="fleetops_replace_rebuilt (member_join_replace_rebuilt)",
    ),
    "member_leave": _connection_sources("member_leave"),
}
# The modules a role runs against the hub: their own connection options are the hub's.
HUB_SIDE = ("fleet_registration_token", "fleet_cluster", "kubefleet_member_identity", "kubefleet_member_cluster")
# Per role and module: what a later step's module names differently, or only it names (a module's action, short or FQCN).
MODULE_SOURCES = {
    "member_join": {
        "fleet_cluster": {"client_id": "fleetops_fleet_client_id (member_join_fleet_client_id)",
                          "namespace": "fleetops_fleet_namespace (member_join_fleet_namespace)"},
        "fleet_registration_token": {"ttl": "member_join_fleet_token_ttl", "name": "member_join_fleet_token_name",
                                     "namespace": "fleetops_fleet_namespace (member_join_fleet_namespace)",
                                     "values_dest": "member_join_fleet_values_dest"},
        "fleet_agent": {"chart_ref": "fleetops_fleet_agent_chart (member_join_fleet_agent_chart_ref)",
                        "chart_version": "fleetops_fleet_agent_chart_version (member_join_fleet_agent_chart_version)",
                        "chart_repo_url": "fleetops_fleet_agent_chart_repo_url (member_join_fleet_agent_chart_repo_url)",
                        "client_id": "fleetops_fleet_client_id (member_join_fleet_client_id)",
                        "values": "member_join_fleet_agent_values",
                        "secret_values": "member_join_agent_secret_values (its rancher_fleet entry)"},
        "kubefleet_member_identity": {"namespace": "fleetops_kubefleet_namespace (member_join_kubefleet_identity_namespace)"},
        "kubefleet_member_cluster": {"identity_namespace": "fleetops_kubefleet_namespace (member_join_kubefleet_identity_namespace)",
                                     "taints": "fleetops_kubefleet_taints (member_join_kubefleet_taints)"},
        "kubefleet_member_agent": {
            "chart_ref": "fleetops_kubefleet_member_agent_chart (member_join_kubefleet_agent_chart_ref)",
            "chart_version": "fleetops_kubefleet_member_agent_chart_version (member_join_kubefleet_agent_chart_version)",
            "chart_repo_url": "fleetops_kubefleet_member_agent_chart_repo_url (member_join_kubefleet_agent_chart_repo_url)",
            "identity_namespace": "fleetops_kubefleet_namespace (member_join_kubefleet_identity_namespace)",
            "values": "member_join_kubefleet_agent_values",
            "secret_values": "member_join_agent_secret_values (its kubefleet entry)"},
    },
    "member_leave": {
        "fleet_cluster": {"namespace": "fleetops_fleet_namespace (member_leave_fleet_namespace)"},
        "fleet_registration_token": {"namespace": "fleetops_fleet_namespace (member_leave_fleet_namespace)"},
        "kubefleet_member_identity": {"namespace": "fleetops_kubefleet_namespace (member_leave_kubefleet_identity_namespace)"},
        "kubefleet_member_cluster": {"force_grace_period": "member_leave_kubefleet_force_grace_period"},
    },
}
_LEADING_OPTION = re.compile(r"^(?P<option>[a-z_]+)(?P<index>\[\d+\])?: ")


def inventory_terms(message, role, module=None):
    """``message`` with a leading ``option: `` (how the modules name what is wrong) followed by where a user of
    ``role`` set it, e.g. ``name (from fleetops_cluster_name, ...): 'Member_2' is not a valid name``. ``module``: the
    module that failed (a task's action), whose own options are looked up first."""
    if role not in SOURCES:
        raise AnsibleFilterError("inventory_terms: unknown role %r; use one of %s" % (role, ", ".join(sorted(SOURCES))))
    text = str(message or "")
    match = _LEADING_OPTION.match(text)
    short = str(module or "").rsplit(".", 1)[-1]
    sources = dict(SOURCES[role])
    if short in HUB_SIDE:
        sources.update(kubeconfig=sources["hub_kubeconfig"], context=sources["hub_context"])
    sources.update(MODULE_SOURCES.get(role, {}).get(short, {}))
    source = sources.get(match.group("option")) if match else None
    if not source:
        return text
    return "%s (from %s): %s" % (match.group("option"), source, text[match.end():])


class FilterModule:
    """fleetops.registration filters."""

    def filters(self):
        return {"inventory_terms": inventory_terms}
