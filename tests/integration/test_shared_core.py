"""The shared core against the lab: Helm's records read without helm, whoami with good and bad credentials,
a clear message for an API whose CRDs are missing, and a client for an endpoint as an agent sees it."""

import pytest
from kubernetes import client

from ansible_collections.fleetops.registration.plugins.module_utils.errors import ApiError, ApiNotServed, ConnectionFailure
from ansible_collections.fleetops.registration.plugins.module_utils.helm import ReleasePlan, read_release
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_auth import ConnectionSettings, endpoint_configuration
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_client import KubeClient
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.resources import CLUSTER
from kube_helpers import ignore_404, unique

pytestmark = pytest.mark.lab

MEMBER = "member2"


def kube(lab, context):
    settings = ConnectionSettings({"kubeconfig": str(lab.kubeconfig), "context": context}, label=context)
    return KubeClient(settings.client_configuration(), label=context)


@pytest.fixture
def tiny_chart(tmp_path):
    chart = tmp_path / "tiny"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: tiny\nversion: 0.1.0\nappVersion: \"1.0\"\n")
    (chart / "templates" / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: tiny\ndata:\n  greeting: {{ .Values.greeting | quote }}\n")
    return chart


@pytest.fixture
def scratch_ns(lab):
    name = unique("fo-core")
    yield name
    lab.run_helm(MEMBER, "uninstall", "tiny", "--namespace", name, "--ignore-not-found", check=False)
    ignore_404(lambda: client.CoreV1Api(lab.api_client(MEMBER)).delete_namespace(name))


def test_read_release_matches_helm_and_feeds_the_plan(lab, tiny_chart, scratch_ns):
    member = kube(lab, MEMBER)
    assert read_release(member, "tiny", scratch_ns) is None
    assert ReleasePlan.decide(None, "tiny", "0.1.0", {}).action == "install"

    lab.run_helm(MEMBER, "upgrade", "--install", "tiny", tiny_chart, "--namespace", scratch_ns, "--create-namespace",
                 "--set", "greeting=hello")
    release = read_release(member, "tiny", scratch_ns)
    assert release["name"] == "tiny" and release["namespace"] == scratch_ns
    assert (release["revision"], release["status"], release["chart"], release["chart_version"], release["app_version"]) == (
        1, "deployed", "tiny", "0.1.0", "1.0")
    assert release["values"] == {"greeting": "hello"}
    assert release["updated"]
    assert ReleasePlan.decide(release, "tiny", "0.1.0", {"greeting": "hello"}).action == "none"
    assert ReleasePlan.decide(release, "tiny", "0.1.0", {"greeting": "bye"}).reasons == ["values differ"]

    lab.run_helm(MEMBER, "upgrade", "tiny", tiny_chart, "--namespace", scratch_ns, "--set", "greeting=bye")
    again = read_release(member, "tiny", scratch_ns)
    assert (again["revision"], again["status"], again["values"]) == (2, "deployed", {"greeting": "bye"})

    lab.run_helm(MEMBER, "uninstall", "tiny", "--namespace", scratch_ns)
    assert read_release(member, "tiny", scratch_ns) is None


def test_whoami_good_and_bad_credentials(lab):
    hub = kube(lab, "hub")
    user = hub.whoami()
    assert user  # the lab's admin identity
    stranger = KubeClient(endpoint_configuration(lab.api_urls["hub"], lab.ca_pem("hub"), token="not-a-valid-token"), label="hub")
    with pytest.raises(ApiError) as err:
        stranger.whoami()
    assert err.value.status == 401
    # the wrong CA: the endpoint's certificate does not verify
    wrong_ca = KubeClient(endpoint_configuration(lab.api_urls["hub"], lab.ca_pem(MEMBER), token="x"), label="hub")
    with pytest.raises(ConnectionFailure) as err:
        wrong_ca.whoami()
    assert "certificate" in err.value.msg.lower()


def test_missing_crds_name_the_api_and_hub_prepare(lab):
    member = kube(lab, "member1")
    with pytest.raises(ApiNotServed) as err:
        member.list(CLUSTER, "clusters")
    message = err.value.message()
    assert "fleet.cattle.io/v1alpha1" in message and "clusters" in message and "hub_prepare" in message
    with pytest.raises(ApiNotServed):
        member.get(CLUSTER, "x", "clusters")
    # a missing object in a served API stays "not there"
    assert kube(lab, "hub").get(CLUSTER, "no-such-cluster", "default") is None
