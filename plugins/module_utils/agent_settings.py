# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One agent setting per member (the ``agent`` option, inventory ``fleetops_agent``), the same shape for every fleet
manager: where the agent pods run, what they may use, the environment they get (proxy variables) and where their
images come from. Pure: each manager's ``agent_settings`` renders it into chart values and its hub object; this file
validates it, turns it into a Deployment patch and says how a Deployment (or its plain ``pod_view``) drifts from it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import hashlib
import re
from decimal import Decimal, InvalidOperation

from ansible_collections.fleetops.registration.plugins.module_utils.errors import ParameterError
from ansible_collections.fleetops.registration.plugins.module_utils.parsing import load_yaml, secret_name, url_passwords
from ansible_collections.fleetops.registration.plugins.module_utils._deps import yaml

KEYS = ("tolerations", "node_selector", "affinity", "resources", "env", "image_registry", "image_pull_secrets",
        "priority_class_name")

# The option's argument spec (modules, member_info's per-member items).
ARGUMENT_SPEC = dict(
    tolerations=dict(type="list", elements="dict"),
    node_selector=dict(type="dict"),
    affinity=dict(type="dict"),
    resources=dict(type="dict"),
    env=dict(type="dict"),
    image_registry=dict(type="str"),
    image_pull_secrets=dict(type="list", elements="str", no_log=False),
    priority_class_name=dict(type="str"),
)

_TOLERATION_KEYS = {"key", "operator", "value", "effect", "tolerationSeconds"}
_AFFINITY_KEYS = {"nodeAffinity", "podAffinity", "podAntiAffinity"}
_RESOURCE_KEYS = {"limits", "requests"}
_ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_REGISTRY = re.compile(r"^[A-Za-z0-9.-]+(:[0-9]+)?(/[a-z0-9._/-]+)?$")
_CREDENTIAL_URL = re.compile(r"://[^/@\s]+@")


def _fail(key, problem, fix, param):
    raise ParameterError("%s.%s" % (param, key), problem, fix)


def _check_mapping(value, key, allowed, param):
    unknown = sorted(set(value) - allowed)
    if unknown:
        _fail(key, "has unknown keys %s" % ", ".join(unknown), "Use only %s (the Kubernetes field names)" % ", ".join(sorted(allowed)), param)


def _mapping(setting, param):
    """The setting as a mapping: an AWX survey hands it over as YAML or JSON text; blank text is no setting."""
    if isinstance(setting, str):
        try:
            setting = load_yaml(setting) if setting.strip() else None
        except yaml.YAMLError as exc:
            raise ParameterError(param, "is not valid YAML or JSON: %s" % str(exc).splitlines()[0],
                                 "Give a mapping, e.g. {\"env\": {\"HTTPS_PROXY\": \"http://proxy:3128\"}}")
    if setting is not None and not isinstance(setting, dict):
        raise ParameterError(param, "is a %s, not a mapping" % type(setting).__name__,
                             "Give a mapping of %s" % ", ".join(KEYS))
    return setting


def validate(setting, param="agent"):
    """The setting with only the keys given (None: none given), checked; empty values stay (they clear a setting)."""
    setting = _mapping(setting, param)
    given = dict((key, value) for key, value in (setting or {}).items() if value is not None)
    unknown = sorted(set(given) - set(KEYS))
    if unknown:
        raise ParameterError(param, "has unknown keys %s" % ", ".join(unknown), "Use only %s" % ", ".join(KEYS))
    for index, toleration in enumerate(given.get("tolerations") or []):
        if not isinstance(toleration, dict):
            _fail("tolerations", "item %d is not a mapping" % index, "Give tolerations as the pod spec does (key, operator, value, effect)", param)
        _check_mapping(toleration, "tolerations", _TOLERATION_KEYS, param)
    for key, allowed in (("affinity", _AFFINITY_KEYS), ("resources", _RESOURCE_KEYS)):
        if key in given:
            _check_mapping(given[key], key, allowed, param)
    for key in ("node_selector", "env"):
        if key in given:
            given[key] = dict((str(name), "" if value is None else str(value)) for name, value in given[key].items())
    for name in given.get("env") or {}:
        if not _ENV_NAME.match(name):
            _fail("env", "%r is not a valid environment variable name" % name, "Use letters, digits, '_', '-' and '.'", param)
    for name in given.get("image_pull_secrets") or []:
        if not _DNS_SUBDOMAIN.match(name):
            _fail("image_pull_secrets", "%r is not a Secret name" % name, "Name Secrets of the agent's namespace on the member", param)
    registry = given.get("image_registry")
    if registry is not None:
        registry = registry.rstrip("/")
        if registry and not _REGISTRY.match(registry):
            _fail("image_registry", "%r is not a registry host (with an optional port and path)" % registry,
                  "Give the mirror as host[:port][/path], without https://, e.g. registry.example.com:5000/mirror", param)
        given["image_registry"] = registry
    return given or None


def credential_values(setting):
    """Values of the setting that may carry a credential, for the module to hide: a proxy URL with user:password (with or
    without a scheme: Go's proxy variables take ``user:password@host:port``), and its password alone; a variable named
    like a credential (``API_TOKEN``, ``DB_PASSWORD``)."""
    found = []
    for name in credential_names(setting):
        value = setting["env"][name]
        found.extend([value] + url_passwords(value))
    return list(dict.fromkeys(found))


def credential_names(setting):
    """The names of the setting's ``env`` variables whose values may carry a credential (``credential_values``)."""
    return [name for name, value in sorted(((setting or {}).get("env") or {}).items()) if isinstance(value, str) and (
            url_passwords(value) or _CREDENTIAL_URL.search(value) or (value and secret_name(name)))]


def split_registry(image):
    """``(registry or None, the rest)`` of an image reference: the first part names a registry when it has a dot, a
    port or is localhost (Docker's rule)."""
    first, _sep, rest = image.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        return first, rest
    return None, image


def with_registry(image, registry):
    """``image`` pulled from ``registry`` (its own registry replaced); unchanged without a registry."""
    if not registry:
        return image
    return "%s/%s" % (registry, split_registry(image)[1])


def secret_reference(secret, key):
    """An ``env`` value the agent reads from ``key`` of the Secret ``secret`` in its own namespace (``valueFrom``), for a
    manager that keeps the environment where more can read it than the value should reach."""
    return {"secret": secret, "key": key}


def env_item(name, value):
    """The container ``env`` entry for one value: the value itself, or a ``secret_reference``."""
    if isinstance(value, dict):
        return {"name": name, "valueFrom": {"secretKeyRef": {"name": value["secret"], "key": value["key"]}}}
    return {"name": name, "value": value}


def env_list(env):
    return [env_item(name, value) for name, value in sorted((env or {}).items())]


def value_fingerprint(value):
    """What a view keeps of one ``env`` value: a fingerprint, or the Secret and key it is read from."""
    if isinstance(value, dict):
        return "secret %s/%s" % (value["secret"], value["key"])
    return fingerprint(value)


def item_fingerprint(item):
    """``value_fingerprint`` of a live ``env`` entry; None for one read from elsewhere (a field, a ConfigMap)."""
    value_from = item.get("valueFrom")
    if value_from is None:
        return fingerprint(item.get("value") or "")
    ref = value_from.get("secretKeyRef")
    return value_fingerprint(secret_reference(ref.get("name"), ref.get("key"))) if ref else None


def node_selector_affinity(node_selector, affinity):
    """``affinity`` with ``node_selector`` added as required node affinity, for an agent whose manager takes no node
    selector (each term of the affinity must also match every label)."""
    affinity = copy.deepcopy(affinity or {})
    if not node_selector:
        return affinity or None
    expressions = [{"key": key, "operator": "In", "values": [value]} for key, value in sorted(node_selector.items())]
    required = affinity.setdefault("nodeAffinity", {}).setdefault("requiredDuringSchedulingIgnoredDuringExecution", {})
    terms = required.get("nodeSelectorTerms") or [{}]
    required["nodeSelectorTerms"] = [dict(term, matchExpressions=(term.get("matchExpressions") or []) + expressions) for term in terms]
    return affinity


# -- comparing with what runs ---------------------------------------------------------------------------------

_SUFFIXES = {"": 1, "m": Decimal("0.001"), "k": 10 ** 3, "M": 10 ** 6, "G": 10 ** 9, "T": 10 ** 12, "P": 10 ** 15, "E": 10 ** 18,
             "Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40, "Pi": 2 ** 50, "Ei": 2 ** 60}
_QUANTITY = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)$")


def quantity(value):
    """A resource quantity as a number: "500m" and "0.5" are equal (a Deployment's are stored in canonical form, a
    custom resource's as written until a controller's typed client writes it back)."""
    match = _QUANTITY.match(str(value).strip())
    if not match or match.group(2) not in _SUFFIXES:
        return str(value)
    try:
        return Decimal(match.group(1)) * _SUFFIXES[match.group(2)]
    except InvalidOperation:
        return str(value)


def same_resources(live, desired):
    def norm(resources):
        return dict((kind, dict((name, quantity(v)) for name, v in (values or {}).items()))
                    for kind, values in (resources or {}).items() if values)
    return norm(live) == norm(desired)


def fingerprint(value):
    return hashlib.sha256(value.encode("utf-8")).hexdigest()[:16]


def pod_view(deployment):
    """The parts of a Deployment's pod template the setting covers, as plain data; env values are fingerprints only
    (a proxy URL may hold a password)."""
    spec = ((((deployment or {}).get("spec") or {}).get("template") or {}).get("spec")) or {}
    if not deployment:
        return None
    containers = []
    for container in spec.get("containers") or []:
        env = dict((item["name"], item_fingerprint(item)) for item in container.get("env") or [] if item_fingerprint(item))
        containers.append({"name": container.get("name"), "image": container.get("image") or "", "env": env,
                           "resources": container.get("resources") or {}})
    return {"tolerations": spec.get("tolerations") or [], "node_selector": spec.get("nodeSelector") or {},
            "affinity": spec.get("affinity") or {}, "priority_class_name": spec.get("priorityClassName") or "",
            "image_pull_secrets": [item.get("name") for item in spec.get("imagePullSecrets") or []], "containers": containers}


def _container_drift(setting, containers):
    found = []
    for container in containers:
        name = container["name"]
        if setting.get("resources") and not same_resources(container["resources"], setting["resources"]):
            found.append("container %s's resources differ from the setting" % name)
        wrong = sorted(key for key, value in (setting.get("env") or {}).items() if container["env"].get(key) != value_fingerprint(value))
        if wrong:
            found.append("container %s's environment lacks or differs in %s" % (name, ", ".join(wrong)))
        registry = setting.get("image_registry")
        if registry and not container["image"].startswith(registry + "/"):
            found.append("container %s's image %s is not from %s" % (name, container["image"], registry))
    return found


def drift(setting, pod, containers=None):
    """Why the running agent (``pod_view``) does not carry ``setting`` (a validated one), as sentences; [] when it does.

    Tolerations, node selector labels, env and pull secrets must be present (the chart or manager may add more);
    affinity, resources and the priority class must be equal. ``containers``: the names the setting applies to (all
    when None). An empty value asks for nothing."""
    if not setting or pod is None:
        return []
    found = []
    missing = [t for t in setting.get("tolerations") or [] if t not in pod["tolerations"]]
    if missing:
        found.append("the agent lacks %d of the setting's tolerations" % len(missing))
    wrong = sorted(k for k, v in (setting.get("node_selector") or {}).items() if pod["node_selector"].get(k) != v)
    if wrong:
        found.append("the agent's node selector lacks %s" % ", ".join(wrong))
    if setting.get("affinity") and pod["affinity"] != setting["affinity"]:
        found.append("the agent's affinity differs from the setting")
    if setting.get("priority_class_name") and pod["priority_class_name"] != setting["priority_class_name"]:
        found.append("the agent's priority class is %r, not %r" % (pod["priority_class_name"], setting["priority_class_name"]))
    absent = [name for name in setting.get("image_pull_secrets") or [] if name not in pod["image_pull_secrets"]]
    if absent:
        found.append("the agent lacks the image pull secrets %s" % ", ".join(absent))
    scoped = [c for c in pod["containers"] if containers is None or c["name"] in containers]
    return found + _container_drift(setting, scoped)


def replacing(live, desired):
    """``desired`` with None for the keys of ``live`` it lacks (recursively), so a merge patch replaces the mapping."""
    if not isinstance(live, dict) or not isinstance(desired, dict):
        return desired
    result = dict((key, None) for key in live if key not in desired)
    result.update((key, replacing(live.get(key), value)) for key, value in desired.items())
    return result


def _env_patch(env, live):
    """The ``env`` entries of a strategic merge patch (merged by name): one that turns a value into a reference, or
    back, drops the other field, as the API refuses an entry with both."""
    live = dict((item.get("name"), item) for item in live or [])
    patched = []
    for item in env_list(env):
        other = "value" if "valueFrom" in item else "valueFrom"
        patched.append(dict(item, **{other: None}) if live.get(item["name"], {}).get(other) is not None else item)
    return patched


def deployment_patch(setting, deployment, keys, containers=None):
    """The strategic merge patch that makes ``deployment`` carry the ``keys`` of ``setting`` (None when it does).

    Tolerations have no merge key in a strategic merge patch: the missing ones are appended to the live list."""
    setting = dict((key, value) for key, value in (setting or {}).items() if key in keys and value)
    live = pod_view(deployment)
    if not setting or live is None or not drift(setting, live, containers):
        return None
    spec = deployment["spec"]["template"]["spec"]
    patch = {}
    if "tolerations" in setting:
        patch["tolerations"] = (spec.get("tolerations") or []) + [t for t in setting["tolerations"] if t not in (spec.get("tolerations") or [])]
    if "node_selector" in setting:
        patch["nodeSelector"] = setting["node_selector"]
    if "affinity" in setting:
        patch["affinity"] = replacing(spec.get("affinity"), setting["affinity"])
    if "priority_class_name" in setting:
        patch["priorityClassName"] = setting["priority_class_name"]
    if "image_pull_secrets" in setting:
        patch["imagePullSecrets"] = [{"name": name} for name in setting["image_pull_secrets"]]
    patched = []
    for container in spec.get("containers") or []:
        if containers is not None and container.get("name") not in containers:
            continue
        part = {"name": container["name"]}
        if "env" in setting:
            part["env"] = _env_patch(setting["env"], container.get("env"))
        if "resources" in setting:
            part["resources"] = replacing(container.get("resources"), setting["resources"])
        if "image_registry" in setting:
            part["image"] = with_registry(container.get("image") or "", setting["image_registry"])
        if len(part) > 1:
            patched.append(part)
    if patched:
        patch["containers"] = patched
    return {"spec": {"template": {"spec": patch}}}
