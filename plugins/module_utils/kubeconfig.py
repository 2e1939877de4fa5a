# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kubeconfig facts read without a client: contexts, the server, the CA, the credentials to mask."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import copy
import os

from ansible_collections.fleetops.registration.plugins.module_utils.parsing import argv_secrets, load_yaml, secret_strings, url_passwords
from ansible_collections.fleetops.registration.plugins.module_utils.errors import ParameterError

from ansible_collections.fleetops.registration.plugins.module_utils._deps import yaml

CREDENTIAL_KEYS = ("token", "client-key-data", "password")


_LOADED = {}


def load_kubeconfig(source, param="kubeconfig"):
    """Load a kubeconfig given as a path or a dict; return ``(dict, base_dir)``.

    A file is parsed once per process (a module reads the same kubeconfig for the hub, the member and Helm); each
    caller gets its own copy.
    """
    if isinstance(source, dict):
        return source, os.getcwd()
    if not source:
        raise ParameterError(param, "no kubeconfig given")
    path = os.path.expanduser(str(source))
    if not os.path.isfile(path):
        raise ParameterError(param, "kubeconfig file %s does not exist" % path, "Give the path of a readable kubeconfig file")
    stat = os.stat(path)
    key = (os.path.abspath(path), stat.st_mtime, stat.st_size)
    if key not in _LOADED:
        with open(path) as handle:
            try:
                data = load_yaml(handle)
            except yaml.YAMLError:
                raise ParameterError(param, "%s is not valid YAML" % path)
        if not isinstance(data, dict):
            raise ParameterError(param, "%s is not a kubeconfig" % path)
        _LOADED[key] = data
    return copy.deepcopy(_LOADED[key]), os.path.dirname(os.path.abspath(path))


# Fields holding a file path, resolved against the directory of the file that holds them (as kubectl does).
_PATH_FIELDS = {"clusters": ("cluster", ("certificate-authority",)),
                "users": ("user", ("client-certificate", "client-key", "tokenFile"))}


def merged_kubeconfig(paths, param="kubeconfig"):
    """The kubeconfig kubectl makes of several files (the list ``$KUBECONFIG`` names): the first file that names a
    cluster, user or context, or sets ``current-context``, wins; relative paths in each file are made absolute
    against that file's directory."""
    merged = {"apiVersion": "v1", "kind": "Config", "clusters": [], "users": [], "contexts": []}
    for path in paths:
        config, base_dir = load_kubeconfig(path, param=param)
        if not merged.get("current-context") and config.get("current-context"):
            merged["current-context"] = config["current-context"]
        for section in ("clusters", "users", "contexts"):
            known = set(item.get("name") for item in merged[section])
            for item in config.get(section) or []:
                if isinstance(item, dict) and item.get("name") not in known:
                    known.add(item.get("name"))
                    merged[section].append(_with_absolute_paths(section, item, base_dir))
    return merged


def _with_absolute_paths(section, item, base_dir):
    if section not in _PATH_FIELDS:
        return item
    key, fields = _PATH_FIELDS[section]
    entry = dict(item.get(key) or {})
    for field in fields:
        value = entry.get(field)
        if isinstance(value, str) and value and not os.path.isabs(os.path.expanduser(value)):
            entry[field] = os.path.join(base_dir, value)
    command = (entry.get("exec") or {}).get("command") if section == "users" else None
    if isinstance(command, str) and os.sep in command and not os.path.isabs(os.path.expanduser(command)):
        # As kubectl: an exec plugin named by a relative path (./bin/token) is found from the file's directory;
        # a bare name (aws, gke-gcloud-auth-plugin) is looked up on PATH.
        entry["exec"] = dict(entry["exec"], command=os.path.join(base_dir, command))
    return dict(item, **{key: entry})


def context_names(config):
    return [item.get("name") for item in (config or {}).get("contexts") or [] if item.get("name")]


def check_context(config, context, param="context"):
    """Fail naming ``param`` (``context``, ``hub_context``) when the kubeconfig has no such context."""
    if context and context not in context_names(config):
        names = context_names(config)
        raise ParameterError(param, "the kubeconfig has no context named %r" % context,
                             "Use one of: %s" % ", ".join(names) if names else "The kubeconfig defines no contexts")


def _named(items, name, what, param, hint, required=True):
    for item in items or []:
        if isinstance(item, dict) and item.get("name") == name:
            return item.get(what) or {}
    if not required:
        return {}
    raise ParameterError(param, "the kubeconfig has no %s named %r" % (what, name), hint)


def resolve_context(config, context=None, param="kubeconfig", hint="Check the context name and the kubeconfig", user_required=True):
    """``(context name, context entry, cluster entry, user entry)`` of the given (or current) context: the one way the collection
    reads a kubeconfig's context; a name that does not resolve fails naming ``param``. The user is {} when the
    context names none (or, without ``user_required``, one that is not there, as kubectl takes it)."""
    ctx_name = context or config.get("current-context")
    if not ctx_name:
        raise ParameterError(param, "the kubeconfig has no current-context", hint)
    ctx = _named(config.get("contexts"), ctx_name, "context", param, hint)
    cluster = _named(config.get("clusters"), ctx.get("cluster"), "cluster", param, hint)
    user = _named(config.get("users"), ctx.get("user"), "user", param, hint, user_required) if ctx.get("user") else {}
    return ctx_name, ctx, cluster, user


def kubeconfig_cluster(config, context=None, param="kubeconfig"):
    """The ``cluster`` entry the given (or current) context points at."""
    return resolve_context(config, context, param)[2]


def kubeconfig_server(config, context=None, param="kubeconfig"):
    server = kubeconfig_cluster(config, context, param).get("server")
    if not server:
        raise ParameterError(param, "the kubeconfig's cluster has no server URL")
    return server


def kubeconfig_ca_pem(config, context=None, base_dir=None, param="kubeconfig"):
    """The CA (PEM text) that the context's cluster trusts.

    Inline ``certificate-authority-data`` or the file ``certificate-authority``
    names (relative to the kubeconfig's directory): the case KubeFleet's join
    script gets wrong by reading only the inline form. None when the kubeconfig
    trusts the system roots.
    """
    cluster = kubeconfig_cluster(config, context, param)
    data = cluster.get("certificate-authority-data")
    if data:
        try:
            pem = base64.b64decode(data).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            raise ParameterError(param, "certificate-authority-data is not base64 PEM")
        return _check_pem(pem, param)
    path = cluster.get("certificate-authority")
    if path:
        if not os.path.isabs(path) and base_dir:
            path = os.path.join(base_dir, path)
        if not os.path.isfile(path):
            raise ParameterError(param, "certificate-authority file %s does not exist" % path)
        with open(path) as handle:
            return _check_pem(handle.read(), param)
    return None


def kubeconfig_entries(config, context=None):
    """``(cluster, user)`` entries of the given (or current) context, or None when the kubeconfig does not resolve
    (a context naming a user that is not there counts as having no user, as kubectl takes it)."""
    try:
        return resolve_context(config, context, user_required=False)[2:]
    except ParameterError:
        return None


def server_from_kubeconfig(config):
    """The API server URL of a kubeconfig mapping's current context (or its only cluster), or None."""
    if not isinstance(config, dict):
        return None
    entries = kubeconfig_entries(config)
    if entries is not None:
        return entries[0].get("server")
    clusters = [c.get("cluster") or {} for c in config.get("clusters") or [] if isinstance(c, dict)]
    return clusters[0].get("server") if len(clusters) == 1 else None


def kubeconfig_token(config, context=None):
    """The bearer token of the context's user (inline ``token``), or None."""
    entries = kubeconfig_entries(config, context)
    return (entries[1].get("token") if entries else None) or None


# An auth-provider's config keys that are not credentials (every other value there is masked).
AUTH_PROVIDER_PUBLIC_KEYS = ("idp-issuer-url", "client-id", "cmd-path", "cmd-args", "expiry-key", "token-key",
                             "expiry", "scopes", "apiserver-id", "environment", "tenant-id", "config-mode")


def kubeconfig_secrets(config):
    """The credential strings inside a kubeconfig mapping (to mask them): inline tokens, keys and passwords, an
    auth-provider's tokens and client secret (every config value not known to be public), an exec plugin's
    environment values and the credentials in its arguments (``--token=X``, ``--password X``), the password in a
    cluster's ``proxy-url``; and anything else credential-shaped in it (parsing.secret_strings)."""
    if not isinstance(config, dict):
        return []
    found = []
    for user in config.get("users") or []:
        entry = (user or {}).get("user") if isinstance(user, dict) else None
        if not isinstance(entry, dict):
            continue
        found.extend(value for key, value in entry.items() if key in CREDENTIAL_KEYS)
        provider_config = (entry.get("auth-provider") or {}).get("config") or {}
        found.extend(value for key, value in provider_config.items() if key not in AUTH_PROVIDER_PUBLIC_KEYS)
        plugin = entry.get("exec") or {}
        found.extend(item.get("value") for item in plugin.get("env") or [] if isinstance(item, dict))
        found.extend(argv_secrets(plugin.get("args")))
    for cluster in config.get("clusters") or []:
        entry = (cluster or {}).get("cluster") if isinstance(cluster, dict) else None
        if isinstance(entry, dict) and isinstance(entry.get("proxy-url"), str):
            found.extend(url_passwords(entry["proxy-url"]))
    found.extend(secret_strings(config))
    return list(dict.fromkeys(value for value in found if isinstance(value, str) and value))


def _check_pem(pem, param):
    return pem_certificates(pem, param, "Give the PEM text of the hub's CA", "the CA is not a PEM certificate")


def pem_certificates(text, param, hint="Give the PEM text of the hub's CA", problem="is not a PEM certificate"):
    """The CERTIFICATE blocks of CA text given by the user or read from a file, and nothing else (a private key in
    the same bundle never goes on); fails naming ``param`` when there is none. Every CA option goes through here."""
    certificates = certificate_blocks(text or "")
    if not certificates:
        raise ParameterError(param, problem, hint)
    return certificates


def read_pem(value, param, hint="Give the hub CA as PEM text or the path of a PEM file"):
    """A PEM certificate given inline or as the path of a PEM file; None when not given."""
    if value is None or value == "":
        return None
    text = value
    if "-----BEGIN" not in value:
        path = os.path.expanduser(value)
        if not os.path.isfile(path):
            raise ParameterError(param, "%s is neither PEM text nor an existing file" % path, hint)
        with open(path) as handle:
            text = handle.read()
    return pem_certificates(text, param, hint)


def certificate_blocks(text):
    """Only the CERTIFICATE blocks of PEM text, so that a bundle file that also holds a private key never passes
    the key on (into agent values, a Secret or a kubeconfig)."""
    blocks, current = [], None
    for line in text.splitlines():
        stripped = line.strip()
        if stripped == "-----BEGIN CERTIFICATE-----":
            current = [stripped]
        elif current is not None:
            current.append(stripped)
            if stripped == "-----END CERTIFICATE-----":
                blocks.append("\n".join(current) + "\n")
                current = None
    return "".join(blocks)
