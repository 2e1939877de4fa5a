# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""fleet_agent's preflight: the hub as the agent will see it, checked before Helm runs."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.fleetops.registration.plugins.module_utils.errors import ParameterError
from ansible_collections.fleetops.registration.plugins.module_utils.times import format_time, utcnow
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.member import check_credential
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.rules import token_expiry

_TLS_WORDS = ("CERTIFICATE_VERIFY_FAILED", "certificate verify failed", "SSLError", "SSL:", "hostname mismatch")


def check_token_object(token, namespace, name, now=None):
    """A ClusterRegistrationToken read from the hub must exist and not be expired (Fleet deletes it when it expires)."""
    if token is None:
        raise ParameterError("token_name", "ClusterRegistrationToken %s/%s does not exist on the hub" % (namespace, name),
                             "If it had a ttl it may have expired: Fleet deletes expired tokens. Create a new one with "
                             "fleet_registration_token (with a ttl longer than the run), or check token_name/token_namespace")
    expires = token_expiry(token)
    if expires is not None and expires <= (now or utcnow()):
        raise ParameterError("token_name", "ClusterRegistrationToken %s/%s expired at %s" % (namespace, name, format_time(expires)),
                             "Fleet deletes expired tokens; create a new one with fleet_registration_token and a longer ttl")


def _param(option, sources, token_param):
    """The option a user changes to fix the hub URL or CA (``option``: hub_endpoint's name), from where the value came
    (``sources``: fleet_agent's result ``sources``)."""
    source = sources.get(option.replace("hub_", "", 1))
    if source == "token":
        return token_param
    return source if source in ("hub_kubeconfig", "hub_ca_cert") else option


def preflight(values, sources, token_param, proxy=None):
    """Connect to ``apiServerURL`` with ``apiServerCA`` and the registration token, as the agent will; fail naming the fix.

    Returns the user name the hub sees for the registration token (None when the hub does not say).
    """
    url = values.get("apiServerURL")
    ca = values.get("apiServerCA") or None
    answer = check_credential(url, ca, values.get("token"), proxy=proxy, label="hub (as the agent will reach it)")
    if answer["accepted"]:
        return answer["user"]
    error = answer["error"] or ""
    if answer["accepted"] is False:
        raise ParameterError(token_param, "the hub at %s refuses the registration token (401)" % url,
                             "The token expired or was revoked (Fleet deletes expired tokens): create a new token with "
                             "fleet_registration_token and use it; nothing was installed")
    if any(word in error for word in _TLS_WORDS):
        param = _param("hub_api_server_ca", sources, token_param)
        raise ParameterError(param, "the hub at %s presents a certificate that %s does not verify (%s)" % (
            url, "the given CA" if ca else "the system trust store", error),
            "Give the CA that signed the hub API server's certificate (hub_api_server_ca, or the hub kubeconfig's CA); the agent "
            "would fail the same way; nothing was installed")
    param = _param("hub_api_server_url", sources, token_param)
    raise ParameterError(param, "the hub is not reachable at %s: %s" % (url, error),
                         "Give the hub API server URL the member can reach (hub_api_server_url); the agent would fail the same "
                         "way; nothing was installed (preflight: false skips this check when only the member can reach the hub)")
