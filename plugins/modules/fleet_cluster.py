#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
module: fleet_cluster
short_description: Predefine, import, relabel or remove a Rancher Fleet Cluster
version_added: 0.1.0
description:
  - Manages a C(Cluster) (C(fleet.cattle.io/v1alpha1)) on the Fleet manager (the hub).
  - B(Agent-initiated, predefined cluster) - a Cluster with a client ID and labels, which the agent installed with the same
    client ID (see M(fleetops.registration.fleet_agent)) claims when it registers. The client ID is given or generated
    with a cryptographically secure generator and returned; once set it is kept on later runs.
  - B(Manager-initiated, imported cluster) - with O(cluster_kubeconfig) or O(cluster_kubeconfig_content), the downstream
    cluster's kubeconfig is stored in a Secret under the key C(value) (the cluster-api format Fleet reads) and the Cluster's
    C(spec.kubeConfigSecret) names it; Fleet's controller then deploys the agent itself. The kubeconfig is reduced to one
    context and files it names (CA, client certificate and key, token file) are embedded, because Fleet reads it on the hub.
  - Labels are reconciled on every run, also after registration (Fleet's agent can only set them once), with the changes
    reported in RV(label_changes).
  - A change of the Cluster's agent fields (O(agent)) records the fields it replaces in the annotation
    C(fleetops.io/agent-fields-before), so M(fleetops.registration.fleet_agent) with O(fleetops.registration.fleet_agent#module:rollback_to_revision)
    can give them back to an agent Fleet manages (the playbook C(fleetops.registration.upgrade_agents) does).
  - C(state=absent) deletes the Cluster, the kubeconfig Secret the module created for it, and the ClusterRegistrations Fleet
    leaves behind for its client ID (fleet#1651).
author:
  - fleetops.registration contributors (@fleetops)
extends_documentation_fragment:
  - fleetops.registration.k8s_auth
  - fleetops.registration.wait
  - fleetops.registration.cluster_identity
  - fleetops.registration.agent_setting
  - fleetops.registration.controller_run
attributes:
  check_mode:
    support: full
    description:
      - Uses a server-side dry run for the Cluster and the Secret.
      - In a namespace that does not exist yet (an earlier task would create it, but ran in check mode too), the creation
        is predicted with a warning instead of failing.
  diff_mode:
    support: full
    description: Shows the Cluster and the kubeconfig Secret with its data hidden.
options:
  name:
    description:
      - Name of the Cluster (at most 63 characters; Fleet copies it into a label value).
      - Required unless O(clusters) is given.
    type: str
  clusters:
    description:
      - Many Clusters in one call, for a hub that keeps many (predefined before their agents come, or relabelled for
        placement). Each item is one Cluster; what an item does not give comes from the task's other options.
      - The namespace's Clusters are listed once for the whole batch, so an item costs only its own writes, where a
        task per cluster costs a module process and its reads each (see C(playbooks/predefine_clusters.yml)).
      - An item that fails stops the batch; the message names it and the items changed before it, and a re-run
        continues where it stopped.
      - Mutually exclusive with O(name), and with the options that must differ per cluster (O(client_id)) or that
        import a cluster (O(cluster_kubeconfig), O(cluster_kubeconfig_content), O(kubeconfig_secret),
        O(hub_api_server_url), O(hub_api_server_ca)).
    type: list
    elements: dict
    suboptions:
      name:
        description: Name of the Cluster.
        type: str
        required: true
      labels:
        description: Its labels (see O(labels)).
        type: dict
      client_id:
        description: Its client ID (see O(client_id)).
        type: str
      state:
        description: Whether it should exist; O(state) when not given.
        type: str
        choices: [present, absent]
  namespace:
    description:
      - Namespace of the Cluster on the hub, the one the registration token lives in for agent-initiated registration.
    type: str
    required: true
  state:
    description:
      - Whether the Cluster should exist.
    type: str
    choices: [present, absent]
    default: present
  client_id:
    description:
      - The client ID an agent registers with to claim this Cluster.
      - When not given, an existing Cluster's client ID is kept, and a new one gets 64 random hex digits (returned as
        RV(client_id)). Treat it as hard to guess - a known client ID lets another cluster impersonate this one.
      - Refused when another Cluster in the namespace already uses it.
    type: str
  labels:
    description:
      - Labels of the Cluster, which GitRepos and ClusterGroups select on. Values are turned into strings.
      - Not given means labels are left alone.
    type: dict
  labels_mode:
    description:
      - C(merge) adds and updates the given labels and keeps others; C(replace) makes the labels exactly O(labels), except
        labels under C(fleet.cattle.io/), C(management.cattle.io/) and C(provisioning.cattle.io/) that Fleet or Rancher set.
    type: str
    choices: [merge, replace]
    default: merge
  cluster_kubeconfig:
    description:
      - For manager-initiated registration, the downstream cluster's kubeconfig as a path or a mapping.
      - Credentials inside are masked in output. Mutually exclusive with O(cluster_kubeconfig_content).
    type: raw
  cluster_kubeconfig_content:
    description:
      - The downstream cluster's kubeconfig as text (for example from a vault or a credential). Never logged.
    type: str
  cluster_kubeconfig_context:
    description:
      - The context of the downstream kubeconfig to store; defaults to its current context.
    type: str
  kubeconfig_secret:
    description:
      - Name of the Secret in O(namespace) holding the kubeconfig under the key C(value).
      - With O(cluster_kubeconfig) or O(cluster_kubeconfig_content), the module writes it (default C(<name>-kubeconfig), or
        the name the Cluster already refers to) and removes it with the Cluster.
      - Without them, it must already exist (for example one cluster-api wrote); the module only refers to it and never
        deletes it.
    type: str
  hub_api_server_url:
    description:
      - For manager-initiated registration, the hub URL the deployed agent should use instead of the one in Fleet's
        configuration (stored as C(apiServerURL) in the kubeconfig Secret), for example when the agent reaches the hub
        through a proxy or another address.
      - The same option as in M(fleetops.registration.fleet_agent) and M(fleetops.registration.kubefleet_member_agent).
      - The alias O(agent_api_server_url) is deprecated and will be removed in release 1.0.0.
    type: str
    aliases: [agent_api_server_url]
  hub_api_server_ca:
    description:
      - PEM text (or the path of a PEM file) of the CA the agent should trust for O(hub_api_server_url).
      - The alias O(agent_api_server_ca) is deprecated and will be removed in release 1.0.0.
    type: str
    aliases: [agent_api_server_ca]
  wait:
    description:
      - With state C(present), wait until the agent has checked in (C(status.agent.lastSeen) is set).
        For a predefined cluster, that happens only after the agent is installed, so leave it off until then.
      - With state C(absent), wait until Fleet has finished deleting the Cluster and its cluster namespace on the hub
        (C(cluster-<namespace>-<name>-<hash>)), so that a Cluster created again under the same name can be granted.
    type: bool
    default: false
notes:
  - Fleet creates a Cluster's own namespace on the hub only when it handles a change of the Cluster, and not while an
    earlier Cluster's namespace of the same name is still being deleted; an agent of such a Cluster is never granted.
    With state C(present) this module therefore waits for a terminating cluster namespace to go (within
    O(wait_timeout), whatever O(wait) says) and then touches the Cluster (annotation
    C(fleetops.registration/cluster-namespace-repaired)) until Fleet has created the namespace again, with a warning
    saying so.
  - Fleet v0.16 also has C(spec.kubeConfigSecretNamespace), restricted to Fleet's own namespaces; this module keeps the
    Secret next to the Cluster.
seealso:
  - module: fleetops.registration.fleet_agent
  - module: fleetops.registration.fleet_cluster_info
'''

EXAMPLES = r'''
- name: Predefine a cluster for an agent to claim (agent-initiated)
  fleetops.registration.fleet_cluster:
    context: hub
    name: edge-01
    namespace: clusters
    labels:
      env: dev
      region: eu
  register: edge

- name: Install the agent with that client ID (the hub options have no environment fallback, so name the hub kubeconfig)
  fleetops.registration.fleet_agent:
    context: edge-01
    hub_kubeconfig: ~/.kube/config
    hub_context: hub
    token_name: new-token
    token_namespace: clusters
    client_id: "{{ edge.client_id }}"
    chart_ref: /srv/charts/fleet-agent

- name: Import a cluster from its kubeconfig (manager-initiated), waiting for the agent Fleet deploys
  fleetops.registration.fleet_cluster:
    context: hub
    name: prod-02
    namespace: clusters
    cluster_kubeconfig: /etc/kube/prod-02.yaml
    labels:
      env: prod
    wait: true
    wait_timeout: 600

- name: Predefine the clusters of an inventory group, with their labels, in one call (one list of the hub's Clusters)
  fleetops.registration.fleet_cluster:
    context: hub
    namespace: fleet-default
    clusters: "{{ groups['edge'] | fleetops.registration.cluster_specs(hostvars) }}"

- name: Make the labels exactly what the inventory says
  fleetops.registration.fleet_cluster:
    context: hub
    name: prod-02
    namespace: clusters
    labels: "{{ fleet_labels }}"
    labels_mode: replace

- name: Remove the cluster, its kubeconfig Secret and its registration leftovers
  fleetops.registration.fleet_cluster:
    context: hub
    name: prod-02
    namespace: clusters
    state: absent
    wait: true
'''

RETURN = r'''
name:
  description: Name of the Cluster.
  returned: without O(clusters)
  type: str
namespace:
  description: Namespace of the Cluster.
  returned: without O(clusters)
  type: str
client_id:
  description: The Cluster's client ID (given, kept or generated).
  returned: without O(clusters)
  type: str
  sample: 3f9c0b6e0a4d4c1e9a1f2e7d5b6c8a9e3f9c0b6e0a4d4c1e9a1f2e7d5b6c8a9e
client_id_generated:
  description: Whether this run generated the client ID.
  returned: when state is present, without O(clusters)
  type: bool
kubeconfig_secret:
  description: Name of the kubeconfig Secret the Cluster refers to (null for a predefined cluster).
  returned: without O(clusters)
  type: str
  sample: prod-02-kubeconfig
label_changes:
  description: Labels added, changed and removed by this run (the drift from what was asked).
  returned: when state is present, without O(clusters)
  type: dict
  sample: {"added": {"env": "prod"}, "changed": {}, "removed": []}
removed_registrations:
  description: Names of the ClusterRegistrations deleted with the Cluster.
  returned: when state is absent, without O(clusters)
  type: list
  elements: str
bundle_deployments:
  description:
    - The bundles Fleet had deployed to the Cluster (its BundleDeployments on the hub, the agent's own bundle left out)
      when O(state=absent) deleted it. Fleet's agent, while it still runs, uninstalls their releases on the member
      when they go; without an agent they stay on the member.
  returned: when state is absent, without O(clusters)
  type: list
  elements: str
  sample: [web]
removed_cluster_namespaces:
  description: The Cluster's namespaces on the hub whose deletion by Fleet this run waited for (with O(wait)).
  returned: when state is absent, without O(clusters)
  type: list
  elements: str
  sample: [cluster-fleet-default-edge-07-9e7c9bcadda5]
cluster_namespace_repair:
  description:
    - Null when the Cluster's namespace on the hub was fine. Otherwise what was found (C(terminating) or C(missing)),
      the namespace, and whether Fleet created it again (C(repaired); false in check mode).
  returned: when state is present, without O(clusters)
  type: dict
  sample: {"namespace": "cluster-fleet-default-edge-07-9e7c9bcadda5", "found": "terminating", "repaired": true}
agent_env_changes:
  description:
    - With O(agent.env) and O(cluster_kubeconfig) (a manager-initiated registration), what was done to the Secret on the
      member the agent's environment is read from, as sentences; empty when it was in place, and without a kubeconfig
      (M(fleetops.registration.fleet_agent) writes it then).
  returned: when state is present, without O(clusters)
  type: list
  elements: str
  sample: ["the agent's environment Secret cattle-fleet-system/fleetops-agent-env-3f2a9c1d0b7e was written"]
cluster:
  description: The Cluster as M(fleetops.registration.fleet_cluster_info) describes it; empty when absent.
  returned: without O(clusters)
  type: dict
clusters:
  description:
    - With O(clusters), one result per item, in order, each with the keys this module returns for one Cluster.
    - The top-level keys for one Cluster are then not returned; C(changed) says whether any item changed.
  returned: with O(clusters)
  type: list
  elements: dict
  sample: [{"name": "edge-001", "changed": true, "client_id": "3f9c...", "label_changes": {"added": {"site": "a"}, "changed": {}, "removed": []}}]
'''

from ansible_collections.fleetops.registration.plugins.module_utils import hub_endpoint
from ansible_collections.fleetops.registration.plugins.module_utils.argspec import AGENT, AUTH, CLUSTER_IDENTITY, WAIT, merge
from ansible_collections.fleetops.registration.plugins.module_utils.module import FleetModule, run_module
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.cluster import run_fleet_cluster


def argument_spec():
    """The module's own options (the shared ones come from argspec)."""
    return dict(
        name=dict(type="str"),
        clusters=dict(type="list", elements="dict", options=dict(
            name=dict(type="str", required=True),
            labels=dict(type="dict"),
            client_id=dict(type="str"),
            state=dict(type="str", choices=["present", "absent"]),
        )),
        namespace=dict(type="str", required=True),
        state=dict(type="str", choices=["present", "absent"], default="present"),
        client_id=dict(type="str"),
        labels=dict(type="dict"),
        labels_mode=dict(type="str", choices=["merge", "replace"], default="merge"),
        cluster_kubeconfig=dict(type="raw", no_log=False),
        cluster_kubeconfig_content=dict(type="str", no_log=True),
        cluster_kubeconfig_context=dict(type="str"),
        kubeconfig_secret=dict(type="str", no_log=False),
        **hub_endpoint.options(url_aliases=["agent_api_server_url"], ca_aliases=["agent_api_server_ca"]),
        wait=dict(type="bool", default=False),
    )


def module_options():
    """FleetModule's keyword arguments; the in-controller run (action plugin) validates the task's options with them too."""
    return dict(
        argument_spec=merge(AUTH, WAIT, CLUSTER_IDENTITY, AGENT, argument_spec()),
        # With clusters, what must differ per cluster (its client ID, an imported cluster's kubeconfig) is refused at the
        # task level: every item would get the same one.
        mutually_exclusive=[("cluster_kubeconfig", "cluster_kubeconfig_content"), ("name", "clusters"), ("clusters", "client_id"),
                            ("clusters", "cluster_kubeconfig"), ("clusters", "cluster_kubeconfig_content"),
                            ("clusters", "kubeconfig_secret"), ("clusters", hub_endpoint.URL), ("clusters", hub_endpoint.CA),
                            ("clusters", "cluster_identity")],
        required_one_of=[("name", "clusters")],
    )


def run(module):
    return run_fleet_cluster(module)


def main():
    run_module(FleetModule(**module_options()), run)


if __name__ == "__main__":
    main()
