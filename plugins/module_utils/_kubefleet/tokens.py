# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A member identity's tokens: how long they live, when they are renewed, and rotating them without the member
dropping out (pure rules).

A member agent holds a token of its hub ServiceAccount. By default it is time-bound: requested with the TokenRequest
API (``expirationSeconds``, bound to the Secret on the hub that holds it, so deleting that Secret revokes it) and
renewed by an ordinary re-run (rotation.py says when). A non-expiring legacy ``service-account-token`` Secret is made
only when the lifetime is ``never``. The lifetime is read from the token's own ``iat``/``exp``, never assumed: the API
server may cap it (``--service-account-max-token-expiration``).

A rotation issues a second token Secret for the same ServiceAccount, swaps the new token into the member's Secret,
waits for a heartbeat the agent made with it, and only then deletes the older Secret, which revokes its token. The
identity has two token Secret names ("slots"), the one it was created with and that name with ``-2``: every name is
known in advance, so no credential needs to list Secrets, and at most two tokens are valid at once. The newest filled slot is the current token.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime

from ansible_collections.fleetops.registration.plugins.module_utils.diagnosis import jwt_claims
from ansible_collections.fleetops.registration.plugins.module_utils.errors import ApiError, ParameterError
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_client import SECRET
from ansible_collections.fleetops.registration.plugins.module_utils.labels import MANAGED_BY, MANAGED_BY_LABEL
from ansible_collections.fleetops.registration.plugins.module_utils.rotation import expiry_warning
from ansible_collections.fleetops.registration.plugins.module_utils.times import parse_duration, parse_time

SECOND_SLOT_SUFFIX = "-2"
# On the member's copy of the token: when the hub issued it, and from which Secret (never the token itself).
ISSUED_ANNOTATION = "fleetops.registration/token-issued"
SOURCE_ANNOTATION = "fleetops.registration/token-secret"
# On the hub Secret holding a time-bound token: its ServiceAccount and when the token expires (from the API's answer).
SERVICE_ACCOUNT_ANNOTATION = "fleetops.registration/service-account"
EXPIRES_ANNOTATION = "fleetops.registration/token-expires"
HOLDER_TYPE = "Opaque"
LEGACY_TYPE = "kubernetes.io/service-account-token"
LEGACY_OWNER = "kubernetes.io/service-account.name"

# 30 days: a weekly scheduled run renews it (after 15 days) with two runs to spare before the warning (after 22.5
# days) and three before it expires; a leaked copy is useless within a month. The API server refuses less than 10 minutes.
DEFAULT_LIFETIME = "720h"
NEVER = "never"
MIN_LIFETIME_SECONDS = 600
LIFETIME_HINT = ("Give a Go duration of at least 10m such as 720h (inventory: fleetops_kubefleet_token_lifetime), or never "
                 "for a token that does not expire")


def lifetime_seconds(value, param="token_lifetime"):
    """The token lifetime asked for, in seconds; None for ``never`` (a legacy non-expiring token)."""
    text = DEFAULT_LIFETIME if value is None or value == "" else value
    if str(text).strip().lower() == NEVER:
        return None
    seconds = int(parse_duration(text, param))
    if seconds <= 0:
        raise ParameterError(param, "%r does not say how long the member's token lives (0 is not never)" % (value,), LIFETIME_HINT)
    if seconds < MIN_LIFETIME_SECONDS:
        raise ParameterError(param, "%r is shorter than the 10 minutes the API server accepts" % (value,), LIFETIME_HINT)
    return seconds


def allowed_lifetime(value, allow_non_expiring, param="token_lifetime"):
    """lifetime_seconds of a token about to be issued: ``never`` only with ``allow_non_expiring`` (a token that does
    not expire lets whoever copies it act as the member until its Secret is deleted)."""
    seconds = lifetime_seconds(value, param)
    if seconds is None and not allow_non_expiring:
        raise ParameterError(param, "never makes a member token that does not expire: a copy of it acts as the member on "
                             "the hub until its Secret is deleted", "Give a lifetime such as 720h (renewed by a re-run), "
                             "or acknowledge a non-expiring token with allow_non_expiring_token: true (inventory: "
                             "fleetops_allow_non_expiring_token)")
    return seconds


def token_window(token):
    """``(issued, expires)`` of a token as aware datetimes from its ``iat``/``exp`` claims (None for a missing one)."""
    claims = jwt_claims(token)
    return _stamp(claims.get("iat")), _stamp(claims.get("exp"))


def _stamp(value):
    try:
        return datetime.datetime.fromtimestamp(int(value), datetime.timezone.utc) if value is not None else None
    except (ValueError, TypeError, OverflowError, OSError):
        return None


def made_by_collection(obj):
    """Whether the collection made ``obj`` (its managed-by label)."""
    return (((obj or {}).get("metadata") or {}).get("labels") or {}).get(MANAGED_BY_LABEL) == MANAGED_BY


def adoption_problem(obj, kind, param, fix):
    """Why the identity must not adopt an existing ``obj`` (a ServiceAccount or token Secret), or None: the collection
    mints tokens only for what it made itself, so a name that happens to match a privileged ServiceAccount is refused."""
    if obj is None or made_by_collection(obj):
        return None
    metadata = obj.get("metadata") or {}
    return ParameterError(param, "%s %s/%s exists but was not created by this collection (it lacks the label %s=%s), so no "
                          "token is issued for it" % (kind, metadata.get("namespace"), metadata.get("name"), MANAGED_BY_LABEL, MANAGED_BY), fix)


def desired_holder(name, namespace, service_account):
    """The hub Secret a time-bound token is bound to and stored in (filled once the token is issued)."""
    return {"metadata": {"name": name, "namespace": namespace, "labels": {MANAGED_BY_LABEL: MANAGED_BY},
                         "annotations": {SERVICE_ACCOUNT_ANNOTATION: service_account}},
            "type": HOLDER_TYPE}


def token_request(seconds, holder):
    """The TokenRequest for a token living ``seconds``, bound to the Secret ``holder`` (deleting it revokes the token)."""
    metadata = holder["metadata"]
    return {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "spec": {"expirationSeconds": int(seconds),
                     "boundObjectRef": {"kind": "Secret", "apiVersion": "v1", "name": metadata["name"], "uid": metadata["uid"]}}}


def hub_credential(secrets, service_account):
    """``{secret, issued, expires}`` of ``service_account``'s current token among the identity namespace's token Secrets
    (the newest of those naming it), read from their metadata only (never the token); None when none names it."""
    mine = [secret for secret in secrets or [] if _owner(secret) == service_account]
    newest = current(mine)
    if newest is None:
        return None
    annotations = (newest.get("metadata") or {}).get("annotations") or {}
    return {"secret": newest["metadata"].get("name"), "issued": issued(newest), "expires": annotations.get(EXPIRES_ANNOTATION)}


def _owner(secret):
    annotations = (secret.get("metadata") or {}).get("annotations") or {}
    return annotations.get(SERVICE_ACCOUNT_ANNOTATION) if secret.get("type") == HOLDER_TYPE else annotations.get(LEGACY_OWNER)


def is_legacy(secret):
    """Whether a token Secret is a non-expiring legacy ``service-account-token`` Secret."""
    return (secret or {}).get("type") == LEGACY_TYPE


def slots(base):
    """The two token Secret names of an identity whose first token Secret is ``base``."""
    if base.endswith(SECOND_SLOT_SUFFIX):
        raise ParameterError("token_secret_name", "%s ends with %s, which names the identity's second token Secret" % (base, SECOND_SLOT_SUFFIX),
                             "Name the first token Secret (without %s)" % SECOND_SLOT_SUFFIX)
    second = base + SECOND_SLOT_SUFFIX
    if len(second) > 253:
        raise ParameterError("token_secret_name", "is too long to name a second token Secret for rotation (%s)" % second,
                             "Use a name of at most %d characters" % (253 - len(SECOND_SLOT_SUFFIX)))
    return base, second


def _created(secret):
    return parse_time(((secret or {}).get("metadata") or {}).get("creationTimestamp"))


def newest_first(secrets):
    """The existing Secrets of ``secrets`` (None for a missing slot), newest first (a tie: the second slot first)."""
    present = [(index, secret) for index, secret in enumerate(secrets) if secret is not None]
    present.sort(key=lambda pair: (_created(pair[1]) is not None, _created(pair[1]) or 0, pair[0]), reverse=True)
    return [secret for _index, secret in present]


def current(secrets):
    """The identity's current token Secret: the newest one (None when neither slot exists)."""
    ordered = newest_first(secrets)
    return ordered[0] if ordered else None


def older(secrets):
    """The token Secrets a finished rotation revokes: all but the newest."""
    return newest_first(secrets)[1:]


def free_slot(names, secrets):
    """The slot name a rotation issues the new token in: the one that does not exist (None while both do, which
    means a rotation is under way and its newest token is reused)."""
    for name, secret in zip(names, secrets):
        if secret is None:
            return name
    return None


def issued(secret):
    """When the current token Secret was created (its creationTimestamp), for the member's copy."""
    return ((secret or {}).get("metadata") or {}).get("creationTimestamp")


def hub_credentials(hub, member_clusters):
    """``{member: credential}`` (hub_credential's, with its expiry ``warning``; None when none is found) for the
    ``{member: MemberCluster}`` whose identity namespace the hub credential may list: one LIST of the collection's
    token Secrets per namespace, from their metadata; members of a namespace it may not list are left out."""
    identities = dict((member, (obj.get("spec") or {}).get("identity") or {}) for member, obj in member_clusters.items())
    listed = {}
    for namespace in sorted(set(i.get("namespace") for i in identities.values() if i.get("kind") == "ServiceAccount")):
        try:
            listed[namespace] = hub.list(SECRET, namespace, label_selector="%s=%s" % (MANAGED_BY_LABEL, MANAGED_BY))
        except ApiError as exc:
            if exc.status not in (403, 404):
                raise
    found = {}
    for member, identity in identities.items():
        if identity.get("namespace") not in listed:
            continue
        credential = hub_credential(listed[identity["namespace"]], identity.get("name"))
        if credential is not None:
            credential["warning"] = expiry_warning(parse_time(credential["issued"]), parse_time(credential["expires"]))
        found[member] = credential
    return found
