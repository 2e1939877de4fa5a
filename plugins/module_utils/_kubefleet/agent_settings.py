# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The agent setting (``agent_settings.py``) for KubeFleet's member agent: the member-agent chart takes tolerations, a
node selector, affinity and resources (for both its containers) and the image repositories; the environment, pull
secrets and the priority class, which the chart lacks, are patched onto its Deployment. Pure."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from ansible_collections.fleetops.registration.plugins.module_utils.agent_settings import with_registry
from ansible_collections.fleetops.registration.plugins.module_utils.errors import ParameterError

# What the chart renders, and what is patched onto the Deployment after Helm.
CHART_KEYS = ("tolerations", "node_selector", "affinity", "resources", "image_registry")
PATCHED_KEYS = ("env", "image_pull_secrets", "priority_class_name")
_CHART_VALUES = {"tolerations": "tolerations", "node_selector": "nodeSelector", "affinity": "affinity", "resources": "resources"}


def with_setting(values, setting, chart_defaults=None):
    """The chart ``values`` with the setting on top (an empty setting value leaves the chart's default). The image
    registry goes onto the repositories the values set, else the chart's own (``chart_defaults``, its values.yaml:
    known for a local chart only); ParameterError when neither says the repository."""
    values = copy.deepcopy(values)
    for key, value_key in _CHART_VALUES.items():
        if (setting or {}).get(key):
            values[value_key] = copy.deepcopy(setting[key])
    registry = (setting or {}).get("image_registry")
    for image, option in (("image", "image_repository"), ("refreshtoken", "refresh_token_image_repository")):
        if not registry:
            continue
        repository = (values.get(image) or {}).get("repository") or ((chart_defaults or {}).get(image) or {}).get("repository")
        if not repository:
            raise ParameterError("agent", "image_registry %s: the chart's own %s is not known before Helm has the chart"
                                 % (registry, option),
                                 "Set %s to the image on the mirror (inventory: fleetops_kubefleet_%s), or use a local chart "
                                 "directory" % (option, "member_agent_image_repository" if image == "image"
                                                else "refresh_token_image_repository"))
        values[image] = dict(values.get(image) or {}, repository=with_registry(repository, registry))
    return values


# The member agent's images as the inventory may set them (kubefleet_member_agent's options), and where the chart keeps
# each: a wave that changes one is compared with the release like any chart value.
IMAGE_VALUES = (("repository", "image", "repository"), ("tag", "image", "tag"),
                ("refresh_token_repository", "refreshtoken", "repository"))


def image_drift(values, images, setting=None):
    """Why the member-agent release ``values`` do not run the ``images`` the inventory sets (``{repository, tag,
    refresh_token_repository}``; an option not set means whatever the chart ships, so it is not compared), with the
    setting's ``image_registry`` applied as the agent module applies it; [] when they do."""
    values = values if isinstance(values, dict) else {}
    registry = (setting or {}).get("image_registry")
    found = []
    for key, section, field in IMAGE_VALUES:
        wanted = (images or {}).get(key)
        if not wanted:
            continue
        if field == "repository" and registry:
            wanted = with_registry(wanted, registry)
        live = (values.get(section) if isinstance(values.get(section), dict) else {}).get(field)
        if live != wanted:
            found.append("the member agent's %s.%s is %s, not %s" % (section, field, live or "the chart's default", wanted))
    return found
