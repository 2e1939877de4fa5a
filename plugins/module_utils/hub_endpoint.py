# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The hub's API server as a member's agent is told it - its URL, the CA it trusts, whether it checks the hub's
certificate - for every fleet manager: the one owner of that fact and of its options' names.

The options are ``hub_api_server_url`` and ``hub_api_server_ca`` (the inventory's ``fleetops_api_server_url`` and
``fleetops_ca_file`` through the roles), with ``hub_insecure_skip_tls_verify`` where the agent can be told not to check;
fleet_agent, kubefleet_member_agent, fleet_cluster and member_info take them, each module's older names kept as
deprecated aliases (``options``). Each of URL and CA is the first of: the option, what the fleet manager itself
configured (Rancher Fleet: the registration token's values, Fleet's configuration on the hub), ``hub_ca_cert`` (the CA),
the hub connection (``hub_host`` or the hub kubeconfig's server, the kubeconfig's CA) - read only when needed.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import namedtuple

from ansible_collections.fleetops.registration.plugins.module_utils.errors import ParameterError
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_auth import ConnectionSettings, default_kubeconfig
from ansible_collections.fleetops.registration.plugins.module_utils.kubeconfig import read_pem

URL = "hub_api_server_url"
CA = "hub_api_server_ca"
INSECURE = "hub_insecure_skip_tls_verify"
# Where a value came from when the hub connection gave it (the option a user changes to fix it).
CONNECTION = "hub_kubeconfig"
CA_FILE = "hub_ca_cert"
CA_HINT = "Give the hub CA as PEM text or the path of a PEM file (through the roles: the hub host's fleetops_ca_file)"
# The older names' removal: a major release.
DEPRECATION = dict(version="1.0.0", collection_name="fleetops.registration")

# url/ca: the values (None when not known); url_source/ca_source: the option, the fleet manager's source or the hub
# connection they came from; insecure: the agent does not check the hub's certificate.
Endpoint = namedtuple("Endpoint", "url url_source ca ca_source insecure")


def options(url_aliases=(), ca_aliases=()):
    """The argument spec of the two options, with a module's older names as deprecated aliases."""
    def option(aliases):
        spec = dict(type="str")
        if aliases:
            spec.update(aliases=list(aliases), deprecated_aliases=[dict(name=alias, **DEPRECATION) for alias in aliases])
        return spec

    return {URL: option(url_aliases), CA: option(ca_aliases)}


def hub_connected(params):
    """Whether the task reaches the hub itself: ``hub_kubeconfig``, ``hub_host``, or ``hub_context`` alone in the
    kubeconfig the environment names (``K8S_AUTH_KUBECONFIG``, the files ``$KUBECONFIG`` lists, ``~/.kube/config``),
    found as every connection finds it (``k8s_auth.default_kubeconfig``)."""
    if params.get("hub_kubeconfig") or params.get("hub_host"):
        return True
    return bool(params.get("hub_context")) and default_kubeconfig(CONNECTION) is not None


def check_options(params):
    """Fail naming the option when ``hub_api_server_url`` or ``hub_api_server_ca`` is given but cannot be used, before
    any request (what ``resolve`` would find later, e.g. after member_info has read the hub)."""
    _https(params.get(URL), URL)
    read_pem(params.get(CA), CA, CA_HINT)


def _https(url, source):
    if url and not url.startswith("https://"):
        raise ParameterError(URL, "%r (from %s) is not an https:// URL" % (url, source),
                             "Give the hub API server's https:// URL as the member reaches it (%s)" % URL)


def _first(candidates):
    for value, source in candidates:
        if value:
            return value, source
    return None, None


def resolve(params, manager_url=None, manager_ca=None, manager_source=None):
    """The ``Endpoint`` the agent is given, by the order in the module's docstring: ``params`` are the task's options
    (of a module, or of one item of a batch); ``manager_url``/``manager_ca`` what the fleet manager configured
    (``manager_source`` says where). The hub connection is read only when the options leave the URL or the CA open.

    Either value may stay None (the caller says whether that is an error: ``require``). A value given that cannot be
    used (a URL that is not https://, a CA that is no PEM certificate or file) fails naming its option, also where the
    caller only compares (member_info): bad input, not an unknown endpoint. A URL is kept as given (a trailing slash
    too: it is what a release's values were compared with)."""
    url = _first([(params.get(URL), URL), (manager_url, manager_source)])
    ca = _first([(read_pem(params.get(CA), CA, CA_HINT), CA), (manager_ca, manager_source),
                 (read_pem(params.get(CA_FILE), CA_FILE), CA_FILE)])
    if not (url[0] and ca[0]) and hub_connected(params):
        server, connection_ca = ConnectionSettings(params, "hub_", label="hub").server_and_ca()
        url = url if url[0] else _first([(server, CONNECTION)])
        ca = ca if ca[0] else _first([(connection_ca, CONNECTION)])
    _https(*url)
    return Endpoint(url[0], url[1], ca[0], ca[1], bool(params.get(INSECURE)))


def require(endpoint, ca=True):
    """``endpoint``, failing naming the option when its URL (or, with ``ca`` and TLS checked, its CA) is not known."""
    if not endpoint.url:
        raise ParameterError(URL, "the hub's API server URL as the member's agent reaches it is not known",
                             "Set %s (through the roles: the hub host's fleetops_api_server_url), or give a hub "
                             "connection (hub_kubeconfig, hub_context or hub_host) to read it from" % URL)
    if ca and not endpoint.ca and not endpoint.insecure:
        raise ParameterError(CA, "no CA for the hub is known, and the member agent needs one to trust %s" % endpoint.url,
                             "Give %s (PEM text or a file; through the roles: the hub host's fleetops_ca_file) or %s, or a "
                             "hub kubeconfig whose cluster has certificate-authority(-data)" % (CA, CA_FILE))
    return endpoint
