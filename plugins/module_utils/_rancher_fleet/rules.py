# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rancher Fleet's pure rules: input checks, agent values, label and token decisions (unit tested directly)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import datetime
import json
import os
import re
import secrets

from ansible_collections.fleetops.registration.plugins.module_utils.errors import ParameterError
from ansible_collections.fleetops.registration.plugins.module_utils.helm import ReleasePlan
from ansible_collections.fleetops.registration.plugins.module_utils.kubeconfig import certificate_blocks, resolve_context
from ansible_collections.fleetops.registration.plugins.module_utils.labels import (
    MANAGED_BY, MANAGED_BY_LABEL, label_patch, label_value_problem, normalize_labels, reconcile_labels,
)
from ansible_collections.fleetops.registration.plugins.module_utils.parsing import REDACTED, b64, deep_merge, load_yaml, validate_dns_subdomain
from ansible_collections.fleetops.registration.plugins.module_utils.times import format_time, parse_duration, parse_time, utcnow
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.agent_settings import ENV_SECRET_LABEL
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.resources import (
    AGENT_NAMESPACE, AGENT_RELEASE, API_SERVER_CA_KEY, API_SERVER_URL_KEY, EXPIRES_ANNOTATION, LOCK_ANNOTATION, MANAGED_LABEL_PREFIXES,
    OWNER_CLUSTER_LABEL, RUN_LABEL, SECRET_VALUE_KEYS, VALUES_KEY, VALUES_SECRET_TYPE,
)

from ansible_collections.fleetops.registration.plugins.module_utils._deps import yaml

# The CRD's own rule for spec.ttl (Fleet v0.16.0), so bad input fails before any API call.
_TTL_PATTERN = re.compile(u"^([0-9]+([.][0-9]+)?(ns|us|\u00b5s|ms|s|m|h))+$")
_TTL_MAX_SECONDS = 2562047 * 3600
_TTL_HINT = ("Use a Go duration with units ns, us, ms, s, m or h, e.g. 12h, 1h30m or 90s (no days or weeks, no sign)")
# A registration token lets any cluster register until it expires: one that never expires is refused.
NO_EXPIRY_HINT = ("Give the token a lifetime, as short as the run allows, e.g. 15m or 1h (with the roles: "
                  "member_join_fleet_token_ttl, in AWX the survey's 'Registration token lifetime'); the run revokes it "
                  "once the agents have checked in")
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


# A registration token lets any cluster register until it expires, and a run killed as a whole (a cancelled AWX job)
# cannot revoke it: a day at most unless max_ttl says otherwise.
DEFAULT_MAX_TTL = "24h"
MAX_TTL_HINT = ("Give a shorter ttl: the run revokes its token once the agents have checked in, so a run's length is "
                "enough. To allow a longer one knowingly, raise max_ttl (inventory: fleetops_fleet_token_max_ttl)")


def validate_ttl(ttl, param="ttl", max_ttl=None, max_param="max_ttl"):
    """Check ``ttl`` the way the ClusterRegistrationToken CRD does, refuse a TTL that never expires (Fleet reads a zero
    duration as no expiry) and one longer than ``max_ttl`` (DEFAULT_MAX_TTL when None); return it as a string (None
    stays None: an existing token keeps its TTL)."""
    if ttl is None:
        return None
    text, seconds = _token_duration(ttl, param)
    ceiling_text, ceiling = _token_duration(DEFAULT_MAX_TTL if max_ttl in (None, "") else max_ttl, max_param)
    if seconds > ceiling:
        raise ParameterError(param, "%r is longer than %s, the longest a registration token may live (%s)" % (
            text, ceiling_text, max_param), MAX_TTL_HINT)
    return text


def validate_max_ttl(max_ttl, param="max_ttl"):
    """A ceiling for ``ttl``: a duration a token may have (so never 0); None is DEFAULT_MAX_TTL."""
    return _token_duration(DEFAULT_MAX_TTL if max_ttl in (None, "") else max_ttl, param)[0]


def _token_duration(ttl, param):
    """``(text, seconds)`` of a token TTL as the CRD accepts it; a duration that means no expiry is refused."""
    text = str(ttl).strip()
    if text == "0":
        raise ParameterError(param, "%r means the registration token never expires" % text, NO_EXPIRY_HINT)
    if text.startswith("-"):
        raise ParameterError(param, "%r is negative" % text, _TTL_HINT)
    if not _TTL_PATTERN.match(text):
        raise ParameterError(param, "%r is not a duration Fleet accepts" % text, _TTL_HINT)
    if len(text) > 32:
        raise ParameterError(param, "%r is longer than the 32 characters Fleet accepts" % text, _TTL_HINT)
    seconds = parse_duration(text, param)
    if seconds > _TTL_MAX_SECONDS:
        raise ParameterError(param, "%r is longer than Go's maximum duration (2562047h)" % text, _TTL_HINT)
    if seconds < 1e-9:  # below Go's nanosecond a duration is 0
        raise ParameterError(param, "%r means the registration token never expires" % text, NO_EXPIRY_HINT)
    return text, seconds


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
        data = load_yaml(text) if text else None
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
        raise ParameterError("hub_api_server_url", "the hub's API server URL is unknown",
                             "Set hub_api_server_url, or a hub connection (hub_kubeconfig, hub_context) to read it from")
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
        content = handle.read()
    if not _looks_like(what, content):
        raise ParameterError(param, "the kubeconfig's %s file %s does not hold %s; it is not copied into the Secret on "
                             "the hub" % (what, path, _EXPECTED[what]), "Point %s at the right file" % what)
    return content


# What each file a kubeconfig names must hold before its content goes into a Secret on the hub: a kubeconfig that
# names an unrelated file (by mistake or on purpose) must not ship that file to the hub.
_EXPECTED = {"certificate-authority": "a PEM certificate", "client-certificate": "a PEM certificate",
             "client-key": "a PEM private key", "tokenFile": "a single-line token"}
_PEM_KEY = re.compile(rb"-----BEGIN ([A-Z]+ )?PRIVATE KEY-----")
_TOKEN = re.compile(rb"[\x21-\x7e]+\s*")


def _looks_like(what, content):
    if what == "client-key":
        return bool(_PEM_KEY.search(content))
    if what == "tokenFile":
        return bool(_TOKEN.fullmatch(content.strip() + b"\n"))
    return b"-----BEGIN CERTIFICATE-----" in content


def portable_kubeconfig(config, base_dir=None, context=None, param="cluster_kubeconfig"):
    """A self-contained kubeconfig for Fleet's controller: one context, files inlined.

    Fleet reads the Secret on the hub, where the files a local kubeconfig names do
    not exist, and it uses the current context; so the chosen context is made
    current and certificate, key and token files are embedded.
    Returns ``(kubeconfig_dict, warnings)``.
    """
    if not isinstance(config, dict):
        raise ParameterError(param, "is not a kubeconfig mapping")
    ctx_name, ctx, cluster, user = resolve_context(config, context, param, "Check cluster_kubeconfig_context and the kubeconfig's contexts")
    cluster, user = dict(cluster), dict(user)
    if not cluster.get("server"):
        raise ParameterError(param, "the context %r points at a cluster without a server URL" % ctx_name)
    warnings = []
    if cluster.get("certificate-authority"):
        ca_pem = _read_file(cluster.pop("certificate-authority"), base_dir, param, "certificate-authority")
        cluster["certificate-authority-data"] = b64(certificate_blocks(ca_pem.decode("utf-8", "replace")).encode("utf-8"))
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


def secret_belongs_to_token(secret, token):
    """A values Secret made for this token, not a leftover of a deleted token of the same name."""
    if not secret or secret.get("type") != VALUES_SECRET_TYPE or not (secret.get("data") or {}).get(VALUES_KEY):
        return False
    made = parse_time((secret.get("metadata") or {}).get("creationTimestamp"))
    born = parse_time(((token or {}).get("metadata") or {}).get("creationTimestamp"))
    return made is None or born is None or made >= born


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


# -- tokens: labels, expiry, pruning ------------------------------------------------------------

def token_metadata(name, namespace, current=None, run_id=None, ttl=None, now=None, cluster=None, lock=None):
    """The token's desired metadata: the collection's labels (and run) on a new token, and its expiry annotation;
    ``lock``: the member lock (``namespace/name``) the run holds, recorded on a new token.

    An existing token keeps the labels it has (a later run does not take over an earlier run's token);
    the expiry annotation follows the ttl from the token's creation, as Fleet computes ``status.expires``.
    """
    metadata = {"name": name, "namespace": namespace}
    current_meta = (current or {}).get("metadata") or {}
    ours = current is None or (current_meta.get("labels") or {}).get(MANAGED_BY_LABEL) == MANAGED_BY
    if current is None:
        metadata["labels"] = {MANAGED_BY_LABEL: MANAGED_BY}
        if run_id:
            metadata["labels"][RUN_LABEL] = run_id
        if cluster:
            metadata["labels"][OWNER_CLUSTER_LABEL] = cluster
    seconds = parse_duration(ttl) if ttl not in (None, "") else None
    if ours and seconds is not None:
        live_expiry = (current_meta.get("annotations") or {}).get(EXPIRES_ANNOTATION)
        if live_expiry and same_ttl(((current or {}).get("spec") or {}).get("ttl"), ttl):
            # written from this machine's clock at creation; the server's creationTimestamp may be a second later
            expires = live_expiry
        else:
            born = parse_time(current_meta.get("creationTimestamp")) or now or utcnow()
            expires = format_time(born + datetime.timedelta(seconds=seconds)) if seconds > 0 else None
        metadata["annotations"] = {EXPIRES_ANNOTATION: expires}
    if current is None and lock and run_id:
        metadata.setdefault("annotations", {})[LOCK_ANNOTATION] = lock
    return metadata


def validate_run_id(value, param="run_id"):
    """A run id becomes a label value."""
    if value is None:
        return None
    problem = label_value_problem(value) if isinstance(value, str) and value else "it must be a non-empty string"
    if problem:
        raise ParameterError(param, problem, "Use at most 63 letters, digits, '-', '_' or '.', e.g. the AWX job id")
    return value


def token_expiry(token):
    """When a token expires (aware datetime), from Fleet's status, else our annotation, else creation + ttl; None: never."""
    metadata = (token or {}).get("metadata") or {}
    expires = parse_time(((token or {}).get("status") or {}).get("expires"))
    if expires is None:
        expires = parse_time((metadata.get("annotations") or {}).get(EXPIRES_ANNOTATION))
    if expires is None:
        ttl = ((token or {}).get("spec") or {}).get("ttl")
        born = parse_time(metadata.get("creationTimestamp"))
        try:
            seconds = parse_duration(ttl) if ttl else 0
        except ParameterError:
            seconds = 0
        if born is not None and seconds > 0:
            expires = born + datetime.timedelta(seconds=seconds)
    return expires


def prunable_tokens(tokens, keep=None, run_id=None, grace=None, now=None):
    """``[(name, why)]`` of this collection's tokens a run may delete.

    Only tokens labelled ``app.kubernetes.io/managed-by=fleetops.registration`` are ever considered,
    never ``keep``. A token is pruned when its expiry has passed, or when it is older than ``grace``
    seconds and belongs to another run than ``run_id``. ``grace`` None means 0 when a ``run_id`` is
    given, and "expired only" when none is.
    """
    now = now or utcnow()
    if grace is None and run_id:
        grace = 0
    found = []
    for token in tokens or []:
        metadata = token.get("metadata") or {}
        labels = metadata.get("labels") or {}
        name = metadata.get("name")
        if name == keep or labels.get(MANAGED_BY_LABEL) != MANAGED_BY or metadata.get("deletionTimestamp"):
            continue
        expires = token_expiry(token)
        if expires is not None and expires <= now:
            found.append((name, "expired at %s" % format_time(expires)))
            continue
        if grace is None or (run_id and labels.get(RUN_LABEL) == run_id):
            continue
        born = parse_time(metadata.get("creationTimestamp"))
        if born is not None and (now - born).total_seconds() >= grace:
            found.append((name, "left by %s" % ("run %s" % labels[RUN_LABEL] if labels.get(RUN_LABEL) else "an earlier run")))
    return sorted(found)


def token_runs(tokens):
    """``{token name: (lock reference, run)}`` of this collection's tokens made under a member lock (pure)."""
    found = {}
    for token in tokens or []:
        metadata = token.get("metadata") or {}
        labels, annotations = metadata.get("labels") or {}, metadata.get("annotations") or {}
        if labels.get(MANAGED_BY_LABEL) != MANAGED_BY or metadata.get("deletionTimestamp"):
            continue
        if annotations.get(LOCK_ANNOTATION) and labels.get(RUN_LABEL):
            found[metadata.get("name")] = (annotations[LOCK_ANNOTATION], labels[RUN_LABEL])
    return found


def left_tokens(tokens, over, now=None):
    """``[(name, why)]`` of this collection's tokens a hub tidy deletes: expired ones, and those whose run is over
    (``over``: ``{(lock reference, run): why, or None while it may still run}``, member_lock.runs_over) (pure)."""
    found = dict(prunable_tokens(tokens, now=now))
    for name, pair in token_runs(tokens).items():
        if name not in found and over.get(pair):
            found[name] = "left by run %s, which is over (%s)" % (pair[1], over[pair])
    return sorted(found.items())


# -- the agent on the member ----------------------------------------------------------------------

def plan_agent(release, chart_name, chart_version, desired_values, member):
    """The agent's ReleasePlan, with the member's own health added to the release comparison.

    ``member``: ``{deployment: bool, credential: bool, bootstrap: bool}`` as read from the member.
    A deployed release whose Deployment is gone, or whose agent has neither a hub credential nor a
    bootstrap Secret to register with, is upgraded: Helm recreates what its manifest holds.
    """
    plan = ReleasePlan.decide(release, chart_name, chart_version, desired_values)
    if plan.action != ReleasePlan.INSTALL:
        if not member.get("deployment"):
            plan.reasons.append("the agent Deployment %s is missing" % AGENT_RELEASE)
        if not member.get("credential") and not member.get("bootstrap"):
            plan.reasons.append("the agent has no hub credential (Secret fleet-agent) and no bootstrap Secret to register with")
        if plan.reasons:
            plan.action = ReleasePlan.UPGRADE
    return plan


def checked_in_since(cluster, seen_before=None):
    """Whether a Cluster shows an agent check-in, newer than ``seen_before`` when given."""
    seen = parse_time((((cluster or {}).get("status") or {}).get("agent") or {}).get("lastSeen"))
    return seen is not None and (seen_before is None or seen > seen_before)


# Objects that belong to the agent (or to any namespace) and are no reason to keep cattle-fleet-system.
_AGENT_OBJECT = re.compile(r"^(fleet-agent.*|kube-root-ca\.crt|sh\.helm\.release\.v1\.fleet-agent.*)$")


def namespace_keepers(objects):
    """What in cattle-fleet-system is worth keeping the namespace for: ``["Deployment x", ...]``.

    ``objects`` maps a kind to the items listed (workloads, PVCs, Secrets, ConfigMaps). Service-account
    tokens, the agent's own objects, its environment Secrets and Helm's records of the agent are not; a Lease never is
    (not listed).
    """
    keep = []
    for kind in sorted(objects):
        for item in objects[kind] or []:
            metadata = item.get("metadata") or {}
            if metadata.get("deletionTimestamp") or _AGENT_OBJECT.match(metadata.get("name") or ""):
                continue
            if kind == "Secret" and (item.get("type") == "kubernetes.io/service-account-token"
                                     or (metadata.get("labels") or {}).get(ENV_SECRET_LABEL)):
                continue
            keep.append("%s %s" % (kind, metadata.get("name")))
    return keep


# -- the Cluster on the hub -----------------------------------------------------------------------

def choose_client_id(given, current):
    """``(client_id, generated)``: the one given, else the Cluster's own, else a new random one."""
    current_id = ((current or {}).get("spec") or {}).get("clientID")
    if given:
        return validate_client_id(given), False
    if current_id:
        return current_id, False
    return generate_client_id(), True


def desired_cluster(name, namespace, current, client_id, labels=None, labels_mode="merge", secret_name=None, annotations=None):
    """``(desired Cluster (a partial object to merge), resulting labels)`` from the live Cluster and the wanted state."""
    current_labels = ((current or {}).get("metadata") or {}).get("labels")
    result_labels, labels_value = desired_cluster_labels(current_labels, labels, labels_mode or "merge")
    desired = {"metadata": {"name": name, "namespace": namespace}, "spec": {"clientID": client_id}}
    if labels_value is not None:
        desired["metadata"]["labels"] = labels_value if current else result_labels
    elif current is None and result_labels:
        desired["metadata"]["labels"] = result_labels
    if secret_name:
        desired["spec"]["kubeConfigSecret"] = secret_name
    if annotations:
        desired["metadata"]["annotations"] = dict(annotations)
    return desired, result_labels
