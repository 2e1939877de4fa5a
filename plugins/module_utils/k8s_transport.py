# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How a request reaches an API server: urllib3 for static credentials, the kubernetes package for the rest.

Importing the ``kubernetes`` package costs a module process about 0.25 s of CPU (it loads every API model), a third
of what a no-change ``member_info`` costs. Most connections need none of it: a kubeconfig with a token or a client
certificate, or ``host`` and ``api_key``, is a server URL, a CA and a header or a key pair, which urllib3 (the
package's own HTTP layer) handles directly. Exec plugins, auth providers, basic auth and in-cluster config keep
using the package's loader, whose Configuration goes through ``ApiClientTransport``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import ipaddress
import json
import os
from urllib.parse import quote, unquote, urlencode, urlparse

from ansible_collections.fleetops.registration.plugins.module_utils.errors import ParameterError
from ansible_collections.fleetops.registration.plugins.module_utils._deps import HTTPHeaderDict, urllib3

REQUEST_TIMEOUT = (10, 60)


def proxy_from_environment(url, no_proxy=None, environ=None):
    """The proxy for ``url`` as Go programs (kubectl, Helm) pick it: ``HTTPS_PROXY``/``HTTP_PROXY`` by scheme (upper
    case first), never for ``localhost`` or a loopback address, nor for a host ``no_proxy`` (else ``NO_PROXY``) lists.
    None for a direct connection."""
    environ = os.environ if environ is None else environ
    parsed = urlparse(url)
    names = ("HTTPS_PROXY", "https_proxy") if parsed.scheme == "https" else ("HTTP_PROXY", "http_proxy")
    proxy = next((environ[name] for name in names if environ.get(name)), None)
    host = (parsed.hostname or "").lower()
    if not proxy or host == "localhost" or _is_loopback(host):
        return None
    if no_proxy is None:
        no_proxy = environ.get("NO_PROXY") or environ.get("no_proxy") or ""
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    if any(_bypasses(entry.strip().lower(), host, port) for entry in no_proxy.split(",") if entry.strip()):
        return None
    return proxy if "://" in proxy else "http://" + proxy


def proxy_headers_from_environment(environ=None):
    """kubernetes.core's ``proxy_headers`` from ``K8S_AUTH_PROXY_HEADERS_<SUBOPTION>``; None when none is set."""
    environ = os.environ if environ is None else environ
    found = dict((key, environ["K8S_AUTH_PROXY_HEADERS_" + key.upper()]) for key in ("proxy_basic_auth", "basic_auth", "user_agent")
                 if environ.get("K8S_AUTH_PROXY_HEADERS_" + key.upper()))
    return found or None


def proxy_header_values(proxy_headers, proxy_url=None):
    """The headers sent to the proxy (as urllib3's ``make_headers`` names them) for kubernetes.core's
    ``proxy_headers``; credentials in the proxy URL (``http://user:secret@proxy:3128``) authenticate as Go programs
    use them, unless ``proxy_basic_auth`` is given."""
    proxy_headers = proxy_headers or {}
    headers = {}
    proxy_auth = proxy_headers.get("proxy_basic_auth")
    if not proxy_auth and proxy_url:
        parsed = urlparse(proxy_url if "://" in proxy_url else "http://" + proxy_url)
        if parsed.username is not None:
            proxy_auth = "%s:%s" % (unquote(parsed.username), unquote(parsed.password or ""))
    if proxy_auth:
        headers["proxy-authorization"] = "Basic " + base64.b64encode(proxy_auth.encode("utf-8")).decode("ascii")
    if proxy_headers.get("basic_auth"):
        headers["authorization"] = "Basic " + base64.b64encode(proxy_headers["basic_auth"].encode("utf-8")).decode("ascii")
    if proxy_headers.get("user_agent"):
        headers["user-agent"] = proxy_headers["user_agent"]
    return headers


def impersonation_headers(impersonation):
    """The ``Impersonate-*`` request headers of a kubeconfig user's ``as``/``as-groups``/``as-uid``/``as-user-extra``,
    as ``(name, value)`` pairs: a header repeats for each group (the API server reads each line as one group)."""
    impersonation = impersonation or {}
    pairs = []
    if impersonation.get("as"):
        pairs.append(("Impersonate-User", impersonation["as"]))
    pairs.extend(("Impersonate-Group", group) for group in impersonation.get("as-groups") or [])
    if impersonation.get("as-uid"):
        pairs.append(("Impersonate-Uid", impersonation["as-uid"]))
    for key, values in sorted((impersonation.get("as-user-extra") or {}).items()):
        pairs.extend(("Impersonate-Extra-" + quote(key, safe=""), value) for value in values or [])
    return pairs


def _is_loopback(host):
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _bypasses(entry, host, port):
    """One NO_PROXY entry against the request's host and port (golang.org/x/net/http/httpproxy's rules)."""
    if entry == "*":
        return True
    try:
        network = ipaddress.ip_network(entry, strict=False) if "/" in entry else None
    except ValueError:
        network = None
    if network is not None:
        try:
            return ipaddress.ip_address(host) in network
        except ValueError:
            return False
    name, _sep, entry_port = entry.rpartition(":") if entry.count(":") == 1 else (entry, "", "")
    if entry_port and (not entry_port.isdigit() or int(entry_port) != port):
        return False
    name = name.strip("[]")
    if name.startswith("*."):
        name = name[1:]
    if name.startswith("."):
        return host.endswith(name)
    return host == name or host.endswith("." + name)


class Unreachable(Exception):
    """The request did not get an HTTP answer (connection, TLS, proxy or timeout)."""


class StaticConfiguration:
    """What a connection with static credentials needs; the attribute names are those of the kubernetes package's
    Configuration, so Helm's kubeconfig is derived the same way from either."""

    def __init__(self, host, verify_ssl=True, ssl_ca_cert=None, ca_cert_data=None, cert_file=None, key_file=None,
                 token=None, proxy=None, tls_server_name=None):
        self.host = host.rstrip("/")
        self.verify_ssl = verify_ssl
        self.ssl_ca_cert = ssl_ca_cert
        self.ca_cert_data = ca_cert_data
        self.cert_file = cert_file
        self.key_file = key_file
        self.api_key = {"authorization": "Bearer " + token} if token else {}
        self.proxy = proxy
        self.tls_server_name = tls_server_name
        self.retries = 1
        self.proxy_headers = None  # ConnectionSettings sets these two, as on the package's Configuration
        self.impersonation = {}


class Urllib3Transport:
    """Requests with urllib3 alone, for a StaticConfiguration."""

    def __init__(self, configuration):
        self.configuration = configuration
        # maxsize: the most requests a run sends side by side on one client (member_batch.WORKERS: a batch's credential
        # checks on the hub); a request beyond it would open a connection (a TLS handshake) only to close it again.
        options = {"num_pools": 2, "maxsize": 16, "retries": urllib3.Retry(total=configuration.retries, redirect=0),
                   "timeout": urllib3.Timeout(connect=REQUEST_TIMEOUT[0], read=REQUEST_TIMEOUT[1])}
        if configuration.verify_ssl:
            options["cert_reqs"] = "CERT_REQUIRED"
            if configuration.ca_cert_data:
                options["ca_cert_data"] = configuration.ca_cert_data
            elif configuration.ssl_ca_cert:
                options["ca_certs"] = configuration.ssl_ca_cert
        else:
            options["cert_reqs"] = "CERT_NONE"
            options["assert_hostname"] = False
        if configuration.cert_file:
            options["cert_file"] = configuration.cert_file
            options["key_file"] = configuration.key_file
        if configuration.tls_server_name:
            options["server_hostname"] = configuration.tls_server_name
        if configuration.proxy:
            proxy_headers = configuration.proxy_headers or proxy_header_values(None, configuration.proxy)
            self.pool = urllib3.ProxyManager(configuration.proxy, proxy_headers=proxy_headers, **options)
        else:
            self.pool = urllib3.PoolManager(**options)

    def send(self, method, path, body, query, headers):
        """``(status, reason, data)`` of one request; Unreachable when there is no HTTP answer."""
        url = self.configuration.host + path + ("?" + urlencode(list(query.items())) if query else "")
        headers = with_impersonation(headers, self.configuration)
        headers.update(self.configuration.api_key)
        try:
            response = self.pool.request(method, url, body=json.dumps(body) if body is not None else None, headers=headers,
                                         preload_content=True)
        except urllib3.exceptions.HTTPError as exc:
            raise Unreachable(_reason(exc))
        return response.status, response.reason, response.data


class ApiClientTransport:
    """Requests through the kubernetes package's ApiClient (its Configuration handles exec plugins and the like)."""

    def __init__(self, configuration):
        from kubernetes import client as k8s_client

        configuration.retries = 1
        self.api = k8s_client.ApiClient(configuration)

    def send(self, method, path, body, query, headers):
        from kubernetes.client.rest import ApiException

        try:
            if hasattr(self.api, "param_serialize"):
                method, url, headers, body, _post = self.api.param_serialize(
                    method=method, resource_path=path, query_params=list((query or {}).items()) or None,
                    header_params=headers, body=body, auth_settings=["BearerToken"])
                headers = with_impersonation(headers, self.api.configuration)
                response = self.api.call_api(method, url, header_params=headers, body=body, _request_timeout=REQUEST_TIMEOUT)
                return response.status, response.reason, response.read()
            if getattr(self.api.configuration, "impersonation", None):
                raise ParameterError("impersonate_user", "impersonating with this kubeconfig user needs a newer client",
                                     "Upgrade the kubernetes Python package to 31 or later")
            response = self.api.call_api(  # kubernetes < 31 (the older OpenAPI generator) raises on a non-2xx status
                path, method, query_params=list((query or {}).items()), header_params=headers, body=body,
                auth_settings=["BearerToken"], _preload_content=False, _return_http_data_only=True,
                _request_timeout=REQUEST_TIMEOUT,
            )
            return 200, "OK", response.data
        except ApiException as exc:
            if not exc.status:  # the client reports TLS failures as status 0
                raise Unreachable(exc.reason)
            return exc.status, exc.reason, exc.body
        except urllib3.exceptions.HTTPError as exc:
            raise Unreachable(_reason(exc))


def with_impersonation(headers, configuration):
    """``headers`` as a urllib3 header dict (one line per value) with the configuration's ``Impersonate-*`` headers."""
    combined = HTTPHeaderDict(headers)
    for name, value in impersonation_headers(getattr(configuration, "impersonation", None)):
        combined.add(name, value)
    return combined


def transport_for(configuration):
    if isinstance(configuration, StaticConfiguration):
        return Urllib3Transport(configuration)
    return ApiClientTransport(configuration)


def _reason(exc):
    return str(getattr(exc, "reason", None) or exc)
