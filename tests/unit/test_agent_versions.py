"""member_info's warning when a member's agent runs another release than its hub: which tags and versions name a
release, what each manager's agent and hub controller show, and that nothing is said unless both are known."""

import pytest

from ansible_collections.fleetops.registration.plugins.module_utils import agent_versions as versions
from ansible_collections.fleetops.registration.plugins.module_utils.errors import ApiError
from ansible_collections.fleetops.registration.plugins.module_utils.registry import manager


@pytest.mark.parametrize("text, release", [
    ("v0.14.0", "0.14.0"), ("0.14.0", "0.14.0"), ("v0.16.0-rc.1", "0.16.0-rc.1"), ("107.0.0+up0.13.0", "0.13.0"),
    ("0.3.1+build.5", "0.3.1"), ("main", None), ("latest", None), ("dev", None), ("0.0.0", None), ("v0.14", None),
    ("", None), (None, None),
])
def test_only_a_release_version_counts(text, release):
    assert versions.release_version(text) == release


@pytest.mark.parametrize("image, tag", [
    ("ghcr.io/azure/fleet/member-agent:v0.14.0", "v0.14.0"), ("registry:5000/fleet/member-agent:v0.2.1", "v0.2.1"),
    ("registry:5000/fleet/member-agent", None), ("rancher/fleet:v0.16.0@sha256:abc", "v0.16.0"),
    ("rancher/fleet@sha256:abc", None), ("", None),
])
def test_image_tag(image, tag):
    assert versions.image_tag(image) == tag


def _deployment(*images):
    return {"spec": {"template": {"spec": {"containers": [{"name": "c%d" % i, "image": image} for i, image in enumerate(images)]}}}}


class Hub:
    def __init__(self, deployment=None, error=None):
        self.deployment, self.error, self.gets = deployment, error, []

    def get(self, resource, name, namespace=None):
        self.gets.append((resource.kind, namespace, name))
        if self.error:
            raise self.error
        return self.deployment


class Module:
    def __init__(self):
        self.warnings = []

    def warn(self, text):
        self.warnings.append(text)


def kubefleet_member(image):
    return {"agent_pod": {"containers": [{"name": "refresh-token", "image": "ghcr.io/x/refresh-token:v9.9.9"},
                                         {"name": "member-agent", "image": image}]}}


def test_kubefleet_compares_the_member_agents_image_tag_with_the_hub_agents():
    module, hub = Module(), Hub(_deployment("ghcr.io/kubefleet-dev/kubefleet/hub-agent:v0.3.1"))
    warning = versions.warn_of_skew(module, manager("kubefleet"), hub, kubefleet_member("ghcr.io/azure/fleet/member-agent:v0.14.0"),
                                    "east-1", "hub")
    assert module.warnings == ["KubeFleet member east-1: " + warning]
    assert "0.14.0" in warning and "0.3.1" in warning and "fleet-system/hub-agent" in warning
    assert "fleetops_kubefleet_member_agent_chart_version" in warning and "fleetops_kubefleet_member_agent_image_tag" in warning
    assert hub.gets == [("Deployment", "fleet-system", "hub-agent")]
    # the hub is read once per hub connection and manager, for every member of a batch
    versions.warn_of_skew(module, manager("kubefleet"), hub, kubefleet_member("x/member-agent:v0.14.0"), "east-2", "hub")
    assert len(hub.gets) == 1 and len(module.warnings) == 2


@pytest.mark.parametrize("agent_image, hub_deployment, error", [
    ("ghcr.io/azure/fleet/member-agent:v0.14.0", _deployment("ghcr.io/azure/fleet/hub-agent:v0.14.0"), None),  # same
    ("ghcr.io/azure/fleet/member-agent:main", _deployment("ghcr.io/azure/fleet/hub-agent:v0.14.0"), None),  # agent unknown
    ("ghcr.io/azure/fleet/member-agent:v0.14.0", _deployment("ghcr.io/azure/fleet/hub-agent:main"), None),  # hub unknown
    ("ghcr.io/azure/fleet/member-agent:v0.14.0", None, None),  # no hub agent Deployment
    ("ghcr.io/azure/fleet/member-agent:v0.14.0", None, ApiError("forbidden", status=403)),  # may not read it
])
def test_nothing_is_said_unless_both_releases_are_known_and_differ(agent_image, hub_deployment, error):
    module = Module()
    assert versions.warn_of_skew(module, manager("kubefleet"), Hub(hub_deployment, error), kubefleet_member(agent_image),
                                 "east-1", "hub") is None
    assert module.warnings == []


def test_an_unknown_agent_version_costs_no_hub_read():
    hub = Hub(_deployment("ghcr.io/azure/fleet/hub-agent:v0.14.0"))
    versions.warn_of_skew(Module(), manager("kubefleet"), hub, {"agent_pod": None}, "east-1", "hub")
    assert hub.gets == []


def test_rancher_fleet_compares_the_agent_releases_app_version_with_the_fleet_controllers_image():
    hub = Hub(_deployment("rancher/fleet:v0.16.0", "rancher/fleet:v0.16.0"))
    module = Module()
    older = {"release": {"chart": "fleet-agent", "chart_version": "106.0.0+up0.15.1", "app_version": "0.15.1"}}
    warning = versions.warn_of_skew(module, manager("rancher_fleet"), hub, older, "edge-01", "hub")
    assert "0.15.1" in warning and "0.16.0" in warning and "cattle-fleet-system/fleet-controller" in warning
    assert "fleetops_fleet_agent_chart_version" in warning
    assert hub.gets == [("Deployment", "cattle-fleet-system", "fleet-controller")]
    # Rancher's chart version ends in the Fleet release when the app version is missing
    assert manager("rancher_fleet").agent_version({"release": {"chart_version": "107.0.0+up0.16.0"}}) == "0.16.0"
    same = {"release": {"chart_version": "0.16.0", "app_version": "0.16.0"}}
    assert versions.warn_of_skew(Module(), manager("rancher_fleet"), hub, same, "edge-02", "hub") is None
    # a chart built from source (the lab's) names no release
    assert manager("rancher_fleet").agent_version({"release": {"chart_version": "0.0.0", "app_version": "0.0.0"}}) is None
