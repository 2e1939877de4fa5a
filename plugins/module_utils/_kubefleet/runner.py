# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What every KubeFleet module runner shares: state dispatch and the one check-mode rule for fresh targets."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.fleetops.registration.plugins.module_utils.module import Runner


class KubeFleetRunner(Runner):
    """A module's logic: ``present()`` / ``absent()`` chosen by ``state``."""

    def run(self):
        if self.params.get("state") == "absent":
            return self.absent()
        return self.present()

    def present(self):
        raise NotImplementedError

    def absent(self):
        raise NotImplementedError

    def assume_created_earlier(self, missing):
        """Check mode on a fresh target: an input an earlier task of the same run only dry-ran.

        The module predicts its own change and says so, instead of failing; a real run still fails without it.
        """
        self.warn("check mode: %s; assuming an earlier task creates it (a real run fails without it)" % missing)

    def changed_before_failure(self, exc, what):
        """``exc`` marked as a failure after a change: ``changed=True`` in its details (fail_json reports it) and
        what this run already did, and left, named in its message. Raise the result."""
        exc.details["changed"] = True
        exc.msg = "%s; this run already %s" % (exc.msg.rstrip("."), what)
        return exc
