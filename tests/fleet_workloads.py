"""Workloads placed through the fleet managers' own objects, for the lab tests of leave and move.

Each manager gets one small workload: a ConfigMap named after the placement in a namespace of the same name.

- Rancher Fleet: a ``Bundle`` (fleet.cattle.io/v1alpha1) in the hub's Fleet clusters namespace (``fleet-default``),
  targeting the Clusters whose labels match; Fleet's agent deploys it on the member as a Helm release in that
  namespace (the agent's release name is read from the member, never assumed).
- KubeFleet: a ``ClusterResourcePlacement`` (placement.kubernetes-fleet.io/v1beta1) of the hub namespace holding the
  ConfigMap, PickAll with a label selector on MemberCluster labels; the member agent applies it and records an
  ``AppliedWork`` (cluster scoped) that owns what it applied.

API (``lab`` is the session fixture; ``hub`` a lab context, ``hub`` by default, so a second hub works the same):

    placed = place_bundle(lab, name, {"member": "member1"})       # or place_placement(...)
    wait_on_member(lab, "member1", placed)                          # the ConfigMap arrived (returns its data)
    on_member(lab, "member1", placed)                               # what is there now: configmap/releases/applied_works
    applied_on_hub(lab, placed, "member1")                          # the hub's status says applied for that cluster
    wait_gone_from_member(lab, "member1", placed)                  # ConfigMap and release/AppliedWork gone
    remove(lab, placed)                                             # hub objects gone (the members follow the manager)
    remove_from_member(lab, "member1", placed)                      # what a kept workload left on a member
    with Sampler(lab, members, [placed]) as sampler: ...            # sampler.missing: when it was not there

``placements(lab, labels)`` is the context manager most tests want: one of each, removed afterwards from the hub and
from ``members``.
"""

import contextlib
import threading
import time
from dataclasses import dataclass, field

import yaml
from kubernetes import client

from kube_helpers import ignore_404, read_or_none, wait_for

FLEET = ("fleet.cattle.io", "v1alpha1")
PLACEMENT = ("placement.kubernetes-fleet.io", "v1beta1")
APPLIED_WORK = ("placement.kubernetes-fleet.io", "v1beta1", "appliedworks")
FLEET_CLUSTERS_NS = "fleet-default"
BUNDLE_NAME_LABEL = "fleet.cattle.io/bundle-name"
WAIT = 120


@dataclass
class Placed:
    """One placed workload: the manager, its hub object and what it puts on a member."""

    manager: str           # 'rancher_fleet' or 'kubefleet'
    name: str              # the Bundle / ClusterResourcePlacement; also the workload's namespace and ConfigMap
    hub: str = "hub"       # lab context of the hub holding it
    fleet_namespace: str = FLEET_CLUSTERS_NS
    data: dict = field(default_factory=dict)

    @property
    def namespace(self):
        """The namespace the ConfigMap lands in on a member."""
        return self.name


def _configmap(name, data):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": name}, "data": dict(data)}


def place_bundle(lab, name, match_labels, hub="hub", fleet_namespace=FLEET_CLUSTERS_NS):
    """A Fleet Bundle of one ConfigMap ``name`` in namespace ``name``, targeting Clusters with ``match_labels``."""
    data = {"placed-by": "rancher_fleet", "bundle": name}
    body = {"apiVersion": "%s/%s" % FLEET, "kind": "Bundle", "metadata": {"name": name, "namespace": fleet_namespace},
            "spec": {"defaultNamespace": name,
                     "resources": [{"name": "configmap.yaml", "content": yaml.safe_dump(_configmap(name, data))}],
                     "targets": [{"name": "labelled", "clusterSelector": {"matchLabels": dict(match_labels)}}]}}
    client.CustomObjectsApi(lab.api_client(hub)).create_namespaced_custom_object(*FLEET, fleet_namespace, "bundles", body)
    return Placed("rancher_fleet", name, hub, fleet_namespace, data)


def place_placement(lab, name, match_labels, hub="hub"):
    """A KubeFleet ClusterResourcePlacement (PickAll) of hub namespace ``name`` and its ConfigMap, for MemberClusters
    with ``match_labels``."""
    data = {"placed-by": "kubefleet", "placement": name}
    api = lab.api_client(hub)
    core = client.CoreV1Api(api)
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    core.create_namespaced_config_map(name, _configmap(name, data))
    affinity = {"clusterAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "clusterSelectorTerms": [{"labelSelector": {"matchLabels": dict(match_labels)}}]}}}
    body = {"apiVersion": "%s/%s" % PLACEMENT, "kind": "ClusterResourcePlacement", "metadata": {"name": name},
            "spec": {"resourceSelectors": [{"group": "", "version": "v1", "kind": "Namespace", "name": name}],
                     "policy": {"placementType": "PickAll", "affinity": affinity}}}
    client.CustomObjectsApi(api).create_cluster_custom_object(*PLACEMENT, "clusterresourceplacements", body)
    return Placed("kubefleet", name, hub, data=data)


def helm_releases(lab, member, namespace):
    """Names of the Helm releases in ``namespace`` on a member (Fleet's agent deploys bundles as releases)."""
    out = lab.run_helm(member, "list", "--namespace", namespace, "--all", "--output", "yaml").stdout
    return sorted(r["name"] for r in yaml.safe_load(out) or [])


def applied_works(lab, member, placed=None):
    """Names of the AppliedWorks on a member (those of ``placed``'s placement only, when given)."""
    items = client.CustomObjectsApi(lab.api_client(member)).list_cluster_custom_object(*APPLIED_WORK)["items"]
    names = [w["metadata"]["name"] for w in items]
    if placed is not None:
        names = [n for n in names if n.startswith(placed.name + "-")]
    return sorted(names)


def on_member(lab, member, placed):
    """What ``placed`` has on a member now: {'configmap': data or None, 'namespace': bool, 'releases' (Fleet) or
    'applied_works' (KubeFleet): [names]}."""
    core = client.CoreV1Api(lab.api_client(member))
    cm = read_or_none(lambda: core.read_namespaced_config_map(placed.name, placed.namespace))
    found = {"configmap": dict(cm.data or {}) if cm is not None else None,
             "namespace": read_or_none(lambda: core.read_namespace(placed.namespace)) is not None}
    if placed.manager == "rancher_fleet":
        found["releases"] = helm_releases(lab, member, placed.namespace) if found["namespace"] else []
    else:
        found["applied_works"] = applied_works(lab, member, placed)
    return found


def wait_on_member(lab, member, placed, timeout=WAIT):
    """Wait until the ConfigMap ``placed`` puts on ``member`` is there with its data; returns on_member()."""
    def arrived():
        found = on_member(lab, member, placed)
        return found if found["configmap"] == placed.data else None
    return wait_for(arrived, timeout, "%s %s on %s" % (placed.manager, placed.name, member))


def wait_gone_from_member(lab, member, placed, timeout=WAIT):
    """Wait until the workload of ``placed`` is off ``member`` (its ConfigMap and its release or AppliedWork); returns
    on_member(). The namespace is not waited for: Fleet's agent leaves the namespace it created for a bundle when it
    uninstalls the release (KubeFleet deletes its namespace, which it applied)."""
    def gone():
        found = on_member(lab, member, placed)
        return found if not any(value for key, value in found.items() if key != "namespace") else None
    return wait_for(gone, timeout, "%s %s to leave %s" % (placed.manager, placed.name, member))


def _condition(conditions, cond_type):
    return next((c.get("status") for c in conditions or [] if c.get("type") == cond_type), None)


def applied_on_hub(lab, placed, cluster):
    """Whether ``placed``'s hub reports it applied on ``cluster`` (the Fleet Cluster / MemberCluster name): Fleet a
    ready BundleDeployment of the bundle for that Cluster, KubeFleet an Applied placement status for that cluster."""
    custom = client.CustomObjectsApi(lab.api_client(placed.hub))
    if placed.manager == "rancher_fleet":
        selector = "%s=%s,fleet.cattle.io/cluster=%s" % (BUNDLE_NAME_LABEL, placed.name, cluster)
        items = custom.list_cluster_custom_object(*FLEET, "bundledeployments", label_selector=selector)["items"]
        return any(_condition((d.get("status") or {}).get("conditions"), "Ready") == "True" for d in items)
    crp = read_or_none(lambda: custom.get_cluster_custom_object(*PLACEMENT, "clusterresourceplacements", placed.name))
    statuses = ((crp or {}).get("status") or {}).get("placementStatuses") or []
    return any(s.get("clusterName") == cluster and _condition(s.get("conditions"), "Applied") == "True" for s in statuses)


def remove(lab, placed):
    """Delete ``placed``'s hub objects (Bundle; or ClusterResourcePlacement and its hub namespace). Members that are
    still managed lose the workload through their manager; a member that left keeps it (remove_from_member)."""
    api = lab.api_client(placed.hub)
    custom = client.CustomObjectsApi(api)
    if placed.manager == "rancher_fleet":
        ignore_404(lambda: custom.delete_namespaced_custom_object(*FLEET, placed.fleet_namespace, "bundles", placed.name))
        return
    ignore_404(lambda: custom.delete_cluster_custom_object(*PLACEMENT, "clusterresourceplacements", placed.name))
    ignore_404(lambda: client.CoreV1Api(api).delete_namespace(placed.name))


def remove_from_member(lab, member, placed):
    """Take what ``placed`` left on a member that no manager removes any more (a kept workload) off it."""
    if placed.manager == "rancher_fleet":
        for release in helm_releases(lab, member, placed.namespace) if on_member(lab, member, placed)["namespace"] else []:
            lab.run_helm(member, "uninstall", release, "--namespace", placed.namespace, check=False)
    else:
        custom = client.CustomObjectsApi(lab.api_client(member))
        for name in applied_works(lab, member, placed):
            ignore_404(lambda n=name: custom.delete_cluster_custom_object(*APPLIED_WORK, n))
    core = client.CoreV1Api(lab.api_client(member))
    ignore_404(lambda: core.delete_namespace(placed.namespace))


class Sampler(threading.Thread):
    """Reads the ConfigMap of each of ``placed`` on each of ``members`` every half second while a run goes on;
    ``missing`` lists each ``(time, member, placement)`` it was not there with its data (use as a context manager)."""

    def __init__(self, lab, members, placed):
        super().__init__(daemon=True)
        self.lab, self.members, self.placed = lab, list(members), list(placed)
        self.missing, self.samples = [], 0
        self.done = threading.Event()

    def run(self):
        while not self.done.is_set():
            for member in self.members:
                for one in self.placed:
                    if on_member(self.lab, member, one)["configmap"] != one.data:
                        self.missing.append((time.strftime("%H:%M:%S"), member, one.name))
            self.samples += 1
            self.done.wait(0.5)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.done.set()
        self.join(30)


@contextlib.contextmanager
def placements(lab, name, match_labels, members=(), hub="hub", fleet_namespace=FLEET_CLUSTERS_NS):
    """A Fleet Bundle ``<name>-fleet`` and a KubeFleet placement ``<name>-kf``, both for ``match_labels``; yields
    {'rancher_fleet': Placed, 'kubefleet': Placed}. Afterwards both are removed from the hub and from ``members``."""
    placed = {"rancher_fleet": place_bundle(lab, name + "-fleet", match_labels, hub, fleet_namespace)}
    try:
        placed["kubefleet"] = place_placement(lab, name + "-kf", match_labels, hub)
        yield placed
    finally:
        for one in placed.values():
            remove(lab, one)
            for member in members:
                remove_from_member(lab, member, one)
