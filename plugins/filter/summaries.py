# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filters of plugin_utils/summaries.py (the code the action plugins share)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.fleetops.registration.plugins.plugin_utils.summaries import join_summary, leave_summary


class FilterModule:
    """fleetops.registration summary filters."""

    def filters(self):
        return {"join_summary": join_summary, "leave_summary": leave_summary}
