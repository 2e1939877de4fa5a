# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""fleet_agent's rollback of an agent Fleet manages (``manageAgent``): Fleet deploys its agent from the Cluster's agent
fields, so the rollback gives the Cluster back the fields it had before the change (fleet_cluster records what a
change replaced, ``agent_settings.change_record``) and waits until Fleet has redeployed the agent with them: the
agent Deployment carries them and has rolled out, and the new agent checked in after that."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.fleetops.registration.plugins.module_utils import agent_settings
from ansible_collections.fleetops.registration.plugins.module_utils.diagnosis import rollout_problem
from ansible_collections.fleetops.registration.plugins.module_utils.errors import FleetOpsError, ParameterError
from ansible_collections.fleetops.registration.plugins.module_utils.helm import release_view
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_client import DEPLOYMENT
from ansible_collections.fleetops.registration.plugins.module_utils.times import parse_time
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.agent_settings import (
    PREVIOUS_FIELDS_ANNOTATION, fields_setting, restore_update, spec_view,
)
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.resources import (
    AGENT_DEPLOYMENT, AGENT_NAMESPACE, CLUSTER,
)
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.rules import checked_in_since
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.views import cluster_summary

NO_RECORD = ("set the agent setting the member should have (inventory fleetops_agent, role variable member_join_agent) and "
             "run join_cluster or upgrade_agents again; fleet_cluster sets the Cluster's agent fields from it")


def _last_seen(cluster):
    return parse_time((((cluster or {}).get("status") or {}).get("agent") or {}).get("lastSeen"))


def redeployed(deployment, setting, dropped_registry):
    """Whether the agent ``deployment`` runs the restored ``setting`` (a ``fields_setting``): it carries the setting, no
    image comes from the registry the rollback dropped, and its new pods have rolled out."""
    pod = agent_settings.pod_view(deployment)
    if pod is None or agent_settings.drift(setting, pod) or rollout_problem(deployment) is not None:
        return False
    return not (dropped_registry and any(c["image"].startswith(dropped_registry + "/") for c in pod["containers"]))


class ManagedAgentRollback:
    """Mixin of fleet_agent's AgentRunner (needs ``_agent_cluster_finder``, ``_hub`` and the Runner's ``finish``)."""

    def rollback_managed(self, facts):
        before = self.params.get("previous_agent_fields")
        if before is None:
            raise ParameterError("previous_agent_fields", "is required to roll back an agent Fleet manages (release %s)"
                                 % facts["adopted"][0], "Give the Cluster's agent fields as member_info read them before the "
                                 "change (its hub view's agent_fields), as the playbook upgrade_agents does")
        release = facts["release"] or facts["releases"].get(facts["adopted"][0])
        find_cluster = self._agent_cluster_finder((release or {}).get("values") or {})
        cluster = find_cluster()
        if cluster is None:
            raise FleetOpsError("the hub has no Cluster this agent registered as, so the agent fields Fleet deploys it from "
                                "cannot be rolled back", "Join the member again (join_cluster), which predefines its Cluster")
        meta, spec = cluster.get("metadata") or {}, cluster.get("spec") or {}
        planned = restore_update(spec, (meta.get("annotations") or {}).get(PREVIOUS_FIELDS_ANNOTATION), before)
        where = "Cluster %s/%s" % (meta.get("namespace"), meta.get("name"))
        if planned is None:
            raise FleetOpsError("the agent fields of %s changed since they were read, and the fields before the change are "
                                "not recorded on it, so the agent Fleet manages cannot be rolled back" % where, NO_RECORD)
        update, restored = planned
        self.module.hide(*agent_settings.credential_values(fields_setting(restored)))
        result = {"changed": bool(update), "action": "restore_cluster_agent_fields" if update else "none",
                  "reasons": ["%s's %s differ from before the change" % (where, ", ".join(sorted(update)))] if update else [],
                  "release": release_view(release), "rolled_back_from": None, "fleet_managed_releases": facts["adopted"],
                  "restored_agent_fields": sorted(update)}
        if update and not self.check_mode:
            patch = {"metadata": {"annotations": {PREVIOUS_FIELDS_ANNOTATION: None}}, "spec": update}
            self._hub("patch", CLUSTER, meta.get("name"), patch, meta.get("namespace"))
            if self.waits_for_agent():
                result["cluster"] = self._wait_for_redeploy(find_cluster, restored, spec.get("privateRepoURL"), where)
        return self.finish(result, {"agent_fields": spec_view(spec)}, {"agent_fields": spec_view(restored)})

    def _wait_for_redeploy(self, find_cluster, restored, registry_before, where):
        """The Cluster once Fleet has redeployed its agent with the ``restored`` fields and the new agent checked in."""
        setting = fields_setting(restored)
        dropped = registry_before if registry_before and registry_before != restored.get("privateRepoURL") else None
        kube = self.module.kube()
        changed = "restored the agent fields of %s" % where
        try:
            self.module.waiter.until(
                lambda: kube.get(DEPLOYMENT, AGENT_DEPLOYMENT, AGENT_NAMESPACE), lambda d: redeployed(d, setting, dropped),
                "Fleet to redeploy the agent (Deployment %s/%s) with the restored agent fields and roll it out"
                % (AGENT_NAMESPACE, AGENT_DEPLOYMENT),
                "Fleet redeploys its agent from the Cluster's agent fields: look at the agent bundle fleet-agent-<cluster> "
                "on the hub and at the agent pods on the member (kubectl -n %s describe pod)" % AGENT_NAMESPACE)
            seen_before = _last_seen(find_cluster())
            cluster = self.module.waiter.until(find_cluster, lambda c: checked_in_since(c, seen_before),
                                               "the redeployed agent to check in to the hub",
                                               "look at the agent's logs (kubectl -n %s logs -l app=fleet-agent)" % AGENT_NAMESPACE)
        except FleetOpsError as exc:
            raise self.changed_before_failure(exc, changed)
        return cluster_summary(cluster)
