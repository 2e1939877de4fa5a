"""The agent Deployment spec Fleet's adoption deploys (module_utils/_rancher_fleet/adoption.py): the Bundle's name, its
agent.yaml, when a pod can start with it, and the Helm post-renderer that installs it."""

import base64
import gzip
import hashlib
import json
import os
import stat
import subprocess
import sys

import pytest
import yaml

from ansible_collections.fleetops.registration.plugins.module_utils.errors import ApiError
from ansible_collections.fleetops.registration.plugins.module_utils.files import write_private_file
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet import adoption

# The shape of Fleet v0.16.0's agent.Manifest Deployment (manifest.go agentApp), trimmed.
FLEET_SPEC = {
    "replicas": 1,
    "selector": {"matchLabels": {"app": "fleet-agent"}},
    "template": {
        "metadata": {"labels": {"app": "fleet-agent"}},
        "spec": {
            "serviceAccountName": "fleet-agent",
            "containers": [{
                "name": "fleet-agent", "image": "rancher/fleet-agent:v0.16.0", "command": ["fleetagent"],
                "env": [{"name": "BUNDLEDEPLOYMENT_RECONCILER_WORKERS", "value": "50"},
                        {"name": "DRIFT_RECONCILER_WORKERS", "value": "50"},
                        {"name": "NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
                        {"name": "AGENT_SCOPE", "value": ""}, {"name": "CHECKIN_INTERVAL", "value": "15s"},
                        {"name": "CATTLE_ELECTION_LEASE_DURATION", "value": "30s"},
                        {"name": "CATTLE_ELECTION_RETRY_PERIOD", "value": "10s"},
                        {"name": "CATTLE_ELECTION_RENEW_DEADLINE", "value": "25s"}],
            }],
        },
    },
}
OTHERS = [{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "fleet-agent"}},
          {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "default-allow-all"}}]
FLEET_DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment",
                    "metadata": {"name": "fleet-agent", "namespace": "cattle-fleet-system"}, "spec": FLEET_SPEC}
AGENT_YAML = yaml.safe_dump_all(OTHERS + [FLEET_DEPLOYMENT])


CLUSTER = {"metadata": {"name": "member1", "namespace": "fleet-default"}}


def _bundle(content=AGENT_YAML, encoding=None, name="agent.yaml"):
    """The agent Bundle as Fleet's agent management writes it for CLUSTER."""
    resource = {"name": name, "content": content}
    if encoding:
        resource["encoding"] = encoding
    annotations = {"objectset.rio.cattle.io/id": "fleet-manage-agent", "objectset.rio.cattle.io/owner-gvk": "/v1, Kind=Namespace",
                   "objectset.rio.cattle.io/owner-name": "fleet-default", "objectset.rio.cattle.io/owner-namespace": ""}
    return {"metadata": {"name": "fleet-agent-member1", "namespace": "fleet-default", "annotations": annotations,
                         "labels": {"objectset.rio.cattle.io/hash": "0123"}},
            "spec": {"defaultNamespace": "cattle-fleet-system", "helm": {"takeOwnership": True}, "resources": [resource],
                     "targets": [{"clusterName": "member1", "clusterSelector": {"matchExpressions": [
                         {"key": "fleet.cattle.io/non-managed-agent", "operator": "DoesNotExist"}]}}]}}


class _Hub:
    def __init__(self, bundle=None, error=None):
        self.bundle, self.error, self.asked = bundle, error, []

    def get(self, resource, name, namespace):
        self.asked.append((resource.plural, name, namespace))
        if self.error:
            raise self.error
        return self.bundle


def test_bundle_name_is_fleets_safe_concat_name():
    assert adoption.agent_bundle_name("member1") == "fleet-agent-member1"
    long = "c" * 60
    full = "fleet-agent-" + long
    assert adoption.agent_bundle_name(long) == full[:57] + "-" + hashlib.sha256(full.encode()).hexdigest()[:5]
    dashed = "a" * 44 + "-" + "b" * 20  # character 56 of the full name is the dash: cut one earlier
    full = "fleet-agent-" + dashed
    assert full[56] == "-"
    assert adoption.agent_bundle_name(dashed) == full[:56] + "-" + hashlib.sha256(full.encode()).hexdigest()[:6]
    assert len(adoption.agent_bundle_name(dashed)) == 63


def test_deployment_spec_from_plain_and_compressed_agent_yaml():
    assert adoption.deployment_spec(_bundle()) == FLEET_SPEC
    packed = base64.b64encode(gzip.compress(AGENT_YAML.encode())).decode()
    assert adoption.deployment_spec(_bundle(packed, "base64+gz")) == FLEET_SPEC
    assert adoption.deployment_spec(_bundle(base64.b64encode(AGENT_YAML.encode()).decode(), "base64")) == FLEET_SPEC


def test_no_spec_without_the_agent_deployment():
    assert adoption.deployment_spec(None) is None
    assert adoption.deployment_spec(_bundle(name="other.yaml")) is None
    assert adoption.deployment_spec(_bundle(yaml.safe_dump_all(OTHERS))) is None
    assert adoption.deployment_spec(_bundle("a: [")) is None
    assert adoption.deployment_spec(_bundle("x", "zstd")) is None


def test_startable_only_without_what_the_adoption_creates_first():
    assert adoption.startable(FLEET_SPEC, {})
    for key, value in (("imagePullSecrets", [{"name": "pull"}]), ("priorityClassName", "fleet-agent-priority-class")):
        spec = json.loads(json.dumps(FLEET_SPEC))
        spec["template"]["spec"][key] = value
        assert not adoption.startable(spec, {}), key
    assert not adoption.startable({"template": {"spec": {}}}, {})


def test_a_proxy_keeps_the_charts_deployment_unless_fleets_spec_has_it():
    values = {"proxy": "http://proxy:3128"}
    assert not adoption.startable(FLEET_SPEC, values)
    spec = json.loads(json.dumps(FLEET_SPEC))
    spec["template"]["spec"]["containers"][0]["env"] += [{"name": name, "value": "x"} for name in ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY")]
    assert adoption.startable(spec, values)


def _changed(change):
    bundle = json.loads(json.dumps(_bundle()))
    change(bundle)
    return bundle


@pytest.mark.parametrize("change", [
    lambda b: b["metadata"]["annotations"].pop("objectset.rio.cattle.io/id"),
    lambda b: b["metadata"]["annotations"].update({"objectset.rio.cattle.io/id": "fleet-gitjob"}),
    lambda b: b["metadata"]["annotations"].update({"objectset.rio.cattle.io/owner-name": "other-namespace"}),
    lambda b: b["metadata"]["annotations"].update({"objectset.rio.cattle.io/owner-gvk": "fleet.cattle.io/v1alpha1, Kind=GitRepo"}),
    lambda b: b["metadata"].update(namespace="other-namespace"),
    lambda b: b["metadata"]["labels"].update({"fleet.cattle.io/repo-name": "fleet-agent"}),
    lambda b: b["spec"]["targets"].append({"clusterName": "member2"}),
    lambda b: b["spec"]["targets"][0].update(clusterName="member2"),
    lambda b: b["spec"]["targets"][0].update(clusterGroup="everyone"),
    lambda b: b["spec"]["resources"].append({"name": "extra.yaml", "content": "kind: ClusterRoleBinding"}),
], ids=["no-set-id", "other-set", "other-owner", "owner-not-a-namespace", "other-namespace", "from-a-gitrepo",
        "another-target", "another-cluster", "a-group", "another-resource"])
def test_only_the_bundle_fleet_made_for_the_cluster_is_trusted(change):
    assert adoption.fleet_owned(_bundle(), CLUSTER)
    forged = _changed(change)
    assert not adoption.fleet_owned(forged, CLUSTER)
    assert adoption.read_spec(_Hub(forged), CLUSTER, {}) is None


def test_read_spec_gets_the_clusters_bundle_and_falls_back_on_errors():
    cluster = CLUSTER
    hub = _Hub(_bundle())
    assert adoption.read_spec(hub, cluster, {}) == FLEET_SPEC
    assert hub.asked == [("bundles", "fleet-agent-member1", "fleet-default")]
    assert adoption.read_spec(_Hub(None), cluster, {}) is None
    assert adoption.read_spec(_Hub(error=ApiError("forbidden", status=403)), cluster, {}) is None
    assert adoption.read_spec(_Hub(_bundle()), {"metadata": {}}, {}) is None


# The fleet-agent chart's rendering, as Helm hands it to a post-renderer (trimmed).
CHART_RENDERED = """---
# Source: fleet-agent/templates/serviceaccount.yaml
apiVersion: v1
kind: ServiceAccount
metadata:
  name: fleet-agent
---
# Source: fleet-agent/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: fleet-agent
spec:
  replicas: 1
  selector:
    matchLabels:
      app: fleet-agent
  template:
    metadata:
      labels:
        app: fleet-agent
    spec:
      containers:
      - env:
        - name: NAMESPACE
          valueFrom:
            fieldRef:
              fieldPath: metadata.namespace
%s        image: 'rancher/fleet-agent:dev'
        name: fleet-agent
"""
PROXY_ENV = """        - name: HTTP_PROXY
          value: http://proxy:3128
"""


def _post_render(tmp_path, rendered):
    script, spec_file = adoption.post_renderer_files(str(tmp_path), FLEET_SPEC, write_private_file)
    for path in (script, spec_file):
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    out = subprocess.run([sys.executable, script, spec_file, "fleet-agent"], input=rendered, capture_output=True,
                         text=True, check=True).stdout
    return list(yaml.safe_load_all(out))


def test_post_renderer_gives_the_chart_deployment_fleets_spec(tmp_path):
    docs = _post_render(tmp_path, CHART_RENDERED % "")
    assert [doc["kind"] for doc in docs] == ["ServiceAccount", "Deployment"]
    assert docs[1]["metadata"] == {"name": "fleet-agent"}
    assert docs[1]["spec"] == FLEET_SPEC


def test_post_renderer_keeps_a_chart_deployment_with_environment_fleets_lacks(tmp_path):
    docs = _post_render(tmp_path, CHART_RENDERED % PROXY_ENV)
    env = docs[1]["spec"]["template"]["spec"]["containers"][0]["env"]
    assert [entry["name"] for entry in env] == ["NAMESPACE", "HTTP_PROXY"]


def test_only_the_clusters_variables_are_marked_secret():
    assert adoption.cluster_env_values(FLEET_SPEC) == []
    spec = json.loads(json.dumps(FLEET_SPEC))
    spec["template"]["spec"]["containers"][0]["env"] += [{"name": "HTTPS_PROXY", "value": "http://u:pw@proxy:3128"},
                                                         {"name": "EMPTY", "value": ""}]
    assert adoption.cluster_env_values(spec) == ["http://u:pw@proxy:3128"]
