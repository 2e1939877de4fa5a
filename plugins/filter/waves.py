# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filters of plugin_utils/waves.py (the code the action plugins share)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.fleetops.registration.plugins.plugin_utils.waves import agent_releases, wave_result, wave_summary


class FilterModule:
    """fleetops.registration agent wave filters."""

    def filters(self):
        return {"agent_releases": agent_releases, "wave_result": wave_result, "wave_summary": wave_summary}
