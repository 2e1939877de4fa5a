# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The hub as the member agent sees it: its URL and CA, and whether it accepts the agent's token."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.fleetops.registration.plugins.module_utils import hub_endpoint
from ansible_collections.fleetops.registration.plugins.module_utils.errors import ApiError, ConnectionFailure
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_auth import endpoint_configuration
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_client import KubeClient

CLIENT_HINT = ("Check hub_api_server_url and the network path from the member to the hub, and that the CA matches the hub's "
               "serving certificate")


def agent_endpoint(params):
    """``(url, ca_pem, insecure)`` the collection gives the member agent, from the task's ``params`` (hub_endpoint, the
    one owner of that fact; KubeFleet configures no default of its own). The agent module installs the agent with it;
    member_info compares the member's release with it and sends the agent's token nowhere else. Both the URL and, unless
    hub_insecure_skip_tls_verify, the CA must be known."""
    return known_endpoint(hub_endpoint.resolve(params))


def known_endpoint(endpoint):
    """``(url, ca_pem, insecure)`` of a resolved ``hub_endpoint.Endpoint``; ParameterError when the URL or a needed
    CA is not known."""
    endpoint = hub_endpoint.require(endpoint)
    return endpoint.url.rstrip("/"), endpoint.ca, endpoint.insecure


def agent_client(url, ca_pem, token, tmpdir=None, insecure=False, proxy=None):
    """A KubeClient that reaches the hub with the member agent's URL, CA and token."""
    configuration = endpoint_configuration(url, ca_pem=ca_pem, token=token, proxy=proxy, validate_certs=not insecure,
                                           tmpdir=tmpdir)
    return KubeClient(configuration, label="hub (as the member agent would reach it)", hint=CLIENT_HINT)


def _tls_failure(exc):
    return "CERTIFICATE_VERIFY_FAILED" in exc.msg or "certificate verify failed" in exc.msg


def preflight(client, url):
    """Reach the hub as the agent would; return the identity it sees, or raise naming what to fix."""
    try:
        return client.whoami()
    except ConnectionFailure as exc:
        if _tls_failure(exc):
            raise ConnectionFailure(
                "preflight: the hub at %s presents a certificate the given CA does not verify (%s)" % (url, exc.msg), host=url,
                hint="Give the CA that signed the hub API server's certificate (hub_api_server_ca, hub_ca_cert or the hub kubeconfig's CA); "
                     "the member agent would fail the same way")
        raise ConnectionFailure("preflight: %s" % exc.msg, exc.hint, host=url)
    except ApiError as exc:
        if exc.status == 401:
            raise ApiError("token: preflight - the hub at %s refused the member agent's token (401)" % url, status=401,
                           hint="Give a valid token, or re-run kubefleet_member_identity: the identity token is invalid or "
                                "belongs to a deleted ServiceAccount")
        raise
