# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The hub as both backends need it: their APIs served, their controllers running, namespaces present.

The API check reads one APIResourceList per group version (``GET /apis/<group>/<version>``),
which is what ``kubectl api-resources`` does, but only for the two groups the collection uses.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.fleetops.registration.plugins.module_utils import member_lock, registry
from ansible_collections.fleetops.registration.plugins.module_utils.errors import ApiError, NotFoundError, opt_in_needed
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_client import NAMESPACE, Resource
from ansible_collections.fleetops.registration.plugins.module_utils.parsing import validate_dns_label

DEPLOYMENT = Resource("apps/v1", "Deployment", "deployments")
MANAGED_BY = {"app.kubernetes.io/managed-by": "fleetops.registration"}


def missing_resources(resource_list, wanted):
    """Names in ``wanted`` that an APIResourceList (None when the group version is not served) lacks."""
    if resource_list is None:
        return list(wanted)
    served = set(r.get("name") for r in resource_list.get("resources") or [])
    return [name for name in wanted if name not in served]


def describe_missing(report):
    """One sentence naming every API a backend lacks and how to get it served, e.g. for a failure message."""
    parts = []
    for backend in sorted(report):
        item = report[backend]
        if item["missing"]:
            manager = registry.manager(backend)
            names = ", ".join("%s.%s" % (name, manager.group_version) for name in item["missing"])
            parts.append("%s (%s): %s" % (manager.title, backend, names))
    return "; ".join(parts)


def missing_api_hint(report):
    """What to do about fleet managers whose APIs the hub lacks: another hub, install them, or do not ask for them."""
    missing = [b for b in sorted(report) if report[b]["missing"]]
    return ("Point the connection options at the fleet manager's hub, or %s; or, if this hub runs only some fleet "
            "managers, leave %s out of backends (with the roles: fleetops_backends on the members, or the AWX survey's "
            "fleetops_survey_backends)" % (install_hints(report), " and ".join(missing)))


def install_hints(report):
    return "; ".join("for %s, %s" % (registry.manager(b).title, registry.manager(b).install_hint)
                     for b in sorted(report) if report[b]["missing"])


def deployment_available(obj):
    """Whether a Deployment reports as many available replicas as it wants (False when it is absent)."""
    if not obj:
        return False
    wanted = (obj.get("spec") or {}).get("replicas", 1)
    available = (obj.get("status") or {}).get("availableReplicas") or 0
    return available >= wanted


class HubPrepare:
    """hub_prepare: check the APIs (and controllers) of the chosen backends, then ensure the namespaces."""

    def __init__(self, module):
        self.module = module
        self.params = module.params
        self.check_mode = module.check_mode
        self.kube = module.kube()
        self.backends = [registry.manager(name).name for name in dict.fromkeys(self.params.get("backends") or [])]
        # With detect_backends, every other manager too, where the hub serves its API (decided in run()).
        self.candidates = self.backends + ([name for name in registry.MANAGERS if name not in self.backends]
                                           if self.params.get("detect_backends") else [])
        for name in self.params.get("backend_namespaces") or {}:
            registry.manager(name, param="backend_namespaces")
        self.namespaces = self.namespaces_of(self.candidates)
        for name in self.namespaces:
            validate_dns_label(name, "namespaces")

    def namespaces_of(self, backends):
        per_backend = self.params.get("backend_namespaces") or {}
        chosen = [per_backend[name] for name in backends if per_backend.get(name)]
        own = [self.params["hub_namespace"]] if self.params.get("hub_namespace") else []
        return list(dict.fromkeys(own + chosen + list(self.params.get("namespaces") or [])))

    def apis(self):
        report = {}
        for backend in self.candidates:
            manager = registry.manager(backend)
            try:
                resource_list = self.kube.request("GET", "/apis/" + manager.group_version)
            except NotFoundError:
                resource_list = None
            missing = missing_resources(resource_list, manager.hub_resources)
            report[backend] = {"group_version": manager.group_version, "served": not missing, "missing": missing}
        return report

    def controllers(self):
        report = {}
        for backend in self.backends:
            title = registry.manager(backend).title
            namespace, name = registry.manager(backend).controller
            try:
                deployment = self.kube.get(DEPLOYMENT, name, namespace)
            except ApiError as exc:
                if exc.status != 403:
                    raise
                report[backend] = {"namespace": namespace, "deployment": name, "found": None, "available": None}
                continue
            available = deployment_available(deployment)
            report[backend] = {"namespace": namespace, "deployment": name, "found": deployment is not None, "available": available}
            if not available:
                self.module.warn("%s: the controller Deployment %s/%s %s; objects this collection creates will not be processed "
                                 "until it runs (it may run elsewhere under another name, then ignore this)"
                                 % (title, namespace, name, "is not available" if deployment else "was not found"))
        return report

    def ensure_namespaces(self):
        before, created = [], []
        for name in self.namespaces:
            current = self.kube.get(NAMESPACE, name)
            if current is not None:
                if (current.get("metadata") or {}).get("deletionTimestamp"):
                    raise ApiError("namespace %s on the hub is being deleted" % name,
                                   hint="Wait until it is gone (or remove what blocks its finalizers), then run again")
                before.append(name)
                continue
            body = {"metadata": {"name": name, "labels": dict(MANAGED_BY)}}
            try:
                self.kube.create(NAMESPACE, body, dry_run=self.check_mode)
            except ApiError as exc:
                raise opt_in_needed(exc, "create the missing namespace %s" % name)
            created.append(name)
        return before, created

    def tidy(self):
        """Per manager with a registration namespace, what its ``tidy_hub`` removed (a namespace created just now is empty)."""
        per_backend = self.params.get("backend_namespaces") or {}
        return dict((name, registry.manager(name).tidy_hub(self.kube, per_backend[name], dry_run=self.check_mode))
                    for name in self.backends if per_backend.get(name))

    def tidy_locks(self):
        """The member locks in the collection's own namespace that no run holds any more, removed."""
        namespace = self.params.get("hub_namespace")
        removed = member_lock.tidy_locks(self.kube, namespace, dry_run=self.check_mode) if namespace else []
        for item in removed:
            self.module.warn(member_lock.tidied_message(item, self.check_mode))
        return removed

    def run(self):
        apis = self.apis()
        required = dict((name, apis[name]) for name in self.backends)
        problem = describe_missing(required)
        if problem:
            raise NotFoundError("the hub does not serve the APIs the collection needs - %s" % problem,
                                hint=missing_api_hint(required),
                                apis=apis)
        self.backends = [name for name in self.candidates if name in required or not apis[name]["missing"]]
        if not self.backends and self.candidates:
            raise NotFoundError("the hub serves no fleet manager's API - %s" % describe_missing(apis),
                                hint="Point the connection options at the fleet manager's hub, or %s" % install_hints(apis),
                                apis=apis)
        self.namespaces = self.namespaces_of(self.backends)
        controllers = self.controllers() if self.params.get("check_controllers") else {}
        existing, created = self.ensure_namespaces()
        tidied = self.tidy() if self.params.get("tidy") else {}
        tidied_locks = self.tidy_locks() if self.params.get("tidy") else []
        result = {
            "changed": bool(created) or any(tidied.values()) or bool(tidied_locks),
            "backends": self.backends,
            "tidied": tidied,
            "tidied_locks": tidied_locks,
            "apis": apis,
            "controllers": controllers,
            "namespaces": self.namespaces,
            "created_namespaces": created,
            "summary": {
                "apis_served": dict((name, item["served"]) for name, item in apis.items()),
                "controllers_available": dict((name, item["available"]) for name, item in controllers.items()),
                "created_namespaces": created,
            },
        }
        if self.module._diff:
            result["diff"] = {"before": {"namespaces": existing}, "after": {"namespaces": existing + created}}
        return result
