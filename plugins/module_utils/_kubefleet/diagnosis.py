# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""KubeFleet's part of a member's diagnosis (``diagnosis.py`` has the shared rules): pure, from the two views."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.fleetops.registration.plugins.module_utils.diagnosis import (
    credential_findings, finding, membership_findings,
)
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.rules import identity_username
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.views import heartbeat_problem


def hub_findings(hub, stale_after=None):
    """What the hub alone shows (``fleet_status`` has only this): no MemberCluster, leaving, the hub's False
    conditions, an agent that never joined or went silent."""
    found = membership_findings(hub, "MemberCluster", bool(hub and hub.get("leaving")))
    if hub is None:
        return found
    problems = hub.get("conditions_false") or []
    if problems:
        found.append(finding("hub_reports", "; ".join(problems), "The member agent's log says more: kubectl logs -n fleet-system "
                             "deployment/member-agent on the member."))
    if hub.get("joined") is not True and not hub.get("heartbeat"):
        found.append(finding("never_checked_in", "the member agent has never sent a heartbeat for MemberCluster %s" % hub.get("name"),
                             "Look at the agent on the member (its pods and log); the findings from the member say more."))
    stale = heartbeat_problem(hub, stale_after)
    if stale:
        found.append(finding("silent", stale, "Look at the agent on the member: is it running, can it reach the hub?"))
    return found


def member_findings(hub, member, now=None):
    """What the member shows: the agent's release, Deployment and token, and the hub's answer to that token."""
    if not member:
        return []
    found = []
    release, deployment = member.get("release"), member.get("deployment") or {}
    if release is None:
        found.append(finding("agent_missing", "the member-agent release is not installed on the member", "A re-run installs it."))
    elif not deployment.get("present"):
        found.append(finding("agent_missing", "the agent Deployment %s/%s is missing on the member" % (
            deployment.get("namespace"), deployment.get("name")), "A re-run installs the agent again."))
    credential = member.get("credential") or {}
    where = "Secret %s/%s" % (credential.get("namespace"), credential.get("name"))
    if release is not None and not credential.get("present"):
        found.append(finding("credential_missing", "the token %s the agent reads is missing on the member" % where,
                             "A re-run writes it again."))
    found += credential_findings(dict(credential, url=member.get("hub_url"), where=where,
                                      rerun="a new token for the member's identity, swapped into the member's Secret"), now)
    if member.get("configured_ca_problem"):  # the release's own CA, checked without a token at the collection's hub URL
        found += credential_findings({"present": True, "accepted": None, "problem": member["configured_ca_problem"],
                                      "url": member.get("hub_url"), "where": where}, now)
    expected = identity_username((hub or {}).get("identity"))
    if credential.get("username") and expected and credential["username"] != expected:
        found.append(finding("wrong_identity", "the agent's token authenticates as %s, but MemberCluster names %s" % (
            credential["username"], expected), "A re-run registers the member again with the identity the MemberCluster names."))
    return found


def findings(hub, member, now=None, stale_after=None):
    return hub_findings(hub, stale_after) + member_findings(hub, member, now)
