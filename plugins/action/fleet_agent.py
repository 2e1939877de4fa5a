# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""fleet_agent's action: the module's code in the controller's process where the module would run on the controller anyway
(plugin_utils/controller_run.py says when), else the module."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.fleetops.registration.plugins.modules import fleet_agent
from ansible_collections.fleetops.registration.plugins.plugin_utils.controller_run import InControllerAction


class ActionModule(InControllerAction):
    MODULE = "fleetops.registration.fleet_agent"
    CODE = fleet_agent
