# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""hub_move_info's runner: what the old and the new hub have of a member in each fleet manager, and whether the new hub
has taken it over - it judges the member healthy and reports its own placements applied on it (each manager's
``placements``: Rancher Fleet the member's BundleDeployments ready with their current deployment, KubeFleet each
ClusterResourcePlacement's status for the member ``Applied``). The decisions are hub_move.py's."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.fleetops.registration.plugins.module_utils import hub_move, registry
from ansible_collections.fleetops.registration.plugins.module_utils.errors import FleetOpsError, ParameterError, WaitTimeout
from ansible_collections.fleetops.registration.plugins.module_utils.findings import first, healthy, problems


class HubMove:
    """Read both hubs for one member; with ``wait``, wait until the new hub has taken it over in every manager."""

    def __init__(self, module):
        self.module = module
        self.params = module.params
        self.name = self.params["name"]
        self.backends = [registry.manager(name).name for name in dict.fromkeys(self.params.get("backends") or [])]
        self.lost = bool(self.params.get("old_hub_lost"))
        for name in (self.params.get("member_agents") or []) + sorted(self.params.get("member_workloads") or {}):
            registry.manager(name, param="member_agents")
        if not self.lost and not any(self.params.get("old_hub_" + key) for key in ("kubeconfig", "context", "host")):
            raise ParameterError("old_hub_kubeconfig", "is required: the hub the member moves from",
                                 "Give old_hub_kubeconfig (and old_hub_context), the connection of the hub the member is in now")

    def read_one(self, manager_name, hub):
        manager = registry.manager(manager_name)
        obj = manager.read_hub(hub, names=[self.name], namespace=self.params["fleet_namespace"]).get(self.name)
        if obj is None:
            return None, None, []
        found = manager.hub_findings(manager.hub_view(obj))
        problem = first(problems(found))
        return obj, {"healthy": healthy(found), "problem": problem and problem.get("evidence")}, manager.placements(hub, obj, self.name)

    def unplaced(self, manager_name, hub, old_obj, new_obj, old_placements):
        """What the member's agent serves from the old hub (its placements there) that the new hub would not place on it,
        with the labels it carries on the new hub (those it has there, else the move's, else the old hub's)."""
        labels = ((new_obj or {}).get("metadata") or {}).get("labels")
        if labels is None:
            labels = self.params.get("labels")
        if labels is None:
            labels = ((old_obj or {}).get("metadata") or {}).get("labels") or {}
        return registry.manager(manager_name).unplaced(hub, self.name, old_placements, labels, self.params["fleet_namespace"])

    def read_old(self, manager_name):
        """``(old hub object, whether the member is in this manager there, the old hub's placements on it)``; with
        ``old_hub_lost`` the old hub is not read: what the member's agent runs (``member_agents``, ``member_workloads``:
        member_info's, read from the member) stands for it, each placement by its name in the Fleet clusters namespace."""
        if not self.lost:
            old_obj, dummy, old_placements = self.read_one(manager_name, self.module.kube("old_hub_"))
            return old_obj, old_obj is not None, old_placements
        names = (self.params.get("member_workloads") or {}).get(manager_name) or []
        namespace = self.params["fleet_namespace"]
        return None, manager_name in (self.params.get("member_agents") or []), [
            {"name": name, "bundle": {"namespace": namespace, "name": name}} for name in names]

    def read_manager(self, manager_name):
        old_obj, old_present, old_placements = self.read_old(manager_name)
        new_obj, health, new_placements = self.read_one(manager_name, self.module.kube())
        health = health or {"healthy": False, "problem": None}
        found = hub_move.takeover_problems(new_obj is not None, health["healthy"], health["problem"], new_placements,
                                           [item["name"] for item in old_placements])
        reading = {"old_present": old_present, "new_present": new_obj is not None, "new_healthy": health["healthy"],
                   "placements": new_placements, "old_placements": [item["name"] for item in old_placements],
                   "settled": not found, "problems": found}
        if self.params.get("guard") and old_present:
            reading["unplaced"] = self.unplaced(manager_name, self.module.kube(), old_obj, new_obj, old_placements)
        return reading

    def read(self):
        managers = dict((name, self.read_manager(name)) for name in self.backends)
        result = hub_move.plan(managers, old_hub_lost=self.lost)
        result["managers"] = managers
        for name, phase in result["phases"].items():
            managers[name]["phase"] = phase
        result["settled"] = all(managers[name]["settled"] for name in result["join"])
        if self.params.get("guard"):
            result["unplaced"] = [item for name in sorted(managers) for item in managers[name].get("unplaced") or []]
        return result

    def run(self):
        result = self.read()
        if self.params["wait"] and result["join"] and not result["settled"]:
            try:
                result = self.module.waiter.until(self.read, lambda value: value["settled"],
                                                  "the new hub to take member %s over" % self.name)
            except WaitTimeout as exc:
                last = exc.last or result
                why = "; ".join("%s: %s" % (name, "; ".join(item["problems"])) for name, item in sorted(last["managers"].items())
                                if item["problems"] and name in last["join"])
                raise FleetOpsError("member %s: the new hub has not taken it over within %ss - %s" % (self.name, self.params["wait_timeout"], why),
                                    "Look at the member's agents and at the new hub's placements; the move moves it back")
        result["changed"] = False
        return result
