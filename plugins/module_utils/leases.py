# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Leader-election Leases whose holder is gone, released so the agent that waits for them takes them at its next retry.

client-go makes a candidate wait a whole lease duration from its *own* first look at an unchanged Lease, however long
ago the holder stopped renewing, and neither Fleet's agent nor KubeFleet's member agent releases its Lease when it
stops. So an agent waits for a holder that is gone: Fleet's adopted agent for the bootstrap agent whose pod Fleet just
replaced (~30 s of every first join), KubeFleet's member agent for the agent a leave uninstalled (15 s of a re-join).

A holder counts as gone when every pod of the agent was created after it acquired the Lease: a process takes the
Lease after its pod exists, so none of those pods can hold it. Only the version that was read is deleted
(resourceVersion precondition), so a Lease renewed or taken meanwhile stays.

A Lease renewed within its duration says that its holder's process runs (``held``): member_info gives such an agent,
silent on the hub, longer to be heard from again (silence.py).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.fleetops.registration.plugins.module_utils.errors import ApiError, NotFoundError
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_client import Resource
from ansible_collections.fleetops.registration.plugins.module_utils.times import parse_time, utcnow

LEASE = Resource("coordination.k8s.io/v1", "Lease", "leases")
POD = Resource("v1", "Pod", "pods")
# Clock skew allowed between the node that wrote the Lease's acquireTime and the API server's creationTimestamps.
LEASE_SKEW_SECONDS = 3
# controller-runtime's leader election: a Lease not renewed for this long is taken over.
DEFAULT_LEASE_SECONDS = 15


def lease_holder_departed(lease, pods):
    """Whether the holder of ``lease`` is none of the agent's ``pods``: every one of them was created more than the skew
    after the holder acquired the Lease. False without pods (then nothing waits for the Lease)."""
    spec = (lease or {}).get("spec") or {}
    acquired = parse_time(spec.get("acquireTime"))
    if not spec.get("holderIdentity") or acquired is None or not pods:
        return False
    for pod in pods:
        created = parse_time(((pod or {}).get("metadata") or {}).get("creationTimestamp"))
        if created is None or (created - acquired).total_seconds() <= LEASE_SKEW_SECONDS:
            return False
    return True


def held(lease, now=None):
    """Whether the holder of ``lease`` renewed it within its lease duration (and the clocks' skew): its process runs,
    whatever else it may fail to do. False without a holder or a renewal time."""
    spec = (lease or {}).get("spec") or {}
    renewed = parse_time(spec.get("renewTime"))
    if not spec.get("holderIdentity") or renewed is None:
        return False
    duration = spec.get("leaseDurationSeconds") or DEFAULT_LEASE_SECONDS
    return ((now or utcnow()) - renewed).total_seconds() <= duration + LEASE_SKEW_SECONDS


def delete_read_version(kube, lease):
    """Delete exactly the version of ``lease`` that was read; False when it was renewed, taken or deleted meanwhile."""
    meta = lease["metadata"]
    options = {"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"resourceVersion": meta["resourceVersion"]}}
    try:
        kube.request("DELETE", LEASE.path(meta.get("namespace"), meta["name"]), body=options)
    except NotFoundError:
        return False
    except ApiError as exc:
        if exc.status == 409:
            return False
        raise
    return True


def release_departed(kube, lease_namespace, names, pods_namespace, pods_selector):
    """Delete the Leases ``names`` (in ``lease_namespace``) whose holder is none of the agent's pods (``pods_selector``
    in ``pods_namespace``). Returns the released holders' identities."""
    found = [kube.get(LEASE, name, lease_namespace) for name in names]
    found = [lease for lease in found if lease is not None and (lease.get("spec") or {}).get("holderIdentity")]
    if not found:
        return []
    pods = kube.list(POD, pods_namespace, label_selector=pods_selector)
    return [lease["spec"]["holderIdentity"] for lease in found
            if lease_holder_departed(lease, pods) and delete_read_version(kube, lease)]


def remove_orphaned(kube, lease_namespace, names, pods_namespace, pods_selector, dry_run=False):
    """After a leave: delete the Leases ``names`` when no pod of the agent is left to hold them (they would otherwise
    outlive the agent on the member, and a later agent would wait for their holder). Returns the deleted names."""
    if kube.list(POD, pods_namespace, label_selector=pods_selector):
        return []
    found = [lease for lease in (kube.get(LEASE, name, lease_namespace) for name in names) if lease is not None]
    if dry_run:
        return [lease["metadata"]["name"] for lease in found]
    return [lease["metadata"]["name"] for lease in found if delete_read_version(kube, lease)]
