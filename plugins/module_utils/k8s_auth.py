# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kubernetes connection settings: defined once, used for the API client and for Helm.

The option names and ``K8S_AUTH_*`` environment fallbacks match kubernetes.core,
so playbooks and AWX credentials written for it work unchanged.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import inspect
import os
import tempfile

from ansible_collections.fleetops.registration.plugins.module_utils.errors import ParameterError
from ansible_collections.fleetops.registration.plugins.module_utils.files import private_tempdir, write_private_file
from ansible_collections.fleetops.registration.plugins.module_utils._deps import yaml
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_transport import (
    StaticConfiguration, proxy_from_environment, proxy_header_values, proxy_headers_from_environment,
)
from ansible_collections.fleetops.registration.plugins.module_utils.kubeconfig import (
    check_context, kubeconfig_ca_pem, kubeconfig_entries, kubeconfig_server, load_kubeconfig, merged_kubeconfig, read_pem,
)

AUTH_KEYS = ("kubeconfig", "context", "host", "api_key", "validate_certs", "ca_cert", "client_cert", "client_key", "proxy",
             "no_proxy", "proxy_headers", "impersonate_user", "impersonate_groups")
# A kubeconfig user's impersonation, as kubectl reads it (the impersonate_* options replace it).
IMPERSONATION_USER_KEYS = ("as", "as-groups", "as-uid", "as-user-extra")
# A kubeconfig user with only these keys needs no more than urllib3 (k8s_transport); anything else (exec, auth-provider,
# username/password) goes through the kubernetes package's loader.
STATIC_USER_KEYS = ("token", "tokenFile", "client-certificate", "client-certificate-data", "client-key", "client-key-data") \
    + IMPERSONATION_USER_KEYS


class ConnectionSettings:
    """The resolved auth options of one cluster (the target, or the hub)."""

    def __init__(self, params, prefix="", label="cluster"):
        self.prefix = prefix
        self.label = label
        for key in AUTH_KEYS:
            setattr(self, key, params.get(prefix + key))
        if isinstance(self.kubeconfig, str) and self.kubeconfig:
            # A list of files, as $KUBECONFIG and kubernetes.core's kubeconfig option take it.
            self.kubeconfig = kubeconfig_from_paths(self.kubeconfig.split(os.pathsep), self.param("kubeconfig")) or \
                os.path.expanduser(self.kubeconfig)
        elif self.kubeconfig is not None and not isinstance(self.kubeconfig, dict):
            raise ParameterError(prefix + "kubeconfig", "must be a path or a kubeconfig mapping")
        if self.kubeconfig is None and not self.host:
            self.kubeconfig = default_kubeconfig(self.param("kubeconfig"))
        self.impersonate_groups = [group for group in self.impersonate_groups or [] if group]
        if self.impersonate_groups and not self.impersonate_user:
            raise ParameterError(self.param("impersonate_groups"), "groups are impersonated only with a user",
                                 "Set %s too (the API server refuses groups without a user)" % self.param("impersonate_user"))
        for key in ("ca_cert", "client_cert", "client_key"):
            check_readable_file(getattr(self, key), self.param(key))
        if self.proxy_headers is None and not prefix:
            self.proxy_headers = proxy_headers_from_environment()
        self.proxy_headers = dict((k, v) for k, v in (self.proxy_headers or {}).items() if v not in (None, ""))

    def param(self, key):
        return self.prefix + key

    def kubeconfig_dict(self):
        """The kubeconfig as ``(dict, base_dir)``, or ``(None, None)`` when connecting by host only."""
        if self.kubeconfig is None:
            return None, None
        return load_kubeconfig(self.kubeconfig, param=self.param("kubeconfig"))

    def server_and_ca(self):
        """``(server URL, CA PEM)`` this connection uses, read without connecting: ``host`` or the kubeconfig's server,
        ``ca_cert`` or the kubeconfig's CA (inline or file). Either may be None."""
        url = self.host
        ca = read_pem(self.ca_cert, self.param("ca_cert")) if self.ca_cert else None
        if self.kubeconfig:
            config, base_dir = self.kubeconfig_dict()
            check_context(config, self.context, self.param("context"))
            if not url:
                url = kubeconfig_server(config, self.context, self.param("kubeconfig"))
            if ca is None:
                ca = kubeconfig_ca_pem(config, self.context, base_dir, self.param("kubeconfig"))
        return url, ca

    def _overrides(self):
        return any(getattr(self, k) not in (None, "") for k in ("host", "api_key", "ca_cert", "client_cert", "client_key", "proxy")) \
            or self.validate_certs is False or bool(self.proxy_headers.get("proxy_basic_auth"))

    def client_configuration(self, tmpdir=None):
        """The client configuration for these settings (no network I/O).

        A ``StaticConfiguration`` when the credentials are static (``host``/``api_key``, or a kubeconfig user with a
        token or a client certificate), else the kubernetes package's Configuration from its own loader. ``tmpdir()``
        gives a private directory for key material a kubeconfig holds inline.
        """
        if self.context and self.kubeconfig is not None:
            # The client's own message would blame the kubeconfig; the fix is the context option.
            check_context(self.kubeconfig_dict()[0], self.context, self.param("context"))
        tmpdir = tmpdir or private_tempdir
        configuration = self._static_configuration(tmpdir)
        if configuration is None:
            configuration = self._package_configuration(tmpdir)
        configuration = self._apply_overrides(configuration)
        configuration.impersonation = self.impersonation()
        configuration.proxy_headers = proxy_header_values(self.proxy_headers, configuration.proxy) or None
        return configuration

    def impersonation(self):
        """Who the requests act as: the impersonate_* options, else the kubeconfig user's ``as``/``as-groups``/
        ``as-uid``/``as-user-extra`` (kubectl's rule); an empty dict for no impersonation."""
        if self.impersonate_user or self.impersonate_groups:
            return dict((k, v) for k, v in (("as", self.impersonate_user), ("as-groups", self.impersonate_groups)) if v)
        if self.kubeconfig is None or (isinstance(self.kubeconfig, str) and not os.path.isfile(self.kubeconfig)):
            return {}
        entries = kubeconfig_entries(self.kubeconfig_dict()[0], self.context)
        user = entries[1] if entries else {}
        return dict((key, user[key]) for key in IMPERSONATION_USER_KEYS if user.get(key))

    def helm_arguments(self):
        """Helm's global flags for the impersonate_* options (a kubeconfig's own ``as`` is Helm's to read)."""
        args = ["--kube-as-user", self.impersonate_user] if self.impersonate_user else []
        for group in self.impersonate_groups:
            args += ["--kube-as-group", group]
        return args

    def _static_configuration(self, tmpdir):
        if self.kubeconfig is None:
            return StaticConfiguration(self.host) if self.host else None
        if isinstance(self.kubeconfig, str) and not os.path.isfile(self.kubeconfig):
            return None  # the package path reports it, naming the option
        config, base_dir = self.kubeconfig_dict()
        entries = kubeconfig_entries(config, self.context)
        if entries is None or set(entries[1]) - set(STATIC_USER_KEYS) or not entries[0].get("server"):
            return None
        cluster, user = entries
        if str(cluster.get("proxy-url") or "").startswith("socks"):
            return None
        token = user.get("token")
        if not token and user.get("tokenFile"):
            with open(_relative(user["tokenFile"], base_dir)) as handle:
                token = handle.read().strip()
        ca_data = cluster.get("certificate-authority-data")
        return StaticConfiguration(
            cluster["server"], verify_ssl=not cluster.get("insecure-skip-tls-verify"),
            ca_cert_data=_unb64(ca_data) if ca_data else None,
            ssl_ca_cert=_relative(cluster.get("certificate-authority"), base_dir),
            cert_file=_key_material(user, "client-certificate", base_dir, tmpdir, self.prefix or "target-"),
            key_file=_key_material(user, "client-key", base_dir, tmpdir, self.prefix or "target-"),
            token=token, proxy=cluster.get("proxy-url"), tls_server_name=cluster.get("tls-server-name"))

    def _package_configuration(self, tmpdir):
        """The kubernetes package's loader; the key and certificate files it writes for inline data (or an exec
        plugin's answer) go into ``tmpdir()``, not the system's temporary directory."""
        from kubernetes import client as k8s_client
        from kubernetes import config as k8s_config
        from kubernetes.config.config_exception import ConfigException

        configuration = k8s_client.Configuration()
        try:
            if isinstance(self.kubeconfig, dict):
                k8s_config.load_kube_config_from_dict(self.kubeconfig, context=self.context, client_configuration=configuration,
                                                      persist_config=False, **_temp_file_path(k8s_config.load_kube_config_from_dict, tmpdir))
            elif self.kubeconfig:
                if not os.path.isfile(self.kubeconfig):
                    raise ParameterError(self.param("kubeconfig"), "kubeconfig file %s does not exist" % self.kubeconfig,
                                         "Give the path of a readable kubeconfig file, or host and api_key")
                k8s_config.load_kube_config(config_file=self.kubeconfig, context=self.context, client_configuration=configuration,
                                            persist_config=False, **_temp_file_path(k8s_config.load_kube_config, tmpdir))
            elif not self.host:
                if "KUBERNETES_SERVICE_HOST" in os.environ:
                    k8s_config.load_incluster_config(client_configuration=configuration)
                else:
                    raise ParameterError(self.param("kubeconfig"), "no way to reach the %s" % self.label,
                                         "Set %s (a path or a mapping), $KUBECONFIG, or %s and %s" % (
                                             self.param("kubeconfig"), self.param("host"), self.param("api_key")))
        except ConfigException as exc:
            raise ParameterError(self.param("kubeconfig"), "could not load it: %s" % exc,
                                 "Check the file and the %s option" % self.param("context"))
        return configuration

    def _apply_overrides(self, configuration):
        if self.host:
            configuration.host = self.host.rstrip("/")
        if self.api_key:
            configuration.api_key = {"authorization": "Bearer " + self.api_key}
        if self.validate_certs is not None:
            configuration.verify_ssl = self.validate_certs
        if self.ca_cert:
            configuration.ssl_ca_cert = self.ca_cert
            if getattr(configuration, "ca_cert_data", None):
                configuration.ca_cert_data = None
        if self.client_cert:
            configuration.cert_file = self.client_cert
        if self.client_key:
            configuration.key_file = self.client_key
        if self.proxy:
            configuration.proxy = self.proxy
        if not getattr(configuration, "proxy", None) and configuration.host:
            # Neither the option nor the kubeconfig's proxy-url: the environment's proxy, as kubectl and Helm take it.
            configuration.proxy = proxy_from_environment(configuration.host, self.no_proxy)
        return configuration

    def helm_kubeconfig(self, configuration, tmpdir):
        """``(path, context)`` for Helm's ``--kubeconfig``/``--kube-context``.

        A kubeconfig file with no overrides is passed through as it is (exec
        plugins keep working). Otherwise a 0600 kubeconfig is derived from the
        resolved client configuration, so tokens never reach Helm's command line.
        """
        if isinstance(self.kubeconfig, str) and self.kubeconfig and not self._overrides():
            return self.kubeconfig, self.context
        cluster = {"server": configuration.host}
        if configuration.ssl_ca_cert:
            cluster["certificate-authority"] = configuration.ssl_ca_cert
        elif getattr(configuration, "ca_cert_data", None):
            cluster["certificate-authority-data"] = base64.b64encode(configuration.ca_cert_data.encode("utf-8")).decode("ascii")
        if not configuration.verify_ssl:
            cluster["insecure-skip-tls-verify"] = True
        if configuration.proxy:
            cluster["proxy-url"] = _with_proxy_credentials(configuration.proxy, self.proxy_headers.get("proxy_basic_auth"))
        user = dict(getattr(configuration, "impersonation", None) or {})
        token = (configuration.api_key or {}).get("authorization") or (configuration.api_key or {}).get("BearerToken")
        if token:
            user["token"] = token.split(" ", 1)[1] if token.lower().startswith("bearer ") else token
        if configuration.cert_file:
            user["client-certificate"] = configuration.cert_file
        if configuration.key_file:
            user["client-key"] = configuration.key_file
        doc = {
            "apiVersion": "v1", "kind": "Config", "current-context": "fleetops",
            "clusters": [{"name": "fleetops", "cluster": cluster}],
            "users": [{"name": "fleetops", "user": user}],
            "contexts": [{"name": "fleetops", "context": {"cluster": "fleetops", "user": "fleetops"}}],
        }
        path = write_private_file(os.path.join(tmpdir, "kubeconfig-%s" % (self.prefix or "target")), yaml.safe_dump(doc))
        return path, "fleetops"


# Where the roles take each file option from, for a message a role user can act on (the hub CA the roles take from
# fleetops_ca_file is hub_endpoint.CA, a PEM text or file option with its own hint).
ROLE_SOURCES = {}


def check_readable_file(path, param):
    """A file option that names no readable file fails here, naming the option and the file (and the inventory
    variable it comes from through the roles), not later as an unreachable API server."""
    if path in (None, "") or os.access(path, os.R_OK) and os.path.isfile(path):
        return
    source = ROLE_SOURCES.get(param)
    raise ParameterError(param, "%s %s" % (path, "is not a file" if os.path.exists(path) else "does not exist"),
                         "Give the path of a readable PEM file%s" % (" (through the roles: %s)" % source if source else ""))


def _with_proxy_credentials(proxy_url, basic_auth):
    """The proxy URL with ``user:password`` in it, the one way Go programs (Helm) take a proxy's credentials."""
    if not basic_auth:
        return proxy_url
    from urllib.parse import quote, urlsplit, urlunsplit

    parts = urlsplit(proxy_url if "://" in proxy_url else "http://" + proxy_url)
    user, _sep, password = basic_auth.partition(":")
    netloc = "%s:%s@%s" % (quote(user, safe=""), quote(password, safe=""), parts.netloc.rpartition("@")[2])
    return urlunsplit(parts._replace(netloc=netloc))


def default_kubeconfig(param="kubeconfig"):
    """What kubernetes.core, kubectl and Helm use when no kubeconfig is given: the files ``K8S_AUTH_KUBECONFIG`` lists
    (the target's option falls back to it anyway; a hub connection given only a context finds it here), else those
    ``$KUBECONFIG`` lists (one path, or the kubeconfig merged from several; files that do not exist are skipped), else
    ``~/.kube/config``. None when there is none, which leaves the in-cluster service account."""
    for variable in ("K8S_AUTH_KUBECONFIG", "KUBECONFIG"):
        listed = [path for path in os.environ.get(variable, "").split(os.pathsep) if path]
        if listed:
            return kubeconfig_from_paths(listed, "%s (from $%s)" % (param, variable))
    default = os.path.expanduser("~/.kube/config")
    return default if os.path.isfile(default) else None


def kubeconfig_from_paths(paths, param):
    """The kubeconfig a list of paths names, as kubectl reads ``$KUBECONFIG``: one file's path, the mapping merged from
    several (the first file that names an entry wins), skipping files that do not exist; None when none exists."""
    existing = [path for path in dict.fromkeys(os.path.expanduser(path) for path in paths if path) if os.path.isfile(path)]
    if len(existing) > 1:
        return merged_kubeconfig(existing, param=param)
    return existing[0] if existing else None


def endpoint_configuration(url, ca_pem=None, token=None, proxy=None, validate_certs=True, tmpdir=None):  # pylint: disable=unused-argument
    """The client configuration for an arbitrary endpoint, such as the hub as an agent sees it.

    The one way to build a client from a URL, a CA (PEM text, kept in memory) and a bearer token rather than from
    the module's connection options. (``tmpdir`` is accepted for callers written for the package's Configuration.)
    """
    return StaticConfiguration(url, verify_ssl=bool(validate_certs), ca_cert_data=ca_pem if validate_certs else None,
                               token=token, proxy=proxy)


def _temp_file_path(loader, tmpdir):
    """``temp_file_path`` for a kubernetes package loader that takes it (load_kube_config only since 25.3.0)."""
    return {"temp_file_path": tmpdir()} if "temp_file_path" in inspect.signature(loader).parameters else {}


def _relative(path, base_dir):
    if not path:
        return None
    path = os.path.expanduser(path)
    return path if os.path.isabs(path) or not base_dir else os.path.join(base_dir, path)


def _unb64(data):
    return base64.b64decode(data).decode("utf-8")


def _key_material(user, key, base_dir, tmpdir, prefix):
    """A file holding the user's ``key`` (client-certificate or client-key): its own path, or the inline data
    written 0600 into ``tmpdir()`` (a module removes its directory at exit) as ``<prefix><key>-<random>.pem``: one
    process may connect to many clusters (member_info's ``members``), each with its own file."""
    if user.get(key + "-data"):
        fd, path = tempfile.mkstemp(prefix=prefix + key + "-", suffix=".pem", dir=tmpdir())
        os.close(fd)
        return write_private_file(path, _unb64(user[key + "-data"]))
    return _relative(user.get(key), base_dir)
