# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Moving a member's hub identity into the collection's own namespace (issue 31).

Earlier versions kept the KubeFleet member identities in KubeFleet's ``fleet-system``, where the hub credential then
needed Secrets - and so every ServiceAccount token of that namespace. A member whose MemberCluster names an identity
in another namespace than the one configured is moved on its next ordinary run, with the rotation's steps: a new
identity and token in the configured namespace, the MemberCluster pointed at it, the agent given the new token, and -
once the hub has a heartbeat made with it - the old identity deleted (which revokes the old token)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.fleetops.registration.plugins.module_utils.errors import ApiError
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_client import SERVICE_ACCOUNT
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.resources import LEGACY_IDENTITY_NAMESPACE, MANAGED_BY


def identity_move_reasons(hub_view, desired):
    """Why the member's identity moves (the ``rotate`` action): its MemberCluster names a ServiceAccount in another
    namespace than ``desired["identity_namespace"]`` (None: not asked, nothing moves)."""
    wanted = (desired or {}).get("identity_namespace")
    identity = (hub_view or {}).get("identity") or {}
    if not wanted or identity.get("kind") != "ServiceAccount" or not identity.get("namespace") or hub_view.get("leaving"):
        return []
    if identity["namespace"] == wanted:
        return []
    return ["the MemberCluster names the identity %s/%s, outside the hub namespace %s where the collection keeps member "
            "identities: it moves there (a new token, then the old identity is deleted)" % (
                identity["namespace"], identity.get("name"), wanted)]


def _managed(obj):
    labels = ((obj or {}).get("metadata") or {}).get("labels") or {}
    return all(labels.get(key) == value for key, value in MANAGED_BY.items())


def left_behind(member_cluster, service_account, namespace):
    """Whether ``service_account`` (read in ``namespace``) is an identity the member moved away from, or left with: the
    collection's, and not named by the MemberCluster (None: there is none, the member left)."""
    if service_account is None or not _managed(service_account):
        return False
    identity = ((member_cluster or {}).get("spec") or {}).get("identity") or {}
    return (identity.get("kind"), identity.get("namespace"), identity.get("name")) != (
        "ServiceAccount", namespace, service_account["metadata"]["name"])


def remove_moved_identity(kube, member_cluster, sa_name, namespace, check_mode=False):
    """Delete the ServiceAccount ``sa_name`` the member used in the earlier default namespace once the MemberCluster
    names another one, or is gone (the leave of a member that never moved). Its token Secrets go with it: the API
    server no longer accepts their tokens, and the token controller deletes them. Returns ``(removed, denied)``: what
    was removed (``namespace/name``) or None, and why a credential without the rights there (the least-privilege role
    grants nothing in KubeFleet's namespace) left it, or None."""
    if namespace == LEGACY_IDENTITY_NAMESPACE or namespace is None:
        return None, None
    try:
        account = kube.get(SERVICE_ACCOUNT, sa_name, LEGACY_IDENTITY_NAMESPACE)
        if not left_behind(member_cluster, account, LEGACY_IDENTITY_NAMESPACE):
            return None, None
        kube.delete(SERVICE_ACCOUNT, sa_name, LEGACY_IDENTITY_NAMESPACE, dry_run=check_mode)
    except ApiError as exc:
        if exc.status != 403:
            raise
        return None, ("the member's earlier identity %s/%s could not be checked or deleted with this hub credential (%s); "
                      "delete that ServiceAccount by hand once the member is healthy" % (LEGACY_IDENTITY_NAMESPACE, sa_name, exc.msg))
    return "%s/%s" % (LEGACY_IDENTITY_NAMESPACE, sa_name), None
