# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Argument-spec fragments, one convention for every module.

A module builds its spec as ``merge(AUTH, HUB_AUTH, WAIT, HELM, own_options)`` (the fragments it
needs, its own options last so they can override a fragment's default) and hands it to
``FleetModule``. Each fragment has a documentation fragment of the same name in ``doc_fragments``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from ansible.module_utils.basic import env_fallback


def auth_options(prefix="", env=True):
    """The kubernetes.core connection options; ``prefix`` (e.g. ``hub_``) gives a second, independent set."""
    def fallback(name):
        return dict(fallback=(env_fallback, [name])) if env else {}

    return {
        prefix + "kubeconfig": dict(type="raw", no_log=False, **fallback("K8S_AUTH_KUBECONFIG")),
        prefix + "context": dict(type="str", **fallback("K8S_AUTH_CONTEXT")),
        prefix + "host": dict(type="str", **fallback("K8S_AUTH_HOST")),
        prefix + "api_key": dict(type="str", no_log=True, **fallback("K8S_AUTH_API_KEY")),
        prefix + "validate_certs": dict(type="bool", aliases=[prefix + "verify_ssl"], **fallback("K8S_AUTH_VERIFY_SSL")),
        prefix + "ca_cert": dict(type="path", aliases=[prefix + "ssl_ca_cert"], **fallback("K8S_AUTH_SSL_CA_CERT")),
        prefix + "client_cert": dict(type="path", aliases=[prefix + "cert_file"], **fallback("K8S_AUTH_CERT_FILE")),
        prefix + "client_key": dict(type="path", aliases=[prefix + "key_file"], no_log=False, **fallback("K8S_AUTH_KEY_FILE")),
        prefix + "proxy": dict(type="str", **fallback("K8S_AUTH_PROXY")),
        prefix + "no_proxy": dict(type="str", **fallback("K8S_AUTH_NO_PROXY")),
    }


# The target cluster (doc fragment fleetops.registration.k8s_auth).
AUTH = auth_options()
# The hub, for modules that act on a member but read from the hub (fleetops.registration.k8s_auth.HUB).
HUB_AUTH = auth_options("hub_", env=False)
# One wait budget per task (fleetops.registration.wait).
WAIT = {
    "wait": dict(type="bool", default=True),
    "wait_timeout": dict(type="int", default=300),
    "wait_sleep": dict(type="int", default=2),
}
# A Helm chart (fleetops.registration.helm).
HELM = {
    "chart_ref": dict(type="str"),
    "chart_repo_url": dict(type="str"),
    "chart_version": dict(type="str"),
    "helm_binary": dict(type="path"),
    "helm_registry_config": dict(type="path"),
    "helm_repository_config": dict(type="path"),
}


def merge(*fragments):
    """One argument spec from fragments; later ones win, so a module's own options can override a default."""
    spec = {}
    for fragment in fragments:
        for name, option in (fragment or {}).items():
            spec[name] = copy.deepcopy(option)
    return spec
