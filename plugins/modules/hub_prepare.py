#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
module: hub_prepare
short_description: Check that a hub serves the Rancher Fleet and KubeFleet APIs and create the namespaces registration uses
version_added: 0.1.0
description:
  - Preflight for the hub (the fleet manager) - reads the API resource lists of C(fleet.cattle.io/v1alpha1) (Rancher
    Fleet - C(clusters), C(clusterregistrationtokens), C(clusterregistrations)) and C(cluster.kubernetes-fleet.io/v1beta1)
    (KubeFleet - C(memberclusters), C(internalmemberclusters)) for the backends in O(backends), and fails before
    changing anything when one is not served, naming each missing API and how to get it served.
  - Reports whether each backend's controller Deployment runs where its charts put it (C(cattle-fleet-system/fleet-controller),
    C(fleet-system/hub-agent)) and warns when it does not; objects created without a running controller are never
    processed (no token values, no C(ReadyToJoin)).
  - Creates the namespaces in O(namespaces) that do not exist (for example C(fleet-default), where Rancher Fleet clusters
    register, and C(fleetops-system) for KubeFleet member identities) and the collection's own namespace O(hub_namespace).
    Existing namespaces are left as they are.
  - Creating a namespace needs C(create) on C(namespaces), which the least-privilege hub role does not grant.
    C(extensions/rbac/hub.yml) creates the default namespaces, and the opt-in ClusterRole
    C(fleetops-registration-hub-optin) grants it (see C(docs/rbac.md)). Without it a missing namespace fails, naming
    that role.
author:
  - fleetops.registration contributors (@fleetops)
extends_documentation_fragment:
  - fleetops.registration.k8s_auth
  - fleetops.registration.controller_run
attributes:
  check_mode:
    support: full
    description: Namespaces are created with a server-side dry run.
  diff_mode:
    support: full
    description: Shows the namespaces of O(namespaces) that exist before and after.
options:
  backends:
    description:
      - The fleet managers whose APIs the hub must serve.
    type: list
    elements: str
    choices: [kubefleet, rancher_fleet]
    default: [kubefleet, rancher_fleet]
  detect_backends:
    description:
      - Also prepare every other fleet manager whose API the hub serves (RV(backends) says which); the task fails only
        when the hub serves none. For a hub that runs one fleet manager, with members that do not say which.
    type: bool
    default: false
  backend_namespaces:
    description:
      - Per fleet manager, the namespace where it registers members (for example C(fleet-default) for Rancher Fleet
        clusters, C(fleetops-system) for KubeFleet member identities); created when missing, for the managers in
        O(backends) only.
    type: dict
    default: {}
  hub_namespace:
    description:
      - The collection's own namespace on the hub, created when missing - where the per-member locks
        (M(fleetops.registration.member_lock)) and, by default, the KubeFleet member identities live.
    type: str
    default: fleetops-system
  namespaces:
    description:
      - Further namespaces to create on the hub when missing.
    type: list
    elements: str
    default: []
  tidy:
    description:
      - Remove what the collection left on the hub that can no longer serve, in each manager's namespace of
        O(backend_namespaces); for Rancher Fleet, the collection's registration tokens whose runs are over - expired
        ones, and those made under a member lock (M(fleetops.registration.member_lock)) that their run no longer
        holds (released, taken by another run, expired, or held by a process gone on this controller). A token whose
        run may still be running, or whose lock cannot be read, stays.
      - And, in O(hub_namespace), the member locks no run holds any more - expired ones, and those whose holder's
        process is gone on this controller (a run that was killed) - so that a status shows, and a run from another
        controller waits for, only a run that may still be going. A lock another run takes over meanwhile stays.
        Other objects are never touched.
      - The M(fleetops.registration.fleet_registration_token) option O(fleetops.registration.fleet_registration_token#module:prune)
        does the same for one member's tokens during a join.
    type: bool
    default: false
  check_controllers:
    description:
      - Whether to look for the backends' controller Deployments and warn when one is missing or not available.
    type: bool
    default: true
seealso:
  - module: fleetops.registration.fleet_registration_token
  - module: fleetops.registration.kubefleet_member_identity
'''

EXAMPLES = r'''
- name: Preflight the hub and create the registration namespaces
  fleetops.registration.hub_prepare:
    kubeconfig: ~/.kube/hub.yaml
    backends: [rancher_fleet, kubefleet]
    backend_namespaces: {rancher_fleet: fleet-default, kubefleet: fleetops-system}

- name: A hub that only runs KubeFleet
  fleetops.registration.hub_prepare:
    context: hub
    backends: [kubefleet]

- name: Whichever fleet managers the hub runs
  fleetops.registration.hub_prepare:
    context: hub
    backends: []
    detect_backends: true
    backend_namespaces: {rancher_fleet: fleet-default, kubefleet: fleetops-system}
  register: hub
'''

RETURN = r'''
apis:
  description: Per backend, its group version, whether everything the collection uses is served, and what is missing.
  returned: always
  type: dict
  sample: {"rancher_fleet": {"group_version": "fleet.cattle.io/v1alpha1", "served": true, "missing": []}}
controllers:
  description:
    - Per backend, the controller Deployment looked for and whether it was found and available (null when not allowed to read it).
    - Empty when O(check_controllers=false).
  returned: always
  type: dict
  sample: {"kubefleet": {"namespace": "fleet-system", "deployment": "hub-agent", "found": true, "available": true}}
backends:
  description: The fleet managers prepared - O(backends), and with O(detect_backends) those the hub serves too.
  returned: success
  type: list
  elements: str
  sample: [rancher_fleet]
namespaces:
  description: The namespaces of O(backend_namespaces) for the chosen managers, then those of O(namespaces).
  returned: always
  type: list
  elements: str
summary:
  description: What the job's statistics keep of the hub - APIs served and controllers available per manager, namespaces created.
  returned: always
  type: dict
  sample: {"apis_served": {"kubefleet": true}, "controllers_available": {"kubefleet": true}, "created_namespaces": []}
tidied:
  description: With O(tidy), per fleet manager, what was removed (or would be, in check mode), each with its reason.
  returned: always
  type: dict
  sample: {"rancher_fleet": [{"name": "fleetops-join-3f2a9c", "reason": "expired at 2026-11-23T09:00:00Z"}], "kubefleet": []}
tidied_locks:
  description:
    - With O(tidy), the member locks removed from O(hub_namespace) (or that would be, in check mode), each with the
      member, the run that held it (its id, and who ran it) and the reason. Each is also a warning, as a run ended
      without releasing the member.
  returned: always
  type: list
  elements: dict
  sample: [{"name": "fleetops-member-edge-1", "member": "edge-1", "holder": "3f2a9c0d1e", "by": "AWX job 42",
            "reason": "its run (process 4242 on awx-1) no longer runs"}]
created_namespaces:
  description: The namespaces this run created (or would create, in check mode).
  returned: always
  type: list
  elements: str
  sample: [fleet-default]
'''

from ansible_collections.fleetops.registration.plugins.module_utils import registry
from ansible_collections.fleetops.registration.plugins.module_utils.argspec import AUTH, merge
from ansible_collections.fleetops.registration.plugins.module_utils.hub import HubPrepare
from ansible_collections.fleetops.registration.plugins.module_utils.labels import HUB_NAMESPACE
from ansible_collections.fleetops.registration.plugins.module_utils.module import FleetModule, run_module


def argument_spec():
    """The module's own options (the shared ones come from argspec)."""
    return dict(
        backends=dict(type="list", elements="str", choices=list(registry.NAMES), default=list(registry.NAMES)),
        detect_backends=dict(type="bool", default=False),
        backend_namespaces=dict(type="dict", default={}),
        namespaces=dict(type="list", elements="str", default=[]),
        hub_namespace=dict(type="str", default=HUB_NAMESPACE),
        check_controllers=dict(type="bool", default=True),
        tidy=dict(type="bool", default=False),
    )


def module_options():
    """FleetModule's keyword arguments; the in-controller run (action plugin) validates the task's options with them too."""
    return dict(argument_spec=merge(AUTH, argument_spec()))


def run(module):
    return HubPrepare(module).run()


def main():
    run_module(FleetModule(**module_options()), run)


if __name__ == "__main__":
    main()
