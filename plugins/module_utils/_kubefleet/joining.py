# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""kubefleet_member_agent's wait for the hub to report the member agent joined, and the restart of an agent left
running that does not join: it watches its InternalMemberCluster and joins a MemberCluster made now within seconds,
so one that has not by JOIN_GRACE_SECONDS is stuck (frozen, backed off) and would never join (soak seed 8123 round 5:
the MemberCluster deleted and the agent frozen together; both runs waited 150 s for it)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.fleetops.registration.plugins.module_utils import leases
from ansible_collections.fleetops.registration.plugins.module_utils.agent_flow import LeaseReleasingPoll
from ansible_collections.fleetops.registration.plugins.module_utils.agent_repair import repair_agent
from ansible_collections.fleetops.registration.plugins.module_utils.errors import FleetOpsError, WaitTimeout
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet import contact
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.resources import (
    AGENT_LEASE_NAMESPACE, AGENT_LEASES, AGENT_POD_SELECTOR, MEMBER_CLUSTER, chart_fullname,
)
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.views import (
    describe_member, heartbeat_problem, hub_view, joined_since,
)

JOIN_GRACE_SECONDS = 30


def wait_joined(agent, changed, reasons, previous_heartbeat):
    """``(the MemberCluster as describe_member reports it, why the agent was restarted or None)``. After a change, a
    heartbeat from before it proves nothing: a newer one is waited for. Without a change, only a heartbeat the hub does
    not judge stale counts (a silent agent is never reported joined), and an agent that has not joined within
    JOIN_GRACE_SECONDS is restarted, then waited for as after a change."""
    if changed:
        return _wait(agent, agent.module.waiter, previous_heartbeat, True, reasons), None
    try:
        return _wait(agent, agent.module.waiter.within(JOIN_GRACE_SECONDS), None, False, reasons), None
    except WaitTimeout:
        pass
    deployment = chart_fullname(agent.release_name)
    restarted = repair_agent(agent.kube, agent.agent_namespace, deployment, silent="the member agent had not joined MemberCluster %s "
                             "within %d s" % (agent.name, JOIN_GRACE_SECONDS))
    if restarted is None:  # nothing to restart (no Deployment): the wait below says what is missing
        return _wait(agent, agent.module.waiter, None, False, reasons), None
    try:
        agent.wait_rolled_out(agent.agent_namespace, deployment)
    except FleetOpsError as exc:
        raise agent.changed_before_failure(exc, "changed the member (%s)" % restarted)
    return _wait(agent, agent.module.waiter, previous_heartbeat, True, reasons + [restarted]), restarted


def _wait(agent, waiter, since, changed, reasons):
    # an agent uninstalled earlier (a leave) keeps its Leases
    poll = LeaseReleasingPoll(lambda: _joined_record(agent, since, changed), lambda: leases.release_departed(
        agent.kube, AGENT_LEASE_NAMESPACE, AGENT_LEASES, agent.agent_namespace, AGENT_POD_SELECTOR), enabled=changed)
    try:
        member = waiter.until(
            poll, lambda obj: _joined(obj, since, changed),
            "MemberCluster %s to be Joined with a %smember agent heartbeat%s" % (
                agent.name, "" if changed else "fresh ", " newer than %s" % since if since else ""),
            "Look at the member agent's log on the member; check hub_api_server_url, the CA and that %s/%s still exists on the hub" % (
                agent.params["identity_namespace"], agent.sa_name),
        )
    except FleetOpsError as exc:  # unchanged, a WaitTimeout of the grace goes to wait_joined, which restarts the agent
        if changed:
            raise agent.changed_before_failure(exc, "changed the member (%s)" % "; ".join(reasons))
        raise
    agent.released_leases = poll.released
    return describe_member(member)


def _joined_record(agent, since, changed):
    """The MemberCluster, with the InternalMemberCluster's heartbeat when its own (a lagging copy) shows no join."""
    member = agent.hub.get(MEMBER_CLUSTER, agent.name)
    if member is None or _joined(member, since, changed):
        return member
    return contact.newest_contact(agent.hub, agent.name, member)


def _joined(member, since, changed):
    return joined_since(member, since) and (changed or not heartbeat_problem(hub_view(member)))
