# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rancher Fleet (fleet.cattle.io/v1alpha1), private to this collection.

- ``resources``: the API objects and the facts about them, as constants;
- ``rules``: pure decisions and value building (unit tested directly);
- ``views``: what the collection reports about hub objects;
- ``token``, ``cluster``, ``agent``: one runner per module (plan -> apply -> report);
- ``preflight``: the agent's view of the hub, checked before Helm runs;
- ``manager``: the ``FleetManager`` implementation (``MANAGER``).
"""
