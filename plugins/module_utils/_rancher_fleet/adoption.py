# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The agent Deployment Fleet's adoption will deploy, installed from the start so the adoption replaces no pod.

With ``manageAgent`` on (Fleet's default), Fleet's agentmanagement controller (v0.16.0
``internal/cmd/controller/agentmanagement/controllers/manageagent``, ``newAgentBundle``) keeps a Bundle
``fleet-agent-<cluster>`` for every Cluster, its resource ``agent.yaml`` rendered by ``agent.Manifest``
(``internal/cmd/controller/agentmanagement/agent/manifest.go``). The registered agent deploys that Bundle over the
fleet-agent chart's objects (Helm ``takeOwnership``). The chart's pod template differs from the Manifest's (env order,
``AGENT_SCOPE``, ``CHECKIN_INTERVAL``, affinity, tolerations), so the Deployment rolls out a new pod: the agent that
just registered stops before its first check-in, and the new one waits for its leader Lease (``fleet-agent``, which
Fleet's agent never releases) - about two check-in intervals of every first join.

For a predefined Cluster the Bundle exists before the agent is installed. Its Deployment ``spec`` then replaces the
chart's (a Helm post-renderer: Helm records what runs), and the adoption finds nothing to roll out: the agent that
registered keeps its Lease and checks in one interval after registering. The chart's other objects (the bootstrap
Secret, RBAC, ServiceAccount) stay. Not done when the pod could not start or register with Fleet's spec before the
adoption creates what it needs: pull secrets or a priority class (Fleet deploys those with the Bundle), or an
environment variable of the chart's (a proxy) that Fleet's spec lacks. Pure, but for ``read_spec``.

Only a Bundle Fleet made for that Cluster is trusted (``fleet_owned``): its spec becomes the agent's pod, which runs with
the agent's cluster-wide rights, and anyone who may create Bundles in the Cluster's namespace could name one
``fleet-agent-<cluster>``. Fleet's own is written by its apply (set ID ``fleet-manage-agent``, owned by the namespace),
comes from no GitRepo, and holds nothing but ``agent.yaml`` for that one Cluster.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import gzip
import hashlib
import json

from ansible_collections.fleetops.registration.plugins.module_utils._deps import yaml
from ansible_collections.fleetops.registration.plugins.module_utils.errors import FleetOpsError
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_client import Resource
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.resources import API_VERSION, AGENT_DEPLOYMENT

BUNDLE = Resource(API_VERSION, "Bundle", "bundles")
AGENT_BUNDLE_PREFIX = "fleet-agent"
AGENT_RESOURCE = "agent.yaml"
# What Fleet's agent management writes on its agent Bundles (wrangler apply: set ID, and the namespace as owner).
APPLY_SET_ANNOTATION = "objectset.rio.cattle.io/id"
APPLY_SET_ID = "fleet-manage-agent"
APPLY_OWNER_GVK_ANNOTATION = "objectset.rio.cattle.io/owner-gvk"
APPLY_OWNER_NAME_ANNOTATION = "objectset.rio.cattle.io/owner-name"
NAMESPACE_GVK = "/v1, Kind=Namespace"
GITREPO_LABEL = "fleet.cattle.io/repo-name"
# What the pod needs that only the adoption creates on the member.
NEEDS_BUNDLE = ("imagePullSecrets", "priorityClassName")


def agent_bundle_name(cluster_name):
    """Fleet's ``names.SafeConcatName("fleet-agent", cluster)``: under 64 characters, cut with a digest when longer."""
    full = "%s-%s" % (AGENT_BUNDLE_PREFIX, cluster_name)
    if len(full) < 64:
        return full
    digest = hashlib.sha256(full.encode("utf-8")).hexdigest()
    if full[56].isdigit() or "a" <= full[56] <= "z":
        return full[:57] + "-" + digest[:5]
    return full[:56] + "-" + digest[:6]


def _resource_text(resource):
    """A Bundle resource's content, decoded (``encoding`` ``base64`` or ``base64+gz``), else None."""
    content, encoding = resource.get("content") or "", resource.get("encoding") or ""
    if encoding == "":
        return content
    if encoding in ("base64", "base64+gz"):
        raw = base64.b64decode(content)
        return (gzip.decompress(raw) if encoding.endswith("+gz") else raw).decode("utf-8")
    return None


def deployment_spec(bundle):
    """The ``spec`` of the agent Deployment in the Bundle's ``agent.yaml``, or None when it has none Fleet's way."""
    for resource in ((bundle or {}).get("spec") or {}).get("resources") or []:
        if resource.get("name") != AGENT_RESOURCE:
            continue
        text = _resource_text(resource)
        try:
            documents = list(yaml.safe_load_all(text or ""))
        except yaml.YAMLError:
            return None
        for doc in documents:
            if (doc or {}).get("kind") == "Deployment" and ((doc.get("metadata") or {}).get("name")) == AGENT_DEPLOYMENT:
                return doc.get("spec") or None
    return None


def fleet_owned(bundle, cluster):
    """Whether ``bundle`` is the agent Bundle Fleet's agent management keeps for ``cluster`` (manageagent's
    ``newAgentBundle``): written by its apply for the Cluster's namespace, from no GitRepo, in that namespace, with the
    one resource ``agent.yaml`` and the one target naming the Cluster."""
    meta, cluster_meta = (bundle or {}).get("metadata") or {}, (cluster or {}).get("metadata") or {}
    annotations, spec = meta.get("annotations") or {}, (bundle or {}).get("spec") or {}
    targets, resources = spec.get("targets") or [], spec.get("resources") or []
    return (annotations.get(APPLY_SET_ANNOTATION) == APPLY_SET_ID
            and annotations.get(APPLY_OWNER_GVK_ANNOTATION) == NAMESPACE_GVK
            and annotations.get(APPLY_OWNER_NAME_ANNOTATION) == cluster_meta.get("namespace") == meta.get("namespace")
            and GITREPO_LABEL not in (meta.get("labels") or {})
            and [resource.get("name") for resource in resources] == [AGENT_RESOURCE]
            and [target.get("clusterName") for target in targets] == [cluster_meta.get("name")]
            and not any(target.get(key) for target in targets for key in ("clusterGroup", "clusterGroupSelector")))


def _env_names(pod):
    return set(entry.get("name") for container in pod.get("containers") or [] for entry in container.get("env") or [])


# The variables agent.Manifest always sets (manifest.go agentApp); the rest are the Cluster's agentEnvVars.
MANIFEST_ENV = ("BUNDLEDEPLOYMENT_RECONCILER_WORKERS", "DRIFT_RECONCILER_WORKERS", "NAMESPACE", "AGENT_SCOPE", "CHECKIN_INTERVAL",
                "CATTLE_ELECTION_LEASE_DURATION", "CATTLE_ELECTION_RETRY_PERIOD", "CATTLE_ELECTION_RENEW_DEADLINE")


def cluster_env_values(spec):
    """The values of the variables ``spec`` has from the Cluster's ``agentEnvVars`` (a proxy's credentials, say): masked
    like the registration token, should Helm quote the Deployment in a message."""
    pod = ((spec or {}).get("template") or {}).get("spec") or {}
    return [entry["value"] for container in pod.get("containers") or [] for entry in container.get("env") or []
            if entry.get("name") not in MANIFEST_ENV and entry.get("value")]


def startable(spec, values):
    """Whether the pod of ``spec`` starts and registers before the adoption deployed what it needs, with what the
    chart's ``values`` would give it (the chart sets the proxy variables from ``proxy``)."""
    pod = ((spec or {}).get("template") or {}).get("spec") or {}
    chart_env = set(("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY")) if (values or {}).get("proxy") else set()
    return bool(pod.get("containers")) and not any(pod.get(key) for key in NEEDS_BUNDLE) and chart_env <= _env_names(pod)


def read_spec(hub, cluster, values):
    """The Deployment ``spec`` Fleet will adopt the agent of ``cluster`` (the hub's Cluster object) with, or None: no
    such Bundle (``manageAgent`` off, the Cluster not predefined), one the hub identity may not read, one Fleet did not
    make for that Cluster (``fleet_owned``), or one the pod could not start with (``startable``)."""
    meta = (cluster or {}).get("metadata") or {}
    if not meta.get("name"):
        return None
    try:
        bundle = hub.get(BUNDLE, agent_bundle_name(meta["name"]), meta.get("namespace"))
    except FleetOpsError:
        return None  # e.g. 403: the chart's Deployment is installed, as before
    if not fleet_owned(bundle, cluster):
        return None
    spec = deployment_spec(bundle)
    return spec if startable(spec, values) else None


# Helm's post-renderer (run as ``python <this> <spec.json>``): the chart's agent Deployment gets Fleet's ``spec`` unless
# the chart gives its container environment Fleet's spec lacks. Self-contained: Helm runs it outside the module.
POST_RENDERER = r'''
import json
import sys

import yaml


def env_names(spec):
    containers = ((spec.get("template") or {}).get("spec") or {}).get("containers") or []
    return set(entry.get("name") for container in containers for entry in container.get("env") or [])


def render(text, spec, name):
    documents = list(yaml.safe_load_all(text))
    for doc in documents:
        if (doc or {}).get("kind") == "Deployment" and (doc.get("metadata") or {}).get("name") == name:
            if env_names(doc.get("spec") or {}) <= env_names(spec):
                doc["spec"] = spec
    return yaml.safe_dump_all([doc for doc in documents if doc is not None], default_flow_style=False)


if __name__ == "__main__":
    with open(sys.argv[1]) as handle:
        sys.stdout.write(render(sys.stdin.read(), json.load(handle), sys.argv[2]))
'''


def post_renderer_files(workdir, spec, write_private_file):
    """``(script, spec file)`` written 0600 into ``workdir`` (the spec may carry the Cluster's agentEnvVars)."""
    script = write_private_file(workdir + "/fleet_agent_post_renderer.py", POST_RENDERER)
    spec_file = write_private_file(workdir + "/fleet_agent_deployment_spec.json", json.dumps(spec))
    return script, spec_file
