# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""fleet_agent's rotate_credential: the agent registers again with a new token without being uninstalled.

The old agent keeps checking in while the new token is put in place (the bootstrap Secret, from the hub's token); then,
right after one of its check-ins when waiting for it shortens the gap (rotation.switch_wait), its credential Secret and
its pods are deleted together. The Deployment's new pod registers with the token (Fleet grants the new registration and
deletes the older ones, and with them the old credential) and checks in; the old agent's Lease is deleted with its pods
so the new one takes it at its first try instead of waiting for the holder. Success needs a check-in after the switch by an agent holding a
credential made after it: the old agent's word does not count."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible_collections.fleetops.registration.plugins.module_utils import rotation
from ansible_collections.fleetops.registration.plugins.module_utils.agent_flow import LeaseReleasingPoll
from ansible_collections.fleetops.registration.plugins.module_utils.errors import FleetOpsError, ParameterError
from ansible_collections.fleetops.registration.plugins.module_utils.helm_records import guarded_uninstall
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_client import SECRET
from ansible_collections.fleetops.registration.plugins.module_utils.leases import LEASE, POD, delete_read_version
from ansible_collections.fleetops.registration.plugins.module_utils.parsing import b64
from ansible_collections.fleetops.registration.plugins.module_utils.times import parse_time
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.resources import (
    AGENT_BOOTSTRAP_SECRET, AGENT_CREDENTIAL_SECRET, AGENT_LEASE, AGENT_NAMESPACE, AGENT_POD_SELECTOR, AGENT_RELEASE,
    agent_objects,
)
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.member import credential_endpoint
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.rules import checked_in_since
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.views import cluster_summary

# The keys of the fleet-agent chart's bootstrap Secret (charts/fleet-agent/templates/secret.yaml), from the chart values.
BOOTSTRAP_KEYS = ("systemRegistrationNamespace", "clusterNamespace", "token", "tokenName", "apiServerURL", "apiServerCA")
REGISTERED = "the agent registered again with the new token without being uninstalled (its credential was rotated)"
REINSTALLED = ("the agent was uninstalled and installed again: the new registration names another hub or client ID, "
               "which an agent reads only when it is installed")
POLL_SECONDS = 0.5


def _last_seen(cluster):
    return parse_time((((cluster or {}).get("status") or {}).get("agent") or {}).get("lastSeen"))


def bootstrap_secret(values, release_exists):
    """The bootstrap Secret as the chart writes it, from the chart ``values``; labelled as Helm's when the chart's
    release exists, so a later upgrade of it takes the Secret over instead of refusing it."""
    meta = {"name": AGENT_BOOTSTRAP_SECRET, "namespace": AGENT_NAMESPACE}
    if release_exists:
        meta["labels"] = {"app.kubernetes.io/managed-by": "Helm"}
        meta["annotations"] = {"meta.helm.sh/release-name": AGENT_RELEASE, "meta.helm.sh/release-namespace": AGENT_NAMESPACE}
    return {"metadata": meta, "type": "Opaque", "data": dict((key, b64(str(values.get(key) or ""))) for key in BOOTSTRAP_KEYS)}


def registers_in_place(facts, values):
    """Whether the running agent can register again with the new token where it runs (pure): its credential is for the
    hub the new ``values`` name, and the release that installed it gave it their client ID. The agent reads its client
    ID once, from what installed it; a new token alone would register it with another hub, or under another client ID,
    as a Cluster of Fleet's own naming. Otherwise (a move to another hub, a new client ID) it is installed afresh."""
    endpoint = credential_endpoint(facts.get("credential"))
    installed = (facts.get("release") or {}).get("values") or {}
    return facts.get("deployment") is not None and endpoint is not None and endpoint[0] == values.get("apiServerURL") \
        and bool(values.get("clientID")) and installed.get("clientID") == values.get("clientID")


def new_credential_checkin(cluster, credential, old_uid):
    """Whether the Cluster's last check-in is no older than the agent's ``credential`` Secret, which is not the one
    deleted (``old_uid``): a check-in by the agent that registered with the new token. Pure."""
    meta = (credential or {}).get("metadata") or {}
    created, seen = parse_time(meta.get("creationTimestamp")), _last_seen(cluster)
    return bool(meta.get("uid")) and meta.get("uid") != old_uid and None not in (created, seen) and seen >= created


class CredentialRotation:
    """The rotate_credential path of AgentRunner (needs ``module``, ``namespace``, ``params``, ``failed_after_change``)."""

    def remove_for_new_registration(self, facts):
        """Uninstall the agent (its releases and its credential) so that it is installed afresh, as at a first join: the
        new registration names another hub or client ID (``registers_in_place``). The namespace stays for the install."""
        helm, kube, agent = self.module.helm(), self.module.kube(), agent_objects(self.namespace)
        for name in ([self.release] if facts["release"] else []) + facts["adopted"]:
            guarded_uninstall(kube, helm, name, self.namespace, agent)
        if facts["credential"] is not None:
            self.module.kube().delete(SECRET, AGENT_CREDENTIAL_SECRET, self.namespace)

    def rotate_registration(self, state, find_cluster):
        """``{cluster, released_lease, rotation}`` after the agent registered again with the token of ``state``."""
        if find_cluster is None:
            raise ParameterError("rotate_credential", "needs wait: true and access to the hub (hub_kubeconfig, hub_context or "
                                 "hub_host)", "The old credential is only given up once the hub sees the agent check in with "
                                 "the new one; give the hub's access and keep wait: true")
        member = self.module.kube()
        self._put_bootstrap(member, state)
        interval = rotation.fleet_checkin_interval(state["facts"]["deployment"])
        before = find_cluster()
        waited = rotation.switch_wait(_last_seen(before), interval)
        if waited:
            before = self._next_checkin(find_cluster, before, waited)
        old_credential = member.delete(SECRET, AGENT_CREDENTIAL_SECRET, AGENT_NAMESPACE)
        pods = member.list(POD, AGENT_NAMESPACE, label_selector=AGENT_POD_SELECTOR)
        released = self._release_lease_of(member, pods)
        for pod in pods:
            member.delete(POD, pod["metadata"]["name"], AGENT_NAMESPACE)
        old_uid = ((old_credential or {}).get("metadata") or {}).get("uid")
        cluster, lease = self._wait_registered(find_cluster, _last_seen(before), old_uid)
        return {"cluster": cluster, "released_lease": lease or released,
                "rotation": {"checkin_interval": interval, "waited_for_checkin": bool(waited)}}

    def _release_lease_of(self, member, pods):
        """Delete the leader Lease of the agent whose ``pods`` are about to be deleted (the version read), so the
        Deployment's new pod finds none at its first try and takes it at once, not at its next retry (10 s by default)
        after the departed holder's Lease is released. Fleet's agent re-creates a missing Lease only when it renews
        (every retry period), and its pod is deleted right after. Best effort, as release_departed_lease; the holder."""
        if not pods or not self.params.get("release_departed_lease", True):
            return None
        try:
            lease = member.get(LEASE, AGENT_LEASE, AGENT_NAMESPACE)
            if lease is None or not (lease.get("spec") or {}).get("holderIdentity"):
                return None
            return lease["spec"]["holderIdentity"] if delete_read_version(member, lease) else None
        except FleetOpsError:
            return None

    def _put_bootstrap(self, member, state):
        body = bootstrap_secret(state["values"], bool(state["facts"]["release"]))
        try:
            member.delete(SECRET, AGENT_BOOTSTRAP_SECRET, AGENT_NAMESPACE)
            member.create(SECRET, body, AGENT_NAMESPACE)
        except FleetOpsError as exc:
            raise self.failed_after_change(exc, " (writing the bootstrap Secret with the new token; the agent still runs with its "
                                                "old credential, and a re-run writes it again)")

    def _next_checkin(self, find_cluster, before, at_most):
        """The Cluster after the old agent's next check-in, or as it is after ``at_most`` seconds without one."""
        deadline = time.monotonic() + at_most
        seen = _last_seen(before)
        while time.monotonic() < deadline:
            time.sleep(POLL_SECONDS)
            now = find_cluster()
            if checked_in_since(now, seen):
                return now
        return before

    def _checked_in_with_new_credential(self, switched_after, old_uid):
        """Whether a Cluster shows a check-in after the switch that is no older than a credential Secret the agent wrote
        after it (another uid than the deleted one): the new agent's, not a late one of the old agent."""
        member = self.module.kube()

        def proven(cluster):
            return checked_in_since(cluster, switched_after) and new_credential_checkin(
                cluster, member.get(SECRET, AGENT_CREDENTIAL_SECRET, AGENT_NAMESPACE), old_uid)
        return proven

    def _wait_registered(self, find_cluster, switched_after, old_uid):
        proven = self._checked_in_with_new_credential(switched_after, old_uid)
        poll = LeaseReleasingPoll(find_cluster, self._release_departed_lease, enabled=self.params.get("release_departed_lease", True))
        try:
            cluster = self.module.waiter.until(poll, proven,
                                               find_cluster.description + " with a credential made after the rotation began",
                                               "wait_timeout: the agent lost its old credential and has not registered with "
                                               "the new token; look at its logs (kubectl -n cattle-fleet-system logs -l app=fleet-agent)")
        except FleetOpsError as exc:
            raise self.failed_after_change(exc, " (the agent's old credential was deleted; a re-run with a new token registers it again)")
        return cluster_summary(cluster), (poll.released[-1] if poll.released else None)
