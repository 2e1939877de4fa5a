# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The agent setting (``agent_settings.py``) for Rancher Fleet's agent. Fleet adopts the agent it registered
(``manageAgent``, its default) and deploys it again from the Cluster's agent fields, so the setting lives there:
``agentTolerations``, ``agentAffinity`` (with the node selector as required node affinity: the Cluster has no node
selector field), ``agentResources``, ``agentEnvVars`` and ``privateRepoURL``. The fleet-agent chart that registers the
agent takes the tolerations and the registry; the rest is patched onto its Deployment until Fleet adopts it. Pure."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import hashlib
import json

from ansible_collections.fleetops.registration.plugins.module_utils.agent_settings import (
    env_list, item_fingerprint, node_selector_affinity, replacing, same_resources, secret_reference,
)

# Kept by Fleet only in its own configuration (fleet-controller's imagePullSecrets, agentSchedulingCustomization's
# own priority class), not per Cluster: the setting's keys the Fleet agent cannot carry.
UNSUPPORTED_KEYS = ("image_pull_secrets", "priority_class_name")
CLUSTER_FIELDS = ("agentTolerations", "agentAffinity", "agentResources", "agentEnvVars", "privateRepoURL")

# The agent's environment values live in a Secret of the agent's namespace on the member (fleet_agent writes it before
# Helm); the Cluster, which Fleet deploys the agent from and many may read on the hub, names only the Secret and key.
# The name follows the values, so a change is a new Secret and Fleet's redeploy a new pod template.
ENV_SECRET_PREFIX = "fleetops-agent-env-"
ENV_SECRET_LABEL = "fleetops.io/agent-env"


def env_secret(setting):
    """``(name, data)`` of the Secret holding the ``env`` values of a validated setting; None without any."""
    env = (setting or {}).get("env")
    if not env:
        return None
    digest = hashlib.sha256(json.dumps(env, sort_keys=True).encode("utf-8")).hexdigest()[:12]
    return ENV_SECRET_PREFIX + digest, dict(env)


def fleet_setting(setting):
    """``(the setting as Fleet's agent carries it, the keys it cannot carry)``: the node selector folded into affinity."""
    if not setting:
        return None, []
    ignored = [key for key in UNSUPPORTED_KEYS if setting.get(key)]
    result = dict((key, value) for key, value in setting.items() if key not in UNSUPPORTED_KEYS + ("node_selector",))
    if setting.get("node_selector"):
        result["affinity"] = node_selector_affinity(setting["node_selector"], setting.get("affinity"))
    secret = env_secret(setting)
    if secret:
        result["env"] = dict((name, secret_reference(secret[0], name)) for name in setting["env"])
    return result or None, ignored


def cluster_fields(setting):
    """The Cluster's ``spec`` agent fields for the setting (from ``fleet_setting``): a given key sets its field, an
    empty one removes it (None); keys not given leave theirs alone."""
    fields = {}
    source = {"tolerations": "agentTolerations", "affinity": "agentAffinity", "resources": "agentResources",
              "env": "agentEnvVars", "image_registry": "privateRepoURL"}
    for key, field in source.items():
        if key in (setting or {}):
            value = setting[key]
            fields[field] = (env_list(value) if key == "env" else copy.deepcopy(value)) or None
    return fields


def spec_update(setting, spec):
    """The Cluster ``spec`` fields to write so it carries the setting: each replaces (not merges into) the live one;
    resources equal by value are left out: the Cluster keeps a quantity as written ("0.1") until Fleet's controller
    writes it back in canonical form ("100m")."""
    update = {}
    for field, value in cluster_fields(setting).items():
        live = (spec or {}).get(field)
        if field == "agentResources" and value and live and same_resources(live, value):
            continue
        update[field] = replacing(live, value)
    return update


def without_env_values(cluster):
    """The Cluster without the values of its ``agentEnvVars`` (a proxy URL may hold a password); names and
    ``valueFrom`` references stay."""
    spec = (cluster or {}).get("spec") or {}
    if not spec.get("agentEnvVars"):
        return cluster
    env = [dict((key, value) for key, value in item.items() if key != "value") for item in spec["agentEnvVars"]]
    return dict(cluster, spec=dict(spec, agentEnvVars=env))


def spec_view(spec):
    """The Cluster's agent fields as plain data for a view: env values as fingerprints only."""
    spec = spec or {}
    view = dict((field, spec[field]) for field in CLUSTER_FIELDS if spec.get(field))
    if "agentEnvVars" in view:
        view["agentEnvVars"] = [{"name": item.get("name"), "value": item_fingerprint(item) or ""} for item in view["agentEnvVars"]]
    return view


def hub_drift(setting, fields_view):
    """Why the Cluster's agent fields (``spec_view``) are not what the setting (from ``fleet_setting``) asks, as
    sentences."""
    wanted = cluster_fields(setting)
    if "agentEnvVars" in wanted and wanted["agentEnvVars"]:
        wanted["agentEnvVars"] = [{"name": item["name"], "value": item_fingerprint(item)} for item in wanted["agentEnvVars"]]
    found = []
    for field, value in sorted(wanted.items()):
        live = (fields_view or {}).get(field)
        if field == "agentResources" and value and live:
            same = same_resources(live, value)
        elif field == "agentEnvVars":
            same = sorted((i.get("name"), i.get("value")) for i in live or []) == sorted((i["name"], i["value"]) for i in value or [])
        else:
            same = (live or None) == value
        if not same:
            found.append("the Cluster's %s differs from the agent setting" % field)
    return found


def chart_values(values, setting):
    """The fleet-agent chart ``values`` with what the chart takes of the setting: tolerations and the registry."""
    values = copy.deepcopy(values)
    if (setting or {}).get("tolerations"):
        values["fleetAgent"] = dict(values.get("fleetAgent") or {}, tolerations=copy.deepcopy(setting["tolerations"]))
    if (setting or {}).get("image_registry"):
        cattle = dict(((values.get("global") or {}).get("cattle") or {}), systemDefaultRegistry=setting["image_registry"])
        values["global"] = dict(values.get("global") or {}, cattle=cattle)
    return values


# -- rolling a change back -------------------------------------------------------------------------------------------
# Fleet keeps no history of a Cluster, so fleet_cluster records on the Cluster the agent fields a change replaced; the
# rollback of a Fleet-managed agent (fleet_agent rollback_to_revision) writes them back and Fleet redeploys its agent.
PREVIOUS_FIELDS_ANNOTATION = "fleetops.io/agent-fields-before"


def _same_field(field, live, value):
    if field == "agentResources" and live and value:
        return same_resources(live, value)
    if field == "agentEnvVars":
        return sorted((i.get("name"), item_fingerprint(i)) for i in live or []) == sorted((i.get("name"), item_fingerprint(i)) for i in value or [])
    return (live or None) == (value or None)


def change_record(setting, spec):
    """The annotation value recording the agent fields of ``spec`` the setting (from ``fleet_setting``) replaces, as JSON
    ``{"fields": {field: its value before, or null}}``; None when the setting changes none of them."""
    spec = spec or {}
    changed = sorted(field for field, value in cluster_fields(setting).items() if not _same_field(field, spec.get(field), value))
    if not changed:
        return None
    fields = dict((field, spec.get(field)) for field in changed)
    if fields.get("agentEnvVars"):  # references only: a value (as earlier versions wrote) is not kept on the hub again
        fields["agentEnvVars"] = [dict((key, value) for key, value in item.items() if key != "value") for item in fields["agentEnvVars"]]
    return json.dumps({"fields": fields}, sort_keys=True)


def recorded_fields(annotation):
    """``{field: value before}`` from a ``change_record`` annotation; None when absent or unreadable."""
    try:
        record = json.loads(annotation) if annotation else None
    except ValueError:
        return None
    fields = record.get("fields") if isinstance(record, dict) else None
    if not isinstance(fields, dict) or not set(fields) <= set(CLUSTER_FIELDS):
        return None
    return fields


def restore_update(spec, annotation, before_view):
    """``(spec update, restored fields)`` that give the Cluster back the agent fields ``before_view`` (its ``spec_view``
    before the change, as member_info read it) describes: ``({}, current fields)`` when it still has them, None when the
    record on the Cluster (``change_record``) does not lead back to them."""
    spec = spec or {}
    current = dict((field, spec.get(field)) for field in CLUSTER_FIELDS if spec.get(field))
    if spec_view(spec) == (before_view or {}):
        return {}, current
    recorded = recorded_fields(annotation)
    if recorded is None:
        return None
    restored = dict(current, **recorded)
    restored = dict((field, value) for field, value in restored.items() if value)
    if spec_view(restored) != (before_view or {}):
        return None
    update = dict((field, replacing(spec.get(field), restored.get(field))) for field in CLUSTER_FIELDS
                  if not _same_field(field, spec.get(field), restored.get(field)))
    return update, restored


def fields_setting(fields):
    """The agent setting (``fleet_setting``'s shape) that the Cluster's agent ``fields`` give Fleet's agent."""
    fields = fields or {}
    setting = {}
    for key, field in (("tolerations", "agentTolerations"), ("affinity", "agentAffinity"), ("resources", "agentResources"),
                       ("image_registry", "privateRepoURL")):
        if fields.get(field):
            setting[key] = copy.deepcopy(fields[field])
    if fields.get("agentEnvVars"):
        setting["env"] = dict((item.get("name"), _env_value(item)) for item in fields["agentEnvVars"])
    return setting or None


def _env_value(item):
    ref = (item.get("valueFrom") or {}).get("secretKeyRef")
    return secret_reference(ref.get("name"), ref.get("key")) if ref else item.get("value") or ""
