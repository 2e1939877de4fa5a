#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
module: kubefleet_member_identity
short_description: Manage the hub identity a KubeFleet member agent authenticates with
version_added: 0.1.0
description:
  - Creates, on the KubeFleet hub, the ServiceAccount a member cluster's agent uses (C(<name>-hub-cluster-access) in
    C(fleetops-system) by default) and a token for it that expires after O(token_lifetime) (30 days by default), requested
    with the TokenRequest API, bound to the Secret that holds it (deleting that Secret revokes the token) and stored in
    it. A re-run issues the next token once half the lifetime has passed (see O(token_lifetime)).
  - With O(token_lifetime=never) it makes a legacy C(kubernetes.io/service-account-token) Secret instead and waits until
    kube-controller-manager has written the (non-expiring) token into it.
  - Only a ServiceAccount and token Secrets this collection created (label C(app.kubernetes.io/managed-by=fleetops.registration))
    are used; an existing one without that label is refused, so no token is ever issued for a ServiceAccount that
    merely has the same name (unless O(create_service_account=false) says the ServiceAccount is managed elsewhere).
  - KubeFleet's C(join.sh) reads a legacy token right after creating the Secret, often before it is filled, and the
    member agent then crashes on a missing token file (kubefleet#296). This module waits for the token instead.
  - A re-run keeps the existing ServiceAccount and token; it never deletes and recreates them (C(join.sh) does, which
    invalidates the token every member already uses).
  - If the token never appears, what this run created is removed again, so a failed run leaves nothing half-made.
  - The hub agent grants the identity its permissions (a Role in C(fleet-member-<name>)) once the MemberCluster
    exists; see M(fleetops.registration.kubefleet_member_cluster).
  - Tested with KubeFleet's v1beta1 API as shipped in go.goms.io/fleet v0.14.0 (Azure/fleet).
author:
  - fleetops.registration contributors (@fleetops)
extends_documentation_fragment:
  - fleetops.registration.k8s_auth
  - fleetops.registration.wait
  - fleetops.registration.controller_run
attributes:
  check_mode:
    description: Creates and deletes are server-side dry runs; the token is not waited for. With O(state=absent) it does
      not warn that a MemberCluster still names the identity (in a check run of the leave that MemberCluster's removal was
      only a dry run); RV(member_cluster_names_identity) reports it.
    support: full
  diff_mode:
    description: Shows the ServiceAccount and Secret before and after, with the Secret's data hidden.
    support: full
options:
  name:
    description:
      - Name of the member cluster the identity is for. Used to derive the default names.
    type: str
    required: true
    aliases: [member_name]
  namespace:
    description:
      - Hub namespace of the ServiceAccount and its token Secret. It must exist. The default is the collection's own
        namespace, which M(fleetops.registration.hub_prepare) creates and where C(extensions/rbac/hub.yml) grants the hub
        credential ServiceAccounts and Secrets; earlier versions used C(fleet-system), KubeFleet's own namespace.
    type: str
    default: fleetops-system
  service_account_name:
    description:
      - Name of the ServiceAccount. Defaults to C(<name>-hub-cluster-access), as in KubeFleet's documentation.
    type: str
  token_secret_name:
    description:
      - Name of the identity's first token Secret. Defaults to C(<service_account_name>-token).
      - A rotation (O(rotate), O(token_max_age)) issues the next token in C(<token_secret_name>-2), the one after that
        in C(<token_secret_name>) again, so every name is known in advance and at most two tokens are valid at once. The
        newest of the two is the current token, the one RV(token_secret) names and
        M(fleetops.registration.kubefleet_member_agent) gives the member.
    type: str
  rotate:
    description:
      - Issue a new token now, in the free token Secret name, unless a rotation is already under way (both Secrets
        exist - the newer one is then the new token, and no third is made). The older token stays valid until
        O(revoke_previous) removes it, so the member agent keeps working while it switches.
    type: bool
    default: false
  token_max_age:
    description:
      - Issue a new token as O(rotate) does when the current one is older than this, a Go duration such as C(720h).
        Unset, a token is kept until O(token_lifetime) renews it.
    type: str
  token_lifetime:
    description:
      - How long a new token lives, a Go duration of at least C(10m) (the API server's minimum). The API server may grant
        less (C(--service-account-max-token-expiration)); the expiry is read from the token, never assumed.
      - A new token is issued, as O(rotate) does, once half of the current token's lifetime has passed, when the current
        token outlives a lifetime made shorter, and when it is a legacy non-expiring token (its migration). Then
        O(revoke_previous) revokes the old one. M(fleetops.registration.member_info) gives the member the action
        C(rotate) by the same rule and warns once three quarters have passed.
      - V(never) makes a legacy non-expiring token (C(kubernetes.io/service-account-token) Secret), valid until its Secret
        or the ServiceAccount is deleted, and only with O(allow_non_expiring_token). Inventory variable
        C(fleetops_kubefleet_token_lifetime).
    type: str
    default: 720h
  allow_non_expiring_token:
    description:
      - Acknowledge O(token_lifetime=never). A copy of a token that does not expire acts as the member on the hub until
        its Secret is deleted, so V(never) is refused unless this is V(true). Inventory variable
        C(fleetops_allow_non_expiring_token).
    type: bool
    default: false
  revoke_previous:
    description:
      - Delete the token Secrets older than the current one, which revokes their tokens (the hub answers 401 to them
        within seconds). Use it once the member agent runs with the current token (the role does, after the agent
        step has seen a heartbeat made with it); RV(revoked) names what was removed.
    type: bool
    default: false
  create_service_account:
    description:
      - Whether to create the ServiceAccount when it is missing (and remove it with O(state=absent)).
      - With V(true) an existing ServiceAccount of that name must carry the collection's label
        C(app.kubernetes.io/managed-by=fleetops.registration); one without it is refused (no token is issued for it).
      - With V(false) the ServiceAccount is managed elsewhere, must exist, and is used whatever its labels; if it does not
        exist the task fails, leaving nothing behind.
    type: bool
    default: true
  return_token:
    description:
      - Whether to return the token in RV(token). Set C(no_log) on the task, because a module cannot return a value
        and have Ansible mask it at the same time.
      - Without it the token never appears in the result, the diff or an error message.
      - Usually unnecessary, since M(fleetops.registration.kubefleet_member_agent) reads the token from the hub itself.
    type: bool
    default: false
  state:
    description:
      - V(present) ensures the ServiceAccount and a filled token Secret.
      - V(absent) deletes the token Secrets and the ServiceAccount (the latter only if O(create_service_account=true)).
        Remove the MemberCluster first; its member agent loses access to the hub.
    type: str
    choices: [present, absent]
    default: present
  wait:
    description:
      - Whether to wait until kube-controller-manager has written a legacy token into its Secret (a time-bound token
        is stored by this module right away).
notes:
  - The token expires after O(token_lifetime). A re-run renews it after half of that, O(rotate) or O(token_max_age) at
    any time; then O(revoke_previous) once the member uses the new one (the role C(member_join) does it all on an
    ordinary run). If no run renews it, the member agent loses the hub when it expires; a plain re-run then registers the
    member again with a new token.
  - Creating a token needs C(create) on C(serviceaccounts/token) in O(namespace) on the hub.
seealso:
  - module: fleetops.registration.kubefleet_member_cluster
  - module: fleetops.registration.kubefleet_member_agent
'''

EXAMPLES = r'''
- name: Create the hub identity of member cluster east-1
  fleetops.registration.kubefleet_member_identity:
    kubeconfig: ~/.kube/hub.yaml
    name: east-1

- name: Create it and hand the token to a later task (masked in output)
  fleetops.registration.kubefleet_member_identity:
    context: hub
    name: east-1
    return_token: true
  register: identity
  no_log: true

- name: Create an identity whose tokens live 7 days (a re-run after 3.5 days issues the next one)
  fleetops.registration.kubefleet_member_identity:
    context: hub
    name: east-1
    token_lifetime: 168h

- name: Issue a new token when the current one is older than 30 days (the old one stays valid)
  fleetops.registration.kubefleet_member_identity:
    context: hub
    name: east-1
    token_max_age: 720h

- name: Once the member agent runs with the new token, revoke the old one
  fleetops.registration.kubefleet_member_identity:
    context: hub
    name: east-1
    revoke_previous: true

- name: Remove the identity after the member has left
  fleetops.registration.kubefleet_member_identity:
    context: hub
    name: east-1
    state: absent
'''

RETURN = r'''
identity:
  description: The rbac subject to name in the MemberCluster's C(spec.identity).
  returned: always
  type: dict
  sample: {kind: ServiceAccount, name: east-1-hub-cluster-access, namespace: fleetops-system, apiGroup: ""}
service_account:
  description: The ServiceAccount. In check mode, when it does not exist yet, C(uid) is the one the server-side dry run made up and is not kept.
  returned: always
  type: dict
  contains:
    name:
      description: Its name.
      type: str
    namespace:
      description: Its namespace.
      type: str
    uid:
      description: Its UID; it stays the same across re-runs.
      type: str
  sample: {name: east-1-hub-cluster-access, namespace: fleetops-system, uid: 6f0c1c0e-8d0e-4bb4-9d8e-1b5c2f0e2a11}
token_secret:
  description: The current token Secret (the newer one while a rotation is under way).
  returned: always
  type: dict
  contains:
    name:
      description: Its name.
      type: str
    namespace:
      description: Its namespace.
      type: str
    token_ready:
      description: Whether the Secret holds the token.
      type: bool
    issued:
      description: When the token was issued (the Secret's creation time); null with O(state=absent).
      type: str
    expires:
      description: When the token expires (its C(exp) claim); null for a legacy token that never does, and with O(state=absent).
      type: str
  sample: {name: east-1-hub-cluster-access-token, namespace: fleetops-system, token_ready: true, issued: "2026-11-24T17:00:00Z",
           expires: "2026-12-24T17:00:00Z"}
rotated:
  description: Whether this run issued a new token next to an existing one.
  returned: always
  type: bool
revoked:
  description: The token Secrets this run deleted (with O(revoke_previous), the older ones; with O(state=absent), all).
  returned: always
  type: list
  elements: str
previous:
  description: The older token Secrets that are still valid after this run (a rotation under way); the role revokes them
    with O(revoke_previous) once the member agent sends a heartbeat made with the current token.
  returned: always
  type: list
  elements: str
member_cluster_names_identity:
  description: Whether a MemberCluster that is not leaving still names this identity when it is removed (its member agent
    then loses access to the hub). A real run also warns; check mode does not, because the MemberCluster's removal an
    earlier task of the same check run predicted was only a dry run.
  returned: with O(state=absent)
  type: bool
token:
  description: The ServiceAccount token (null while not yet filled). Not masked; use C(no_log) on the task.
  returned: when O(return_token=true)
  type: str
diff:
  description: The ServiceAccount and Secret before and after, Secret data hidden.
  returned: in diff mode
  type: dict
'''

from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.identity import MemberIdentity
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.resources import IDENTITY_NAMESPACE
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet import tokens
from ansible_collections.fleetops.registration.plugins.module_utils.argspec import AUTH, WAIT, merge
from ansible_collections.fleetops.registration.plugins.module_utils.module import FleetModule, run_module


def argument_spec():
    return dict(
        name=dict(type="str", required=True, aliases=["member_name"]),
        namespace=dict(type="str", default=IDENTITY_NAMESPACE),
        service_account_name=dict(type="str"),
        token_secret_name=dict(type="str", no_log=False),
        rotate=dict(type="bool", default=False),
        token_max_age=dict(type="str", no_log=False),
        token_lifetime=dict(type="str", default=tokens.DEFAULT_LIFETIME, no_log=False),
        allow_non_expiring_token=dict(type="bool", default=False),
        revoke_previous=dict(type="bool", default=False),
        create_service_account=dict(type="bool", default=True),
        return_token=dict(type="bool", default=False),
        state=dict(type="str", choices=["present", "absent"], default="present"),
    )


def module_options():
    """FleetModule's keyword arguments; the in-controller run (action plugin) validates the task's options with them too."""
    return dict(argument_spec=merge(AUTH, WAIT, argument_spec()))


def run(module):
    return MemberIdentity(module).run()


def main():
    run_module(FleetModule(**module_options()), run)


if __name__ == "__main__":
    main()
