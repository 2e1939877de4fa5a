# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filters of plugin_utils/backends.py (the code the action plugins share)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.fleetops.registration.plugins.plugin_utils.backends import backend_request, requested_backends


class FilterModule:
    """fleetops.registration filters."""

    def filters(self):
        return {"backend_request": backend_request, "requested_backends": requested_backends}
