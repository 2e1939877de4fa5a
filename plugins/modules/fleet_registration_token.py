#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
module: fleet_registration_token
short_description: Create, update or delete a Rancher Fleet ClusterRegistrationToken and obtain its values.yaml
version_added: 0.1.0
description:
  - Manages a C(ClusterRegistrationToken) (C(fleet.cattle.io/v1alpha1)) on the Fleet manager (the hub), the credential a
    downstream cluster's agent uses to register itself (agent-initiated registration).
  - Fleet writes the token's C(values.yaml) into a Secret of the same name some time after the token is created
    (type C(fleet.cattle.io/cluster-registration-values), key C(values)). The module waits for it (fleet#707), checks that
    it belongs to this token and not to an earlier token of the same name, and can write it to a local file.
  - The values (they hold the registration token) are returned only when O(return_values=true); otherwise they never
    appear in the result, a log or a diff.
  - When the module creates a token whose Secret never appears within O(wait_timeout), it deletes the token again, so a
    failed run leaves nothing half-made; when even that delete fails (the hub went away), the failure says so, reports
    C(changed=true) and names the token to delete (or leave to O(prune) in a later run).
  - Tokens the module creates are labelled C(app.kubernetes.io/managed-by=fleetops.registration) (and
    C(fleetops.registration/run=<run_id>) with O(run_id)), and annotated C(fleetops.registration/expires) with their
    expiry, so a later run can find and remove them with O(prune).
author:
  - fleetops.registration contributors (@fleetops)
extends_documentation_fragment:
  - fleetops.registration.k8s_auth
  - fleetops.registration.wait
  - fleetops.registration.controller_run
attributes:
  check_mode:
    support: full
    description:
      - Uses a server-side dry run; a token that does not exist yet has no values to return or write.
      - In a namespace that does not exist yet (an earlier task such as M(fleetops.registration.hub_prepare) would create it,
        but ran as a dry run), the creation is predicted with a warning instead of failing.
  diff_mode:
    support: full
    description: Shows the token object; its values are never part of the diff.
options:
  name:
    description:
      - Name of the token; Fleet names its values Secret the same.
      - At most 63 characters (Fleet copies the name into a label value).
      - Required unless O(prune=true), which may run alone (for example from C(member_leave) or C(hub_prepare)).
    type: str
  namespace:
    description:
      - Namespace of the token on the hub. Clusters that register with it are created in this namespace
        (for example C(fleet-default) or C(clusters)), where GitRepos and ClusterGroups target them.
    type: str
    required: true
  ttl:
    description:
      - How long the token is valid, as a Go duration (C(240h), C(1h30m), C(90s)); Fleet deletes it when it expires.
      - Required to create a token; without O(ttl) an existing token's TTL is left as it is.
      - A TTL that never expires (C(0), C(0s) or any other zero duration, which Fleet reads as no expiry) is refused. The
        token lets any cluster register until it expires, and a run killed as a whole (a cancelled AWX job) cannot revoke it.
      - Checked against the same rule the CRD enforces; days and weeks are not Go duration units.
      - The expiry counts from the token's creation, so changing O(ttl) later moves the expiry.
      - At most O(max_ttl).
    type: str
  max_ttl:
    description:
      - The longest O(ttl) accepted (a Go duration). A registration token lets any cluster register with the hub until
        it expires, and a run killed as a whole cannot revoke it, so a longer O(ttl) is refused unless this is raised.
      - Inventory variable C(fleetops_fleet_token_max_ttl) with the roles.
    type: str
    default: 24h
  state:
    description:
      - C(present) creates or updates the token; C(absent) deletes it (Fleet then deletes its Secret and ServiceAccount)
        and removes O(values_dest) if given.
    type: str
    choices: [present, absent]
    default: present
  return_values:
    description:
      - Return the values.yaml text (it contains the registration token) as RV(values_yaml).
      - "Set C(no_log: true) on the task when using this; the module warns otherwise."
    type: bool
    default: false
  values_dest:
    description:
      - Write the values.yaml to this path with mode C(0600) (created that way, never readable by others).
      - Reported as changed only when the content (or the file mode) differs.
    type: path
  run_id:
    description:
      - An identifier of the run that creates the token (for example the AWX job id), set as the label
        C(fleetops.registration/run) on a token this module creates. An existing token keeps its labels.
      - O(prune) removes the tokens of other runs.
    type: str
  cluster:
    description:
      - The member cluster the token is for, set as the label C(fleetops.registration/cluster) on a token this module
        creates.
      - With O(prune), only the tokens made for this cluster are considered, so a re-run of one member removes the
        tokens an earlier, failed run left for it, and never those of members other runs (or AWX job slices) are
        joining at the same time.
    type: str
  prune:
    description:
      - Also delete this collection's tokens in O(namespace) (those labelled
        C(app.kubernetes.io/managed-by=fleetops.registration)) that expired, or that another run left behind (a
        different C(fleetops.registration/run) label) and are older than O(prune_grace) seconds. O(name) itself is kept
        (with O(state=present)). Tokens not created by this collection are never touched.
      - Deleting a token lets Fleet delete its values Secret, ServiceAccount, token Secret, Role and RoleBinding.
      - A run that was killed mid-join leaves a live token behind; the next run with O(prune=true) removes it.
    type: bool
    default: false
  prune_grace:
    description:
      - Age in seconds a token of another run must reach before O(prune) deletes it.
      - Default - 0 when O(run_id) is given (every other run's token goes); without O(run_id) only expired tokens go unless
        O(prune_grace) is set. Set it longer than a run when several runs share a namespace at the same time.
    type: int
  wait:
    description:
      - Wait for Fleet's values Secret (state C(present)) or for the token to be gone (state C(absent)).
      - O(return_values) and O(values_dest) need the Secret, so they fail without O(wait) if it is not there yet.
notes:
  - Fleet v0.16 deletes tokens without a TTL at once when its controller runs with E(FLEET_REGISTRATION_TOKEN_TTL_REQUIRED=true);
    the module then fails naming O(ttl).
  - The token is reusable by any cluster until it expires. Prefer a short TTL, or one token per run that you delete once the
    clusters are registered (agents forget the token after registration).
  - A run killed as a whole (a cancelled AWX job) cannot delete its token; it stays valid until its TTL has passed (the
    C(member_join) role's default is three times its wait timeout, 15 minutes) or a later run removes it with O(prune).
seealso:
  - module: fleetops.registration.fleet_agent
  - module: fleetops.registration.fleet_cluster
'''

EXAMPLES = r'''
- name: A token valid for twelve hours, its values.yaml written for the agent install
  fleetops.registration.fleet_registration_token:
    kubeconfig: ~/.kube/hub.yaml
    name: new-token
    namespace: clusters
    ttl: 12h
    values_dest: /root/fleet/values.yaml

- name: A short-lived token whose values are passed on in memory
  fleetops.registration.fleet_registration_token:
    context: hub
    name: "join-{{ ansible_date_time.epoch }}"
    namespace: fleet-default
    ttl: 1h
    return_values: true
  register: token
  no_log: true

- name: A token labelled with the run that made it; tokens earlier runs left behind are removed
  fleetops.registration.fleet_registration_token:
    context: hub
    name: "join-{{ tower_job_id | default('manual') }}"
    namespace: clusters
    ttl: 1h
    run_id: "{{ tower_job_id | default('manual') }}"
    prune: true

- name: Only remove expired or left-behind tokens of this collection (for example after a leave)
  fleetops.registration.fleet_registration_token:
    context: hub
    namespace: clusters
    prune: true
    prune_grace: 7200

- name: Revoke the token once the clusters are registered
  fleetops.registration.fleet_registration_token:
    context: hub
    name: new-token
    namespace: clusters
    state: absent
    values_dest: /root/fleet/values.yaml
'''

RETURN = r'''
name:
  description: Name of the token (null when only pruning).
  returned: always
  type: str
  sample: new-token
namespace:
  description: Namespace of the token.
  returned: always
  type: str
  sample: clusters
ttl:
  description: The token's C(spec.ttl) as stored (null when it never expires).
  returned: always
  type: str
  sample: 240h
expires:
  description: When the token expires (C(status.expires)); null when it never does or Fleet has not processed it yet.
  returned: always
  type: str
  sample: "2026-12-01T10:00:00Z"
secret_name:
  description: Name of the Secret holding the values (C(status.secretName)); predicted in check mode.
  returned: always
  type: str
  sample: new-token
token:
  description: The ClusterRegistrationToken object (no secret in it), empty when absent.
  returned: always
  type: dict
values_yaml:
  description: The values.yaml text for the fleet-agent chart, including the registration token.
  returned: when return_values is true and the Secret exists
  type: str
values_dest:
  description: Absolute path of the values file.
  returned: when values_dest is given
  type: str
  sample: /root/fleet/values.yaml
values_dest_changed:
  description: Whether the values file was (or in check mode would be) written or removed.
  returned: when values_dest is given
  type: bool
run_id:
  description: The run label of the token (C(fleetops.registration/run)), null when it has none.
  returned: always
  type: str
  sample: "4711"
pruned:
  description: Tokens O(prune) deleted (or would delete in check mode), with the reason.
  returned: when prune is true
  type: list
  elements: dict
  sample: [{"name": "fleetops-join-x1", "reason": "left by run 4710"}]
'''

from ansible_collections.fleetops.registration.plugins.module_utils.argspec import AUTH, WAIT, merge
from ansible_collections.fleetops.registration.plugins.module_utils.module import FleetModule, run_module
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.token import TokenRunner


def argument_spec():
    """The module's own options (the shared ones come from argspec)."""
    return dict(
        name=dict(type="str"),
        namespace=dict(type="str", required=True),
        ttl=dict(type="str"),
        max_ttl=dict(type="str", default="24h"),
        state=dict(type="str", choices=["present", "absent"], default="present"),
        return_values=dict(type="bool", default=False),
        values_dest=dict(type="path"),
        run_id=dict(type="str"),
        cluster=dict(type="str"),
        prune=dict(type="bool", default=False),
        prune_grace=dict(type="int"),
    )


def module_options():
    """FleetModule's keyword arguments; the in-controller run (action plugin) validates the task's options with them too."""
    return dict(
        argument_spec=merge(AUTH, WAIT, argument_spec()),
        required_if=[("prune", False, ("name",))],
    )


def run(module):
    return TokenRunner(module).run()


def main():
    run_module(FleetModule(**module_options()), run)


if __name__ == "__main__":
    main()
