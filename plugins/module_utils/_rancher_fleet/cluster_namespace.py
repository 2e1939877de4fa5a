# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A Cluster's own namespace on the hub ("cluster namespace"), which Fleet must have before it can grant an agent.

Facts from Fleet v0.16.0 (agentmanagement's cluster controller, the cleanup controller):

- For each Cluster, Fleet creates a namespace named after the Cluster's namespace and name (``status.namespace``,
  e.g. ``cluster-fleet-default-member1-9e7c9bcadda5``), labelled ``fleet.cattle.io/managed=true`` and annotated with
  the Cluster's namespace and name. The agent's registration is granted there (its ServiceAccount and credential
  Secret), and its BundleDeployments live there.
- Fleet creates it only while handling a change of the Cluster, and only when its informer cache does not hold a
  namespace of that name. After a Cluster is deleted, the cleanup controller deletes the namespace, asynchronously.
- So a Cluster created again under the same name while the old namespace is still terminating is handled once, finds
  the terminating namespace, and creates nothing; when the namespace is gone, nothing re-creates it. The agent's
  registration then fails forever with 'namespaces "cluster-..." not found' (compare fleet#478).

A leave therefore waits until the namespace is gone, and a join that finds it terminating or missing waits for it to
go and then touches the Cluster (an annotation) so that Fleet handles it again and creates the namespace.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.fleetops.registration.plugins.module_utils.errors import ApiError, FleetOpsError
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_client import NAMESPACE
from ansible_collections.fleetops.registration.plugins.module_utils.times import format_time, utcnow
from ansible_collections.fleetops.registration.plugins.module_utils.waiter import Nudge
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.resources import CLUSTER

MANAGED_SELECTOR = "fleet.cattle.io/managed=true"
CLUSTER_NAMESPACE_ANNOTATION = "fleet.cattle.io/cluster-namespace"
CLUSTER_ANNOTATION = "fleet.cattle.io/cluster"
# Set on a Cluster to make Fleet handle it again; the value is when (it changes on every repair).
REPAIR_ANNOTATION = "fleetops.registration/cluster-namespace-repaired"
# A repair waits this long for Fleet to create the namespace before it touches the Cluster again (its informer may
# still have held the old namespace when it handled the first touch).
RETOUCH_SECONDS = 10
TERMINATING = "terminating"
MISSING = "missing"


def _meta(obj):
    return (obj or {}).get("metadata") or {}


def belongs_to(namespace_obj, cluster_namespace, cluster_name):
    """Whether a Fleet-managed namespace is the cluster namespace of Cluster ``cluster_namespace/cluster_name``."""
    annotations = _meta(namespace_obj).get("annotations") or {}
    return (annotations.get(CLUSTER_NAMESPACE_ANNOTATION) == cluster_namespace
            and annotations.get(CLUSTER_ANNOTATION) == cluster_name)


def namespaces_of(namespaces, cluster_namespace, cluster_name, expected=None):
    """The namespaces among ``namespaces`` that belong to the Cluster (by Fleet's annotations or by the name
    ``expected``, its ``status.namespace``)."""
    return [ns for ns in namespaces
            if belongs_to(ns, cluster_namespace, cluster_name) or (expected and _meta(ns).get("name") == expected)]


class NamespaceIndex:
    """``namespaces_of`` for many Clusters from one list: Fleet's namespaces by the Cluster they belong to and by name,
    so a batch of N Clusters costs O(N), not N scans of every namespace (read-only: it holds the listed objects)."""

    def __init__(self, namespaces):
        self._by_cluster = {}
        self._by_name = {}
        for position, ns in enumerate(namespaces):
            annotations = _meta(ns).get("annotations") or {}
            owner = (annotations.get(CLUSTER_NAMESPACE_ANNOTATION), annotations.get(CLUSTER_ANNOTATION))
            self._by_cluster.setdefault(owner, []).append((position, ns))
            self._by_name.setdefault(_meta(ns).get("name"), []).append((position, ns))

    def of(self, cluster_namespace, cluster_name, expected=None):
        """What ``namespaces_of(namespaces, cluster_namespace, cluster_name, expected)`` returns, in the same order."""
        found = dict(self._by_cluster.get((cluster_namespace, cluster_name), ())) if cluster_namespace and cluster_name else {}
        if expected:
            found.update(self._by_name.get(expected, ()))
        return [found[position] for position in sorted(found)]


def namespace_index(kube):
    """A ``NamespaceIndex`` of every namespace Fleet manages: built once per listing by a batch's ``ListedReads``
    (``derived``), else from one LIST; None when the credential may not list namespaces."""
    derived = getattr(kube, "derived", None)
    index = derived(NAMESPACE, None, MANAGED_SELECTOR, NamespaceIndex) if derived is not None else None
    if index is not None:
        return index
    namespaces = readable_fleet_namespaces(kube)
    return None if namespaces is None else NamespaceIndex(namespaces)


def expected_namespace(cluster):
    """The cluster namespace Fleet assigned to ``cluster`` (None until Fleet has handled it)."""
    return ((cluster or {}).get("status") or {}).get("namespace") or None


def problem(cluster, namespaces):
    """Pure: ``(TERMINATING or MISSING, namespace name)`` when Fleet cannot grant the Cluster's agent, else None.

    ``namespaces``: the Cluster's own namespaces (``namespaces_of``). A terminating one blocks a Cluster of the same
    name, whatever its status says; a Cluster whose ``status.namespace`` names a namespace that does not exist is never
    granted until something makes Fleet handle it again. A Cluster Fleet has not handled yet has no problem.
    """
    for ns in namespaces:
        if _meta(ns).get("deletionTimestamp"):
            return TERMINATING, _meta(ns).get("name")
    expected = expected_namespace(cluster)
    if cluster is not None and expected and expected not in [_meta(ns).get("name") for ns in namespaces]:
        return MISSING, expected
    return None


def describe(found):
    """A sentence for a ``problem`` result."""
    kind, name = found
    if kind == TERMINATING:
        return "its cluster namespace %s on the hub is still being deleted (left by an earlier Cluster of that name)" % name
    return "its cluster namespace %s on the hub does not exist, and Fleet will not create it by itself" % name


def fleet_namespaces(kube):
    """Every namespace Fleet manages on the hub: one LIST."""
    return kube.list(NAMESPACE, label_selector=MANAGED_SELECTOR)


def readable_fleet_namespaces(kube):
    """``fleet_namespaces``, or None when the credential may not list namespaces (403): nothing is known then, and a
    credential that may manage Clusters but not read namespaces must still work as it did."""
    try:
        return fleet_namespaces(kube)
    except ApiError as exc:
        if exc.status != 403:
            raise
        return None


def read_problem(kube, cluster, cluster_namespace, cluster_name):
    """``problem`` of one Cluster as the hub shows it now (None, too, when namespaces cannot be read)."""
    index = namespace_index(kube)
    if index is None:
        return None
    return problem(cluster, index.of(cluster_namespace, cluster_name, expected_namespace(cluster)))


class NamespaceRepair:
    """Wait out a terminating cluster namespace and make Fleet create it again (fleet_cluster, state=present)."""

    def __init__(self, runner, namespace, name):
        self.runner = runner
        self.kube = runner.kube
        self.namespace = namespace
        self.name = name
        self.touch = Nudge(self._touch_cluster, RETOUCH_SECONDS, at_once=True, clock=runner.module.waiter.clock)

    def run(self, cluster):
        """None when the Cluster's namespace is fine; otherwise ``{namespace, found, repaired}`` (repaired: False in
        check mode). Raises WaitTimeout (with what was done) when Fleet does not create it within wait_timeout."""
        found = read_problem(self.kube, cluster, self.namespace, self.name)
        if found is None:
            return None
        what = "Cluster %s/%s: %s" % (self.namespace, self.name, describe(found))
        if self.runner.check_mode:
            self.runner.warn(what + "; a run without check mode waits for it and makes Fleet create it again")
            return {"namespace": found[1], "found": found[0], "repaired": False}
        waiter = self.runner.module.waiter
        try:
            if found[0] == TERMINATING:
                waiter.until(self._terminating, lambda names: not names,
                             "namespace %s to be deleted" % found[1],
                             "wait_timeout: Fleet's cleanup controller and the namespace controller remove it; check that they run")
            created = waiter.until(self._touch_and_read, lambda ns: ns is not None and not _meta(ns).get("deletionTimestamp"),
                                   "Fleet to create the cluster namespace of Cluster %s/%s" % (self.namespace, self.name),
                                   "wait_timeout: check that Fleet's controller (agentmanagement) runs")
        except FleetOpsError as exc:
            exc.msg += " (%s%s)" % (what, "; the Cluster was touched so that Fleet creates it" if self.touch.count else "")
            exc.details["changed"] = exc.details.get("changed") or bool(self.touch.count)
            raise
        self.runner.warn(what + "; waited for it and made Fleet create %s again" % _meta(created).get("name"))
        return {"namespace": _meta(created).get("name"), "found": found[0], "repaired": True}

    def _terminating(self):
        namespaces = namespaces_of(fleet_namespaces(self.kube), self.namespace, self.name)
        return [_meta(ns).get("name") for ns in namespaces if _meta(ns).get("deletionTimestamp")]

    def _touch_cluster(self):
        self.kube.patch(CLUSTER, self.name, {"metadata": {"annotations": {REPAIR_ANNOTATION: format_time(utcnow())}}}, self.namespace)

    def _touch_and_read(self):
        """The Cluster's namespace, after touching the Cluster when it is due (first call, then every RETOUCH_SECONDS)."""
        self.touch()
        cluster = self.kube.get(CLUSTER, self.name, self.namespace)
        found = namespaces_of(fleet_namespaces(self.kube), self.namespace, self.name, expected_namespace(cluster))
        return found[0] if found else None


def wait_gone(runner, kube, cluster_namespace, cluster_name, expected):
    """After a leave: wait until the deleted Cluster's namespaces are gone (Fleet deletes them asynchronously, and a
    join under the same name before then is never granted). Returns the names waited for."""
    namespaces = readable_fleet_namespaces(kube)
    if namespaces is None:
        runner.warn("cannot list namespaces on the hub (403), so the leave does not wait for Fleet to delete the cluster "
                    "namespace of Cluster %s/%s; a join under that name right away may not be granted" % (cluster_namespace, cluster_name))
        return []
    names = [_meta(ns).get("name") for ns in namespaces_of(namespaces, cluster_namespace, cluster_name, expected)]
    if not names:
        return []
    runner.module.waiter.until(
        lambda: namespaces_of(fleet_namespaces(kube), cluster_namespace, cluster_name, expected), lambda left: not left,
        "Fleet to delete the cluster namespace %s of the deleted Cluster %s/%s" % (", ".join(names), cluster_namespace, cluster_name),
        "wait_timeout: Fleet's cleanup controller deletes it once the Cluster is gone; check that Fleet's controller runs")
    return names
