# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The newest record of a member agent's heartbeat the hub keeps: member_info and the agent module both ask it, so
that both judge an agent by the same heartbeat. And whether an agent silent on the hub runs on the member, reconnecting
(``reconnect_grace``)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.fleetops.registration.plugins.module_utils import leases
from ansible_collections.fleetops.registration.plugins.module_utils.errors import ApiError
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.resources import (
    AGENT_LEASE_NAMESPACE, HUB_MANAGER_LEASE, INTERNAL_MEMBER_CLUSTER, member_namespace,
)
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.views import reconnect_left, with_newest_heartbeat


def newest_contact(hub, name, member_cluster):
    """``member_cluster`` (as read) with its InternalMemberCluster's heartbeat where that is newer (one GET): the member
    agent writes its heartbeat there, and the hub agent's copy on the MemberCluster lags after a hub outage (39 s at a
    10 s period on the lab), so an agent it lags for is not silent. A credential that may not read
    InternalMemberClusters (403) keeps the MemberCluster's."""
    if member_cluster is None:
        return None
    try:
        internal = hub.get(INTERNAL_MEMBER_CLUSTER, name, member_namespace(name))
    except ApiError as exc:
        if exc.status == 403:
            return member_cluster
        raise
    return with_newest_heartbeat(member_cluster, internal)


def reconnect_grace(member, hub_view):
    """Seconds more to wait for the heartbeat of a member agent whose process runs (it renews the Lease of its hub
    controllers on the member, one GET): until ``RECONNECT_SECONDS`` from its last heartbeat. None when it does not run
    (frozen or gone: no wait beyond its period), keeps no Lease (leader election off) or may not be read (403)."""
    try:
        lease = member.get(leases.LEASE, HUB_MANAGER_LEASE, AGENT_LEASE_NAMESPACE)
    except ApiError as exc:
        if exc.status == 403:
            return None
        raise
    return reconnect_left(hub_view) if leases.held(lease) else None
