# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment:

    # The cluster the module acts on. Names and environment variables match kubernetes.core.
    DOCUMENTATION = r'''
options:
  kubeconfig:
    description:
      - Path to a kubeconfig file, or the kubeconfig itself as a mapping.
      - Credentials inside a mapping are masked in output.
      - Can also be set with the E(K8S_AUTH_KUBECONFIG) environment variable.
      - Without either, and without O(host), the files E(KUBECONFIG) lists are used as kubectl uses them (several
        files are merged; the first file that names a context, cluster or user wins), else C(~/.kube/config), else
        the in-cluster service account.
    type: raw
  context:
    description:
      - The kubeconfig context to use. Defaults to the kubeconfig's current context.
      - Can also be set with the E(K8S_AUTH_CONTEXT) environment variable.
    type: str
  host:
    description:
      - URL of the Kubernetes API server, overriding the kubeconfig's.
      - Can also be set with the E(K8S_AUTH_HOST) environment variable.
    type: str
  api_key:
    description:
      - Bearer token to authenticate with. Never logged.
      - Can also be set with the E(K8S_AUTH_API_KEY) environment variable.
    type: str
  validate_certs:
    description:
      - Whether to verify the API server's certificate.
      - Can also be set with the E(K8S_AUTH_VERIFY_SSL) environment variable.
    type: bool
    aliases: [verify_ssl]
  ca_cert:
    description:
      - Path to a CA bundle that verifies the API server.
      - Can also be set with the E(K8S_AUTH_SSL_CA_CERT) environment variable.
    type: path
    aliases: [ssl_ca_cert]
  client_cert:
    description:
      - Path to a client certificate to authenticate with.
      - Can also be set with the E(K8S_AUTH_CERT_FILE) environment variable.
    type: path
    aliases: [cert_file]
  client_key:
    description:
      - Path to the key of O(client_cert).
      - Can also be set with the E(K8S_AUTH_KEY_FILE) environment variable.
    type: path
    aliases: [key_file]
  proxy:
    description:
      - HTTP(S) proxy URL to reach the API server through.
      - Can also be set with the E(K8S_AUTH_PROXY) environment variable.
      - Without it (and without a C(proxy-url) in the kubeconfig), E(HTTPS_PROXY) (or E(https_proxy)) is used as
        kubectl uses it - except for hosts that E(NO_PROXY) or O(no_proxy) lists, C(localhost) and loopback addresses.
    type: str
  no_proxy:
    description:
      - Hosts to reach without the proxy, as in E(NO_PROXY) - a comma-separated list of host names (with their
        subdomains; a leading C(.) for subdomains only), IP addresses and CIDR ranges, optionally with a port, or C(*).
      - Given, it replaces E(NO_PROXY).
      - Can also be set with the E(K8S_AUTH_NO_PROXY) environment variable.
    type: str
notes:
  - An empty string given for an optional option means the option is not set (its default applies), as role
    defaults, AWX surveys and C(module_defaults) pass it.
requirements:
  - python >= 3.9
  - kubernetes >= 24.2.0
  - PyYAML >= 5.1
'''

    # A second, independent set for modules that act on a member but read from the hub.
    HUB = r'''
options:
  hub_kubeconfig:
    description:
      - Path to a kubeconfig file for the hub (the fleet manager), or the kubeconfig itself as a mapping.
      - Where the module connects to the hub and neither this nor O(hub_host) is given, the hub is found as kubectl
        finds a cluster - the files E(KUBECONFIG) lists (merged), else C(~/.kube/config) - with O(hub_context).
    type: raw
  hub_context:
    description:
      - The context in O(hub_kubeconfig) that reaches the hub.
    type: str
  hub_host:
    description:
      - URL of the hub's API server, overriding the hub kubeconfig's.
    type: str
  hub_api_key:
    description:
      - Bearer token for the hub. Never logged.
    type: str
  hub_validate_certs:
    description:
      - Whether to verify the hub API server's certificate.
    type: bool
    aliases: [hub_verify_ssl]
  hub_ca_cert:
    description:
      - Path to a CA bundle that verifies the hub's API server.
    type: path
    aliases: [hub_ssl_ca_cert]
  hub_client_cert:
    description:
      - Path to a client certificate for the hub.
    type: path
    aliases: [hub_cert_file]
  hub_client_key:
    description:
      - Path to the key of O(hub_client_cert).
    type: path
    aliases: [hub_key_file]
  hub_proxy:
    description:
      - HTTP(S) proxy URL to reach the hub through. Without it, the environment's proxy applies as for O(proxy).
    type: str
  hub_no_proxy:
    description:
      - Hosts to reach without the proxy, as O(no_proxy), for the hub connection.
    type: str
'''
