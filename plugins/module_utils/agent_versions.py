# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether a member's agent runs its hub's release: member_info's warning when they differ.

The evidence on each side, and why it is the version:
- KubeFleet: the member agent's image tag (the Deployment's ``member-agent`` container) against the hub agent's (the
  controller Deployment ``fleet-system/hub-agent`` on the hub). Both agents are built and tagged together per release
  (the project's charts default their tags to the chart's appVersion, the release), and neither reports a version
  through the API.
- Rancher Fleet: the ``fleet-agent`` release's app version (its chart's ``appVersion``, the Fleet release; for Rancher's
  charts ``107.0.0+up0.13.0`` the chart version ends in it) against the Fleet controller's image tag
  (``cattle-fleet-system/fleet-controller``, image ``rancher/fleet:<release>``).
A tag or version that names no release (``main``, ``latest``, ``dev``, a digest, the ``0.0.0`` of a chart built from
source) is unknown, and nothing is said unless both sides are known.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
import threading

from ansible_collections.fleetops.registration.plugins.module_utils.errors import ApiError
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_client import DEPLOYMENT

_RELEASE = re.compile(r"^v?(\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?)(?:\+.*)?$")
_SOURCE_PLACEHOLDER = "0.0.0"


def release_version(text):
    """``"1.2.3"`` (pre-release kept, ``v`` and build metadata dropped) when ``text`` names a release, else None."""
    if not isinstance(text, str):
        return None
    text = text.strip()
    if "+up" in text:  # Rancher's chart versions: <Rancher chart version>+up<upstream version>
        text = text.split("+up", 1)[1]
    match = _RELEASE.match(text)
    if not match or match.group(1) == _SOURCE_PLACEHOLDER:
        return None
    return match.group(1)


def image_tag(image):
    """The tag of an image reference (``registry:5000/path/name:tag@digest``), or None (no tag, a digest only)."""
    if not isinstance(image, str):
        return None
    name = image.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    return last.split(":", 1)[1] if ":" in last else None


def deployment_version(deployment, container=None):
    """The release the Deployment's container (``container``, else the first) runs, from its image tag; or None."""
    containers = ((((deployment or {}).get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers") or []
    chosen = [item for item in containers if container is None or item.get("name") == container][:1]
    return release_version(image_tag(chosen[0].get("image"))) if chosen else None


def controller_version(hub, controller):
    """The release of the manager's hub controller (``(namespace, Deployment)``), read with one GET; None when the
    Deployment is not there or may not be read (a 403 says nothing about the version)."""
    namespace, name = controller
    try:
        return deployment_version(hub.get(DEPLOYMENT, name, namespace))
    except ApiError:
        return None


def skew_warning(manager, agent, hub):
    """The warning (with the fix) when both releases are known and differ, else None. ``manager``: a FleetManager."""
    if not agent or not hub or agent == hub:
        return None
    namespace, name = manager.controller
    fix = manager.version_fix % {"hub": hub}
    return ("the agent runs %s %s, the hub %s %s (%s/%s); an agent of another release than its hub is what neither "
            "project tests - %s" % (manager.title, agent, manager.title, hub, namespace, name, fix))


def warn_of_skew(module, manager, hub, member_view, member_name, hub_key):
    """member_info's check: warn (module.warn) when the member's agent and its hub run different releases. The hub's
    controller is read once per hub connection (``hub_key``) and manager for a whole batch, and only for a member
    whose agent version is known."""
    agent = manager.agent_version(member_view or {})
    if agent is None:
        return None
    cache = module.__dict__.setdefault("_fleetops_hub_releases", {})
    with module.__dict__.setdefault("_fleetops_hub_releases_lock", threading.Lock()):  # members are read side by side
        if (hub_key, manager.name) not in cache:
            cache[(hub_key, manager.name)] = controller_version(hub, manager.controller)
    warning = skew_warning(manager, agent, cache[(hub_key, manager.name)])
    if warning:
        module.warn("%s member %s: %s" % (manager.title, member_name, warning))
    return warning
