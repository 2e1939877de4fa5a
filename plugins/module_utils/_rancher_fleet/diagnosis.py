# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rancher Fleet's part of a member's diagnosis (``diagnosis.py`` has the shared rules): pure, from the two views."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.fleetops.registration.plugins.module_utils.diagnosis import (
    credential_findings, finding, membership_findings,
)
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet import cluster_namespace, views
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.resources import (
    AGENT_BOOTSTRAP_SECRET, AGENT_CREDENTIAL_SECRET, AGENT_NAMESPACE,
)

FORCE_FIX = "member_join_fleet_agent_force: true makes a re-run register it again at once."
CREDENTIAL = "Secret %s/%s" % (AGENT_NAMESPACE, AGENT_CREDENTIAL_SECRET)


def hub_findings(hub, stale_after=None):
    """What the hub alone shows (``fleet_status`` has only this): no Cluster, deleting, a cluster namespace Fleet
    cannot grant the agent, an agent that never checked in or went silent, a Cluster that is not Ready."""
    found = membership_findings(hub, "Cluster", bool(hub and hub.get("deleting")))
    if hub is None:
        return found
    if hub.get("cluster_namespace_problem"):
        found.append(finding("hub_reports", "Cluster %s: %s" % (hub.get("name"), cluster_namespace.describe(hub["cluster_namespace_problem"])),
                             "Let Fleet's controller finish the cluster namespace (is it running?), then re-run."))
    if not hub.get("checked_in"):
        found.append(finding("never_checked_in", "the agent of Cluster %s has never checked in" % hub.get("name"),
                             "Look at the agent on the member (its pods and log); the findings from the member say more."))
    stale = views.stale_problem(hub, stale_after)
    if stale:
        found.append(finding("silent", stale, "Look at the agent on the member: is it running, can it reach the hub? " + FORCE_FIX))
    if hub.get("checked_in") and hub.get("ready_status") == "False":
        found.append(finding("hub_reports", "Cluster %s is not Ready: %s" % (hub.get("name"), hub.get("ready_message") or "-"),
                             "kubectl get bundledeployments -A on the hub shows which bundles are not ready on the member."))
    return found


def member_findings(member, now=None):
    """What cattle-fleet-system on the member shows: the release, the Deployment, the credential or the bootstrap
    Secret to register with, and the hub's answer to the credential."""
    if not member:
        return []
    found = []
    if member.get("release") is None:
        found.append(finding("agent_missing", "the fleet-agent release is not installed on the member", "A re-run installs it."))
    elif not member.get("deployment"):
        found.append(finding("agent_missing", "the agent Deployment %s/fleet-agent is missing on the member" % AGENT_NAMESPACE,
                             "A re-run installs the agent again."))
    if member.get("release") is not None and not member.get("credential") and not member.get("bootstrap"):
        found.append(finding("bootstrap_missing", "the agent has neither its credential (%s) nor the Secret %s/%s to register with" % (
            CREDENTIAL, AGENT_NAMESPACE, AGENT_BOOTSTRAP_SECRET), "A re-run registers it with a new registration token."))
    found += credential_findings({"present": member.get("credential_usable"), "accepted": member.get("credential_accepted"),
                                  "problem": member.get("credential_error"), "expires": member.get("credential_expires"),
                                  "url": member.get("credential_server"), "where": CREDENTIAL,
                                  "rerun": "a fresh registration token; the agent registers again"}, now)
    return found


def findings(hub, member, now=None, stale_after=None):
    return hub_findings(hub, stale_after) + member_findings(member, now)
