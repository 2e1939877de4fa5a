#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
module: fleet_status_info
short_description: Every member the fleet managers know, read from the hub, as rows and a table
version_added: 0.1.0
description:
  - Lists the members of each chosen fleet manager on the hub with one LIST per manager (Rancher Fleet C(Cluster)s in
    O(fleet_namespace), KubeFleet C(MemberCluster)s), and merges them by name with the inventory's members, so a member
    known to one manager only, or to none, shows up too.
  - Returns the rows and a fixed-width table for C(ansible.builtin.debug). The playbook C(cluster_status) uses it.
  - Changes nothing.
  - Read-only, so named C(*_info) as Ansible's module guidelines ask. Its former name C(fleetops.registration.fleet_status)
    still runs it, with a deprecation warning, until release 1.0.0 removes that name (C(meta/runtime.yml)).
author:
  - fleetops.registration contributors (@fleetops)
extends_documentation_fragment:
  - fleetops.registration.k8s_auth
  - fleetops.registration.read_only
  - fleetops.registration.controller_run
options:
  backends:
    description:
      - The fleet managers to list.
    type: list
    elements: str
    default: [kubefleet, rancher_fleet]
  fleet_namespace:
    description:
      - The namespace of the Rancher Fleet C(Cluster)s.
    type: str
    default: fleet-default
  label_selector:
    description:
      - A Kubernetes label selector the members must match, for example C(env=prod).
    type: str
  inventory_names:
    description:
      - Member names from the inventory; each gets a row, marked as in the inventory, even when no manager knows it.
    type: list
    elements: str
    default: []
  lock_namespace:
    description:
      - The hub namespace of the per-member locks (M(fleetops.registration.member_lock)). A member a run is changing now
        shows that run - its C(lock) in RV(rows) and a C(BEING CHANGED BY) column in RV(table). Without the right to list
        Leases there, no lock is shown.
    type: str
    default: fleetops-system
  stale_after:
    description:
      - Seconds after a member agent's last check-in (Rancher Fleet) or heartbeat (KubeFleet) after which its cell
        shows the state C(silent) and the cause C(silent) - the meaning O(fleetops.registration.member_info#module:stale_after) has.
      - Unset, each fleet manager's own rule applies - Rancher Fleet 3600 seconds after the last check-in, KubeFleet three
        C(heartbeatPeriodSeconds) after the last heartbeat. O(stale_after=0) turns Rancher Fleet's off.
    type: int
seealso:
  - module: fleetops.registration.member_info
'''

EXAMPLES = r'''
- name: Show both fleets
  fleetops.registration.fleet_status_info:
    kubeconfig: ~/.kube/hub.yaml
    inventory_names: "{{ groups['members'] }}"
  register: fleet

- name: Print the table
  ansible.builtin.debug:
    msg: "{{ fleet.table }}"
'''

RETURN = r'''
rows:
  description:
    - One row per member name, sorted - C(name), C(in_inventory), C(lock) (null, or the run changing the member now -
      C(holder), C(by), C(since), C(expires)), and per fleet manager its cell (null when that manager does not know the
      member) with C(state), C(healthy), C(last_contact_age_seconds), C(labels), C(identity) (the cluster the hub object
      records - C(uid) of its C(kube-system) Namespace and C(ca_sha256) - or null), C(diagnosis) (what the hub alone shows
      is wrong - a list of C(cause), C(evidence), C(fix), the root cause first; empty for a healthy member; see
      M(fleetops.registration.member_info) for the member's side too) and more.
    - A KubeFleet cell also has C(credential) - the member's current hub token as its Secret in the identity namespace
      records it (C(secret), C(issued), C(expires), null for a legacy token that never expires, and C(warning) once
      three quarters of its lifetime have passed without a renewal, which the module also warns about). It is read with
      one LIST of the collection's Secrets per identity namespace (their metadata only); without the right to list
      Secrets there it is absent.
  returned: always
  type: list
  elements: dict
  sample: [{"name": "member1", "in_inventory": true, "rancher_fleet": {"state": "checked-in", "healthy": true,
            "last_contact_age_seconds": 9, "labels": {"env": "lab"}}, "kubefleet": null}]
members:
  description: The rows by member name.
  returned: always
  type: dict
table:
  description:
    - The rows as fixed-width lines, a header first. The column C(CLUSTER) shows the start of the C(kube-system) UID
      the member's hub objects record, or C(DIFFERS) when the fleet managers record different clusters; C(CAUSE) the
      first cause in a cell's C(diagnosis).
  returned: always
  type: list
  elements: str
'''

from ansible_collections.fleetops.registration.plugins.module_utils.fleet_status import FleetStatus
from ansible_collections.fleetops.registration.plugins.module_utils.argspec import AUTH, merge
from ansible_collections.fleetops.registration.plugins.module_utils.module import FleetModule, run_module
from ansible_collections.fleetops.registration.plugins.module_utils import registry
from ansible_collections.fleetops.registration.plugins.module_utils.member_lock import DEFAULT_NAMESPACE as LOCK_NAMESPACE


def argument_spec():
    """The module's own options (the shared ones come from argspec)."""
    return dict(
        backends=dict(type="list", elements="str", default=list(registry.NAMES)),
        fleet_namespace=dict(type="str", default="fleet-default"),
        label_selector=dict(type="str"),
        inventory_names=dict(type="list", elements="str", default=[]),
        lock_namespace=dict(type="str", default=LOCK_NAMESPACE),
        stale_after=dict(type="int"),
    )


def module_options():
    """FleetModule's keyword arguments; the in-controller run (action plugin) validates the task's options with them too."""
    return dict(argument_spec=merge(AUTH, argument_spec()))


def run(module):
    return FleetStatus(module).run()


def main():
    run_module(FleetModule(**module_options()), run)


if __name__ == "__main__":
    main()
