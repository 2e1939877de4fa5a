# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""KubeFleet: member identity, MemberCluster, member agent and member status.

What the code relies on, read from go.goms.io/fleet v0.14.0 (Azure/fleet, whose
cluster.kubernetes-fleet.io/v1beta1 API KubeFleet kept):

- For each MemberCluster the hub agent creates the namespace ``fleet-member-<name>``
  (owned by the MemberCluster), a Role and RoleBinding there for ``spec.identity``,
  an InternalMemberCluster, and adds the finalizer
  ``kubernetes-fleet.io/membercluster-finalizer``.
- On delete it sets the InternalMemberCluster to ``Leave``, waits until the member
  agent reports ``Joined=False`` (or ``--force-delete-wait-time``, 15 minutes by
  default), strips ``kubernetes-fleet.io/work-cleanup`` from the Works in the
  namespace, deletes the namespace and only then drops its finalizer.
- The member-agent chart runs the agent with ``HUB_SERVER_URL``,
  ``MEMBER_CLUSTER_NAME`` and ``HUB_CERTIFICATE_AUTHORITY`` (base64 PEM, honoured
  unless ``tlsClientInsecure``), plus a refresh-token sidecar that copies key
  ``token`` of Secret ``secret.namespace``/``secret.name`` into the agent's token file.
  The chart itself templates the Namespace ``.Values.namespace``.

Pure functions come first (unit tested); the four backends follow.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import os

from ansible_collections.fleetops.registration.plugins.module_utils.errors import (
    ApiError, ConnectionFailure, FleetOpsError, NotFoundError, ParameterError, WaitTimeout,
)
from ansible_collections.fleetops.registration.plugins.module_utils.helm import ChartSource, values_differ
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_auth import write_private_file
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_client import (
    NAMESPACE, SECRET, SERVICE_ACCOUNT, KubeClient, Outcome, Resource, clean, ensure_object,
)
from ansible_collections.fleetops.registration.plugins.module_utils.parsing import (
    REDACTED, b64, deep_merge, kubeconfig_ca_pem, kubeconfig_server, label_key_problem, label_value_problem,
    label_patch, normalize_labels, read_pem, reconcile_labels, unb64, validate_dns_label, validate_dns_subdomain,
)
from ansible_collections.fleetops.registration.plugins.module_utils.module import Backend
from ansible_collections.fleetops.registration.plugins.module_utils.waiter import PREDICATES, Waiter

MEMBER_CLUSTER = Resource("cluster.kubernetes-fleet.io/v1beta1", "MemberCluster", "memberclusters", namespaced=False)
INTERNAL_MEMBER_CLUSTER = Resource("cluster.kubernetes-fleet.io/v1beta1", "InternalMemberCluster", "internalmemberclusters")
WORK = Resource("placement.kubernetes-fleet.io/v1beta1", "Work", "works")
DEPLOYMENT = Resource("apps/v1", "Deployment", "deployments")

KUBEFLEET_VERSION = "v0.14.0"
FLEET_SYSTEM = "fleet-system"
MEMBER_NAMESPACE_PREFIX = "fleet-member-"
MEMBER_CLUSTER_FINALIZER = "kubernetes-fleet.io/membercluster-finalizer"
WORK_FINALIZER = "kubernetes-fleet.io/work-cleanup"
SA_TOKEN_TYPE = "kubernetes.io/service-account-token"
SA_NAME_ANNOTATION = "kubernetes.io/service-account.name"
MANAGED_BY = {"app.kubernetes.io/managed-by": "fleetops.registration"}
TOKEN_REVISION_ANNOTATION = "fleetops.registration/hub-token-revision"
# Labels that hub-side tooling sets on MemberClusters (AKS Fleet Manager sets fleet.azure.com/*);
# labels_mode=replace keeps them.
CONTROLLER_LABEL_PREFIXES = ("fleet.azure.com/", "kubernetes-fleet.io/")
CHART_NAME = "member-agent"
# The member-agent chart's own default repositories; only the tag is pinned (the chart defaults to "main").
DEFAULT_IMAGE_REGISTRY = "ghcr.io/azure/fleet"
# The hub names the member's namespace fleet-member-<name>, which must be a DNS label (63).
MAX_MEMBER_NAME = 63 - len(MEMBER_NAMESPACE_PREFIX)
HEARTBEAT_MIN, HEARTBEAT_MAX = 1, 600


# -- names ---------------------------------------------------------------------

def validate_member_name(name, param="name"):
    """A member name the hub can build ``fleet-member-<name>`` from."""
    if not isinstance(name, str) or not name:
        raise ParameterError(param, "a member cluster name is required")
    if len(name) > MAX_MEMBER_NAME:
        raise ParameterError(
            param, "%r is %d characters long; at most %d are allowed" % (name, len(name), MAX_MEMBER_NAME),
            "The hub creates the namespace %s<name>, which must fit in 63 characters" % MEMBER_NAMESPACE_PREFIX,
        )
    try:
        validate_dns_label(name, param)
    except ParameterError:
        raise ParameterError(
            param, "%r is not a valid member cluster name" % (name,),
            "Use lower-case letters, digits and '-', starting and ending with a letter or digit "
            "(the hub derives the namespace %s<name> from it)" % MEMBER_NAMESPACE_PREFIX,
        )
    return name


def member_namespace(name):
    return MEMBER_NAMESPACE_PREFIX + name


def default_service_account(name):
    """The identity name KubeFleet's documentation and join script use."""
    return name + "-hub-cluster-access"


def default_token_secret(service_account):
    return service_account + "-token"


def validate_heartbeat(value, param="heartbeat_period_seconds"):
    if isinstance(value, bool) or not isinstance(value, int) or not HEARTBEAT_MIN <= value <= HEARTBEAT_MAX:
        raise ParameterError(
            param, "%r is out of range" % (value,),
            "Give whole seconds from %d to %d (the MemberCluster API's limits)" % (HEARTBEAT_MIN, HEARTBEAT_MAX),
        )
    return value


# -- identity ------------------------------------------------------------------

def identity_subject(kind, name, namespace=None, param="identity_kind"):
    """The rbac Subject a MemberCluster names as its identity."""
    if kind == "ServiceAccount":
        if not namespace:
            raise ParameterError("identity_namespace", "a ServiceAccount identity needs a namespace")
        validate_dns_subdomain(name, "identity_name")
        return {"kind": "ServiceAccount", "name": name, "namespace": namespace, "apiGroup": ""}
    if kind in ("User", "Group"):
        if not name:
            raise ParameterError("identity_name", "a %s identity needs a name" % kind)
        return {"kind": kind, "name": name, "apiGroup": "rbac.authorization.k8s.io"}
    raise ParameterError(param, "must be ServiceAccount, User or Group, got %r" % (kind,))


def _normal_subject(subject):
    subject = dict(subject or {})
    default_group = "" if subject.get("kind") == "ServiceAccount" else "rbac.authorization.k8s.io"
    return (subject.get("kind"), subject.get("name"), subject.get("namespace") or "", subject.get("apiGroup") or default_group)


def same_identity(current, desired):
    """Whether two rbac Subjects are the same (an omitted apiGroup means its kind's default)."""
    return _normal_subject(current) == _normal_subject(desired)


def secret_token(secret):
    """The decoded ``token`` of a Secret, or None while it is empty or missing."""
    data = ((secret or {}).get("data") or {}).get("token")
    return unb64(data, "token") if data else None


def token_secret_problem(secret, service_account):
    """Why an existing Secret cannot serve as ``service_account``'s token Secret (or None)."""
    if secret.get("type") != SA_TOKEN_TYPE:
        return "it has type %s, not %s" % (secret.get("type"), SA_TOKEN_TYPE)
    owner = ((secret.get("metadata") or {}).get("annotations") or {}).get(SA_NAME_ANNOTATION)
    if owner != service_account:
        return "it holds the token of ServiceAccount %r, not %r" % (owner, service_account)
    return None


def desired_service_account(name, namespace):
    return {"metadata": {"name": name, "namespace": namespace, "labels": dict(MANAGED_BY)}}


def desired_token_secret(name, namespace, service_account):
    return {
        "metadata": {"name": name, "namespace": namespace, "labels": dict(MANAGED_BY),
                     "annotations": {SA_NAME_ANNOTATION: service_account}},
        "type": SA_TOKEN_TYPE,
    }


# -- MemberCluster -------------------------------------------------------------

def normalize_taints(taints, param="taints"):
    """Validate taints; return them as the API stores them (no empty value). None means unmanaged."""
    if taints is None:
        return None
    if not isinstance(taints, list):
        raise ParameterError(param, "expected a list of {key, value, effect} mappings")
    result = []
    seen = set()
    for index, taint in enumerate(taints):
        if not isinstance(taint, dict) or not taint.get("key"):
            raise ParameterError(param, "item %d needs a key" % index, "Give each taint as {key: ..., value: ..., effect: NoSchedule}")
        unknown = set(taint) - set(("key", "value", "effect"))
        if unknown:
            raise ParameterError(param, "item %d has unknown fields %s" % (index, ", ".join(sorted(unknown))))
        key = taint["key"]
        problem = label_key_problem(key)
        if problem:
            raise ParameterError(param, "invalid taint key %r: %s" % (key, problem))
        value = taint.get("value")
        value = "" if value is None else str(value)
        problem = label_value_problem(value)
        if problem:
            raise ParameterError(param, "invalid value for taint %r: %s" % (key, problem))
        effect = taint.get("effect") or "NoSchedule"
        if effect != "NoSchedule":
            raise ParameterError(param, "taint %r has effect %r" % (key, effect), "KubeFleet supports only NoSchedule")
        if (key, effect) in seen:
            raise ParameterError(param, "taint %r with effect %s is listed twice" % (key, effect))
        seen.add((key, effect))
        item = {"key": key, "effect": effect}
        if value:
            item["value"] = value
        result.append(item)
    return result


def _normal_taints(taints):
    return [dict((k, v) for k, v in t.items() if v not in (None, "")) for t in taints or []]


def member_cluster_changes(current, name, identity, heartbeat, taints=None, labels=None, labels_mode="merge"):
    """What to send to make the MemberCluster ``name`` match the options.

    Returns ``(body, None)`` to create it, ``(None, patch)`` to merge-patch it, or
    ``(None, None)`` when it already matches. ``taints``/``labels`` of None are left alone.
    """
    if current is None:
        spec = {"identity": identity, "heartbeatPeriodSeconds": heartbeat}
        if taints:
            spec["taints"] = taints
        metadata = {"name": name}
        if labels:
            metadata["labels"] = dict(labels)
        return {"metadata": metadata, "spec": spec}, None
    spec = current.get("spec") or {}
    spec_patch = {}
    if not same_identity(spec.get("identity"), identity):
        spec_patch["identity"] = identity
    if spec.get("heartbeatPeriodSeconds") != heartbeat:
        spec_patch["heartbeatPeriodSeconds"] = heartbeat
    if taints is not None and _normal_taints(spec.get("taints")) != taints:
        spec_patch["taints"] = taints or None
    patch = {}
    if spec_patch:
        patch["spec"] = spec_patch
    if labels is not None:
        live = (current.get("metadata") or {}).get("labels") or {}
        wanted = reconcile_labels(live, labels, labels_mode, owned=CONTROLLER_LABEL_PREFIXES)
        changes = label_patch(live, wanted)
        if changes:
            patch["metadata"] = {"labels": changes}
    return None, patch or None


def for_diff(obj, hide_data=False):
    """An object for a diff: server noise and status dropped (status churns with every heartbeat)."""
    obj = clean(obj, hide_data)
    obj.pop("status", None)
    return obj


# -- status --------------------------------------------------------------------

def parse_time(text):
    """An RFC 3339 timestamp from the API as an aware datetime (None for empty)."""
    if not text:
        return None
    text = str(text).strip()
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    if "." in text:
        head, _dot, rest = text.partition(".")
        digits = ""
        while rest and rest[0].isdigit():
            digits, rest = digits + rest[0], rest[1:]
        text = head + "." + (digits + "000000")[:6] + rest
    try:
        value = datetime.datetime.fromisoformat(text)
    except ValueError:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=datetime.timezone.utc)
    return value


def utcnow():
    return datetime.datetime.now(datetime.timezone.utc)


def _tri(status):
    return {"True": True, "False": False}.get(status)


def _conditions(items):
    return [{
        "type": c.get("type"), "status": c.get("status"), "reason": c.get("reason"), "message": c.get("message"),
        "last_transition_time": c.get("lastTransitionTime"), "observed_generation": c.get("observedGeneration"),
    } for c in items or []]


def _find(items, cond_type):
    for item in items or []:
        if item.get("type") == cond_type:
            return item
    return {}


def heartbeat_age(timestamp, now=None):
    """Whole seconds since ``timestamp`` (None if there was no heartbeat)."""
    when = parse_time(timestamp)
    if when is None:
        return None
    return max(0, int(((now or utcnow()) - when).total_seconds()))


def member_agent_heartbeat(obj):
    """``lastReceivedHeartbeat`` of the MemberAgent in a MemberCluster's status, or None."""
    agent = _find(((obj or {}).get("status") or {}).get("agentStatus"), "MemberAgent")
    return agent.get("lastReceivedHeartbeat") or None


def describe_member(obj, now=None):
    """A MemberCluster as the info module and the other modules report it."""
    now = now or utcnow()
    metadata = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    conditions = status.get("conditions") or []
    agents = []
    for agent in status.get("agentStatus") or []:
        agent_conditions = agent.get("conditions") or []
        heartbeat = agent.get("lastReceivedHeartbeat") or None
        agents.append({
            "type": agent.get("type"),
            "joined": _tri(_find(agent_conditions, "Joined").get("status")),
            "healthy": _tri(_find(agent_conditions, "Healthy").get("status")),
            "conditions": _conditions(agent_conditions),
            "last_received_heartbeat": heartbeat,
            "heartbeat_age_seconds": heartbeat_age(heartbeat, now),
        })
    healthy = _find(conditions, "Healthy")
    if not healthy:
        # v0.14's hub does not aggregate Healthy onto the MemberCluster; the member agent reports it.
        healthy = _find((_find(status.get("agentStatus"), "MemberAgent") or {}).get("conditions"), "Healthy")
    usage = status.get("resourceUsage") or {}
    return {
        "name": metadata.get("name"),
        "labels": metadata.get("labels") or {},
        "identity": spec.get("identity") or {},
        "heartbeat_period_seconds": spec.get("heartbeatPeriodSeconds"),
        "taints": spec.get("taints") or [],
        "namespace": member_namespace(metadata.get("name") or ""),
        "leaving": bool(metadata.get("deletionTimestamp")),
        "finalizers": metadata.get("finalizers") or [],
        "created": metadata.get("creationTimestamp"),
        "ready_to_join": _tri(_find(conditions, "ReadyToJoin").get("status")),
        "joined": _tri(_find(conditions, "Joined").get("status")),
        "healthy": _tri(healthy.get("status")),
        "conditions": _conditions(conditions),
        "resource_usage": {
            "capacity": usage.get("capacity") or {},
            "allocatable": usage.get("allocatable") or {},
            "available": usage.get("available") or {},
            "observation_time": usage.get("observationTime"),
        },
        "properties": status.get("properties") or {},
        "agents": agents,
    }


def joined_with_heartbeat(obj):
    """The MemberCluster is Joined=True and its member agent has sent a heartbeat."""
    return PREDICATES["member_joined"](obj) and bool(member_agent_heartbeat(obj))


def joined_since(obj, previous=None):
    """Joined with a heartbeat later than ``previous`` (a heartbeat seen earlier; both are hub timestamps)."""
    if not joined_with_heartbeat(obj):
        return False
    if not previous:
        return True
    latest, before = parse_time(member_agent_heartbeat(obj)), parse_time(previous)
    return latest is not None and (before is None or latest > before)


def label_selector(labels=None, selector=None):
    """A label selector string from equality ``labels`` and/or a free-form ``selector``."""
    parts = []
    for key, value in sorted(normalize_labels(labels, "labels").items()):
        parts.append("%s=%s" % (key, value))
    if selector:
        parts.append(selector.strip())
    return ",".join(p for p in parts if p) or None


# -- member agent ----------------------------------------------------------------


def agent_values(member_name, hub_url, hub_ca_pem=None, agent_namespace=FLEET_SYSTEM, secret_name="hub-kubeconfig-secret",
                 secret_namespace="default", image_repository=None, image_tag=KUBEFLEET_VERSION,
                 refresh_token_repository=None, refresh_token_tag=None, pull_policy="IfNotPresent",
                 insecure=False, log_verbosity=None, extra=None):
    """The member-agent chart values: ``extra`` first, the options on top."""
    config = {"provider": "secret", "hubURL": hub_url, "memberClusterName": member_name}
    if hub_ca_pem:
        config["hubCA"] = b64(hub_ca_pem)
    managed = {
        "config": config,
        "secret": {"name": secret_name, "namespace": secret_namespace},
        "namespace": agent_namespace,
        "image": {"repository": image_repository or DEFAULT_IMAGE_REGISTRY + "/member-agent",
                  "tag": image_tag or KUBEFLEET_VERSION, "pullPolicy": pull_policy},
        "refreshtoken": {"repository": refresh_token_repository or DEFAULT_IMAGE_REGISTRY + "/refresh-token",
                         "tag": refresh_token_tag or image_tag or KUBEFLEET_VERSION, "pullPolicy": pull_policy},
        "tlsClientInsecure": bool(insecure),
        "useCAAuth": False,
        "enableV1Alpha1APIs": False,
        "enableV1Beta1APIs": True,
    }
    if log_verbosity is not None:
        managed["logVerbosity"] = log_verbosity
    return deep_merge(extra or {}, managed)


def chart_fullname(release, chart_name=CHART_NAME):
    """The chart's ``member-agent.fullname`` (the Deployment's name)."""
    name = release if chart_name in release else "%s-%s" % (release, chart_name)
    return name[:63].rstrip("-")


def desired_hub_secret(name, namespace, token):
    return {"metadata": {"name": name, "namespace": namespace, "labels": dict(MANAGED_BY)},
            "type": "Opaque", "data": {"token": b64(token)}}


def release_needs_upgrade(release, live_values, chart_name, chart_version, desired_values):
    """Whether Helm must (re)install: no release, a failed one, another chart or version, or other values."""
    if not release or release.get("status") != "deployed":
        return True
    if release.get("chart") != chart_name or release.get("chart_version") != chart_version:
        return True
    return values_differ(live_values, desired_values)


def release_view(release, values):
    """A release as the diff shows it."""
    if not release:
        return {}
    return {"chart": release.get("chart"), "chart_version": release.get("chart_version"),
            "status": release.get("status"), "values": values or {}}


def resolve_hub_ca(explicit_pem=None, ca_file=None, kubeconfig=None, context=None, base_dir=None, param="hub_ca_pem"):
    """The hub CA as PEM: the explicit text, else the CA file, else the hub kubeconfig (inline data or file)."""
    if explicit_pem:
        if "-----BEGIN CERTIFICATE-----" not in explicit_pem:
            raise ParameterError(param, "is not a PEM certificate", "Give the PEM text of the hub's CA")
        return explicit_pem
    if ca_file:
        return read_pem(ca_file, "hub_ca_cert")
    if kubeconfig:
        return kubeconfig_ca_pem(kubeconfig, context, base_dir, param="hub_kubeconfig")
    return None


# -- backends ------------------------------------------------------------------

class MemberIdentity(Backend):
    """The hub-side ServiceAccount and its long-lived token Secret the member agent authenticates with."""

    def __init__(self, module):
        super(MemberIdentity, self).__init__(module)
        self.name = validate_member_name(self.params["name"])
        self.namespace = self.params["namespace"]
        self.sa_name = self.params["service_account_name"] or default_service_account(self.name)
        self.secret_name = self.params["token_secret_name"] or default_token_secret(self.sa_name)
        validate_dns_subdomain(self.sa_name, "service_account_name")
        validate_dns_subdomain(self.secret_name, "token_secret_name")

    def run(self):
        if self.params["state"] == "absent":
            return self.absent()
        return self.present()

    def _identity(self):
        return identity_subject("ServiceAccount", self.sa_name, self.namespace)

    def present(self):
        if self.kube.get(NAMESPACE, self.namespace) is None:
            raise ParameterError("namespace", "namespace %s does not exist on the hub" % self.namespace,
                                 "Install the KubeFleet hub agent first (it uses %s), or name an existing namespace" % FLEET_SYSTEM)
        sa = self.kube.get(SERVICE_ACCOUNT, self.sa_name, self.namespace)
        secret = self.kube.get(SECRET, self.secret_name, self.namespace)
        if secret is not None:
            problem = token_secret_problem(secret, self.sa_name)
            if problem:
                raise ParameterError("token_secret_name", "Secret %s/%s cannot be used: %s" % (self.namespace, self.secret_name, problem),
                                     "Name another Secret with token_secret_name, or remove that one")
        before = {"service_account": clean(sa), "token_secret": clean(secret, hide_data=True)}
        changed = False
        created_sa = created_secret = False
        sa_after, secret_after = sa, secret
        if sa is None:
            if self.params["create_service_account"]:
                sa_after = self.kube.create(SERVICE_ACCOUNT, desired_service_account(self.sa_name, self.namespace),
                                            self.namespace, dry_run=self.check_mode)
                changed = created_sa = True
            else:
                self.warn("ServiceAccount %s/%s does not exist and create_service_account is false; "
                          "kube-controller-manager will not fill a token for it" % (self.namespace, self.sa_name))
        if secret is None:
            if self.check_mode and created_sa:
                # The dry-run ServiceAccount does not exist, so predict the Secret rather than dry-run it.
                secret_after = dict(desired_token_secret(self.secret_name, self.namespace, self.sa_name), apiVersion="v1", kind="Secret")
            else:
                secret_after = self.kube.create(SECRET, desired_token_secret(self.secret_name, self.namespace, self.sa_name),
                                                self.namespace, dry_run=self.check_mode)
            changed = created_secret = True
        token = secret_token(secret_after)
        if not self.check_mode and not token and self.params["wait"]:
            try:
                secret_after = self._wait_for_token()
            except FleetOpsError:
                self._roll_back(created_sa, created_secret)
                raise
            token = secret_token(secret_after)
        if token and not self.params["return_token"]:
            # Hidden values are masked everywhere in the result, so a token that was asked for cannot be hidden.
            self.module.hide(token, (secret_after.get("data") or {}).get("token"))
        after = {"service_account": clean(sa_after), "token_secret": clean(secret_after, hide_data=True)}
        result = {
            "changed": changed,
            "identity": self._identity(),
            "service_account": {"name": self.sa_name, "namespace": self.namespace,
                                "uid": ((sa_after or {}).get("metadata") or {}).get("uid")},
            "token_secret": {"name": self.secret_name, "namespace": self.namespace, "token_ready": bool(token)},
        }
        if self.params["return_token"]:
            result["token"] = token
        return self.finish(result, before, after)

    def _wait_for_token(self):
        what = "kube-controller-manager to fill the token of Secret %s/%s" % (self.namespace, self.secret_name)

        def fetch():
            return self.kube.get(SECRET, self.secret_name, self.namespace)

        def done(obj):
            return obj is None or PREDICATES["service_account_token"](obj)

        try:
            secret = self.module.waiter.until(fetch, done, what, self._token_hint())
        except WaitTimeout as exc:
            raise WaitTimeout("the token Secret %s/%s was never filled: %s" % (self.namespace, self.secret_name, exc.msg),
                              self._token_hint(), last=None)
        if secret is None:
            raise ApiError(
                "the token Secret %s/%s was deleted before it was filled: kube-controller-manager removes "
                "service-account-token Secrets whose ServiceAccount %s does not exist" % (self.namespace, self.secret_name, self.sa_name),
                hint="Create the ServiceAccount, or set create_service_account: true",
            )
        return secret

    def _token_hint(self):
        if self.kube.get(SERVICE_ACCOUNT, self.sa_name, self.namespace) is None:
            return ("ServiceAccount %s/%s does not exist, so no token will ever be written; create it or set "
                    "create_service_account: true" % (self.namespace, self.sa_name))
        return ("Check that kube-controller-manager runs the serviceaccount-token controller "
                "(--service-account-private-key-file), or raise wait_timeout")

    def _roll_back(self, created_sa, created_secret):
        """Remove what this run created, so a failed join leaves nothing half-made."""
        if created_secret:
            self.kube.delete(SECRET, self.secret_name, self.namespace)
        if created_sa:
            self.kube.delete(SERVICE_ACCOUNT, self.sa_name, self.namespace)

    def absent(self):
        member = self.kube.get(MEMBER_CLUSTER, self.name)
        if member is not None and not (member.get("metadata") or {}).get("deletionTimestamp") \
                and same_identity((member.get("spec") or {}).get("identity"), self._identity()):
            self.warn("MemberCluster %s still names this identity; its member agent loses access to the hub. "
                      "Remove the MemberCluster first (kubefleet_member_cluster state=absent)" % self.name)
        secret = self.kube.get(SECRET, self.secret_name, self.namespace)
        sa = self.kube.get(SERVICE_ACCOUNT, self.sa_name, self.namespace) if self.params["create_service_account"] else None
        if secret is not None:
            self.kube.delete(SECRET, self.secret_name, self.namespace, dry_run=self.check_mode)
        if sa is not None:
            self.kube.delete(SERVICE_ACCOUNT, self.sa_name, self.namespace, dry_run=self.check_mode)
        before = {"service_account": clean(sa), "token_secret": clean(secret, hide_data=True)}
        result = {
            "changed": secret is not None or sa is not None,
            "identity": self._identity(),
            "service_account": {"name": self.sa_name, "namespace": self.namespace, "uid": None},
            "token_secret": {"name": self.secret_name, "namespace": self.namespace, "token_ready": False},
        }
        return self.finish(result, before, {"service_account": {}, "token_secret": {}})


class MemberCluster(Backend):
    """The hub's MemberCluster: join (present) and leave (absent)."""

    def __init__(self, module):
        super(MemberCluster, self).__init__(module)
        self.name = validate_member_name(self.params["name"])

    def run(self):
        if self.params["state"] == "absent":
            return self.absent()
        return self.present()

    def _identity(self):
        kind = self.params["identity_kind"]
        name = self.params["identity_name"] or (default_service_account(self.name) if kind == "ServiceAccount" else None)
        namespace = self.params["identity_namespace"] if kind == "ServiceAccount" else None
        return identity_subject(kind, name, namespace)

    def present(self):
        heartbeat = validate_heartbeat(self.params["heartbeat_period_seconds"])
        taints = normalize_taints(self.params["taints"])
        labels = None if self.params["labels"] is None else normalize_labels(self.params["labels"])
        identity = self._identity()
        if identity["kind"] == "ServiceAccount" and self.params["validate_identity"] and \
                self.kube.get(SERVICE_ACCOUNT, identity["name"], identity["namespace"]) is None:
            raise ParameterError(
                "identity_name", "ServiceAccount %s/%s does not exist on the hub" % (identity["namespace"], identity["name"]),
                "Create it first with fleetops.registration.kubefleet_member_identity, or set validate_identity: false",
            )
        current = self.kube.get(MEMBER_CLUSTER, self.name)
        if current is not None and (current.get("metadata") or {}).get("deletionTimestamp"):
            if self.check_mode or not self.params["wait"]:
                raise ApiError("MemberCluster %s is still leaving the fleet" % self.name,
                               hint="Wait until it is gone (state: absent with wait: true) before joining it again")
            self._wait_gone("the previous MemberCluster %s to finish leaving before joining again" % self.name)
            current = None
        body, patch = member_cluster_changes(current, self.name, identity, heartbeat, taints, labels, self.params["labels_mode"])
        after = current
        if body is not None:
            after = self.kube.create(MEMBER_CLUSTER, body, dry_run=self.check_mode)
        elif patch is not None:
            after = self.kube.patch(MEMBER_CLUSTER, self.name, patch, dry_run=self.check_mode)
        changed = body is not None or patch is not None
        if not self.check_mode and self.params["wait"]:
            after = self._wait_present()
        result = {"changed": changed, "member_cluster": clean(after), "member": describe_member(after)}
        return self.finish(result, for_diff(current), for_diff(after))

    def _wait_present(self):
        if self.params["wait_for"] == "joined":
            what = "MemberCluster %s to be Joined with a member agent heartbeat" % self.name
            predicate = joined_with_heartbeat
            hint = ("Install the member agent on the member (kubefleet_member_agent) and check that it reaches the hub; "
                    "or wait_for: ready_to_join")
        else:
            what = "the hub agent to make MemberCluster %s ReadyToJoin" % self.name
            predicate = "member_ready_to_join"
            hint = "Check that the KubeFleet hub agent runs on the hub"
        return self.module.waiter.until(lambda: self.kube.get(MEMBER_CLUSTER, self.name), predicate, what, hint)

    def _leftovers(self):
        return self.kube.get(MEMBER_CLUSTER, self.name), self.kube.get(NAMESPACE, member_namespace(self.name))

    def _wait_gone(self, what, waiter=None):
        waiter = waiter or self.module.waiter
        return waiter.until(self._leftovers, lambda pair: pair[0] is None and pair[1] is None, what, self._stuck_hint())

    def _stuck_hint(self):
        return ("The member agent must acknowledge the leave, or the hub agent force-deletes after its "
                "--force-delete-wait-time (15m by default). For a leave stuck on finalizers (Azure/fleet#881) "
                "set force_remove_finalizers: true")

    def absent(self):
        current, namespace = self._leftovers()
        changed = False
        if current is not None and not (current.get("metadata") or {}).get("deletionTimestamp"):
            self.kube.delete(MEMBER_CLUSTER, self.name, dry_run=self.check_mode)
            changed = True
        forced = []
        if not self.check_mode and self.params["wait"] and (current is not None or namespace is not None):
            forced = self._wait_left()
        result = {"changed": changed or bool(forced), "member_cluster": {}, "namespace": member_namespace(self.name),
                  "forced": forced}
        if current is not None:
            result["member"] = describe_member(current)
        return self.finish(result, for_diff(current), {})

    def _wait_left(self):
        what = "MemberCluster %s and namespace %s to be removed by the hub" % (self.name, member_namespace(self.name))
        if not self.params["force_remove_finalizers"]:
            self._describe_timeout(lambda: self._wait_gone(what))
            return []
        grace = min(float(self.params["force_grace_period"]), self.module.waiter.remaining)
        try:
            self._wait_gone(what, Waiter(grace, self.params["wait_sleep"]))
            return []
        except WaitTimeout:
            pass
        forced = self._remove_finalizers()
        self._describe_timeout(lambda: self._wait_gone(what + " after removing finalizers"))
        return forced

    def _describe_timeout(self, wait):
        try:
            wait()
        except WaitTimeout as exc:
            current, namespace = exc.last or (None, None)
            left = []
            if current is not None:
                left.append("MemberCluster %s (finalizers: %s)" % (self.name, ", ".join((current.get("metadata") or {}).get("finalizers") or []) or "none"))
            if namespace is not None:
                works = self._works_with_finalizers()
                left.append("namespace %s (%s, %d Work(s) with finalizers)" % (
                    member_namespace(self.name), (namespace.get("status") or {}).get("phase"), len(works)))
            raise WaitTimeout("%s; still there: %s" % (exc.msg, "; ".join(left)), exc.hint, last=None)

    def _works_with_finalizers(self):
        try:
            works = self.kube.list(WORK, member_namespace(self.name))
        except NotFoundError:
            return []
        return [w for w in works if (w.get("metadata") or {}).get("finalizers")]

    def _remove_finalizers(self):
        """Strip the finalizers the gone member agent would have cleared (Azure/fleet#881); return what was done."""
        done = []
        for work in self._works_with_finalizers():
            name = work["metadata"]["name"]
            self.kube.patch(WORK, name, {"metadata": {"finalizers": None}}, member_namespace(self.name))
            done.append("Work %s/%s" % (member_namespace(self.name), name))
        current = self.kube.get(MEMBER_CLUSTER, self.name)
        finalizers = ((current or {}).get("metadata") or {}).get("finalizers") or []
        if MEMBER_CLUSTER_FINALIZER in finalizers:
            rest = [f for f in finalizers if f != MEMBER_CLUSTER_FINALIZER]
            try:
                self.kube.patch(MEMBER_CLUSTER, self.name, {"metadata": {"finalizers": rest or None}})
                done.append("MemberCluster %s" % self.name)
            except NotFoundError:
                pass
        namespace = self.kube.get(NAMESPACE, member_namespace(self.name))
        if namespace is not None and not (namespace.get("metadata") or {}).get("deletionTimestamp"):
            # Owned by the MemberCluster, so the garbage collector would delete it; do not wait for that.
            self.kube.delete(NAMESPACE, member_namespace(self.name))
            done.append("namespace %s deleted" % member_namespace(self.name))
        if done:
            self.warn("forced the leave of %s by removing finalizers: %s" % (self.name, "; ".join(done)))
        return done


class MemberClusterInfo(Backend):
    """Read-only: one or all MemberClusters, summarised."""

    def run(self):
        kube = self.module.kube()
        name = self.params["name"]
        selector = label_selector(self.params["labels"], self.params["label_selector"])
        if selector:
            items = kube.list(MEMBER_CLUSTER, label_selector=selector)
            items = [i for i in items if not name or (i.get("metadata") or {}).get("name") == name]
        elif name:
            obj = kube.get(MEMBER_CLUSTER, name)
            items = [obj] if obj is not None else []
        else:
            items = kube.list(MEMBER_CLUSTER)
        now = utcnow()
        members = sorted((describe_member(item, now) for item in items), key=lambda m: m["name"])
        return {"changed": False, "members": members}


class MemberAgent(Backend):
    """The member side: the hub token Secret and the member-agent Helm release."""

    def __init__(self, module):
        super(MemberAgent, self).__init__(module)
        p = self.params
        self.name = validate_member_name(p["name"])
        self.release_name = p["release_name"]
        self.release_namespace = p["release_namespace"]
        self.agent_namespace = p["agent_namespace"]
        self.secret_name = p["secret_name"]
        self.secret_namespace = p["secret_namespace"]
        validate_dns_subdomain(self.secret_name, "secret_name")
        if self.release_namespace == self.agent_namespace:
            raise ParameterError("release_namespace", "must differ from agent_namespace (%s)" % self.agent_namespace,
                                 "The member-agent chart creates agent_namespace itself; keep the release record elsewhere (default: default)")
        self.hub_given = bool(p.get("hub_kubeconfig") or p.get("hub_host"))
        self.sa_name = p["service_account_name"] or default_service_account(self.name)
        self.token_secret_name = p["token_secret_name"] or default_token_secret(self.sa_name)

    def run(self):
        if self.params["state"] == "absent":
            return self.absent()
        return self.present()

    @property
    def hub(self):
        return self.module.kube("hub_")

    # -- what the agent needs ---------------------------------------------------

    def _hub_kubeconfig(self):
        settings = self.module.settings("hub_")
        if not self.params.get("hub_kubeconfig"):
            return settings, None, None
        config, base_dir = settings.kubeconfig_dict()
        return settings, config, base_dir

    def hub_url_and_ca(self):
        settings, config, base_dir = self._hub_kubeconfig()
        url = self.params["hub_url"] or self.params.get("hub_host")
        if not url and config is not None:
            url = kubeconfig_server(config, settings.context, param="hub_kubeconfig")
        if not url:
            raise ParameterError("hub_url", "the hub's API server URL is not known",
                                 "Set hub_url (as the member reaches it), or hub_kubeconfig to read it from")
        if not url.startswith("https://"):
            raise ParameterError("hub_url", "%r is not an https:// URL" % url)
        ca = resolve_hub_ca(self.params["hub_ca_pem"], self.params.get("hub_ca_cert"), config, settings.context, base_dir)
        if not ca and not self.params["hub_insecure_skip_tls_verify"]:
            raise ParameterError(
                "hub_ca_pem", "no CA for the hub is known, and the member agent needs one to trust %s" % url,
                "Give hub_ca_pem or hub_ca_cert, or a hub_kubeconfig whose cluster has certificate-authority(-data)",
            )
        return url.rstrip("/"), ca

    def hub_token(self):
        """The identity token: given, or read from the hub (waiting until it is filled)."""
        if self.params["token"]:
            return self.params["token"]
        if not self.hub_given:
            raise ParameterError("token", "no token given and no hub connection to read it from",
                                 "Give token, or hub_kubeconfig so the token is read from the identity Secret on the hub")
        what = "the token of Secret %s/%s on the hub" % (self.params["identity_namespace"], self.token_secret_name)

        def fetch():
            return self.hub.get(SECRET, self.token_secret_name, self.params["identity_namespace"])

        secret = fetch()
        if self.check_mode and not secret_token(secret):
            self.warn("check mode: the hub has no filled token Secret %s/%s yet; assuming an earlier task creates the identity "
                      "(a real run fails without it)" % (self.params["identity_namespace"], self.token_secret_name))
            return None
        if secret is None:
            raise ParameterError(
                "name", "the hub has no identity token Secret %s/%s for member %s" % (
                    self.params["identity_namespace"], self.token_secret_name, self.name),
                "Create the identity first with fleetops.registration.kubefleet_member_identity",
            )
        if not secret_token(secret) and self.params["wait"]:
            secret = self.module.waiter.until(fetch, "service_account_token", what)
        token = secret_token(secret)
        if not token:
            raise ApiError("%s is still empty" % what, hint="Run kubefleet_member_identity with wait: true first")
        self.module.hide(token, secret["data"]["token"])
        return token

    def check_member_cluster(self):
        """With hub access: the MemberCluster must exist and not be leaving (else the agent can never join)."""
        if not self.hub_given:
            return None
        member = self.hub.get(MEMBER_CLUSTER, self.name)
        if member is None and self.check_mode:
            self.warn("check mode: the hub has no MemberCluster named %s yet; assuming an earlier task creates it "
                      "(a real run fails without it)" % self.name)
            return None
        if member is None:
            raise ParameterError("name", "the hub has no MemberCluster named %s" % self.name,
                                 "Create it first with fleetops.registration.kubefleet_member_cluster")
        if (member.get("metadata") or {}).get("deletionTimestamp"):
            raise ApiError("MemberCluster %s is leaving the fleet" % self.name,
                           hint="Wait until it is gone, create it again, then install the agent")
        return member

    def preflight(self, url, ca, token):
        """Reach the hub at ``url`` with the CA and token the member agent will use; return the identity seen."""
        from kubernetes import client as k8s_client

        configuration = k8s_client.Configuration()
        configuration.host = url
        insecure = self.params["hub_insecure_skip_tls_verify"]
        configuration.verify_ssl = not insecure
        if ca and not insecure:
            configuration.ssl_ca_cert = write_private_file(os.path.join(self.module.tmpdir, "hub-ca.pem"), ca)
        configuration.api_key = {"authorization": "Bearer " + token}
        proxy = self.params.get("hub_proxy")
        if proxy:
            configuration.proxy = proxy
        client = KubeClient(configuration, label="hub (as the member agent would reach it)",
                            hint="Check hub_url and the network path from the member to the hub, and that the CA matches the hub's serving certificate")
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
        try:
            review = client.request("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", body=body)
        except NotFoundError:
            client.request("GET", "/api")
            return None
        except ConnectionFailure as exc:
            if "CERTIFICATE_VERIFY_FAILED" in exc.msg or "certificate verify failed" in exc.msg:
                raise ConnectionFailure(
                    "preflight: the hub at %s presents a certificate the given CA does not verify (%s)" % (url, exc.msg), host=url,
                    hint="Give the CA that signed the hub API server's certificate (hub_ca_pem, hub_ca_cert or hub_kubeconfig's CA); "
                         "the member agent would fail the same way")
            raise ConnectionFailure("preflight: %s" % exc.msg, exc.hint, host=url)
        except ApiError as exc:
            if exc.status == 401:
                raise ApiError("preflight: the hub at %s refused the member's token (401)" % url, status=401,
                               hint="The identity token is invalid or belongs to a deleted ServiceAccount; re-run kubefleet_member_identity")
            raise
        username = (((review or {}).get("status") or {}).get("userInfo") or {}).get("username")
        expected = "system:serviceaccount:%s:%s" % (self.params["identity_namespace"], self.sa_name)
        if username and not self.params["token"] and username != expected:
            self.warn("the hub sees the token as %s, expected %s" % (username, expected))
        return username

    def chart(self):
        chart = ChartSource(self.params["chart_ref"], self.params["chart_repo_url"], self.params["chart_version"])
        meta = chart.local_metadata() if chart.local else None
        if meta is not None:
            version = str(meta.get("version"))
            name = meta.get("name")
            if self.params["chart_version"] and self.params["chart_version"] != version:
                raise ParameterError("chart_version", "the local chart %s is version %s, not %s" % (chart.ref, version, self.params["chart_version"]))
        else:
            version = self.params["chart_version"]
            if not version:
                raise ParameterError("chart_version", "a chart from a repository or OCI registry needs a pinned version",
                                     "Set chart_version; nothing is looked up on the web")
            name = chart.ref.rstrip("/").rsplit("/", 1)[-1].split(":")[0]
        return chart, name, version

    def values(self, url, ca):
        p = self.params
        return agent_values(
            self.name, url, ca, agent_namespace=self.agent_namespace, secret_name=self.secret_name,
            secret_namespace=self.secret_namespace, image_repository=p["image_repository"], image_tag=p["image_tag"],
            refresh_token_repository=p["refresh_token_image_repository"], refresh_token_tag=p["refresh_token_image_tag"],
            pull_policy=p["image_pull_policy"], insecure=p["hub_insecure_skip_tls_verify"], log_verbosity=p["log_verbosity"],
            extra=p["values"],
        )

    # -- present / absent -------------------------------------------------------

    def present(self):
        url, ca = self.hub_url_and_ca()
        chart, chart_name, chart_version = self.chart()
        previous_heartbeat = member_agent_heartbeat(self.check_member_cluster())
        token = self.hub_token()
        preflight = None
        if self.params["preflight"] and token is not None:
            preflight = {"hub_url": url, "username": self.preflight(url, ca, token)}
        if self.kube.get(NAMESPACE, self.secret_namespace) is None:
            raise ParameterError("secret_namespace", "namespace %s does not exist on the member" % self.secret_namespace,
                                 "Create it, or keep the default (default)")
        helm = self.module.helm(secrets=[token] if token else [])
        prior = helm.release(self.release_name, self.release_namespace)
        self._check_agent_namespace()

        if token is None:
            # Check mode before the identity exists: the token will be a new one, so the Secret will change.
            current = self.kube.get(SECRET, self.secret_name, self.secret_namespace)
            predicted = dict(desired_hub_secret(self.secret_name, self.secret_namespace, "unknown"), apiVersion="v1", kind="Secret")
            secret_outcome = Outcome(True, clean(current, hide_data=True) if current else None, clean(predicted, hide_data=True))
        else:
            secret_outcome = ensure_object(self.kube, SECRET, desired_hub_secret(self.secret_name, self.secret_namespace, token),
                                           check_mode=self.check_mode, hide_data=True)
        token_changed = secret_outcome.changed and secret_outcome.before is not None

        desired = self.values(url, ca)
        live = helm.values(self.release_name, self.release_namespace) if prior else None
        upgrade = release_needs_upgrade(prior, live, chart_name, chart_version, desired)
        release = prior
        if upgrade and not self.check_mode:
            helm.upgrade_install(self.release_name, chart, self.release_namespace, desired, create_namespace=True)
            release = helm.release(self.release_name, self.release_namespace)
        elif upgrade:
            release = dict(prior or {}, name=self.release_name, namespace=self.release_namespace, chart=chart_name,
                           chart_version=chart_version, status="deployed (predicted)")
        restarted = False
        if token_changed and not upgrade and not self.check_mode:
            restarted = self._restart_agent(secret_outcome.after)
        member = None
        if self.hub_given and self.params["wait"] and not self.check_mode:
            # After a change, a heartbeat from before it proves nothing: wait for a newer one.
            since = previous_heartbeat if (secret_outcome.changed or upgrade) else None
            member = describe_member(self.module.waiter.until(
                lambda: self.hub.get(MEMBER_CLUSTER, self.name), lambda obj: joined_since(obj, since),
                "MemberCluster %s to be Joined with a member agent heartbeat%s" % (self.name, " newer than %s" % since if since else ""),
                "Look at the member agent's log on the member; check hub_url, the CA and that %s/%s still exists on the hub" % (
                    self.params["identity_namespace"], self.sa_name),
            ))
        result = {
            "changed": secret_outcome.changed or upgrade,
            "release": release,
            "values": desired,
            "chart": {"name": chart_name, "version": chart_version},
            "secret": {"name": self.secret_name, "namespace": self.secret_namespace},
            "hub_url": url,
            "preflight": preflight,
            "agent_restarted": restarted,
            "member": member,
        }
        before = {"secret": secret_outcome.before or {}, "release": release_view(prior, live)}
        after = {"secret": secret_outcome.after or {}, "release": release_view(release, desired)}
        if token_changed:
            after["secret"] = dict(after["secret"], data={"token": REDACTED + " (changed)"})
        return self.finish(result, before, after)

    def _check_agent_namespace(self):
        """The chart templates agent_namespace; Helm cannot take over one it did not create."""
        namespace = self.kube.get(NAMESPACE, self.agent_namespace)
        if namespace is None:
            return
        metadata = namespace.get("metadata") or {}
        if metadata.get("deletionTimestamp"):
            if self.check_mode or not self.params["wait"]:
                raise ApiError("namespace %s on the member is still being deleted" % self.agent_namespace,
                               hint="Wait until it is gone (a previous uninstall), then re-run")
            self.module.waiter.until(lambda: self.kube.get(NAMESPACE, self.agent_namespace), "absent",
                                     "namespace %s on the member to finish deleting" % self.agent_namespace)
            return
        annotations = metadata.get("annotations") or {}
        owner = (annotations.get("meta.helm.sh/release-name"), annotations.get("meta.helm.sh/release-namespace"))
        if owner != (self.release_name, self.release_namespace):
            raise ParameterError(
                "agent_namespace", "namespace %s already exists on the member and is not part of Helm release %s/%s" % (
                    self.agent_namespace, self.release_namespace, self.release_name),
                "The member-agent chart creates that namespace itself: remove the namespace, or set agent_namespace to an unused name "
                "(an agent installed by join.sh lives in release default/member-agent)",
            )

    def _restart_agent(self, secret):
        """The refresh-token sidecar reads the Secret only every few hours: roll the Deployment on a new token."""
        name = chart_fullname(self.release_name)
        revision = ((secret or {}).get("metadata") or {}).get("resourceVersion") or "changed"
        patch = {"spec": {"template": {"metadata": {"annotations": {TOKEN_REVISION_ANNOTATION: revision}}}}}
        try:
            self.kube.patch(DEPLOYMENT, name, patch, self.agent_namespace)
        except NotFoundError:
            return False
        return True

    def absent(self):
        if self.hub_given:
            member = self.hub.get(MEMBER_CLUSTER, self.name)
            if member is not None and not (member.get("metadata") or {}).get("deletionTimestamp"):
                self.warn("MemberCluster %s still exists on the hub; without its agent the hub can only force the leave after "
                          "--force-delete-wait-time. Remove it first (kubefleet_member_cluster state=absent)" % self.name)
        helm = self.module.helm()
        release = helm.release(self.release_name, self.release_namespace)
        secret = self.kube.get(SECRET, self.secret_name, self.secret_namespace)
        if release is not None and not self.check_mode:
            helm.uninstall(self.release_name, self.release_namespace)
        if secret is not None:
            self.kube.delete(SECRET, self.secret_name, self.secret_namespace, dry_run=self.check_mode)
        if release is not None and not self.check_mode and self.params["wait"]:
            self.module.waiter.until(
                lambda: self.kube.get(NAMESPACE, self.agent_namespace), "absent",
                "namespace %s on the member to be deleted after the uninstall" % self.agent_namespace,
                "kube-controller-manager finishes namespace deletion; check for objects with finalizers in it",
            )
        result = {"changed": release is not None or secret is not None, "release": None,
                  "secret": {"name": self.secret_name, "namespace": self.secret_namespace}}
        before = {"secret": clean(secret, hide_data=True), "release": release_view(release, None)}
        return self.finish(result, before, {"secret": {}, "release": {}})
