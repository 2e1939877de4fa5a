# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""fleet_agent state=absent: the releases, the agent's hub credential, and the namespace when nothing else is in it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.fleetops.registration.plugins.module_utils.errors import FleetOpsError
from ansible_collections.fleetops.registration.plugins.module_utils.helm import release_view
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_client import (
    CONFIG_MAP, DEPLOYMENT, NAMESPACE, SECRET, Resource,
)
from ansible_collections.fleetops.registration.plugins.module_utils.labels import MANAGED_BY, MANAGED_BY_LABEL
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.member import read_member
from ansible_collections.fleetops.registration.plugins.module_utils.helm_records import guarded_uninstall
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet import agent_env
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.resources import AGENT_CREDENTIAL_SECRET, agent_objects
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.rules import namespace_keepers
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet import workloads

# What may be worth keeping a namespace for (Pods follow their controllers; Leases and Events never are).
VALUABLE = (
    DEPLOYMENT,
    Resource("apps/v1", "StatefulSet", "statefulsets"),
    Resource("apps/v1", "DaemonSet", "daemonsets"),
    Resource("v1", "PersistentVolumeClaim", "persistentvolumeclaims"),
    SECRET,
    CONFIG_MAP,
)


class AgentRemoval:
    """The leave half of AgentRunner (a mixin over Runner)."""

    def absent(self):
        kube = self.module.kube()
        facts = read_member(kube)
        releases = ([self.release] if facts["release"] else []) + facts["adopted"]
        credential = facts["credential"]
        placed = self._settle_workloads(kube)
        if releases and not self.check_mode:
            helm, agent = self.module.helm(), agent_objects(self.namespace)
            for name in releases:
                guarded_uninstall(kube, helm, name, self.namespace, agent)
        if credential is not None:
            # The agent writes its hub credential itself; Helm does not know it and would leave it behind.
            kube.delete(SECRET, AGENT_CREDENTIAL_SECRET, self.namespace, dry_run=self.check_mode)
        env = agent_env.remove_all(kube, self.namespace, facts["env_secrets"], self.check_mode)
        namespace = self._remove_namespace(kube, facts["namespace"], changed=bool(releases or credential or env))
        result = {
            "changed": bool(releases or env) or credential is not None or namespace["removed"],
            "release": release_view(facts["release"]) or {"name": self.release, "namespace": self.namespace},
            "fleet_managed_releases": facts["adopted"],
            "removed_credential": credential is not None,
            "removed_namespace": namespace["removed"],
            "namespace_kept_for": namespace["kept_for"],
            "workloads": {"action": self.params.get("workloads") or "keep",
                          "releases": [workloads.release_text(r) for r in placed],
                          "namespaces": sorted(set(r["namespace"] for r in placed))},
        }
        before = {"chart_version": facts["release"].get("chart_version"), "namespace": self.namespace} if facts["release"] else {}
        if not before and facts["namespace"] is not None and namespace["removed"]:
            before = {"namespace": self.namespace}
        return self.finish(result, before, {})

    def _settle_workloads(self, kube):
        """The bundle releases on the member; with workloads=remove, wait (before the agent goes) until the agent has
        uninstalled them - their Cluster was deleted first. Returns the releases found at the start."""
        placed = workloads.bundle_releases(kube)
        if self.params.get("workloads") != "remove" or self.check_mode or not placed:
            return placed
        self.module.waiter.until(lambda: workloads.bundle_releases(kube) or None, "absent",
                                 "Fleet's agent to uninstall the releases of its bundle deployments (%s)"
                                 % ", ".join(workloads.release_text(r) for r in placed), "wait_timeout: " + workloads.REMOVE_HINT)
        return placed

    def _remove_namespace(self, kube, current, changed):
        """Delete cattle-fleet-system when the collection created it or nothing of value is left in it (unless kept)."""
        if current is None or (current.get("metadata") or {}).get("deletionTimestamp"):
            return {"removed": False, "kept_for": []}
        if self.params.get("keep_namespace"):
            return {"removed": False, "kept_for": ["keep_namespace"]}
        ours = ((current.get("metadata") or {}).get("labels") or {}).get(MANAGED_BY_LABEL) == MANAGED_BY
        keepers = [] if ours else namespace_keepers(
            dict((resource.kind, kube.list(resource, self.namespace)) for resource in VALUABLE))
        if keepers:
            self.warn("namespace %s was left in place: it holds %s, which this module did not create"
                      % (self.namespace, ", ".join(keepers)))
            return {"removed": False, "kept_for": keepers}
        kube.delete(NAMESPACE, self.namespace, dry_run=self.check_mode)
        if self.params.get("wait") and not self.check_mode:
            try:
                self.module.waiter.until(lambda: kube.get(NAMESPACE, self.namespace), "absent",
                                         "namespace %s to be deleted" % self.namespace,
                                         "wait_timeout: look at the namespace's finalizers and what is left in it")
            except FleetOpsError as exc:
                raise self.failed_after_change(
                    exc, " (the agent was removed%s; the namespace's deletion is pending)" % ("" if changed else " before"))
        return {"removed": True, "kept_for": []}
