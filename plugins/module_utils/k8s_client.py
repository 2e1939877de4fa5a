# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A small REST client (transports in k8s_transport: urllib3, or the kubernetes package's ApiClient).

The collection manages a fixed set of kinds, so it addresses them by path and
skips API discovery altogether (kubernetes.core's dynamic client spends about
two seconds a task on it). Every call raises the collection's own errors.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re
from typing import Any, Dict, List, Optional

from ansible_collections.fleetops.registration.plugins.module_utils.errors import (
    ApiError, ApiNotServed, ConnectionFailure, NotFoundError, ParameterError,
)
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_transport import Unreachable, transport_for


Obj = Dict[str, Any]  # an API object as JSON
_UNSAFE_IN_PATH = re.compile(r"[/?#%\\\s]")


def path_segment(value: Any, param: str) -> str:
    """``value`` as one segment of a request path: a name such as ``../secrets/x`` would address another object with
    the same credentials, so it is refused before any request."""
    if not isinstance(value, str) or value in (".", "..") or _UNSAFE_IN_PATH.search(value):
        raise ParameterError(param, "%r is not a valid Kubernetes object name" % (value,),
                             "Use the object's name as kubectl shows it: no '/', '?', '#', '%', spaces, '.' or '..'")
    return value


class Resource:
    """How to address one kind over REST."""

    def __init__(self, api_version, kind, plural, namespaced=True):
        self.api_version = api_version
        self.kind = kind
        self.plural = plural
        self.namespaced = namespaced

    def path(self, namespace: Optional[str] = None, name: Optional[str] = None, subresource: Optional[str] = None) -> str:
        base = "/api/v1" if self.api_version == "v1" else "/apis/" + self.api_version
        if self.namespaced and namespace:
            base += "/namespaces/" + path_segment(namespace, "namespace")
        base += "/" + self.plural
        if name:
            base += "/" + path_segment(name, "name")
        if subresource:
            base += "/" + path_segment(subresource, "subresource")
        return base

    def __repr__(self):
        return "%s (%s)" % (self.kind, self.api_version)


NAMESPACE = Resource("v1", "Namespace", "namespaces", namespaced=False)
SECRET = Resource("v1", "Secret", "secrets")
SERVICE_ACCOUNT = Resource("v1", "ServiceAccount", "serviceaccounts")
CONFIG_MAP = Resource("v1", "ConfigMap", "configmaps")
DEPLOYMENT = Resource("apps/v1", "Deployment", "deployments")
POD = Resource("v1", "Pod", "pods")
EVENT = Resource("v1", "Event", "events")

NOISE_METADATA = ("managedFields", "resourceVersion", "uid", "generation", "creationTimestamp", "selfLink")


class KubeClient:
    """REST calls against one cluster; ``label`` names it in error messages."""

    def __init__(self, configuration, label="cluster", hint=None):
        self.transport = transport_for(configuration)
        self.host = configuration.host
        self.label = label
        self.hint = hint or "Check the kubeconfig, context, host and certificate options"

    def request(self, method: str, path: str, body: Any = None, query: Optional[Dict[str, Any]] = None,
                content_type: str = "application/json") -> Any:
        headers = {"Accept": "application/json", "Content-Type": content_type}
        try:
            status, reason, data = self.transport.send(method, path, body, query, headers)
        except Unreachable as exc:
            raise self._unreachable(exc)
        if not 200 <= status <= 299:
            raise self._api_error(status, reason, data, method, path)
        return json.loads(data) if data else None

    def _unreachable(self, exc):
        return ConnectionFailure(
            "cannot reach the %s API server at %s: %s" % (self.label, self.host, _short(exc)), self.hint, host=self.host,
        )

    def _api_error(self, code, http_reason, body, method, path):
        message = http_reason or ""
        reason = None
        details = None
        try:
            status = json.loads(body or "{}")
            message = status.get("message") or message
            reason = status.get("reason")
            details = status.get("details")
        except ValueError:
            pass
        what = "%s %s on the %s" % (method, path, self.label)
        if code == 404 and not (details or {}).get("kind") and not (details or {}).get("name"):
            api = api_of_path(path)
            if api:
                return ApiNotServed(
                    "the %s does not serve %s (resource %s): its CRDs are not installed" % (self.label, api[0], api[1]),
                    status=404, reason="ApiNotServed", hint="Run hub_prepare (or install the fleet manager's CRDs) on that cluster first")
        if code == 404:
            return NotFoundError("%s: not found (%s)" % (what, message), status=404, reason=reason, kind=(details or {}).get("kind"))
        if code in (401, 403):
            hint = "The credentials were refused; check the token or certificate and its RBAC permissions"
            return ApiError("%s: %s" % (what, message), status=code, reason=reason, hint=hint)
        if code == 422 or reason == "Invalid":
            return ApiError("%s was rejected as invalid: %s" % (what, message), status=code, reason=reason)
        return ApiError("%s failed: %s" % (what, message), status=code, reason=reason)

    # -- verbs ---------------------------------------------------------------

    def get(self, resource: Resource, name: str, namespace: Optional[str] = None) -> Optional[Obj]:
        try:
            return self.request("GET", resource.path(namespace, name))
        except NotFoundError:
            return None

    def list(self, resource: Resource, namespace: Optional[str] = None, label_selector: Optional[str] = None,
             field_selector: Optional[str] = None) -> List[Obj]:
        query = dict((key, value) for key, value in (("labelSelector", label_selector), ("fieldSelector", field_selector)) if value)
        return (self.request("GET", resource.path(namespace), query=query or None) or {}).get("items", [])

    def create(self, resource: Resource, body: Obj, namespace: Optional[str] = None, dry_run: bool = False) -> Obj:
        body = dict(body, apiVersion=resource.api_version, kind=resource.kind)
        return self.request("POST", resource.path(namespace), body=body, query=_dry(dry_run))

    def patch(self, resource: Resource, name: str, patch: Any, namespace: Optional[str] = None, dry_run: bool = False,
              subresource: Optional[str] = None, strategic: bool = False) -> Obj:
        """A JSON merge patch, or with ``strategic`` a strategic merge patch (built-in kinds: lists such as containers
        and env merge by name instead of being replaced)."""
        content_type = "application/strategic-merge-patch+json" if strategic else "application/merge-patch+json"
        return self.request("PATCH", resource.path(namespace, name, subresource), body=patch, query=_dry(dry_run),
                            content_type=content_type)

    def delete(self, resource: Resource, name: str, namespace: Optional[str] = None, dry_run: bool = False,
               propagation: str = "Background") -> Any:
        """Delete; return the object as it was (None if it was already gone)."""
        body = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": propagation}
        if dry_run:
            # With a DeleteOptions body the API server ignores the dryRun query parameter: it must be in the body.
            body["dryRun"] = ["All"]
        try:
            return self.request("DELETE", resource.path(namespace, name), body=body, query=_dry(dry_run))
        except NotFoundError:
            return None

    def version(self):
        return self.request("GET", "/version")

    def whoami(self):
        """The user name this client authenticates as (a SelfSubjectReview); a refused credential raises ApiError 401.

        API servers before Kubernetes 1.28 do not serve SelfSubjectReview: then an authenticated
        GET of ``/api`` proves the credential and the name is None.
        """
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
        try:
            review = self.request("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", body=body)
        except ApiError as exc:
            if exc.status != 404:
                raise
            self.request("GET", "/api")
            return None
        return (((review or {}).get("status") or {}).get("userInfo") or {}).get("username")


def credential_check(client: "KubeClient") -> Dict[str, Any]:
    """Whether the API server accepts the credential ``client`` authenticates with: ``{accepted, user, error}``.

    ``accepted`` is False when the server refuses it (401), None when the server could not be asked (so nothing is
    known), True otherwise; a 403 means the server knows the credential and only forbids the question.
    """
    try:
        return {"accepted": True, "user": client.whoami(), "error": None}
    except ApiError as exc:
        if exc.status == 403:
            return {"accepted": True, "user": None, "error": None}
        return {"accepted": False if exc.status == 401 else None, "user": None, "error": exc.msg}
    except ConnectionFailure as exc:
        return {"accepted": None, "user": None, "error": exc.msg}


def api_of_path(path):
    """``("fleet.cattle.io/v1alpha1", "clusters")`` for a custom API path, or None for the core API and built-ins."""
    parts = [p for p in path.split("?")[0].split("/") if p]
    if len(parts) < 4 or parts[0] != "apis" or "." not in parts[1] or parts[1].endswith(".k8s.io"):
        return None
    rest = parts[3:]
    if rest[0] == "namespaces" and len(rest) >= 3:
        rest = rest[2:]
    return "%s/%s" % (parts[1], parts[2]), rest[0]


def _dry(dry_run):
    return {"dryRun": "All"} if dry_run else None


def _short(exc):
    text = str(getattr(exc, "reason", None) or exc)
    return text if len(text) < 300 else text[:300] + "..."


def merge_patch(current: Any, desired: Any) -> Any:
    """The JSON merge patch that makes ``current`` include ``desired``.

    ``desired`` is a partial object: keys it does not name are left alone; a
    ``None`` value removes the key. Returns {} when nothing would change.
    """
    patch = {}
    current = current or {}
    for key, value in desired.items():
        if value is None:
            if key in current:
                patch[key] = None
        elif isinstance(value, dict) and isinstance(current.get(key), dict):
            sub = merge_patch(current[key], value)
            if sub:
                patch[key] = sub
        elif current.get(key) != value:
            patch[key] = value
    return patch


def clean(obj: Optional[Obj], hide_data: bool = False) -> Optional[Obj]:
    """An object as a diff or result should show it: server noise dropped, Secret data hidden."""
    if obj is None:
        return {}
    obj = json.loads(json.dumps(obj))
    metadata = obj.get("metadata") or {}
    for key in NOISE_METADATA:
        metadata.pop(key, None)
    annotations = metadata.get("annotations") or {}
    annotations.pop("kubectl.kubernetes.io/last-applied-configuration", None)
    if hide_data:
        for key in ("data", "stringData"):
            if obj.get(key):
                obj[key] = dict((k, "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER") for k in obj[key])
    return obj


class Outcome:
    """What an ensure step did: ``changed`` plus the before/after objects for the diff."""

    def __init__(self, changed, before, after):
        self.changed = changed
        self.before = before
        self.after = after


def ensure_object(kube, resource, desired, check_mode=False, hide_data=False, warn=None, namespace_param="namespace"):
    """Create ``desired`` or patch the live object towards it; server-side dry run in check mode.

    In check mode, a namespace that does not exist yet (an earlier task of the same run would create
    it, but it only ran as a dry run) makes the creation a predicted change: ``warn`` is told, and
    the predicted object is ``desired`` itself. Outside check mode that is an error naming the namespace.
    """
    metadata = desired["metadata"]
    namespace = metadata.get("namespace")
    current = kube.get(resource, metadata["name"], namespace)
    if current is None:
        try:
            after = kube.create(resource, desired, namespace, dry_run=check_mode)
        except NotFoundError as exc:
            if exc.details.get("kind") != "namespaces":
                raise
            if not check_mode:
                raise ParameterError(namespace_param, "namespace %s does not exist on the %s" % (namespace, kube.label),
                                     hint="Create it first (hub_prepare with namespaces: [%s] does)" % namespace)
            if warn:
                warn("namespace %s does not exist yet; assuming an earlier task creates it, %s %s would be created there"
                     % (namespace, resource.kind, metadata["name"]))
            return Outcome(True, None, clean(dict(desired, apiVersion=resource.api_version, kind=resource.kind), hide_data))
        return Outcome(True, None, clean(after, hide_data))
    patch = merge_patch(current, desired)
    if not patch:
        return Outcome(False, clean(current, hide_data), clean(current, hide_data))
    after = kube.patch(resource, metadata["name"], patch, namespace, dry_run=check_mode)
    return Outcome(True, clean(current, hide_data), clean(after, hide_data))


def condition(obj: Optional[Obj], cond_type: str) -> Obj:
    """The condition of ``cond_type`` in ``status.conditions`` (a dict), or {}."""
    for cond in ((obj or {}).get("status") or {}).get("conditions") or []:
        if cond.get("type") == cond_type:
            return cond
    return {}
