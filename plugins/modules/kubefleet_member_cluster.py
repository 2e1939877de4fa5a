#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
module: kubefleet_member_cluster
short_description: Join a cluster to a KubeFleet fleet, or make it leave, through its MemberCluster
version_added: 0.1.0
description:
  - Manages the C(MemberCluster) (C(cluster.kubernetes-fleet.io/v1beta1), cluster-scoped) on the KubeFleet hub, that is
    its identity, heartbeat period, labels and taints.
  - On creation the hub agent makes the member's namespace C(fleet-member-<name>), grants the identity access to it,
    and sets C(ReadyToJoin); C(Joined) follows once the member agent (M(fleetops.registration.kubefleet_member_agent))
    reports in.
  - O(state=absent) is the leave. The MemberCluster is deleted and the task waits until the hub has cleaned up, that
    is until the MemberCluster and the namespace C(fleet-member-<name>) are gone. O(force_remove_finalizers) finishes
    a leave stuck on finalizers (Azure/fleet#881).
  - Labels are reconciled after the join, so inventories can keep them current (placement targets them).
  - Tested with KubeFleet's v1beta1 API as shipped in go.goms.io/fleet v0.14.0 (Azure/fleet).
author:
  - fleetops.registration contributors (@fleetops)
extends_documentation_fragment:
  - fleetops.registration.k8s_auth
  - fleetops.registration.wait
  - fleetops.registration.cluster_identity
  - fleetops.registration.controller_run
attributes:
  check_mode:
    description: Creates, patches and deletes are server-side dry runs; nothing is waited for. When the identity's
      ServiceAccount does not exist yet (an earlier task of the same check run only dry-ran it), the module warns and
      predicts the join instead of failing.
    support: full
  diff_mode:
    description: Shows the MemberCluster before and after (without its status).
    support: full
options:
  name:
    description:
      - Name of the member cluster (the MemberCluster object). The hub derives the namespace C(fleet-member-<name>)
        from it, so at most 50 lower-case letters, digits and C(-).
      - Required unless O(clusters) is given.
    type: str
    aliases: [member_name]
  clusters:
    description:
      - Many MemberClusters in one call, for a hub that keeps many (predefined before their agents come, or relabelled
        for placement). Each item is one MemberCluster; what an item does not give comes from the task's other options.
      - The hub's MemberClusters (and, with O(validate_identity), the identities' ServiceAccounts) are listed once for
        the whole batch, so an item costs only its own writes (see C(playbooks/predefine_clusters.yml)).
      - An item that fails stops the batch; the message names it and the items changed before it, and a re-run
        continues where it stopped. With O(wait), each item is waited for in turn.
      - Mutually exclusive with O(name).
    type: list
    elements: dict
    suboptions:
      name:
        description: Name of the member cluster.
        type: str
        required: true
      labels:
        description: Its labels (see O(labels)).
        type: dict
      state:
        description: Whether it should be in the fleet; O(state) when not given.
        type: str
        choices: [present, absent]
  identity_kind:
    description:
      - Kind of the identity the member agent authenticates as.
    type: str
    choices: [ServiceAccount, User, Group]
    default: ServiceAccount
  identity_name:
    description:
      - Name of the identity. Defaults to C(<name>-hub-cluster-access), the ServiceAccount that
        M(fleetops.registration.kubefleet_member_identity) creates.
    type: str
  identity_namespace:
    description:
      - Namespace of a ServiceAccount identity (earlier versions' default was C(fleet-system)).
    type: str
    default: fleetops-system
  validate_identity:
    description:
      - Whether to fail before changing anything when a ServiceAccount identity does not exist on the hub.
    type: bool
    default: true
  heartbeat_period_seconds:
    description:
      - How often the member agent sends a heartbeat, from 1 to 600 seconds.
    type: int
    default: 60
  labels:
    description:
      - Labels of the MemberCluster. Values are turned into strings (C(true) becomes C("true")).
      - Omit to leave the labels alone.
    type: dict
  labels_mode:
    description:
      - V(merge) adds and updates the given labels and keeps the others.
      - V(replace) makes the labels exactly O(labels), except those with the prefixes C(fleet.azure.com/) and
        C(kubernetes-fleet.io/), which hub tooling sets and are kept.
    type: str
    choices: [merge, replace]
    default: merge
  taints:
    description:
      - Taints of the MemberCluster; placements that do not tolerate them skip the cluster.
      - The list replaces the current taints; V([]) removes them all; omit to leave them alone.
    type: list
    elements: dict
    suboptions:
      key:
        description: Taint key (a label key).
        type: str
        required: true
      value:
        description: Taint value.
        type: str
      effect:
        description: Taint effect; KubeFleet supports only V(NoSchedule).
        type: str
        choices: [NoSchedule]
        default: NoSchedule
  quarantine:
    description:
      - Keep a new member from taking workloads until it is verified (KubeFleet places work on a member as soon as it
        joins). The quarantine is the V(NoSchedule) taint C(fleetops.registration/quarantine=unverified); O(taints)
        never adds or removes it.
      - V(hold) puts it on a MemberCluster this task creates and keeps it on one that has it; a member verified
        earlier is not quarantined again.
      - V(lift) removes it once the member is joined, healthy (the MemberCluster's or its agent's C(Healthy)
        condition) and has reported its properties or resource usage, waiting for that within O(wait_timeout) when
        O(wait=true). A member that is not verified by then keeps the taint, and the task fails saying why (in check
        mode, it warns).
      - Omit to leave the quarantine as it is.
    type: str
    choices: [hold, lift]
  wait:
    description:
      - With O(state=present), whether to wait for the condition O(wait_for).
      - With O(state=absent), whether to wait until the hub has removed the MemberCluster and its namespace.
  wait_for:
    description:
      - What O(wait=true) waits for with O(state=present).
      - V(ready_to_join) (the hub has prepared the namespace and permissions) is reached without the member agent.
      - V(joined) also needs the member agent to have joined and sent a heartbeat.
    type: str
    choices: [ready_to_join, joined]
    default: ready_to_join
  force_remove_finalizers:
    description:
      - For a leave stuck on finalizers (Azure/fleet#881), for example because the member cluster or its agent is
        already gone. If the graceful leave has not finished after O(force_grace_period) seconds, the module removes
        the C(kubernetes-fleet.io/work-cleanup) finalizers from the Works in C(fleet-member-<name>) and the
        C(kubernetes-fleet.io/membercluster-finalizer) from the MemberCluster, deletes the namespace, and waits for
        the rest of O(wait_timeout).
      - Resources the fleet placed on the member cluster are then not cleaned up by KubeFleet.
      - With the least-privilege hub role this needs the ClusterRole of C(extensions/rbac/hub-forced-leave.yml) bound
        in C(fleet-member-<name>) only; without it the module fails naming the role and the command that binds it.
      - Only used with O(state=absent) and O(wait=true).
    type: bool
    default: false
  force_grace_period:
    description:
      - Seconds to wait for a graceful leave before O(force_remove_finalizers) acts.
    type: int
    default: 60
  state:
    description:
      - V(present) joins (creates or updates the MemberCluster); V(absent) leaves.
    type: str
    choices: [present, absent]
    default: present
notes:
  - A task that changed the hub and then failed (for example a leave whose wait timed out after the delete was issued)
    reports C(changed=true) and names in its message what it did and what is still there; a re-run continues from there.
  - For a clean leave, run this module with O(state=absent) while the member agent still runs, then remove the agent
    with M(fleetops.registration.kubefleet_member_agent).
  - A MemberCluster that is still leaving is waited for (with O(wait=true)) before it is created again; check mode
    predicts it created again, with a warning.
seealso:
  - module: fleetops.registration.kubefleet_member_identity
  - module: fleetops.registration.kubefleet_member_agent
  - module: fleetops.registration.kubefleet_member_cluster_info
'''

EXAMPLES = r'''
- name: Register member cluster east-1 on the hub
  fleetops.registration.kubefleet_member_cluster:
    context: hub
    name: east-1
    heartbeat_period_seconds: 30
    labels:
      region: east
      env: prod

- name: Keep labels exactly as the inventory says, and taint the cluster
  fleetops.registration.kubefleet_member_cluster:
    context: hub
    name: east-1
    labels: "{{ fleet_labels }}"
    labels_mode: replace
    taints:
      - key: maintenance
        value: "true"

- name: Wait until the member agent has joined
  fleetops.registration.kubefleet_member_cluster:
    context: hub
    name: east-1
    wait_for: joined
    wait_timeout: 600

- name: Join quarantined, then lift the quarantine once the member is verified
  fleetops.registration.kubefleet_member_cluster:
    context: hub
    name: east-1
    quarantine: lift
    wait: true
    wait_for: joined

- name: Predefine the MemberClusters of an inventory group with their labels, in one call
  fleetops.registration.kubefleet_member_cluster:
    context: hub
    clusters: "{{ groups['edge'] | fleetops.registration.cluster_specs(hostvars) }}"
    validate_identity: false
    wait: false

- name: Leave the fleet, forcing it if the member is already gone
  fleetops.registration.kubefleet_member_cluster:
    context: hub
    name: east-1
    state: absent
    force_remove_finalizers: true
    force_grace_period: 120
'''

RETURN = r'''
label_changes:
  description: The labels this run added, changed (new values) and removed on the MemberCluster (or would, in check mode).
  returned: when O(state=present)
  type: dict
  sample: {"added": {"env": "prod"}, "changed": {}, "removed": []}
spec_changes:
  description:
    - What this run changed (or would, in check mode) of the MemberCluster's C(heartbeatPeriodSeconds) and of the
      user's taints (the quarantine is RV(quarantine)), as C(field before -> after); empty when it created the
      MemberCluster or changed neither.
  returned: when O(state=present)
  type: list
  elements: str
  sample: ["heartbeatPeriodSeconds 60 -> 30"]
member_cluster:
  description: The MemberCluster as the API returned it (empty after a leave).
  returned: always
  type: dict
member:
  description: A summary of the MemberCluster, as M(fleetops.registration.kubefleet_member_cluster_info) returns it.
  returned: when the MemberCluster existed or was created
  type: dict
  sample:
    name: east-1
    joined: true
    ready_to_join: true
    healthy: true
    labels: {env: prod}
    namespace: fleet-member-east-1
namespace:
  description: The hub namespace of the member.
  returned: with O(state=absent)
  type: str
  sample: fleet-member-east-1
quarantine:
  description:
    - Whether the MemberCluster is quarantined after the task (C(held)), and with O(quarantine=lift) why it was not
      verified (C(problems), empty once it is).
  returned: when O(state=present)
  type: dict
  sample: {"held": false, "problems": []}
forced:
  description: What O(force_remove_finalizers) had to do (empty when the leave finished by itself).
  returned: with O(state=absent)
  type: list
  elements: str
clusters:
  description:
    - With O(clusters), one result per item, in order, each with its C(name) and the keys this module returns for one
      MemberCluster. The top-level keys for one MemberCluster are then not returned.
  returned: with O(clusters)
  type: list
  elements: dict
  sample: [{"name": "edge-001", "changed": true, "label_changes": {"added": {"site": "a"}, "changed": {}, "removed": []}}]
diff:
  description: The MemberCluster before and after, without status (one per item with O(clusters)).
  returned: in diff mode
  type: dict
'''

from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.member_cluster import run_member_cluster
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.resources import IDENTITY_NAMESPACE
from ansible_collections.fleetops.registration.plugins.module_utils.argspec import AUTH, CLUSTER_IDENTITY, WAIT, merge
from ansible_collections.fleetops.registration.plugins.module_utils.module import FleetModule, run_module


def argument_spec():
    return dict(
        name=dict(type="str", aliases=["member_name"]),
        clusters=dict(type="list", elements="dict", options=dict(
            name=dict(type="str", required=True),
            labels=dict(type="dict"),
            state=dict(type="str", choices=["present", "absent"]),
        )),
        identity_kind=dict(type="str", choices=["ServiceAccount", "User", "Group"], default="ServiceAccount"),
        identity_name=dict(type="str"),
        identity_namespace=dict(type="str", default=IDENTITY_NAMESPACE),
        validate_identity=dict(type="bool", default=True),
        heartbeat_period_seconds=dict(type="int", default=60),
        labels=dict(type="dict"),
        labels_mode=dict(type="str", choices=["merge", "replace"], default="merge"),
        taints=dict(type="list", elements="dict", options=dict(
            key=dict(type="str", required=True, no_log=False),
            value=dict(type="str"),
            effect=dict(type="str", choices=["NoSchedule"], default="NoSchedule"),
        )),
        wait_for=dict(type="str", choices=["ready_to_join", "joined"], default="ready_to_join"),
        quarantine=dict(type="str", choices=["hold", "lift"]),
        force_remove_finalizers=dict(type="bool", default=False),
        force_grace_period=dict(type="int", default=60),
        state=dict(type="str", choices=["present", "absent"], default="present"),
    )


def module_options():
    """FleetModule's keyword arguments; the in-controller run (action plugin) validates the task's options with them too."""
    return dict(
        argument_spec=merge(AUTH, WAIT, CLUSTER_IDENTITY, argument_spec()),
        mutually_exclusive=[("name", "clusters"), ("clusters", "cluster_identity")],
        required_one_of=[("name", "clusters")],
    )


def run(module):
    return run_member_cluster(module)


def main():
    run_module(FleetModule(**module_options()), run)


if __name__ == "__main__":
    main()
