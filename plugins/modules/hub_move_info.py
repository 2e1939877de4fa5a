#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
module: hub_move_info
short_description: Where a member's move to a new hub stands, and whether the new hub has taken it over
version_added: 0.1.0
description:
  - Reads, for one member and each fleet manager in O(backends), what the hub it moves from (O(old_hub_kubeconfig) and
    the other C(old_hub_) options) and the hub it moves to (O(kubeconfig)) have of it, and whether the new hub has
    taken it over - the new hub judges the member healthy (the same judgement as
    M(fleetops.registration.fleet_status_info)), reports each of its own placements applied on the member (Rancher
    Fleet - the member's C(BundleDeployments) ready with their current deployment, Fleet's own agent bundle left out;
    KubeFleet - each C(ClusterResourcePlacement)'s status for the member C(Applied)), and places everything the old
    hub still places there, by the same names (what lets the new hub's objects adopt what the old hub's put on the
    member).
  - With O(wait), waits until the new hub has taken the member over in every manager it is moving in, and fails
    naming what is missing when it has not within O(wait_timeout).
  - The playbook C(fleetops.registration.move_hub) uses it before and after each member's move.
  - Changes nothing.
author:
  - fleetops.registration contributors (@fleetops)
extends_documentation_fragment:
  - fleetops.registration.k8s_auth
  - fleetops.registration.k8s_auth.OLD_HUB
  - fleetops.registration.read_only
  - fleetops.registration.controller_run
options:
  name:
    description:
      - The member's name on both hubs (its Fleet C(Cluster), its KubeFleet C(MemberCluster)).
    type: str
    required: true
  backends:
    description:
      - The fleet managers to read.
    type: list
    elements: str
    default: [kubefleet, rancher_fleet]
  fleet_namespace:
    description:
      - The namespace of the Rancher Fleet C(Cluster)s, on both hubs.
    type: str
    default: fleet-default
  guard:
    description:
      - Also say, in RV(unplaced), what the member's agents serve from the old hub now (its placements there) that the
        new hub would not place on the member - re-pointed, Fleet's agent would remove it, KubeFleet's would leave it
        unmanaged. Rancher Fleet - a C(Bundle) of
        the same namespace and name whose targets select the member's C(Cluster) (Fleet's matching - cluster name,
        C(ClusterGroup)s, cluster selector, restrictions, C(doNotDeploy)); KubeFleet - a C(ClusterResourcePlacement) of
        the same name whose policy selects the member (C(PickFixed) by name, C(PickAll) by its required affinity's label
        selectors; C(PickN) and property selectors only the hub's scheduler can judge, so they do not count).
      - The member's labels are those it has on the new hub, else O(labels), else those it has on the old hub.
    type: bool
    default: false
  labels:
    description:
      - The labels the member will carry on the new hub (the move's C(fleetops_labels)), for O(guard).
    type: dict
  wait:
    description:
      - Wait until the new hub has taken the member over in every manager the member is in; fail when it has not
        within O(wait_timeout).
    type: bool
    default: false
  wait_timeout:
    description:
      - Seconds the wait may take.
    type: int
    default: 300
  wait_sleep:
    description:
      - Seconds between reads while waiting.
    type: int
    default: 2
  old_hub_lost:
    description:
      - The old hub cannot be reached (or is gone) - an evacuation. It is not read, and the C(old_hub_) options may be
        left out; what runs on the member stands for what the old hub had of it - O(member_agents) for the managers
        it is in, O(member_workloads) for their placements (the guard and the takeover check require the new hub to place
        each of them). RV(leave) is empty and RV(left_on_old_hub) names the managers whose objects stay on the old hub.
    type: bool
    default: false
  member_agents:
    description:
      - With O(old_hub_lost), the fleet managers whose agent runs on the member (from
        M(fleetops.registration.member_info)'s C(member.release) per manager).
    type: list
    elements: str
    default: []
  member_workloads:
    description:
      - With O(old_hub_lost), per fleet manager the names of the placements whose workloads its agent runs on the member
        (M(fleetops.registration.member_info)'s C(member.workloads), each C(placement)) - Rancher Fleet bundles (taken to
        be in O(fleet_namespace)), KubeFleet C(ClusterResourcePlacement)s.
    type: dict
    default: {}
seealso:
  - module: fleetops.registration.member_info
'''

EXAMPLES = r'''
- name: Wait until hub2 has taken member1 over
  fleetops.registration.hub_move_info:
    name: member1
    kubeconfig: ~/.kube/hub2.yaml
    old_hub_kubeconfig: ~/.kube/hub.yaml
    wait: true
  register: move
'''

RETURN = r'''
phase:
  description:
    - C(not_member) (neither hub has the member in any manager of O(backends)), C(moved) (only the new hub has it, and
      has taken it over, in each manager it is in) or C(move) (something is left to do).
  returned: always
  type: str
  sample: move
join:
  description: The fleet managers the member is in on either hub (those it joins on the new hub).
  returned: always
  type: list
  elements: str
leave:
  description: The fleet managers whose old hub still has the member (those it leaves there, hub-side); empty with
    O(old_hub_lost).
  returned: always
  type: list
  elements: str
left_on_old_hub:
  description: With O(old_hub_lost), the fleet managers whose objects of the member stay on the old hub (a move with
    that hub back, or a leave against it, removes them).
  returned: always
  type: list
  elements: str
  sample: ["kubefleet", "rancher_fleet"]
settled:
  description: Whether the new hub has taken the member over in every manager of RV(join).
  returned: always
  type: bool
managers:
  description:
    - Per fleet manager - C(phase) (C(not_member), C(move), C(finish) - both hubs have it, C(verify) - only the new hub,
      not yet taken over, C(moved)), C(old_present), C(new_present), C(new_healthy), C(placements) (the new hub's, each
      C(name), C(applied), C(message)), C(old_placements) (the names the old hub places on the member), C(settled) and
      C(problems) (why not settled).
  returned: always
  type: dict
unplaced:
  description:
    - With O(guard), each placement the old hub has on the member that the new hub would not place there - C(manager),
      C(name) (Fleet C(namespace/bundle), KubeFleet the C(ClusterResourcePlacement)) and C(why).
  returned: when O(guard)
  type: list
  elements: dict
  sample: [{"manager": "rancher_fleet", "name": "fleet-default/web", "why": "the hub has no Bundle fleet-default/web"}]
'''

from ansible_collections.fleetops.registration.plugins.module_utils.hub_move_check import HubMove
from ansible_collections.fleetops.registration.plugins.module_utils.argspec import AUTH, OLD_HUB_AUTH, merge
from ansible_collections.fleetops.registration.plugins.module_utils.module import FleetModule, run_module
from ansible_collections.fleetops.registration.plugins.module_utils import registry


def argument_spec():
    """The module's own options (the shared ones come from argspec)."""
    return dict(
        name=dict(type="str", required=True),
        backends=dict(type="list", elements="str", default=list(registry.NAMES)),
        fleet_namespace=dict(type="str", default="fleet-default"),
        guard=dict(type="bool", default=False),
        labels=dict(type="dict"),
        wait=dict(type="bool", default=False),
        wait_timeout=dict(type="int", default=300),
        wait_sleep=dict(type="int", default=2),
        old_hub_lost=dict(type="bool", default=False),
        member_agents=dict(type="list", elements="str", default=[]),
        member_workloads=dict(type="dict", default={}),
    )


def module_options():
    """FleetModule's keyword arguments; the in-controller run (action plugin) validates the task's options with them too."""
    return dict(argument_spec=merge(AUTH, OLD_HUB_AUTH, argument_spec()))


def run(module):
    return HubMove(module).run()


def main():
    run_module(FleetModule(**module_options()), run)


if __name__ == "__main__":
    main()
