# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure KubeFleet rules: identities, MemberCluster changes, the member agent's values and plan.

Nothing here talks to a cluster; every function is unit tested with plain data.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib

from ansible_collections.fleetops.registration.plugins.module_utils.errors import ParameterError
from ansible_collections.fleetops.registration.plugins.module_utils.helm import ReleasePlan
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_client import clean, merge_patch
from ansible_collections.fleetops.registration.plugins.module_utils.kubeconfig import certificate_blocks, pem_certificates
from ansible_collections.fleetops.registration.plugins.module_utils.labels import label_key_problem, label_patch, label_value_problem, reconcile_labels
from ansible_collections.fleetops.registration.plugins.module_utils.parsing import b64, deep_merge, unb64, validate_dns_subdomain
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet import tokens
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.resources import (
    DEFAULT_HEARTBEAT_PERIOD, QUARANTINE_TAINT,
    CONTROLLER_LABEL_PREFIXES, DEFAULT_HUB_SECRET, DEFAULT_HUB_SECRET_NAMESPACE,
    KUBEFLEET_SYSTEM_NAMESPACE, MANAGED_BY, SA_NAME_ANNOTATION, SA_TOKEN_TYPE,
)


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


def service_account_username(namespace, name):
    """The user name the API server gives a ServiceAccount's token."""
    return "system:serviceaccount:%s:%s" % (namespace, name)


def identity_username(identity):
    """The user name the hub should report for a token of ``identity`` (None for a Group)."""
    identity = identity or {}
    if identity.get("kind") == "ServiceAccount":
        return service_account_username(identity.get("namespace"), identity.get("name"))
    if identity.get("kind") == "User":
        return identity.get("name")
    return None


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

def _taint(index, taint, param):
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
    item = {"key": key, "effect": effect}
    if value:
        item["value"] = value
    return item


def normalize_taints(taints, param="taints"):
    """Validate taints; return them as the API stores them (no empty value). None means unmanaged."""
    if taints is None:
        return None
    if not isinstance(taints, list):
        raise ParameterError(param, "expected a list of {key, value, effect} mappings")
    result = []
    seen = set()
    for index, taint in enumerate(taints):
        item = _taint(index, taint, param)
        if (item["key"], item["effect"]) in seen:
            raise ParameterError(param, "taint %r with effect %s is listed twice" % (item["key"], item["effect"]))
        seen.add((item["key"], item["effect"]))
        result.append(item)
    return result


def _normal_taints(taints):
    return [dict((k, v) for k, v in t.items() if v not in (None, "")) for t in taints or []]


def spec_drift(hub, heartbeat, taints):
    """What of the MemberCluster's spec differs from the inventory's (pure): ``hub`` is its hub view; ``heartbeat``
    and ``taints`` (normalised, the quarantine taint left out) None when not judged. The quarantine taint is the
    collection's own and judged apart (``quarantined``)."""
    found = []
    live_period = hub.get("heartbeat_period_seconds") or DEFAULT_HEARTBEAT_PERIOD
    if heartbeat is not None and live_period != heartbeat:
        found.append("heartbeatPeriodSeconds is %s, the inventory asks for %s" % (live_period, heartbeat))
    if taints is not None:
        live = [taint for taint in _normal_taints(hub.get("taints")) if taint.get("key") != QUARANTINE_TAINT["key"]]
        wanted = [taint for taint in taints if taint.get("key") != QUARANTINE_TAINT["key"]]
        if live != wanted:
            found.append("taints are %s, the inventory asks for %s" % (_taint_words(live), _taint_words(wanted)))
    return found


def spec_changes(before, after):
    """``["heartbeatPeriodSeconds 60 -> 30", ...]``: what a write changed of the MemberCluster's heartbeat period and
    its user's taints (pure; the quarantine taint is reported apart). None ``before``: created, nothing listed."""
    if not before or not after:
        return []
    old, new = (obj.get("spec") or {} for obj in (before, after))
    changes = []
    periods = [spec.get("heartbeatPeriodSeconds") or DEFAULT_HEARTBEAT_PERIOD for spec in (old, new)]
    if periods[0] != periods[1]:
        changes.append("heartbeatPeriodSeconds %s -> %s" % tuple(periods))
    taints = [[t for t in _normal_taints(spec.get("taints")) if t.get("key") != QUARANTINE_TAINT["key"]] for spec in (old, new)]
    if taints[0] != taints[1]:
        changes.append("taints %s -> %s" % (_taint_words(taints[0]), _taint_words(taints[1])))
    return changes


def _taint_words(taints):
    return ", ".join("%s=%s:%s" % (t.get("key"), t.get("value", ""), t.get("effect")) for t in taints) or "none"


def quarantined(obj):
    """Whether a MemberCluster carries the collection's quarantine taint."""
    return any((taint or {}).get("key") == QUARANTINE_TAINT["key"] for taint in ((obj or {}).get("spec") or {}).get("taints") or [])


def taints_with_quarantine(current, taints, quarantine=None):
    """The taints to write (None: leave them alone): ``taints`` (None: the live ones) with the quarantine taint as
    ``quarantine`` says. ``hold`` puts it on a MemberCluster being created and keeps it on one that has it (a member
    verified earlier is not quarantined again); ``lift`` removes it; None keeps the live state. A user's own taints
    never add or remove it."""
    held = quarantined(current)
    keep = {"hold": current is None or held, "lift": False}.get(quarantine, held)
    if taints is None and keep == held:
        return None
    own = [taint for taint in (taints if taints is not None else _normal_taints(((current or {}).get("spec") or {}).get("taints")))
           if taint.get("key") != QUARANTINE_TAINT["key"]]
    return own + ([dict(QUARANTINE_TAINT)] if keep else [])


def wanted_labels(live, labels, labels_mode="merge"):
    """The MemberCluster labels the options ask for, keeping the ones hub tooling owns."""
    return reconcile_labels(live or {}, labels, labels_mode, owned=CONTROLLER_LABEL_PREFIXES)


def member_cluster_changes(current, name, identity, heartbeat, taints=None, labels=None, labels_mode="merge", annotations=None):
    """What to send to make the MemberCluster ``name`` match the options.

    Returns ``(body, None)`` to create it, ``(None, patch)`` to merge-patch it, or
    ``(None, None)`` when it already matches. ``taints``/``labels`` of None are left alone; ``annotations`` are set
    (never removed).
    """
    if current is None:
        spec = {"identity": identity, "heartbeatPeriodSeconds": heartbeat}
        if taints:
            spec["taints"] = taints
        metadata = {"name": name}
        if labels:
            metadata["labels"] = dict(labels)
        if annotations:
            metadata["annotations"] = dict(annotations)
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
        changes = label_patch(live, wanted_labels(live, labels, labels_mode))
        if changes:
            patch["metadata"] = {"labels": changes}
    live_annotations = (current.get("metadata") or {}).get("annotations") or {}
    annotation_changes = dict((key, value) for key, value in (annotations or {}).items() if live_annotations.get(key) != value)
    if annotation_changes:
        patch.setdefault("metadata", {})["annotations"] = annotation_changes
    return None, patch or None


def for_diff(obj, hide_data=False):
    """An object for a diff: server noise and status dropped (status churns with every heartbeat)."""
    obj = clean(obj, hide_data)
    obj.pop("status", None)
    return obj


# -- member agent ----------------------------------------------------------------

def image_values(repository=None, tag=None, pull_policy=None):
    """A chart's image values with only what is set (None or empty: the chart's own)."""
    return dict((key, value) for key, value in (("repository", repository), ("tag", tag), ("pullPolicy", pull_policy)) if value)


def agent_values(member_name, hub_url, hub_ca_pem=None, agent_namespace=KUBEFLEET_SYSTEM_NAMESPACE,
                 secret_name=DEFAULT_HUB_SECRET, secret_namespace=DEFAULT_HUB_SECRET_NAMESPACE, image_repository=None,
                 image_tag=None, refresh_token_repository=None, refresh_token_tag=None,
                 pull_policy=None, insecure=False, log_verbosity=None, extra=None):
    """The member-agent chart values: ``extra`` first, the options on top. Images are the chart's unless set: the
    KubeFleet project's chart runs its own release's images, and an override belongs to the inventory (a mirror, or
    the tag of a chart whose default is a moving one); the refresh-token tag follows ``image_tag`` when only that is set."""
    config = {"provider": "secret", "hubURL": hub_url, "memberClusterName": member_name}
    if hub_ca_pem:
        config["hubCA"] = b64(hub_ca_pem)
    managed = {
        "config": config,
        "secret": {"name": secret_name, "namespace": secret_namespace},
        "namespace": agent_namespace,
        "tlsClientInsecure": bool(insecure),
        "useCAAuth": False,
        "enableV1Alpha1APIs": False,
        "enableV1Beta1APIs": True,
    }
    images = {"image": image_values(image_repository, image_tag, pull_policy),
              "refreshtoken": image_values(refresh_token_repository, refresh_token_tag or image_tag, pull_policy)}
    managed.update((key, value) for key, value in images.items() if value)
    if log_verbosity is not None:
        managed["logVerbosity"] = log_verbosity
    return deep_merge(extra or {}, managed)


def agent_hub_endpoint(values):
    """``(hub_url, hub_ca_pem, insecure, member_name)`` the member agent uses, read from its chart values."""
    values = values if isinstance(values, dict) else {}
    config = values.get("config") if isinstance(values.get("config"), dict) else {}
    ca = config.get("hubCA")
    return (config.get("hubURL"), unb64(ca, "hubCA") if ca else None, bool(values.get("tlsClientInsecure")),
            config.get("memberClusterName"))


def token_location(values):
    """``(namespace, name)`` of the token Secret a member-agent release's values name, or None."""
    secret = (values if isinstance(values, dict) else {}).get("secret") or {}
    if isinstance(secret, dict) and secret.get("name") and secret.get("namespace"):
        return secret["namespace"], secret["name"]
    return None


# -- the agent's configuration: what the member shows, against what the collection configures -----------------------

def hub_ca_digest(pem):
    """SHA-256 (hex) of the certificates of a CA bundle, to compare two CAs without showing them; None without one."""
    certificates = certificate_blocks(pem or "")
    return hashlib.sha256(certificates.encode("utf-8")).hexdigest() if certificates else None


def _ca_facts(encoded):
    """``(digest, holds more than certificates)`` of a release's base64 ``hubCA``."""
    if not encoded:
        return None, False
    try:
        ca = unb64(encoded, "hubCA") if isinstance(encoded, str) else None
    except ParameterError:
        ca = None
    if ca is None:
        return "unreadable", False
    return hub_ca_digest(ca), "-----BEGIN " in ca.replace("-----BEGIN CERTIFICATE-----", "")


def agent_configuration(values):
    """What a member-agent release's values configure, as evidence (read from the member, compared, never followed):
    ``{hub_url, hub_ca_sha256, hub_ca_extra, insecure, token_secret, member_name}`` - ``hub_ca_extra``: the hubCA value
    holds more than certificates (a private key)."""
    values = values if isinstance(values, dict) else {}
    config = values.get("config") if isinstance(values.get("config"), dict) else {}
    url = config.get("hubURL")
    digest, extra = _ca_facts(config.get("hubCA"))
    location = token_location(values)
    return {"hub_url": url.rstrip("/") if isinstance(url, str) else url, "hub_ca_sha256": digest, "hub_ca_extra": extra,
            "insecure": bool(values.get("tlsClientInsecure")), "token_secret": "%s/%s" % location if location else None,
            "member_name": config.get("memberClusterName")}


def wanted_configuration(endpoint, secret_namespace, secret_name, member_name):
    """What the collection configures for the agent (``hub_access.agent_endpoint``'s ``(url, ca, insecure)`` and the
    token Secret the options name), in ``agent_configuration``'s shape."""
    url, ca, insecure = endpoint
    return {"hub_url": url, "hub_ca_sha256": hub_ca_digest(ca), "hub_ca_extra": False, "insecure": bool(insecure),
            "token_secret": "%s/%s" % (secret_namespace, secret_name), "member_name": member_name}


def configuration_drift(configured, wanted):
    """Why the member-agent release configures another hub URL, CA, TLS check, token Secret or member name than the
    collection does (pure). The member's values are never followed: installing the agent again with the collection's
    values (the action ``upgrade``) repairs each."""
    if not configured or not wanted:
        return []
    reasons = []
    if wanted.get("hub_url") and configured.get("hub_url") != wanted["hub_url"]:
        reasons.append("the member agent uses hub URL %s, not %s" % (configured.get("hub_url"), wanted["hub_url"]))
    if configured.get("insecure") and not wanted.get("insecure"):
        reasons.append("the member agent does not verify the hub's certificate (tlsClientInsecure), which the options do not ask for")
    elif wanted.get("insecure") and not configured.get("insecure"):
        reasons.append("the member agent verifies the hub's certificate, but hub_insecure_skip_tls_verify asks it not to")
    if wanted.get("hub_ca_sha256") and configured.get("hub_ca_sha256") != wanted["hub_ca_sha256"]:
        reasons.append("the member agent trusts another hub CA (sha256 %s) than the collection configures (%s)" % (
            (configured.get("hub_ca_sha256") or "none")[:12], wanted["hub_ca_sha256"][:12]))
    if configured.get("hub_ca_extra"):
        reasons.append("the member agent's hubCA value holds more than certificates (a private key?)")
    if wanted.get("token_secret") and configured.get("token_secret") != wanted["token_secret"]:
        reasons.append("the member agent reads its token from %s, not %s" % (configured.get("token_secret"), wanted["token_secret"]))
    if wanted.get("member_name") and configured.get("member_name") != wanted["member_name"]:
        reasons.append("the member agent joins as %s, not %s" % (configured.get("member_name"), wanted["member_name"]))
    return reasons


def desired_hub_secret(name, namespace, token, source=None):
    """The member's copy of the token; ``source``: the hub token Secret it came from, whose name and creation time the
    copy records (the credential's age, for rotation), never its data."""
    metadata = {"name": name, "namespace": namespace, "labels": dict(MANAGED_BY)}
    if source is not None:
        metadata["annotations"] = {tokens.ISSUED_ANNOTATION: tokens.issued(source), tokens.SOURCE_ANNOTATION: source["metadata"]["name"]}
    return {"metadata": metadata, "type": "Opaque", "data": {"token": b64(token)}}


def release_view(release, values):
    """A release as the diff shows it."""
    if not release:
        return {}
    return {"chart": release.get("chart"), "chart_version": release.get("chart_version"),
            "status": release.get("status"), "values": values or {}}


def explicit_hub_ca(pem, param="hub_ca_pem"):
    """The hub CA given as PEM text: only its certificates (a private key in the bundle is dropped), or None."""
    if not pem:
        return None
    return pem_certificates(pem, param, "Give the PEM text of the hub's CA")


class AgentPlan:
    """What ``kubefleet_member_agent`` will do on the member, and why; built by ``plan_agent``."""

    def __init__(self, secret_action, secret_patch, release, reasons, restart, create_namespaces=(), stale_secret=None,  # pylint: disable=too-many-arguments
                 new_token=True):
        self.secret_action = secret_action    # none, create, update, predict (token not known in check mode)
        self.secret_patch = secret_patch      # the merge patch for "update"
        self.release = release                # a helm.ReleasePlan
        self.reasons = reasons
        self.restart = restart                # roll the agent to pick up a new token without a Helm change
        self.create_namespaces = tuple(create_namespaces)  # the release record's and the token's, made (and labelled) here
        self.stale_secret = stale_secret      # (namespace, name) of the token the release read before, removed after Helm
        self.new_token = new_token            # whether the token itself changes (not only the copy's annotations)

    @property
    def changed(self):
        return self.secret_action != "none" or self.release.action != "none" or bool(self.create_namespaces)

    @property
    def token_changed(self):
        return self.secret_action in ("update", "predict") and self.secret_patch is not None and self.new_token


def release_plan(prior, chart_name, chart_version, desired_values, deployment):
    """Pure: ``ReleasePlan.decide``, and an upgrade of an installed release whose agent Deployment (``deployment``, its
    name when it is gone, else None) was deleted: Helm's upgrade creates what its manifest holds and the cluster lacks;
    nothing else would bring the agent back."""
    plan = ReleasePlan.decide(prior, chart_name, chart_version, desired_values)
    if plan.action != ReleasePlan.INSTALL and prior is not None and deployment:
        plan.reasons.append("the agent Deployment %s is missing" % deployment)
        plan.action = ReleasePlan.UPGRADE
    return plan


def plan_agent(secret, desired_secret, release_plan, missing_namespaces=(), moved=None):
    """Pure: from the member's Secret, the Secret wanted (None when the token is not known), the release decision,
    the namespaces (release record, token) that do not exist yet, and ``moved``: ``((namespace, name) the installed
    release reads its token from, (namespace, name) wanted)`` when they differ and the old Secret is the collection's
    (an agent installed when the token lived in ``default``), else None.

    A changed token on a release that Helm leaves alone needs a restart: the refresh-token
    sidecar reads the Secret only every few hours. So does a token Secret written anew for a running agent (deleted on
    the member): the agent holds the token it read at its start, which the join then revokes.
    """
    reasons = ["the namespace %s does not exist on the member" % namespace for namespace in missing_namespaces]
    if moved:
        reasons.append("the member agent reads its token from %s/%s, which moves to %s/%s" % (moved[0] + moved[1]))
    if desired_secret is None:
        action, patch = "predict", ({} if secret is not None else None)
        reasons.append("the identity token does not exist yet (check mode), so %s will be written" % (
            "the member's token Secret" if secret is None else "a new token"))
    elif secret is None:
        action, patch = "create", None
        reasons.append("the token Secret %s is missing on the member" % desired_secret["metadata"]["name"])
    else:
        patch = merge_patch(secret, desired_secret) or None
        action = "update" if patch else "none"
        if patch and secret_token(secret) != secret_token(desired_secret):
            reasons.append("the token Secret %s holds another token than the hub identity's" % desired_secret["metadata"]["name"])
        elif patch:
            reasons.append("the token Secret %s differs from the one wanted" % desired_secret["metadata"]["name"])
    reasons.extend(release_plan.reasons)
    new_token = secret is None or desired_secret is None or secret_token(secret) != secret_token(desired_secret)
    restart = action in ("create", "update") and new_token and release_plan.action == "none"
    stale = moved[0] if moved and release_plan.action != "none" else None
    return AgentPlan(action, patch, release_plan, reasons, restart, missing_namespaces, stale, new_token)


def desired_namespace(name):
    """A namespace the collection makes on the member, labelled so that the leave removes it again."""
    return {"metadata": {"name": name, "labels": dict(MANAGED_BY)}}


def made_by_collection(obj):
    """Whether the collection made ``obj`` (its managed-by label)."""
    labels = ((obj or {}).get("metadata") or {}).get("labels") or {}
    return all(labels.get(key) == value for key, value in MANAGED_BY.items())
