# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The hub as the member agent sees it: its URL and CA, and whether it accepts the agent's token."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.fleetops.registration.plugins.module_utils.agent_flow import hub_endpoint
from ansible_collections.fleetops.registration.plugins.module_utils.errors import ApiError, ConnectionFailure, ParameterError
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_auth import endpoint_configuration
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_client import KubeClient
from ansible_collections.fleetops.registration.plugins.module_utils.kubeconfig import read_pem
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.rules import explicit_hub_ca

CLIENT_HINT = ("Check hub_url and the network path from the member to the hub, and that the CA matches the hub's "
               "serving certificate")


def agent_endpoint(task):
    """``(url, ca_pem, insecure)`` the collection gives the member agent: the one owner of that fact. The agent module
    installs the agent with it; member_info compares the member's release with it and sends the agent's token nowhere
    else. ``task``: a module, or ``agent_flow.TaskOptions`` (its ``params`` and its hub connection's ``settings``).

    The URL is hub_url, else the hub connection's (hub_host or hub_kubeconfig's server); the CA is hub_ca_pem, else
    hub_ca_cert, else hub_kubeconfig's CA (inline or a file), as ``ConnectionSettings.server_and_ca`` reads them (only
    the certificates of each); TLS verification is off only when hub_insecure_skip_tls_verify says so.
    """
    params = task.params
    # hub_ca_cert before the hub connection's CA, also without a hub connection (server_and_ca reads it the same way)
    ca_file = read_pem(params["hub_ca_cert"], "hub_ca_cert") if params.get("hub_ca_cert") else None
    url, ca = [value for value, _source in hub_endpoint(
        task, [(params.get("hub_url"), "hub_url")],
        [(explicit_hub_ca(params.get("hub_ca_pem")), "hub_ca_pem"), (ca_file, "hub_ca_cert")], "hub_url")]
    insecure = bool(params.get("hub_insecure_skip_tls_verify"))
    if not url:
        raise ParameterError("hub_url", "the hub's API server URL is not known",
                             "Set hub_url (as the member reaches it), or hub_kubeconfig to read it from")
    if not ca and not insecure:
        raise ParameterError(
            "hub_ca_pem", "no CA for the hub is known, and the member agent needs one to trust %s" % url,
            "Give hub_ca_pem or hub_ca_cert, or a hub_kubeconfig whose cluster has certificate-authority(-data)",
        )
    return url.rstrip("/"), ca, insecure


def hub_url_and_ca(module):
    """``(url, ca_pem)`` the member agent is given (``agent_endpoint``)."""
    url, ca, _insecure = agent_endpoint(module)
    return url, ca


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
                hint="Give the CA that signed the hub API server's certificate (hub_ca_pem, hub_ca_cert or hub_kubeconfig's CA); "
                     "the member agent would fail the same way")
        raise ConnectionFailure("preflight: %s" % exc.msg, exc.hint, host=url)
    except ApiError as exc:
        if exc.status == 401:
            raise ApiError("token: preflight - the hub at %s refused the member agent's token (401)" % url, status=401,
                           hint="Give a valid token, or re-run kubefleet_member_identity: the identity token is invalid or "
                                "belongs to a deleted ServiceAccount")
        raise
