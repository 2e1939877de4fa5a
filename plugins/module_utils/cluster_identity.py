# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which cluster a member is: recorded on its hub objects at join, compared on every run.

A cluster rebuilt under the same name, or an inventory host whose kubeconfig now reaches another cluster, must not
be taken for the member that joined: its agents would take over the other cluster's registration. The identity is
the UID of the cluster's ``kube-system`` Namespace (made once, when the cluster is created, and never deletable)
and the SHA-256 fingerprint of the API server CA the connection trusts. A different UID is another cluster; the same UID
behind another CA (an API server that only claims to be the member, or a CA rotation) and a UID that cannot be read
are refused too, until the user confirms the change (``replace_rebuilt``) or lets the UID be read.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import ssl

from ansible_collections.fleetops.registration.plugins.module_utils.errors import ParameterError
from ansible_collections.fleetops.registration.plugins.module_utils.findings import finding
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_client import NAMESPACE

UID_ANNOTATION = "fleetops.registration/cluster-uid"
CA_ANNOTATION = "fleetops.registration/cluster-ca-sha256"
KEYS = (("uid", UID_ANNOTATION), ("ca_sha256", CA_ANNOTATION))

UNREADABLE_HINT = ("Let the member's credential get the Namespace kube-system (extensions/rbac/member.yml grants it): the "
                   "collection tells clusters apart by that Namespace's UID, and does not change a member it cannot tell apart")
CA_CHANGED_HINT = ("If the member's API server CA was rotated on purpose, set replace_rebuilt: true once to record the new CA; "
                   "if not, check that the member's kubeconfig/context reaches the member's own API server (another server "
                   "can claim its kube-system UID, not its CA)")
REPLACE_HINT = ("If the cluster was rebuilt or replaced on purpose, set replace_rebuilt: true to re-register it (the old "
                "cluster's credentials are revoked first); if not, point the member's kubeconfig/context at the cluster that "
                "joined")


def ca_fingerprint(pem):
    """SHA-256 of the first certificate of ``pem`` (DER), as lowercase hex; None without one."""
    if not pem:
        return None
    text = pem.decode("utf-8") if isinstance(pem, bytes) else pem
    start = text.find("-----BEGIN CERTIFICATE-----")
    end = text.find("-----END CERTIFICATE-----", start)
    if start < 0 or end < 0:
        return None
    try:
        der = ssl.PEM_cert_to_DER_cert(text[start:end + len("-----END CERTIFICATE-----")])
    except ValueError:
        return None
    return hashlib.sha256(der).hexdigest()


def read_identity(member, ca_pem=None):
    """The member cluster's identity (one GET): ``{uid, ca_sha256}``."""
    namespace = member.get(NAMESPACE, "kube-system") or {}
    return {"uid": (namespace.get("metadata") or {}).get("uid"), "ca_sha256": ca_fingerprint(ca_pem)}


def recorded_identity(hub_object):
    """The identity the collection recorded on a hub object, or None when it recorded none."""
    annotations = ((hub_object or {}).get("metadata") or {}).get("annotations") or {}
    identity = dict((key, annotations.get(annotation) or None) for key, annotation in KEYS)
    return identity if identity["uid"] else None


def identity_annotations(identity):
    """The annotations that record ``identity`` (only what is known)."""
    return dict((annotation, (identity or {}).get(key)) for key, annotation in KEYS if (identity or {}).get(key))


def _short(value):
    return value[:12] if value else "none"


def replaced(recorded, live):
    """What says the cluster behind the member is not the one that joined (``[]`` when it is, or nothing was
    recorded): a different ``kube-system`` UID."""
    if not recorded or not (live or {}).get("uid") or recorded["uid"] == live["uid"]:
        return []
    changes = ["kube-system Namespace UID %s -> %s" % (recorded["uid"], live["uid"])]
    if recorded.get("ca_sha256") != live.get("ca_sha256"):
        changes.append("API server CA sha256 %s -> %s" % (_short(recorded.get("ca_sha256")), _short(live.get("ca_sha256"))))
    return changes


def ca_changed(recorded, live):
    """The change of CA behind the same ``kube-system`` UID (None when the CA is the recorded one, or the hub records
    none): the CA the connection trusts now is another, or none at all."""
    if not recorded or not recorded.get("ca_sha256") or (live or {}).get("uid") != recorded["uid"]:
        return None
    if live.get("ca_sha256") == recorded["ca_sha256"]:
        return None
    return "API server CA sha256 %s -> %s" % (_short(recorded["ca_sha256"]), _short(live.get("ca_sha256")))


def needs_recording(recorded, live):
    """Whether the hub object should record ``live`` (nothing recorded yet, or the same cluster's CA changed)."""
    if not (live or {}).get("uid"):
        return False
    return recorded is None or any(live.get(key) and recorded.get(key) != live.get(key) for key, _annotation in KEYS)


# The causes this module adds to a manager's findings, with their actions (both managers).
CAUSES = {"cluster_replaced": "reregister", "identity_unrecorded": "relabel"}


def judge(state, hub_object, live, replace_rebuilt=False):
    """``state`` (a manager's MemberState) with the member's identity taken into account.

    A member whose ``kube-system`` UID cannot be read is refused (ParameterError naming ``kubeconfig``): which cluster
    it is cannot be told. A different cluster behind the member's name is refused (naming ``replace_rebuilt``) unless
    ``replace_rebuilt``, which makes it a re-registration; so is the same UID behind another CA, which
    ``replace_rebuilt`` records. An identity not recorded yet makes a healthy member's hub object record it
    (``relabel``).
    """
    if not (live or {}).get("uid"):
        raise ParameterError("kubeconfig", "the UID of the kube-system Namespace of member %s cannot be read, so whether it is "
                             "the cluster that joined %s cannot be told" % (state.name, state.manager), hint=UNREADABLE_HINT)
    recorded = recorded_identity(hub_object)
    changed_ca = ca_changed(recorded, live)
    if changed_ca and not replace_rebuilt:
        raise ParameterError("replace_rebuilt", "is not set, and member %s presents another API server CA than the cluster that "
                             "joined %s, under the same kube-system Namespace UID (%s)" % (state.name, state.manager, changed_ca),
                             hint=CA_CHANGED_HINT)
    changes = replaced(recorded, live)
    if changes and not replace_rebuilt:
        raise ParameterError("replace_rebuilt", "is not set, and member %s now reaches another cluster than the one that joined "
                             "%s (%s)" % (state.name, state.manager, "; ".join(changes)), hint=REPLACE_HINT)
    if changes:
        replaced_by = finding("cluster_replaced", "the cluster was replaced (%s); replace_rebuilt re-registers it" % "; ".join(changes),
                              CAUSES["cluster_replaced"], "A re-run registers the new cluster under the member's name (replace_rebuilt).")
        return state.rejudged([replaced_by] + state.findings)
    # every other action's steps write the member object, which records the identity
    if state.action == "none" and needs_recording(recorded, live):
        unrecorded = finding("identity_unrecorded", "the hub does not record which cluster the member is (kube-system UID) yet",
                             CAUSES["identity_unrecorded"], "A re-run records it on the member object.")
        return state.rejudged(state.findings + [unrecorded])
    return state


def claimed_clusters(hub_objects):
    """``{uid: {member names}}`` of the clusters that hub objects (any manager's, ``{manager: {name: object}}``)
    record."""
    claims = {}
    for objects in hub_objects.values():
        for name, obj in objects.items():
            recorded = recorded_identity(obj)
            if recorded:
                claims.setdefault(recorded["uid"], set()).add(name)
    return claims


def shared_clusters(identities):
    """``{name: [other names]}`` of members whose connections reach the same cluster; ``identities``: ``{name: identity}``."""
    by_uid = {}
    for name, identity in identities.items():
        if (identity or {}).get("uid"):
            by_uid.setdefault(identity["uid"], []).append(name)
    shared = {}
    for names in by_uid.values():
        if len(names) > 1:
            for name in names:
                shared[name] = sorted(other for other in names if other != name)
    return shared
