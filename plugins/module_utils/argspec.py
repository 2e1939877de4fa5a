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

from ansible_collections.fleetops.registration.plugins.module_utils.agent_settings import ARGUMENT_SPEC as AGENT_SETTING_SPEC


# kubernetes.core's proxy_headers suboptions; their environment variables are K8S_AUTH_PROXY_HEADERS_<NAME>.
PROXY_HEADERS = {
    "proxy_basic_auth": dict(type="str", no_log=True),
    "basic_auth": dict(type="str", no_log=True),
    "user_agent": dict(type="str"),
}


def auth_options(prefix="", env=True):
    """The kubernetes.core connection options; ``prefix`` (e.g. ``hub_``) gives a second, independent set.

    The environment variables are kubernetes.core's: ``K8S_AUTH_`` and the option's name, or the name the
    kubernetes client gives it (``K8S_AUTH_VERIFY_SSL`` for ``validate_certs``), the first one set winning.
    """
    def fallback(*names):
        return dict(fallback=(env_fallback, ["K8S_AUTH_" + name for name in names])) if env else {}

    return {
        prefix + "kubeconfig": dict(type="raw", no_log=False, **fallback("KUBECONFIG")),
        prefix + "context": dict(type="str", **fallback("CONTEXT")),
        prefix + "host": dict(type="str", **fallback("HOST")),
        prefix + "api_key": dict(type="str", no_log=True, **fallback("API_KEY")),
        prefix + "validate_certs": dict(type="bool", aliases=[prefix + "verify_ssl"], **fallback("VALIDATE_CERTS", "VERIFY_SSL")),
        prefix + "ca_cert": dict(type="path", aliases=[prefix + "ssl_ca_cert"], **fallback("CA_CERT", "SSL_CA_CERT")),
        prefix + "client_cert": dict(type="path", aliases=[prefix + "cert_file"], **fallback("CLIENT_CERT", "CERT_FILE")),
        prefix + "client_key": dict(type="path", aliases=[prefix + "key_file"], no_log=False, **fallback("CLIENT_KEY", "KEY_FILE")),
        prefix + "proxy": dict(type="str", **fallback("PROXY")),
        prefix + "no_proxy": dict(type="str", **fallback("NO_PROXY")),
        # Without the option, ConnectionSettings reads K8S_AUTH_PROXY_HEADERS_* (a dict has no env fallback of its own).
        prefix + "proxy_headers": dict(type="dict", options=copy.deepcopy(PROXY_HEADERS)),
        prefix + "impersonate_user": dict(type="str", **fallback("IMPERSONATE_USER")),
        prefix + "impersonate_groups": dict(type="list", elements="str", **fallback("IMPERSONATE_GROUPS")),
    }


# The target cluster (doc fragment fleetops.registration.k8s_auth).
AUTH = auth_options()
# The hub, for modules that act on a member but read from the hub (fleetops.registration.k8s_auth.HUB).
HUB_AUTH = auth_options("hub_", env=False)
# The hub a member moves from, for hub_move_info (fleetops.registration.k8s_auth.OLD_HUB).
OLD_HUB_AUTH = auth_options("old_hub_", env=False)
# One wait budget per task (fleetops.registration.wait).
WAIT = {
    "wait": dict(type="bool", default=True),
    "wait_timeout": dict(type="int", default=300),
    "wait_sleep": dict(type="int", default=2),
    "member_lock": dict(type="dict"),
}
# Which cluster a member is, recorded on its hub object (fleetops.registration.cluster_identity).
CLUSTER_IDENTITY = {
    "cluster_identity": dict(type="dict", options=dict(uid=dict(type="str"), ca_sha256=dict(type="str"))),
}
# The agent setting (fleetops.registration.agent_setting).
AGENT = {"agent": dict(type="dict", options=AGENT_SETTING_SPEC)}
# Why member_info judged the agent silent, handed to the agent steps (fleetops.registration.agent_setting.SILENCE).
SILENCE = {"silent": dict(type="str")}
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
