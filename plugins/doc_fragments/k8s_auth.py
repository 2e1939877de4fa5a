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
      - Credentials inside a mapping are masked in output, syslog and job events - tokens, keys, passwords, an
        auth-provider's config, an exec plugin's C(env) values and the credentials in its C(args) (C(--token=X),
        C(--password X)), the password in a cluster's C(proxy-url).
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
      - Can also be set with the E(K8S_AUTH_VERIFY_SSL) or E(K8S_AUTH_VALIDATE_CERTS) environment variable.
    type: bool
    aliases: [verify_ssl]
  ca_cert:
    description:
      - Path to a CA bundle that verifies the API server.
      - Can also be set with the E(K8S_AUTH_SSL_CA_CERT) or E(K8S_AUTH_CA_CERT) environment variable.
    type: path
    aliases: [ssl_ca_cert]
  client_cert:
    description:
      - Path to a client certificate to authenticate with.
      - Can also be set with the E(K8S_AUTH_CERT_FILE) or E(K8S_AUTH_CLIENT_CERT) environment variable.
    type: path
    aliases: [cert_file]
  client_key:
    description:
      - Path to the key of O(client_cert).
      - Can also be set with the E(K8S_AUTH_KEY_FILE) or E(K8S_AUTH_CLIENT_KEY) environment variable.
    type: path
    aliases: [key_file]
  proxy:
    description:
      - HTTP(S) proxy URL to reach the API server through.
      - A password in it (V(http://user:secret@proxy:3128), or without the scheme) is masked in output.
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
  proxy_headers:
    description:
      - Headers sent to the proxy, as in kubernetes.core.
      - Credentials in the proxy's URL (V(http://user:secret@proxy:3128)) are used as kubectl uses them when
        O(proxy_headers.proxy_basic_auth) is not given.
    type: dict
    suboptions:
      proxy_basic_auth:
        description:
          - C(user:password) for the proxy's basic authentication. Never logged.
          - Can also be set with the E(K8S_AUTH_PROXY_HEADERS_PROXY_BASIC_AUTH) environment variable.
        type: str
      basic_auth:
        description:
          - C(user:password) for a basic C(Authorization) header sent to the proxy. Never logged.
          - Can also be set with the E(K8S_AUTH_PROXY_HEADERS_BASIC_AUTH) environment variable.
        type: str
      user_agent:
        description:
          - The C(User-Agent) header sent to the proxy.
          - Can also be set with the E(K8S_AUTH_PROXY_HEADERS_USER_AGENT) environment variable.
        type: str
  impersonate_user:
    description:
      - The user to act as (kubectl's C(--as)); the credentials need the C(impersonate) verb for it.
      - Without it, the kubeconfig user's C(as), C(as-groups), C(as-uid) and C(as-user-extra) apply, as in kubectl.
      - Helm acts as the same user.
      - Can also be set with the E(K8S_AUTH_IMPERSONATE_USER) environment variable.
    type: str
  impersonate_groups:
    description:
      - The groups to act as (kubectl's C(--as-group)); needs O(impersonate_user).
      - Can also be set with the E(K8S_AUTH_IMPERSONATE_GROUPS) environment variable, comma-separated.
    type: list
    elements: str
notes:
  - An empty string given for an optional option means the option is not set (its default applies), as role
    defaults, AWX surveys and C(module_defaults) pass it.
  - The environment variables are kubernetes.core's; each option also reads E(K8S_AUTH_) followed by its own name in
    upper case (for example E(K8S_AUTH_VALIDATE_CERTS) and E(K8S_AUTH_CA_CERT)).
  - kubernetes.core's O(ignore:username) and O(ignore:password) are not offered (Kubernetes no longer accepts basic
    authentication), nor O(ignore:persist_config) (refreshed credentials are never written back into the user's
    kubeconfig).
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
      - Where the module connects to the hub and neither this nor O(hub_host) is given, the hub is found as the
        target cluster is - the files E(K8S_AUTH_KUBECONFIG) lists, else those E(KUBECONFIG) lists (merged as kubectl
        merges them), else C(~/.kube/config) - with O(hub_context); O(hub_context) alone is enough to reach the hub.
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
      - Path to a CA bundle that verifies the hub's API server - for the controller's own connection to the hub. The CA
        the member agents are told to trust is C(hub_api_server_ca) where a module takes it; unset, it defaults to this
        one.
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
      - A password in it is masked in output.
    type: str
  hub_no_proxy:
    description:
      - Hosts to reach without the proxy, as O(no_proxy), for the hub connection.
    type: str
  hub_proxy_headers:
    description:
      - Headers sent to the hub's proxy, as O(proxy_headers).
    type: dict
    suboptions:
      proxy_basic_auth:
        description:
          - C(user:password) for the proxy's basic authentication. Never logged.
        type: str
      basic_auth:
        description:
          - C(user:password) for a basic C(Authorization) header sent to the proxy. Never logged.
        type: str
      user_agent:
        description:
          - The C(User-Agent) header sent to the proxy.
        type: str
  hub_impersonate_user:
    description:
      - The user to act as on the hub, as O(impersonate_user).
    type: str
  hub_impersonate_groups:
    description:
      - The groups to act as on the hub, as O(impersonate_groups); needs O(hub_impersonate_user).
    type: list
    elements: str
'''

    # The hub a member moves from (hub_move_info): HUB's options under old_hub_.
    OLD_HUB = r'''
options:
  old_hub_kubeconfig:
    description:
      - Path to a kubeconfig file for the old hub (the fleet manager), or the kubeconfig itself as a mapping.
      - Where the module connects to the old hub and neither this nor O(old_hub_host) is given, the old hub is found as the
        target cluster is - the files E(K8S_AUTH_KUBECONFIG) lists, else those E(KUBECONFIG) lists (merged as kubectl
        merges them), else C(~/.kube/config) - with O(old_hub_context); O(old_hub_context) alone is enough to reach the old hub.
    type: raw
  old_hub_context:
    description:
      - The context in O(old_hub_kubeconfig) that reaches the old hub.
    type: str
  old_hub_host:
    description:
      - URL of the old hub's API server, overriding the old hub kubeconfig's.
    type: str
  old_hub_api_key:
    description:
      - Bearer token for the old hub. Never logged.
    type: str
  old_hub_validate_certs:
    description:
      - Whether to verify the old hub API server's certificate.
    type: bool
    aliases: [old_hub_verify_ssl]
  old_hub_ca_cert:
    description:
      - Path to a CA bundle that verifies the old hub's API server.
    type: path
    aliases: [old_hub_ssl_ca_cert]
  old_hub_client_cert:
    description:
      - Path to a client certificate for the old hub.
    type: path
    aliases: [old_hub_cert_file]
  old_hub_client_key:
    description:
      - Path to the key of O(old_hub_client_cert).
    type: path
    aliases: [old_hub_key_file]
  old_hub_proxy:
    description:
      - HTTP(S) proxy URL to reach the old hub through. Without it, the environment's proxy applies as for O(proxy).
      - A password in it is masked in output.
    type: str
  old_hub_no_proxy:
    description:
      - Hosts to reach without the proxy, as O(no_proxy), for the old hub connection.
    type: str
  old_hub_proxy_headers:
    description:
      - Headers sent to the old hub's proxy, as O(proxy_headers).
    type: dict
    suboptions:
      proxy_basic_auth:
        description:
          - C(user:password) for the proxy's basic authentication. Never logged.
        type: str
      basic_auth:
        description:
          - C(user:password) for a basic C(Authorization) header sent to the proxy. Never logged.
        type: str
      user_agent:
        description:
          - The C(User-Agent) header sent to the proxy.
        type: str
  old_hub_impersonate_user:
    description:
      - The user to act as on the old hub, as O(impersonate_user).
    type: str
  old_hub_impersonate_groups:
    description:
      - The groups to act as on the old hub, as O(impersonate_groups); needs O(old_hub_impersonate_user).
    type: list
    elements: str
'''
