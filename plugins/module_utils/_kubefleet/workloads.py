# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What KubeFleet placed on a member that left (its AppliedWorks), kept or removed (member_leave's workloads).

KubeFleet's member agent records each Work it applies as a cluster-scoped ``AppliedWork`` on the member and makes it
the owner (ownerReferences) of every object it applied; a member that leaves keeps both. Removing them: delete each
AppliedWork and wait for kube-controller-manager's garbage collector to delete what it owned (KubeFleet sets
``blockOwnerDeletion: false``, so a foreground deletion would not wait for them: the wait is on the objects).
Keeping them: the member-agent chart carries the AppliedWork CRD as a normal template, so uninstalling the agent deletes
every AppliedWork and, through the garbage collector, what each owned. Before the uninstall, each applied object loses
its AppliedWork owner reference, so it stays on the member, unmanaged, whatever becomes of the AppliedWork.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.fleetops.registration.plugins.module_utils.errors import ApiError
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_client import Resource

APPLIED_WORK = Resource("placement.kubernetes-fleet.io/v1beta1", "AppliedWork", "appliedworks", namespaced=False)
PLACEMENT = Resource("placement.kubernetes-fleet.io/v1beta1", "ClusterResourcePlacement", "clusterresourceplacements",
                     namespaced=False)
WORKLOADS = ("keep", "remove")
WORK_NAME = re.compile(r"^(.+?)-(?:work|\d+|configmap-[0-9a-f-]+)$")


def applied_resource(entry):
    """``(Resource, name, namespace, uid)`` of one ``status.appliedResources`` entry of an AppliedWork."""
    group, version = entry.get("group") or "", entry.get("version") or "v1"
    api_version = "%s/%s" % (group, version) if group else version
    namespace = entry.get("namespace") or None
    resource = Resource(api_version, entry.get("kind"), entry.get("resource"), namespaced=bool(namespace))
    return resource, entry.get("name"), namespace, entry.get("uid")


def describe(entry):
    """``Kind namespace/name`` (or ``Kind name``) of an applied resource."""
    where = "%s/%s" % (entry["namespace"], entry["name"]) if entry.get("namespace") else entry.get("name")
    return "%s %s" % (entry.get("kind"), where)


def read_applied_works(member):
    """``[{'name', 'work_namespace', 'resources': [entry, ...]}]`` of the member's AppliedWorks, sorted by name (one
    LIST; [] when the member has no AppliedWork CRD)."""
    try:
        items = member.list(APPLIED_WORK)
    except ApiError as exc:
        if exc.status == 404:
            return []
        raise
    works = [{"name": w["metadata"]["name"], "uid": w["metadata"].get("uid"),
              "work_namespace": (w.get("spec") or {}).get("workNamespace"),
              "resources": list((w.get("status") or {}).get("appliedResources") or [])} for w in items]
    return sorted(works, key=lambda w: w["name"])


def placement_of(work_name):
    """The ClusterResourcePlacement a Work (and its AppliedWork) was made for, from its name: KubeFleet v0.14.0 names
    them ``<placement>-work``, ``<placement>-<subindex>`` and ``<placement>-configmap-<uuid>`` (apis/placement/v1beta1
    ``FirstWorkNameFmt``, ``WorkNameWithSubindexFmt``, ``WorkNameWithConfigEnvelopeFmt``)."""
    match = WORK_NAME.match(work_name or "")
    return match.group(1) if match else work_name


def running(member):
    """What KubeFleet's agent runs on the member: ``[{'placement', 'record': 'AppliedWork <name>', 'objects'}]`` of its
    AppliedWorks (one LIST), sorted by placement."""
    rows = [{"placement": placement_of(work["name"]), "record": "AppliedWork %s" % work["name"],
             "objects": [describe(entry) for entry in work["resources"]]} for work in read_applied_works(member)]
    return sorted(rows, key=lambda row: (row["placement"], row["record"]))


def work_view(work):
    """What the leave reports of one AppliedWork: its name and the objects it applied."""
    return {"name": work["name"], "resources": [describe(entry) for entry in work["resources"]]}


def _owned_by(obj, uid):
    return any(ref.get("uid") == uid for ref in (obj.get("metadata") or {}).get("ownerReferences") or [])


def still_owned(member, works):
    """The applied objects still there and still owned by their (deleted) AppliedWork: what the garbage collector has
    not deleted yet. An object whose uid changed (made again) or that lost the owner reference is not waited for."""
    left = []
    for work in works:
        for entry in work["resources"]:
            resource, name, namespace, uid = applied_resource(entry)
            try:
                obj = member.get(resource, name, namespace)
            except ApiError as exc:
                if exc.status == 403:
                    continue  # the credential may not read it: the garbage collector deletes it all the same
                raise
            if obj is not None and (not uid or (obj.get("metadata") or {}).get("uid") == uid) and _owned_by(obj, work["uid"]):
                left.append(describe(entry))
    return left


def without_owner(obj, uid):
    """The owner references of ``obj`` without the one to ``uid`` (None when it has none to ``uid``)."""
    refs = (obj.get("metadata") or {}).get("ownerReferences") or []
    kept = [ref for ref in refs if ref.get("uid") != uid]
    return kept if len(kept) != len(refs) else None


def release_applied_objects(member, works, check_mode):
    """Take each AppliedWork's owner reference off the objects it applied (the same objects, made again, excepted), so
    they outlive the AppliedWork. Returns the objects that still have it because the credential may not patch them."""
    refused = []
    for work in works:
        for entry in work["resources"]:
            resource, name, namespace, uid = applied_resource(entry)
            obj = member.get(resource, name, namespace)
            if obj is None or (uid and (obj.get("metadata") or {}).get("uid") != uid):
                continue
            owners = without_owner(obj, work["uid"])
            if owners is None:
                continue
            patch = {"metadata": {"ownerReferences": owners, "resourceVersion": obj["metadata"].get("resourceVersion")}}
            try:
                member.patch(resource, name, patch, namespace, dry_run=check_mode)
            except ApiError as exc:
                if exc.status != 403:
                    raise
                refused.append(describe(entry))
    return refused


def remove_applied_works(member, waiter, works, check_mode):
    """Delete ``works`` (AppliedWorks) and wait until the garbage collector has deleted what they owned."""
    for work in works:
        member.delete(APPLIED_WORK, work["name"], dry_run=check_mode)
    if check_mode or not works:
        return
    waiter.until(lambda: still_owned(member, works) or None, "absent",
                 "the garbage collector to delete what the AppliedWorks %s applied" % ", ".join(w["name"] for w in works),
                 "kube-controller-manager's garbage collector deletes objects whose owner is gone; check that it runs, and "
                 "the finalizers of the objects still there")


def placement_rows(placements, member):
    """``[{name, applied, message}]`` of the ClusterResourcePlacements whose status names ``member``: applied when that
    status has ``Applied`` true."""
    found = []
    for crp in placements:
        for status in (crp.get("status") or {}).get("placementStatuses") or []:
            if status.get("clusterName") != member:
                continue
            cond = next((item for item in status.get("conditions") or [] if item.get("type") == "Applied"), {})
            applied = cond.get("status") == "True"
            found.append({"name": crp["metadata"]["name"], "applied": applied,
                          "message": None if applied else (cond.get("message") or cond.get("reason") or "not applied yet")})
    return sorted(found, key=lambda item: item["name"])
