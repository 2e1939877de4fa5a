#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
module: kubefleet_member_cluster_info
short_description: Report KubeFleet member clusters and their join state
version_added: 0.1.0
description:
  - Lists the C(MemberCluster) objects (C(cluster.kubernetes-fleet.io/v1beta1)) on a KubeFleet hub, one or all of
    them, optionally filtered by labels.
  - For each member it reports C(ReadyToJoin), C(Joined) and C(Healthy), the resource usage, and every agent's
    conditions with the age of its last heartbeat.
  - Tested with KubeFleet's v1beta1 API as shipped in go.goms.io/fleet v0.14.0 (Azure/fleet).
author:
  - fleetops.registration contributors (@fleetops)
extends_documentation_fragment:
  - fleetops.registration.k8s_auth
  - fleetops.registration.read_only
  - fleetops.registration.controller_run
options:
  name:
    description:
      - Only this member cluster. A name that does not exist gives an empty RV(members) list.
    type: str
    aliases: [member_name]
  labels:
    description:
      - Only members with all these labels (equality).
    type: dict
  label_selector:
    description:
      - Only members matching this Kubernetes label selector (for example C(env in (prod,staging)),!legacy).
      - Combined with O(labels) when both are given.
    type: str
seealso:
  - module: fleetops.registration.kubefleet_member_cluster
'''

EXAMPLES = r'''
- name: All members of the fleet
  fleetops.registration.kubefleet_member_cluster_info:
    context: hub
  register: fleet

- name: Fail if a production member has not joined or has gone quiet
  ansible.builtin.assert:
    that:
      - item.joined
      - item.agents | selectattr('type', 'equalto', 'MemberAgent') | map(attribute='heartbeat_age_seconds') | first < 3 * item.heartbeat_period_seconds
  loop: "{{ fleet.members | selectattr('labels.env', 'defined') | selectattr('labels.env', 'equalto', 'prod') }}"
  loop_control:
    label: "{{ item.name }}"

- name: One member
  fleetops.registration.kubefleet_member_cluster_info:
    context: hub
    name: east-1
  register: east

- name: Members in the east region
  fleetops.registration.kubefleet_member_cluster_info:
    context: hub
    labels:
      region: east
'''

RETURN = r'''
members:
  description: The matching member clusters, sorted by name.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Name of the member cluster.
      type: str
    labels:
      description: Its labels.
      type: dict
    identity:
      description: The identity its member agent authenticates as.
      type: dict
    heartbeat_period_seconds:
      description: The configured heartbeat period.
      type: int
    taints:
      description: Its taints.
      type: list
    namespace:
      description: Its namespace on the hub, C(fleet-member-<name>).
      type: str
    leaving:
      description: Whether it is being deleted (leaving the fleet).
      type: bool
    finalizers:
      description: Finalizers on the MemberCluster.
      type: list
    created:
      description: When the MemberCluster was created.
      type: str
    ready_to_join:
      description: The C(ReadyToJoin) condition (null when not reported yet).
      type: bool
    joined:
      description: The C(Joined) condition (null when unknown).
      type: bool
    healthy:
      description: The C(Healthy) condition; taken from the member agent when the hub does not aggregate it.
      type: bool
    conditions:
      description: All conditions, with type, status, reason, message, last_transition_time and observed_generation.
      type: list
    resource_usage:
      description: Capacity, allocatable and available resources summed over the member's nodes, and when observed.
      type: dict
    properties:
      description: Cluster properties, when a property provider reports them.
      type: dict
    agents:
      description: Each agent's type, joined, healthy, conditions, last_received_heartbeat and heartbeat_age_seconds.
      type: list
  sample:
    - name: east-1
      labels: {env: prod}
      ready_to_join: true
      joined: true
      healthy: true
      heartbeat_period_seconds: 60
      resource_usage: {capacity: {cpu: "8", memory: 32Gi}, allocatable: {cpu: "7800m"}, available: {}, observation_time: "2026-11-21T10:00:00Z"}
      agents:
        - type: MemberAgent
          joined: true
          healthy: true
          last_received_heartbeat: "2026-11-21T10:00:00Z"
          heartbeat_age_seconds: 12
'''

from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.member_cluster import MemberClusterInfo
from ansible_collections.fleetops.registration.plugins.module_utils.argspec import AUTH, merge
from ansible_collections.fleetops.registration.plugins.module_utils.module import FleetModule, run_module


def argument_spec():
    return dict(
        name=dict(type="str", aliases=["member_name"]),
        labels=dict(type="dict"),
        label_selector=dict(type="str"),
    )


def module_options():
    """FleetModule's keyword arguments; the in-controller run (action plugin) validates the task's options with them too."""
    return dict(argument_spec=merge(AUTH, argument_spec()))


def run(module):
    return MemberClusterInfo(module).run()


def main():
    run_module(FleetModule(**module_options()), run)


if __name__ == "__main__":
    main()
