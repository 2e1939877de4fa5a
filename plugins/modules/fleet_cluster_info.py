#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
module: fleet_cluster_info
short_description: List Rancher Fleet Clusters with their registration and readiness
version_added: 0.1.0
description:
  - Reads one or all C(Cluster) objects (C(fleet.cattle.io/v1alpha1)) from the Fleet manager and returns what
    C(kubectl get clusters.fleet.cattle.io) shows (bundles ready, last seen, status), and more - labels, client ID, the
    C(Ready) condition and its message, the cluster namespace, the kubeconfig Secret and, on request, the
    ClusterRegistrations made for each client ID.
  - Changes nothing.
author:
  - fleetops.registration contributors (@fleetops)
extends_documentation_fragment:
  - fleetops.registration.k8s_auth
  - fleetops.registration.read_only
  - fleetops.registration.controller_run
options:
  name:
    description:
      - Name of one Cluster; needs O(namespace).
    type: str
  namespace:
    description:
      - Namespace to list Clusters in; all namespaces when not given.
    type: str
  label_selector:
    description:
      - Kubernetes label selector the Clusters must match, for example C(env=dev,region in (eu,us)).
    type: str
  include_registrations:
    description:
      - Also return, per Cluster, the ClusterRegistrations with its client ID (whether they were granted, which token
        they used, the labels the agent asked for).
    type: bool
    default: false
seealso:
  - module: fleetops.registration.fleet_cluster
'''

EXAMPLES = r'''
- name: All clusters in one namespace
  fleetops.registration.fleet_cluster_info:
    context: hub
    namespace: clusters
  register: fleet

- name: Clusters that have not checked in
  ansible.builtin.debug:
    msg: "{{ fleet.clusters | rejectattr('checked_in') | map(attribute='name') | list }}"

- name: One cluster with its registration requests
  fleetops.registration.fleet_cluster_info:
    context: hub
    name: edge-01
    namespace: clusters
    include_registrations: true
'''

RETURN = r'''
clusters:
  description: The Clusters, sorted by namespace and name (empty when none match).
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Cluster name.
      type: str
    namespace:
      description: Cluster namespace.
      type: str
    labels:
      description: The Cluster's labels.
      type: dict
    client_id:
      description: C(spec.clientID).
      type: str
    kube_config_secret:
      description: C(spec.kubeConfigSecret), set for manager-initiated clusters.
      type: str
    paused:
      description: C(spec.paused).
      type: bool
    bundles_ready:
      description: Ready bundles over desired bundles, as the BUNDLES-READY column shows it.
      type: str
      sample: 1/1
    state:
      description: Fleet's summary state (C(status.display.state)), for example C(WaitCheckIn).
      type: str
    last_seen:
      description: Last agent check-in (C(status.agent.lastSeen)), the LAST-SEEN column.
      type: str
      sample: "2026-11-21T10:00:00Z"
    checked_in:
      description: Whether an agent has ever checked in.
      type: bool
    agent_namespace:
      description: Namespace the agent runs in on the downstream cluster.
      type: str
    cluster_namespace:
      description: The hub namespace holding this cluster's BundleDeployments (C(status.namespace)).
      type: str
    api_server_url:
      description: The hub URL the agent was deployed with (manager-initiated).
      type: str
    ready:
      description: Whether the C(Ready) condition is C(True).
      type: bool
    ready_status:
      description: Status of the C(Ready) condition (C(True), C(False), C(Unknown)), null when absent.
      type: str
    ready_message:
      description: Message (or reason) of the C(Ready) condition, the STATUS column.
      type: str
    conditions:
      description: All status conditions.
      type: list
      elements: dict
    summary:
      description: C(status.summary) (bundle deployment counts by state).
      type: dict
    resource_counts:
      description: C(status.resourceCounts).
      type: dict
    created:
      description: Creation timestamp.
      type: str
    deleting:
      description: Whether the Cluster is being deleted.
      type: bool
    registrations:
      description: ClusterRegistrations with this client ID, oldest first.
      type: list
      elements: dict
      returned: when include_registrations is true
'''

from ansible_collections.fleetops.registration.plugins.module_utils.argspec import AUTH, merge
from ansible_collections.fleetops.registration.plugins.module_utils.module import FleetModule, run_module
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.cluster import ClusterInfoRunner


def argument_spec():
    """The module's own options (the shared ones come from argspec)."""
    return dict(
        name=dict(type="str"),
        namespace=dict(type="str"),
        label_selector=dict(type="str"),
        include_registrations=dict(type="bool", default=False),
    )


def module_options():
    """FleetModule's keyword arguments; the in-controller run (action plugin) validates the task's options with them too."""
    return dict(
        argument_spec=merge(AUTH, argument_spec()),
        required_by={"name": ("namespace",)},
    )


def run(module):
    return ClusterInfoRunner(module).run()


def main():
    run_module(FleetModule(**module_options()), run)


if __name__ == "__main__":
    main()
