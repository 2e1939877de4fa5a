# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One exception family for the collection.

Everything below a module raises a FleetOpsError (or a subclass); the module
base class turns it into ``fail_json`` in one place, with the reason and what
to do about it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class FleetOpsError(Exception):
    """A failure the user can act on: ``msg`` says what, ``hint`` says what to do."""

    def __init__(self, msg, hint=None, **details):
        super().__init__(msg)
        self.msg = msg
        self.hint = hint
        self.details = details

    def message(self):
        if self.hint:
            return "%s. %s" % (self.msg.rstrip("."), self.hint)
        return self.msg


class ParameterError(FleetOpsError):
    """Bad module input; ``param`` names the offending option."""

    def __init__(self, param, msg, hint=None, **details):
        super().__init__("%s: %s" % (param, msg), hint, param=param, **details)
        self.param = param


class ApiError(FleetOpsError):
    """The Kubernetes API refused or failed a request."""

    def __init__(self, msg, status=None, reason=None, hint=None, **details):
        super().__init__(msg, hint, status=status, reason=reason, **details)
        self.status = status
        self.reason = reason


class NotFoundError(ApiError):
    pass


class ConnectionFailure(FleetOpsError):
    """The API server could not be reached at all."""


class WaitTimeout(FleetOpsError):
    """A wait ran out of time; ``last`` carries what was last observed."""

    def __init__(self, msg, hint=None, last=None, **details):
        super().__init__(msg, hint, **details)
        self.last = last


class LockLost(FleetOpsError):
    """The run's member lock expired and another run took it, or it was released, before the run was done."""


class HelmError(FleetOpsError):
    """The helm CLI failed; its stderr (already scrubbed of secrets) is in details."""


class ApiNotServed(ApiError):
    """A whole API (group/version and resource) is not served: its CRDs are not installed. Not a missing object."""


# The opt-in ClusterRole (extensions/rbac/hub-optin.yml) for what the least-privilege hub role leaves out: creating
# namespaces.
OPT_IN_ROLE = "fleetops-registration-hub-optin"
# The forced leave's ClusterRole (extensions/rbac/hub-forced-leave.yml), bound in the one member's namespace: its Works'
# finalizers and the namespace.
FORCED_LEAVE_ROLE = "fleetops-registration-hub-forced-leave"


def opt_in_needed(exc, what):
    """``exc`` (a 403 on ``what``) with a message naming the opt-in role that grants it; other errors as they are."""
    if isinstance(exc, ApiError) and exc.status == 403:
        return ApiError("the hub credential may not %s: %s" % (what, exc.msg), status=403, reason=exc.reason, hint=(
            "The least-privilege hub role (extensions/rbac/hub.yml) leaves this out on purpose: bind the opt-in "
            "ClusterRole %s (extensions/rbac/hub-optin.yml) to the hub credential for this run, or have an "
            "administrator do it (docs/rbac.md)" % OPT_IN_ROLE))
    return exc


def forced_leave_needed(exc, what, namespace):
    """``exc`` (a 403 on ``what``) with a message naming the forced leave's role and how to bind it in ``namespace``
    (the member's) alone; other errors as they are."""
    if isinstance(exc, ApiError) and exc.status == 403:
        return ApiError("the hub credential may not %s: %s" % (what, exc.msg), status=403, reason=exc.reason, hint=(
            "The least-privilege hub role (extensions/rbac/hub.yml) leaves this out on purpose: apply "
            "extensions/rbac/hub-forced-leave.yml and bind its ClusterRole %s in that member's namespace only "
            "(kubectl create rolebinding fleetops-forced-leave -n %s --clusterrole %s --serviceaccount "
            "fleetops-credentials:fleetops, the ServiceAccount of hub.yml), or have an administrator do it (docs/rbac.md)"
            % (FORCED_LEAVE_ROLE, namespace, FORCED_LEAVE_ROLE)))
    return exc
