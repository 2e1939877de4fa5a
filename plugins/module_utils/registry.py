# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet managers the collection knows, by the name users give them in ``fleetops_backends``.

Imports are static on purpose: AnsiballZ ships a module only the module_utils it imports by name.
A third fleet manager is its package under module_utils plus one line here.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from typing import Dict

from ansible_collections.fleetops.registration.plugins.module_utils.errors import ParameterError
from ansible_collections.fleetops.registration.plugins.module_utils.fleet_managers import FleetManager
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.manager import MANAGER as KUBEFLEET
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.manager import MANAGER as RANCHER_FLEET

MANAGERS: Dict[str, FleetManager] = dict((manager.name, manager) for manager in (RANCHER_FLEET, KUBEFLEET))
NAMES = sorted(MANAGERS)


def manager(name: str, param: str = "backends") -> FleetManager:
    """The manager called ``name``; an unknown name is a parameter error naming the known ones."""
    if name not in MANAGERS:
        raise ParameterError(param, "unknown fleet manager %r" % name, hint="Use one of: %s" % ", ".join(NAMES))
    return MANAGERS[name]
