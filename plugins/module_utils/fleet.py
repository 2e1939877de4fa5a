# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rancher Fleet (fleet.cattle.io/v1alpha1): resources, pure rules and orchestration.

Facts below were read from Fleet v0.16.0 (the ClusterRegistrationToken and
ClusterRegistration handlers, the cluster import controller, the agent's
register.go and the fleet-agent chart), not guessed:

- A ClusterRegistrationToken gets a Secret of the same name (``status.secretName``),
  type ``fleet.cattle.io/cluster-registration-values``, whose ``values`` key holds
  the agent's values.yaml: clusterNamespace, apiServerURL, apiServerCA, token,
  systemRegistrationNamespace, tokenName. It appears asynchronously (fleet#707)
  and is removed by the controller when the token goes.
- ``spec.ttl`` must match ``^([0-9]+([.][0-9]+)?(ns|us|µs|ms|s|m|h))+$`` or be ``0``
  (CRD validation); expired tokens are deleted by the controller.
- The fleet-agent chart refuses any namespace but cattle-fleet-system, any
  release name but fleet-agent, and values without apiServerURL or tokenName.
- An agent registers with ``clientID`` (default: the kube-system Namespace UID);
  the hub binds it to the Cluster whose ``spec.clientID`` matches in the token's
  namespace, or creates ``cluster-<hash>``. ``status.agent.lastSeen`` is its check-in.
- Manager-initiated: the Secret that ``spec.kubeConfigSecret`` names holds the
  kubeconfig under the key ``value`` (the cluster-api format), optionally with
  ``apiServerURL``/``apiServerCA`` keys overriding the hub address the agent uses.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json
import os
import re
import secrets
import tempfile

from ansible_collections.fleetops.registration.plugins.module_utils.errors import (
    ConnectionFailure, FleetOpsError, ParameterError, WaitTimeout,
)
from ansible_collections.fleetops.registration.plugins.module_utils.helm import ChartSource, values_differ
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_client import (
    CONFIG_MAP, NAMESPACE, SECRET, Resource, clean, condition, ensure_object,
)
from ansible_collections.fleetops.registration.plugins.module_utils.kubeconfig import (
    kubeconfig_ca_pem, kubeconfig_secrets, kubeconfig_server, load_kubeconfig, read_pem,
)
from ansible_collections.fleetops.registration.plugins.module_utils.labels import (
    label_changes, label_patch, normalize_labels, reconcile_labels,
)
from ansible_collections.fleetops.registration.plugins.module_utils.module import Runner as Backend
from ansible_collections.fleetops.registration.plugins.module_utils.parsing import (
    REDACTED, b64, deep_merge, unb64, validate_dns_subdomain,
)
from ansible_collections.fleetops.registration.plugins.module_utils.times import parse_duration, parse_time

try:
    import yaml
except ImportError:  # pragma: no cover - PyYAML ships with ansible-core
    yaml = None

API_VERSION = "fleet.cattle.io/v1alpha1"
CLUSTER = Resource(API_VERSION, "Cluster", "clusters")
TOKEN = Resource(API_VERSION, "ClusterRegistrationToken", "clusterregistrationtokens")
REGISTRATION = Resource(API_VERSION, "ClusterRegistration", "clusterregistrations")

AGENT_NAMESPACE = "cattle-fleet-system"
AGENT_RELEASE = "fleet-agent"
AGENT_CREDENTIAL_SECRET = "fleet-agent"
VALUES_SECRET_TYPE = "fleet.cattle.io/cluster-registration-values"
VALUES_KEY = "values"
KUBECONFIG_KEY = "value"
API_SERVER_URL_KEY = "apiServerURL"
API_SERVER_CA_KEY = "apiServerCA"

FLEET_CONFIG_MAP = "fleet-controller"
MANAGE_AGENT_WARNING = (
    "Fleet's controller runs with manageAgent: false (ConfigMap %s/fleet-controller). Fleet v0.16.0 cannot import a cluster "
    "then: its import handler first deletes the agent bundle fleet-agent-<cluster>, which only exists with manageAgent on, "
    "and retries forever on 'not found'. Enable manageAgent, or register this cluster agent-initiated (fleet_agent)")

# Labels Fleet (and Rancher) manage on Cluster objects; ``labels_mode: replace`` keeps them.
MANAGED_LABEL_PREFIXES = ("fleet.cattle.io/", "management.cattle.io/", "provisioning.cattle.io/")
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "fleetops.registration"
OWNER_CLUSTER_LABEL = "fleetops.registration/cluster"

SECRET_VALUE_KEYS = ("token",)

# The CRD's own rule for spec.ttl (Fleet v0.16.0), so bad input fails before any API call.
_TTL_PATTERN = re.compile(u"^([0-9]+([.][0-9]+)?(ns|us|\u00b5s|ms|s|m|h))+$")
_TTL_MAX_SECONDS = 2562047 * 3600
_TTL_HINT = ("Use a Go duration with units ns, us, ms, s, m or h, e.g. 240h, 1h30m or 90s (no days or weeks, no sign); "
             "0 or no ttl means the token never expires")
_CLIENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,252}$")
_NAME_HINT = ("Use at most 63 lower-case letters, digits, '-' and '.', starting and ending with a letter or digit "
              "(Fleet copies the name into a label value)")


# ---------------------------------------------------------------------------
# Pure rules (unit tested directly)
# ---------------------------------------------------------------------------

def validate_name(value, param):
    """A Fleet object name: a DNS subdomain that also fits a label value (Fleet labels objects with it)."""
    validate_dns_subdomain(value, param)
    if len(value) > 63:
        raise ParameterError(param, "%r is longer than 63 characters" % value, _NAME_HINT)
    return value


def validate_ttl(ttl, param="ttl"):
    """Check ``ttl`` the way the ClusterRegistrationToken CRD does; return it as a string (None stays None)."""
    if ttl is None:
        return None
    text = str(ttl).strip()
    if text == "0":
        return text
    if text.startswith("-"):
        raise ParameterError(param, "%r is negative" % text, _TTL_HINT)
    if not _TTL_PATTERN.match(text):
        raise ParameterError(param, "%r is not a duration Fleet accepts" % text, _TTL_HINT)
    if len(text) > 32:
        raise ParameterError(param, "%r is longer than the 32 characters Fleet accepts" % text, _TTL_HINT)
    if parse_duration(text, param) > _TTL_MAX_SECONDS:
        raise ParameterError(param, "%r is longer than Go's maximum duration (2562047h)" % text, _TTL_HINT)
    return text


def same_ttl(live, desired):
    """Whether two TTL strings mean the same duration (``240h`` == ``240h0m0s``); None means unset."""
    if live in (None, "") or desired in (None, ""):
        return live in (None, "") and desired in (None, "")
    try:
        return parse_duration(live) == parse_duration(desired)
    except ParameterError:
        return False


def validate_client_id(value, param="client_id"):
    if not isinstance(value, str) or not _CLIENT_ID.match(value):
        raise ParameterError(param, "%r is not a usable client ID" % (value,),
                             "Use 1-253 letters, digits, '.', '_', ':' or '-' with no spaces; leave it unset to generate a random one")
    return value


def generate_client_id():
    """A client ID nobody can guess (the seeds: a guessable ID lets one cluster impersonate another)."""
    return secrets.token_hex(32)


def parse_values(text, param="values_file"):
    """Parse an agent values.yaml (as Fleet writes it) into a dict, checking what the chart needs."""
    try:
        data = yaml.safe_load(text) if text else None
    except yaml.YAMLError:
        raise ParameterError(param, "is not valid YAML", "Give the values.yaml that Fleet's registration token Secret holds")
    if not isinstance(data, dict):
        raise ParameterError(param, "is not a YAML mapping", "Give the values.yaml that Fleet's registration token Secret holds")
    if not data.get("token"):
        raise ParameterError(param, "has no token", "Give the values.yaml of a ClusterRegistrationToken (its Secret's 'values' key)")
    if not data.get("tokenName"):
        raise ParameterError(param, "has no tokenName, which the fleet-agent chart requires",
                             "Regenerate values.yaml from the token's Secret with a current Fleet, or read it from the hub with token_name")
    return data


def pick_api_server(explicit, from_values, from_hub):
    """The first of (parameter, token values, hub kubeconfig) that is set, and where it came from."""
    for value, source in ((explicit, "parameter"), (from_values, "token"), (from_hub, "hub_kubeconfig")):
        if value:
            return value, source
    return None, None


def build_agent_values(token_values, extra_values=None, api_server_url=None, api_server_ca=None, labels=None,
                       client_id=None):
    """The fleet-agent chart values: extra chart values, then the token's values, then explicit settings.

    Labels are strings (what ``--set-string labels.KEY=VALUE`` gives); the chart's
    own rules (apiServerURL and tokenName required, fixed namespace) are checked here
    so a bad call fails before Helm runs.
    """
    values = deep_merge(extra_values or {}, token_values or {})
    if api_server_url:
        values[API_SERVER_URL_KEY] = api_server_url
    if api_server_ca:
        values[API_SERVER_CA_KEY] = api_server_ca
    if labels:
        values["labels"] = normalize_labels(labels)
    if client_id:
        values["clientID"] = validate_client_id(client_id)
    if not values.get(API_SERVER_URL_KEY):
        raise ParameterError("api_server_url", "the hub's API server URL is unknown",
                             "Set api_server_url, or hub_kubeconfig so it can be read from there")
    if not values.get("tokenName") or not values.get("token"):
        raise ParameterError("token_name", "the values carry no registration token",
                             "Read them from the hub with token_name/token_namespace, or give values_file")
    internal = values.get("internal") or {}
    if internal.get("systemNamespace", AGENT_NAMESPACE) != AGENT_NAMESPACE or \
            internal.get("managedReleaseName", AGENT_RELEASE) != AGENT_RELEASE:
        raise ParameterError("values", "internal.systemNamespace/managedReleaseName differ from %s/%s" % (AGENT_NAMESPACE, AGENT_RELEASE),
                             "This module installs the agent only as release fleet-agent in cattle-fleet-system, as the chart requires")
    return values


def redact_values(values, reference=None):
    """Agent values safe to show: the token replaced; marked as changed when it differs from ``reference``'s."""
    if not values:
        return values or {}
    shown = copy.deepcopy(values)
    for key in SECRET_VALUE_KEYS:
        if shown.get(key):
            changed = reference is not None and (reference or {}).get(key) != values.get(key)
            shown[key] = REDACTED + (" (changed)" if changed else "")
    return shown


def check_release_identity(namespace, name):
    if namespace != AGENT_NAMESPACE:
        raise ParameterError("release_namespace", "the fleet-agent chart only installs into %s, not %r" % (AGENT_NAMESPACE, namespace),
                             "Remove release_namespace or set it to %s (Fleet's docs: 'the namespace must be cattle-fleet-system')"
                             % AGENT_NAMESPACE)
    if name != AGENT_RELEASE:
        raise ParameterError("release_name", "the fleet-agent chart only installs as release %s, not %r" % (AGENT_RELEASE, name),
                             "Remove release_name or set it to %s (the chart refuses any other name)" % AGENT_RELEASE)


def _read_file(path, base_dir, param, what):
    if not os.path.isabs(path) and base_dir:
        path = os.path.join(base_dir, path)
    if not os.path.isfile(path):
        raise ParameterError(param, "the kubeconfig's %s file %s does not exist" % (what, path),
                             "Fix the path, or give a kubeconfig with inline *-data fields")
    with open(path, "rb") as handle:
        return handle.read()


def portable_kubeconfig(config, base_dir=None, context=None, param="cluster_kubeconfig"):
    """A self-contained kubeconfig for Fleet's controller: one context, files inlined.

    Fleet reads the Secret on the hub, where the files a local kubeconfig names do
    not exist, and it uses the current context; so the chosen context is made
    current and certificate, key and token files are embedded.
    Returns ``(kubeconfig_dict, warnings)``.
    """
    if not isinstance(config, dict):
        raise ParameterError(param, "is not a kubeconfig mapping")
    ctx_name = context or config.get("current-context")
    if not ctx_name:
        raise ParameterError(param, "the kubeconfig has no current-context", "Set cluster_kubeconfig_context")
    ctx = _find(config.get("contexts"), ctx_name, "context", param)
    cluster = dict(_find(config.get("clusters"), ctx.get("cluster"), "cluster", param))
    user = dict(_find(config.get("users"), ctx.get("user"), "user", param)) if ctx.get("user") else {}
    if not cluster.get("server"):
        raise ParameterError(param, "the context %r points at a cluster without a server URL" % ctx_name)
    warnings = []
    if cluster.get("certificate-authority"):
        cluster["certificate-authority-data"] = b64(_read_file(cluster.pop("certificate-authority"), base_dir, param, "certificate-authority"))
    for key in ("client-certificate", "client-key"):
        if user.get(key):
            user[key + "-data"] = b64(_read_file(user.pop(key), base_dir, param, key))
    if user.get("tokenFile"):
        user["token"] = _read_file(user.pop("tokenFile"), base_dir, param, "tokenFile").decode("utf-8").strip()
    if user.get("exec") or user.get("auth-provider"):
        warnings.append("the kubeconfig's user %r authenticates with an exec or auth-provider plugin, which Fleet's controller "
                        "most likely cannot run; prefer a ServiceAccount token or a client certificate" % ctx.get("user"))
    if not any(user.get(k) for k in ("token", "client-key-data", "password", "exec", "auth-provider")):
        warnings.append("the kubeconfig's context %r carries no credentials" % ctx_name)
    context_entry = {"cluster": "cluster", "user": "user"}
    if ctx.get("namespace"):
        context_entry["namespace"] = ctx["namespace"]
    doc = {
        "apiVersion": "v1", "kind": "Config", "current-context": ctx_name, "preferences": {},
        "clusters": [{"name": "cluster", "cluster": cluster}],
        "users": [{"name": "user", "user": user}],
        "contexts": [{"name": ctx_name, "context": context_entry}],
    }
    return doc, warnings


def _find(items, name, what, param):
    for item in items or []:
        if item.get("name") == name:
            return item.get(what) or {}
    raise ParameterError(param, "the kubeconfig has no %s named %r" % (what, name),
                         "Check cluster_kubeconfig_context and the kubeconfig's contexts")


def dump_yaml(data):
    """Stable YAML text (sorted keys), so equal content compares equal from run to run."""
    return yaml.safe_dump(data, default_flow_style=False, sort_keys=True)


def desired_cluster_labels(current, labels, mode):
    """Result labels and the metadata.labels merge-patch value (None marks removals), or (current, None) when unmanaged."""
    if labels is None:
        return dict(current or {}), None
    result = reconcile_labels(current, labels, mode, owned=MANAGED_LABEL_PREFIXES)
    patch = label_patch(current, result)
    if patch is None:
        return result, None
    return result, dict(result, **dict((k, None) for k, v in patch.items() if v is None))


def cluster_summary(obj):
    """One Cluster as ``kubectl get clusters.fleet.cattle.io`` shows it, and more."""
    metadata = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    display = status.get("display") or {}
    agent = status.get("agent") or {}
    ready = condition(obj, "Ready")
    return {
        "name": metadata.get("name"),
        "namespace": metadata.get("namespace"),
        "labels": metadata.get("labels") or {},
        "client_id": spec.get("clientID"),
        "kube_config_secret": spec.get("kubeConfigSecret"),
        "paused": bool(spec.get("paused")),
        "bundles_ready": display.get("readyBundles"),
        "state": display.get("state"),
        "last_seen": agent.get("lastSeen"),
        "checked_in": bool(agent.get("lastSeen")),
        "agent_namespace": agent.get("namespace"),
        "cluster_namespace": status.get("namespace"),
        "api_server_url": status.get("apiServerURL"),
        "ready": ready.get("status") == "True",
        "ready_status": ready.get("status"),
        "ready_message": ready.get("message") or ready.get("reason"),
        "conditions": status.get("conditions") or [],
        "summary": status.get("summary") or {},
        "resource_counts": status.get("resourceCounts") or {},
        "created": metadata.get("creationTimestamp"),
        "deleting": bool(metadata.get("deletionTimestamp")),
    }


def registration_summary(obj):
    metadata = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    return {
        "name": metadata.get("name"),
        "namespace": metadata.get("namespace"),
        "client_id": spec.get("clientID"),
        "cluster_labels": spec.get("clusterLabels") or {},
        "cluster_name": status.get("clusterName"),
        "granted": bool(status.get("granted")),
        "token_name": (metadata.get("labels") or {}).get("fleet.cattle.io/registration-token"),
        "created": metadata.get("creationTimestamp"),
    }


def secret_belongs_to_token(secret, token):
    """A values Secret made for this token, not a leftover of a deleted token of the same name."""
    if not secret or secret.get("type") != VALUES_SECRET_TYPE or not (secret.get("data") or {}).get(VALUES_KEY):
        return False
    made = parse_time((secret.get("metadata") or {}).get("creationTimestamp"))
    born = parse_time(((token or {}).get("metadata") or {}).get("creationTimestamp"))
    return made is None or born is None or made >= born


def write_values_file(path, content, check_mode=False):
    """Write ``content`` to ``path`` with mode 0600; return True if the file changed (content or mode)."""
    path = os.path.abspath(os.path.expanduser(path))
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        raise ParameterError("values_dest", "directory %s does not exist" % directory, "Create it first or pick another path")
    if os.path.isfile(path):
        with open(path, "rb") as handle:
            same = handle.read() == content.encode("utf-8")
        mode_ok = (os.stat(path).st_mode & 0o777) == 0o600
        if same and mode_ok:
            return False
        if same and not check_mode:
            os.chmod(path, 0o600)
            return True
    if check_mode:
        return True
    fd, tmp = tempfile.mkstemp(prefix=".values-", dir=directory)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(content)
        os.replace(tmp, path)
    except Exception:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return True


def manage_agent_disabled(configmap):
    """Whether a fleet-controller ConfigMap says ``manageAgent: false`` (None when it cannot tell)."""
    text = ((configmap or {}).get("data") or {}).get("config")
    if not text:
        return None
    try:
        config = json.loads(text)
    except ValueError:
        return None
    return config.get("manageAgent") is False


def _hub_hint(exc):
    """Re-raise a hub connection failure naming the options that reach the hub."""
    return ConnectionFailure(exc.msg, "Check hub_kubeconfig, hub_context and hub_host: the hub's API server must be reachable "
                                      "from where the task runs", **exc.details)


# ---------------------------------------------------------------------------
# Orchestration
# ---------------------------------------------------------------------------

class TokenBackend(Backend):
    """fleet_registration_token: the token, Fleet's values Secret, and the local values.yaml."""

    def __init__(self, module):
        super(TokenBackend, self).__init__(module)
        self.name = validate_name(self.params["name"], "name")
        self.namespace = validate_name(self.params["namespace"], "namespace")
        self.ttl = validate_ttl(self.params.get("ttl"))

    def run(self):
        if self.params["state"] == "absent":
            return self.absent()
        return self.present()

    def _result(self, changed, token, before, after):
        status = (token or {}).get("status") or {}
        result = {
            "changed": changed, "name": self.name, "namespace": self.namespace,
            "ttl": ((token or {}).get("spec") or {}).get("ttl"),
            "expires": status.get("expires"),
            "secret_name": status.get("secretName") or None,
            "token": clean(token) if token else {},
        }
        if self.diff_mode:
            result["diff"] = {"before": clean(before) if before else {}, "after": clean(after) if after else {}}
        return result

    def present(self):
        current = self.kube.get(TOKEN, self.name, self.namespace)
        desired = {"metadata": {"name": self.name, "namespace": self.namespace}, "spec": {}}
        if self.ttl is not None:
            live_ttl = ((current or {}).get("spec") or {}).get("ttl")
            desired["spec"]["ttl"] = live_ttl if current and same_ttl(live_ttl, self.ttl) else self.ttl
        outcome = ensure_object(self.kube, TOKEN, desired, check_mode=self.check_mode)
        created = current is None
        token = outcome.after
        result = self._result(outcome.changed, token, current, outcome.after)
        wants_values = self.params.get("return_values") or self.params.get("values_dest")
        if self.check_mode and created:
            result["secret_name"] = self.name
            if self.params.get("values_dest"):
                result["values_dest_changed"] = True
                result["changed"] = True
            return result
        try:
            secret, token = self._values_secret(token)
        except FleetOpsError as exc:
            if created and not self.check_mode:
                # Leave nothing half-made: a token whose values never appeared is removed again.
                self.kube.delete(TOKEN, self.name, self.namespace)
                exc.msg += " (the token this run created was deleted again)"
            raise
        result.update(self._result(result["changed"], token, current, outcome.after))
        if secret is None:
            if wants_values:
                raise ParameterError("wait", "Fleet has not written the token's values Secret yet",
                                     "Set wait: true (the default) to wait for it, or run again")
            return result
        result["secret_name"] = secret["metadata"]["name"]
        text = unb64(secret["data"][VALUES_KEY], "values")
        try:
            token_value = (yaml.safe_load(text) or {}).get("token")
        except (yaml.YAMLError, AttributeError):
            token_value = None
        if self.params.get("return_values"):
            result["values"] = text
            if not self.module.no_log:
                self.warn("return_values is set: the result holds the registration token; add no_log: true to this task")
        else:
            self.module.hide(text, token_value, b64(token_value) if token_value else None)
        if self.params.get("values_dest"):
            dest_changed = write_values_file(self.params["values_dest"], text, self.check_mode)
            result["values_dest"] = os.path.abspath(os.path.expanduser(self.params["values_dest"]))
            result["values_dest_changed"] = dest_changed
            result["changed"] = result["changed"] or dest_changed
        return result

    def _values_secret(self, token):
        """Fleet's values Secret for the token (waited for when ``wait``), and the token as last read."""
        state = {"token": token}

        def fetch():
            live = self.kube.get(TOKEN, self.name, self.namespace)
            if live is None:
                raise ParameterError(
                    "ttl", "Fleet deleted ClusterRegistrationToken %s/%s while the module waited for its Secret" % (self.namespace, self.name),
                    "The token expired (ttl too short), or the controller requires a TTL (FLEET_REGISTRATION_TOKEN_TTL_REQUIRED); "
                    "set a longer ttl")
            state["token"] = live
            name = ((live.get("status") or {}).get("secretName")) or self.name
            secret = self.kube.get(SECRET, name, self.namespace)
            return secret if secret_belongs_to_token(secret, live) else None

        if not self.params.get("wait"):
            return fetch(), state["token"]
        try:
            secret = self.module.waiter.until(
                fetch, lambda s: s is not None, "the values Secret of ClusterRegistrationToken %s/%s" % (self.namespace, self.name),
                "wait_timeout: Fleet's controller writes the Secret once kube-controller-manager has filled the token's "
                "ServiceAccount Secret; check that fleet-controller (agentmanagement) runs and that nothing (a ResourceQuota on "
                "secrets, say) blocks Secrets in namespace %s, or raise wait_timeout" % self.namespace)
        except WaitTimeout as exc:
            raise WaitTimeout(exc.msg, exc.hint, param="wait_timeout")
        return secret, state["token"]

    def absent(self):
        current = self.kube.get(TOKEN, self.name, self.namespace)
        changed = False
        if current is not None:
            self.kube.delete(TOKEN, self.name, self.namespace, dry_run=self.check_mode)
            changed = True
            if self.params.get("wait") and not self.check_mode:
                self.module.waiter.until(lambda: self.kube.get(TOKEN, self.name, self.namespace), "absent",
                                         "ClusterRegistrationToken %s/%s to be deleted" % (self.namespace, self.name))
        result = self._result(changed, None, current, None)
        dest = self.params.get("values_dest")
        if dest:
            path = os.path.abspath(os.path.expanduser(dest))
            result["values_dest"] = path
            if os.path.exists(path):
                if not self.check_mode:
                    os.unlink(path)
                result["values_dest_changed"] = True
                result["changed"] = True
        return result


class ClusterBackend(Backend):
    """fleet_cluster: a predefined (agent-initiated) or imported (manager-initiated) Cluster."""

    def __init__(self, module):
        super(ClusterBackend, self).__init__(module)
        self.name = validate_name(self.params["name"], "name")
        self.namespace = validate_name(self.params["namespace"], "namespace")
        secret_name = self.params.get("kubeconfig_secret")
        if secret_name:
            validate_dns_subdomain(secret_name, "kubeconfig_secret")

    def run(self):
        if self.params["state"] == "absent":
            return self.absent()
        return self.present()

    # -- present ---------------------------------------------------------

    def _kubeconfig_text(self):
        """The portable kubeconfig the Secret should hold, or None when none was given."""
        source = self.params.get("cluster_kubeconfig")
        content = self.params.get("cluster_kubeconfig_content")
        if source is None and content is None:
            return None
        if content is not None:
            param = "cluster_kubeconfig_content"
            try:
                config = yaml.safe_load(content)
            except yaml.YAMLError:
                raise ParameterError(param, "is not valid YAML", "Give the text of a kubeconfig file")
            if not isinstance(config, dict):
                raise ParameterError(param, "is not a kubeconfig", "Give the text of a kubeconfig file")
            base_dir = os.getcwd()
        else:
            param = "cluster_kubeconfig"
            if isinstance(source, str) and source.strip().startswith("apiVersion"):
                raise ParameterError(param, "looks like kubeconfig text, not a path", "Pass kubeconfig text as cluster_kubeconfig_content")
            config, base_dir = load_kubeconfig(source, param=param)
        self.module.hide(*kubeconfig_secrets(config))
        doc, warnings = portable_kubeconfig(config, base_dir, self.params.get("cluster_kubeconfig_context"), param)
        self.module.hide(*kubeconfig_secrets(doc))
        for text in warnings:
            self.warn(text)
        return dump_yaml(doc)

    def _secret_desired(self, secret_name, kubeconfig_text):
        data = {KUBECONFIG_KEY: b64(kubeconfig_text)}
        if self.params.get("agent_api_server_url"):
            data[API_SERVER_URL_KEY] = b64(self.params["agent_api_server_url"])
        ca = read_pem(self.params.get("agent_api_server_ca"), "agent_api_server_ca")
        if ca:
            data[API_SERVER_CA_KEY] = b64(ca)
        return {
            "metadata": {"name": secret_name, "namespace": self.namespace,
                         "labels": {MANAGED_BY_LABEL: MANAGED_BY, OWNER_CLUSTER_LABEL: self.name}},
            "data": data,
        }

    def _check_client_id_free(self, client_id):
        for other in self.kube.list(CLUSTER, self.namespace):
            meta = other.get("metadata") or {}
            if meta.get("name") != self.name and (other.get("spec") or {}).get("clientID") == client_id:
                raise ParameterError("client_id", "is already used by Cluster %s/%s" % (self.namespace, meta.get("name")),
                                     "Give each cluster its own client ID (or leave client_id unset to generate one); "
                                     "two clusters with one ID would share an identity")

    def present(self):
        labels = normalize_labels(self.params.get("labels"), "labels") if self.params.get("labels") is not None else None
        kubeconfig_text = self._kubeconfig_text()
        if (self.params.get("agent_api_server_url") or self.params.get("agent_api_server_ca")) and kubeconfig_text is None:
            raise ParameterError("agent_api_server_url", "only applies to a manager-initiated cluster",
                                 "Give cluster_kubeconfig or cluster_kubeconfig_content too, or drop agent_api_server_url/agent_api_server_ca")
        client_id = self.params.get("client_id")
        if client_id is not None:
            validate_client_id(client_id)
        current = self.kube.get(CLUSTER, self.name, self.namespace)
        current_spec = (current or {}).get("spec") or {}
        generated = False
        if client_id:
            pass
        elif current_spec.get("clientID"):
            client_id = current_spec["clientID"]
        else:
            client_id = generate_client_id()
            generated = True
        if client_id != current_spec.get("clientID"):
            self._check_client_id_free(client_id)

        secret_name = self.params.get("kubeconfig_secret")
        if kubeconfig_text is not None and not secret_name:
            secret_name = current_spec.get("kubeConfigSecret") or "%s-kubeconfig" % self.name
        secret_outcome = None
        if kubeconfig_text is not None:
            secret_outcome = ensure_object(self.kube, SECRET, self._secret_desired(secret_name, kubeconfig_text),
                                           check_mode=self.check_mode, hide_data=True)
        elif secret_name:
            existing = self.kube.get(SECRET, secret_name, self.namespace)
            if not existing or not (existing.get("data") or {}).get(KUBECONFIG_KEY):
                raise ParameterError("kubeconfig_secret", "Secret %s/%s %s" % (
                    self.namespace, secret_name, "has no 'value' key" if existing else "does not exist"),
                    "Create it with the kubeconfig under the key 'value' (the cluster-api format), or give cluster_kubeconfig")

        result_labels, labels_value = desired_cluster_labels((current or {}).get("metadata", {}).get("labels"), labels,
                                                             self.params.get("labels_mode") or "merge")
        desired = {"metadata": {"name": self.name, "namespace": self.namespace}, "spec": {"clientID": client_id}}
        if labels_value is not None:
            desired["metadata"]["labels"] = labels_value if current else result_labels
        elif current is None and result_labels:
            desired["metadata"]["labels"] = result_labels
        if secret_name:
            desired["spec"]["kubeConfigSecret"] = secret_name
        try:
            outcome = ensure_object(self.kube, CLUSTER, desired, check_mode=self.check_mode)
        except FleetOpsError:
            if secret_outcome is not None and secret_outcome.before is None and not self.check_mode:
                self.kube.delete(SECRET, secret_name, self.namespace)
            raise
        changed = outcome.changed or bool(secret_outcome and secret_outcome.changed)
        cluster = outcome.after
        if secret_outcome is not None and not self.check_mode:
            changed = self._own_secret(secret_name, cluster) or changed
        import_blocked = bool(secret_name) and self._import_blocked()
        if import_blocked:
            self.warn(MANAGE_AGENT_WARNING % AGENT_NAMESPACE)
        if self.params.get("wait") and not self.check_mode:
            cluster = self.module.waiter.until(
                lambda: self.kube.get(CLUSTER, self.name, self.namespace), "fleet_cluster_checked_in",
                "the agent of Cluster %s/%s to check in" % (self.namespace, self.name),
                (MANAGE_AGENT_WARNING % AGENT_NAMESPACE) if import_blocked else
                "wait_timeout: install the agent (fleet_agent) with this client ID, or for an imported cluster check that "
                "Fleet's controller can reach the cluster through the kubeconfig Secret")
        result = {
            "changed": changed,
            "name": self.name, "namespace": self.namespace,
            "client_id": client_id, "client_id_generated": generated,
            "kubeconfig_secret": secret_name,
            "label_changes": label_changes((current or {}).get("metadata", {}).get("labels"), result_labels)
            if labels is not None else label_changes({}, {}),
            "cluster": cluster_summary(cluster or {}),
        }
        if self.diff_mode:
            before = {"cluster": clean(current) if current else {}}
            after = {"cluster": outcome.after or {}}
            if secret_outcome is not None:
                before["kubeconfig_secret"] = secret_outcome.before or {}
                after["kubeconfig_secret"] = secret_outcome.after or {}
            result["diff"] = {"before": before, "after": after}
        return result

    def _import_blocked(self):
        """Whether the hub's Fleet is configured so that it cannot import (best effort: unreadable means no)."""
        try:
            return bool(manage_agent_disabled(self.kube.get(CONFIG_MAP, FLEET_CONFIG_MAP, AGENT_NAMESPACE)))
        except FleetOpsError:
            return False

    def _own_secret(self, secret_name, cluster):
        """Make the kubeconfig Secret owned by the Cluster, so deleting the Cluster by any means removes it."""
        uid = ((cluster or {}).get("metadata") or {}).get("uid")
        if not uid:
            cluster = self.kube.get(CLUSTER, self.name, self.namespace)
            uid = ((cluster or {}).get("metadata") or {}).get("uid")
        secret = self.kube.get(SECRET, secret_name, self.namespace)
        if not uid or not secret:
            return False
        owners = (secret.get("metadata") or {}).get("ownerReferences") or []
        if any(o.get("uid") == uid for o in owners):
            return False
        owners = [o for o in owners if not (o.get("kind") == "Cluster" and o.get("apiVersion") == API_VERSION)]
        owners.append({"apiVersion": API_VERSION, "kind": "Cluster", "name": self.name, "uid": uid})
        self.kube.patch(SECRET, secret_name, {"metadata": {"ownerReferences": owners}}, self.namespace)
        return True

    # -- absent ----------------------------------------------------------

    def _owned_secret(self, name):
        if not name:
            return None
        secret = self.kube.get(SECRET, name, self.namespace)
        labels = ((secret or {}).get("metadata") or {}).get("labels") or {}
        if labels.get(MANAGED_BY_LABEL) == MANAGED_BY and labels.get(OWNER_CLUSTER_LABEL) == self.name:
            return secret
        return None

    def absent(self):
        current = self.kube.get(CLUSTER, self.name, self.namespace)
        spec = (current or {}).get("spec") or {}
        secret_name = spec.get("kubeConfigSecret") or self.params.get("kubeconfig_secret") or "%s-kubeconfig" % self.name
        secret = self._owned_secret(secret_name)
        registrations = []
        if current is not None and spec.get("clientID"):
            registrations = [r for r in self.kube.list(REGISTRATION, self.namespace)
                             if (r.get("spec") or {}).get("clientID") == spec["clientID"]]
        changed = current is not None or secret is not None
        if current is not None:
            self.kube.delete(CLUSTER, self.name, self.namespace, dry_run=self.check_mode)
        if not self.check_mode:
            # Fleet leaves ClusterRegistrations of a removed cluster behind (fleet#1651).
            for reg in registrations:
                self.kube.delete(REGISTRATION, reg["metadata"]["name"], self.namespace)
        if secret is not None:
            self.kube.delete(SECRET, secret_name, self.namespace, dry_run=self.check_mode)
        if current is not None and self.params.get("wait") and not self.check_mode:
            self.module.waiter.until(lambda: self.kube.get(CLUSTER, self.name, self.namespace), "absent",
                                     "Cluster %s/%s to be deleted" % (self.namespace, self.name),
                                     "wait_timeout: Fleet's controller removes its finalizer once it has cleaned up; check that it runs")
        result = {
            "changed": changed, "name": self.name, "namespace": self.namespace,
            "client_id": spec.get("clientID"),
            "kubeconfig_secret": secret_name if secret is not None else None,
            "removed_registrations": sorted(r["metadata"]["name"] for r in registrations),
            "cluster": {},
        }
        if self.diff_mode:
            before = {"cluster": clean(current) if current else {}}
            if secret is not None:
                before["kubeconfig_secret"] = clean(secret, hide_data=True)
            result["diff"] = {"before": before, "after": {}}
        return result


class ClusterInfoBackend(Backend):
    """fleet_cluster_info: read-only view of Clusters (and their registrations)."""

    def __init__(self, module):
        super(ClusterInfoBackend, self).__init__(module)
        if self.params.get("name") and not self.params.get("namespace"):
            raise ParameterError("namespace", "is required with name", "Give the Cluster's namespace (e.g. fleet-default)")

    def run(self):
        name = self.params.get("name")
        namespace = self.params.get("namespace")
        if name:
            obj = self.kube.get(CLUSTER, name, namespace)
            items = [obj] if obj else []
        else:
            items = self.kube.list(CLUSTER, namespace, label_selector=self.params.get("label_selector"))
        items.sort(key=lambda o: (o["metadata"].get("namespace"), o["metadata"]["name"]))
        clusters = [cluster_summary(o) for o in items]
        if self.params.get("include_registrations"):
            regs = {}
            for ns in sorted(set(c["namespace"] for c in clusters)):
                for reg in self.kube.list(REGISTRATION, ns):
                    summary = registration_summary(reg)
                    regs.setdefault((ns, summary["client_id"]), []).append(summary)
            for item in clusters:
                item["registrations"] = sorted(regs.get((item["namespace"], item["client_id"]), []), key=lambda r: r["created"] or "")
        return {"changed": False, "clusters": clusters}


class AgentBackend(Backend):
    """fleet_agent: the fleet-agent Helm release on a member, from a token's values."""

    def __init__(self, module):
        super(AgentBackend, self).__init__(module)
        check_release_identity(self.params.get("release_namespace"), self.params.get("release_name"))
        self.namespace = AGENT_NAMESPACE
        self.release = AGENT_RELEASE

    def run(self):
        if self.params["state"] == "absent":
            return self.absent()
        return self.present()

    def _hub_configured(self):
        return bool(self.params.get("hub_kubeconfig") or self.params.get("hub_host"))

    def hub(self):
        try:
            return self.module.kube("hub_")
        except ConnectionFailure as exc:
            raise _hub_hint(exc)

    def _hub_get(self, resource, name, namespace):
        try:
            return self.hub().get(resource, name, namespace)
        except ConnectionFailure as exc:
            raise _hub_hint(exc)

    def _hub_list(self, resource, namespace):
        try:
            return self.hub().list(resource, namespace)
        except ConnectionFailure as exc:
            raise _hub_hint(exc)

    def token_values(self):
        """The registration values (a dict) from values_file or from the token's Secret on the hub."""
        if self.params.get("values_file"):
            path = os.path.expanduser(self.params["values_file"])
            if not os.path.isfile(path):
                raise ParameterError("values_file", "%s does not exist" % path,
                                     "Write it with fleet_registration_token's values_dest, or read the values from the hub with token_name")
            with open(path) as handle:
                text = handle.read()
            values = parse_values(text, "values_file")
            self._hide_values(values)
            return values
        name = self.params["token_name"]
        namespace = self.params.get("token_namespace")
        if not self._hub_configured():
            raise ParameterError("hub_kubeconfig", "reading token %s/%s needs access to the hub" % (namespace, name),
                                 "Set hub_kubeconfig (and hub_context) or hub_host, or give values_file instead")
        token = self._hub_get(TOKEN, name, namespace)
        if token is None:
            raise ParameterError("token_name", "ClusterRegistrationToken %s/%s does not exist on the hub" % (namespace, name),
                                 "Create it with fleet_registration_token, or check token_name/token_namespace")
        secret_name = ((token.get("status") or {}).get("secretName")) or name
        secret = self._hub_get(SECRET, secret_name, namespace)
        if not secret_belongs_to_token(secret, token):
            raise ParameterError("token_name", "token %s/%s has no values Secret yet" % (namespace, name),
                                 "Run fleet_registration_token with wait: true first, so Fleet has written the Secret")
        text = unb64(secret["data"][VALUES_KEY], "values")
        self.module.hide(text)
        values = parse_values(text, "token_name")
        self._hide_values(values)
        return values

    def _hide_values(self, values):
        """Mask the token of ``values`` everywhere; return the strings Helm must scrub from its messages."""
        token = (values or {}).get("token")
        if not token:
            return []
        self.module.hide(token, b64(token))
        return [token, b64(token)]

    def _hub_endpoint(self):
        """The hub's URL and CA from the hub connection settings, or (None, None)."""
        if not self._hub_configured():
            return None, None
        settings = self.module.settings("hub_")
        url = settings.host
        ca = None
        if settings.ca_cert:
            ca = read_pem(settings.ca_cert, "hub_ca_cert")
        if isinstance(settings.kubeconfig, (str, dict)) and settings.kubeconfig:
            config, base_dir = settings.kubeconfig_dict()
            if not url:
                url = kubeconfig_server(config, settings.context, "hub_kubeconfig")
            if ca is None:
                ca = kubeconfig_ca_pem(config, settings.context, base_dir, "hub_kubeconfig")
        return url, ca

    def desired(self):
        token_values = self.token_values()
        extra = self.params.get("values") or {}
        for key in ("token", "tokenName"):
            if key in extra:
                raise ParameterError("values", "must not set %s" % key, "The registration token comes from token_name or values_file")
        hub_url, hub_ca = (None, None)
        if not (self.params.get("api_server_url") or token_values.get(API_SERVER_URL_KEY)) or \
                not (self.params.get("api_server_ca") or token_values.get(API_SERVER_CA_KEY)):
            hub_url, hub_ca = self._hub_endpoint()
        url, url_source = pick_api_server(self.params.get("api_server_url"), token_values.get(API_SERVER_URL_KEY), hub_url)
        ca, ca_source = pick_api_server(read_pem(self.params.get("api_server_ca"), "api_server_ca"),
                                        token_values.get(API_SERVER_CA_KEY), hub_ca)
        if url and not url.startswith("https://"):
            raise ParameterError("api_server_url", "%r is not an https:// URL" % url, "Give the hub API server's https:// URL")
        values = build_agent_values(token_values, extra, url, ca, self.params.get("labels"), self.params.get("client_id"))
        return values, {"api_server_url": url_source, "api_server_ca": ca_source}

    def _desired_chart_version(self, helm, chart):
        metadata = chart.local_metadata()
        if metadata is not None:
            return str(metadata.get("version"))
        if chart.version:
            return chart.version
        return str(helm.show_chart(chart).get("version"))

    def present(self):
        if not self.params.get("chart_ref"):
            raise ParameterError("chart_ref", "is required with state=present",
                                 "Give a local chart directory or .tgz (e.g. from the rancher/fleet Go module's charts/fleet-agent), "
                                 "an oci:// reference, or fleet-agent with chart_repo_url")
        chart = ChartSource(self.params["chart_ref"], self.params.get("chart_repo_url"), self.params.get("chart_version"))
        values, sources = self.desired()
        helm = self.module.helm(secrets=self._hide_values(values))
        release = helm.release(self.release, self.namespace)
        before = release
        live = helm.values(self.release, self.namespace) if release else None
        helm.secrets.extend(self._hide_values(live))
        version = self._desired_chart_version(helm, chart)
        reasons = []
        if release is None:
            reasons.append("not installed")
        else:
            if release.get("status") != "deployed":
                reasons.append("release status is %s" % release.get("status"))
            if release.get("chart_version") != version:
                reasons.append("chart version %s -> %s" % (release.get("chart_version"), version))
            if values_differ(live, values):
                reasons.append("values differ")
        managed = self._fleet_managed(helm)
        if reasons and managed:
            # Fleet (manageAgent, its default) has adopted the agent as its own release: upgrades are Fleet's job now,
            # and a Helm upgrade of fleet-agent would fight it over the objects' ownership.
            self.warn("the agent on this cluster is managed by Fleet (release %s), so fleet-agent was not changed (%s); "
                      "Fleet upgrades its agents itself, and the registration values only matter for a new registration"
                      % (managed[0], ", ".join(reasons)))
            reasons = []
        changed = bool(reasons)
        seen_before = None
        if self.params.get("wait") and not self.check_mode:
            find_cluster = self._agent_cluster_finder(values)
            if changed:
                # The previous agent's check-in must not count as the new one's (a re-registration would look done).
                previous = find_cluster()
                seen_before = parse_time((((previous or {}).get("status") or {}).get("agent") or {}).get("lastSeen"))
        if changed:
            try:
                helm.upgrade_install(self.release, chart, self.namespace, values, create_namespace=True, dry_run=self.check_mode)
            except FleetOpsError:
                if release is None and not self.check_mode and helm.release(self.release, self.namespace):
                    # A first install that failed leaves a failed release behind; remove it so a re-run starts clean.
                    helm.uninstall(self.release, self.namespace)
                raise
            if not self.check_mode:
                release = helm.release(self.release, self.namespace)
        result = {
            "changed": changed, "reasons": reasons,
            "release": release or {"name": self.release, "namespace": self.namespace},
            "fleet_managed_releases": managed,
            "chart_version": version,
            "values": redact_values(values),
            "sources": sources,
        }
        if self.diff_mode:
            result["diff"] = {
                "before": {"chart_version": before.get("chart_version"), "values": redact_values(live)} if before else {},
                "after": {"chart_version": version, "values": redact_values(values, live)},
            }
        if self.params.get("wait") and not self.check_mode:
            result["cluster"] = self._wait_for_checkin(find_cluster, seen_before)
        return result

    def _agent_cluster_finder(self, values):
        """A function returning the hub's Cluster this agent registers as (by client ID), or None."""
        if not self._hub_configured():
            raise ParameterError("wait", "waiting for the hub to see the cluster needs access to the hub",
                                 "Set hub_kubeconfig (or hub_host), or wait: false")
        client_id = values.get("clientID")
        if not client_id:
            kube_system = self.module.kube().get(NAMESPACE, "kube-system")
            client_id = ((kube_system or {}).get("metadata") or {}).get("uid")
        namespace = values.get("clusterNamespace")
        if not client_id or not namespace:
            raise ParameterError("wait", "cannot tell which Cluster the agent registers as",
                                 "Set client_id, or wait: false")

        def fetch():
            for cluster in self._hub_list(CLUSTER, namespace):
                if (cluster.get("spec") or {}).get("clientID") == client_id:
                    return cluster
            return None

        fetch.description = "the hub to see the agent with client ID %s check in to namespace %s" % (client_id, namespace)
        return fetch

    def _wait_for_checkin(self, fetch, seen_before=None):
        """Wait for a check-in; after an install or upgrade, one newer than ``seen_before`` (the old agent's last one)."""
        def checked_in(cluster):
            seen = parse_time((((cluster or {}).get("status") or {}).get("agent") or {}).get("lastSeen"))
            return seen is not None and (seen_before is None or seen > seen_before)

        cluster = self.module.waiter.until(
            fetch, checked_in, fetch.description,
            "wait_timeout: look at the agent's logs on the member (kubectl -n cattle-fleet-system logs -l app=fleet-agent); "
            "a wrong apiServerURL/apiServerCA or an expired token are the usual causes")
        return cluster_summary(cluster)

    def _fleet_managed(self, helm):
        """Names of the releases Fleet made to manage this agent itself (``fleet-agent-<cluster>``)."""
        _rc, out, _err = helm.run(["list", "--namespace", self.namespace, "--all", "--max", "0", "--output", "json"])
        return sorted(r["name"] for r in json.loads(out or "[]") if r.get("name", "").startswith(self.release + "-"))

    def absent(self):
        helm = self.module.helm()
        release = helm.release(self.release, self.namespace)
        managed = self._fleet_managed(helm)
        kube = self.module.kube()
        credential = kube.get(SECRET, AGENT_CREDENTIAL_SECRET, self.namespace)
        if not self.check_mode:
            if release is not None:
                helm.uninstall(self.release, self.namespace)
            for name in managed:
                helm.uninstall(name, self.namespace)
        if credential is not None:
            # The agent writes its hub credential itself; Helm does not know it and would leave it behind.
            kube.delete(SECRET, AGENT_CREDENTIAL_SECRET, self.namespace, dry_run=self.check_mode)
        result = {
            "changed": release is not None or credential is not None or bool(managed),
            "release": release or {"name": self.release, "namespace": self.namespace},
            "fleet_managed_releases": managed,
            "removed_credential": credential is not None,
        }
        if self.diff_mode:
            result["diff"] = {"before": {"chart_version": (release or {}).get("chart_version")} if release else {}, "after": {}}
        return result
