# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
name: fleet_members
short_description: The member clusters a Rancher Fleet and KubeFleet hub knows, as an inventory
version_added: 0.1.0
author:
  - fleetops.registration contributors (@fleetops)
description:
  - Reads the hub and lists every Rancher Fleet C(Cluster) (C(fleet.cattle.io/v1alpha1), in all namespaces or the
    ones named) and every KubeFleet C(MemberCluster) (C(cluster.kubernetes-fleet.io/v1beta1)) as a host.
  - A member cluster both managers know is one host; objects are matched by name, or by the value of the label
    O(link_label).
  - Hosts join the groups C(members), one group per manager that knows them (C(rancher_fleet), C(kubefleet)) and one
    group for their health (C(healthy), C(unhealthy), C(stale), C(not_joined), C(leaving)). The hub itself is the host
    O(hub_host) in the group C(hub), so the collection's playbooks run on this inventory.
  - A host is C(healthy) when no manager's findings from its hub object need a repair - the judgement
    M(fleetops.registration.member_info) and M(fleetops.registration.fleet_status) make, from the hub alone (a
    KubeFleet C(Healthy=False) or a Fleet C(Ready=False) makes it unhealthy whatever its heartbeat); otherwise its
    group is the first of C(leaving), C(not_joined), C(stale), C(unhealthy) that applies. Each manager's view carries
    C(healthy) and C(causes) (the findings' causes, docs/day2.md).
  - Host variables, all read from the hub (nothing contacts the members) - C(fleetops_managers) (the managers that
    know the member), C(fleetops_hub_labels) (labels on the hub objects), C(fleetops_fleet_client_id),
    C(fleetops_fleet_namespace), C(fleetops_cluster_name), C(fleetops_last_seen) and C(fleetops_heartbeat_age_seconds)
    (per manager - Fleet agent check-in, KubeFleet member agent heartbeat), C(fleetops_joined), C(fleetops_healthy),
    C(fleetops_stale), C(fleetops_health), C(fleetops_member_api_server_url) (with O(read_kubeconfig_secrets), where the hub
    knows it - an imported Fleet cluster's kubeconfig Secret), C(fleetops_lock) (null, or the run changing the member
    now - C(holder), C(by), C(since), C(expires); see M(fleetops.registration.member_lock)), C(fleetops_cluster_identity)
    (per manager, the cluster the hub object records - C(uid) of its C(kube-system) Namespace and C(ca_sha256) - or
    null; see M(fleetops.registration.member_info)), and
    C(fleetops_rancher_fleet) / C(fleetops_kubefleet) with each manager's view.
  - The hub does not know how to reach a member with credentials, so the member's connection
    (C(fleetops_kubeconfig), C(fleetops_context)) is yours to map in with O(compose), which applies to the members
    only (the hub host gets the plugin's own O(kubeconfig) and O(context)).
  - The file must be named C(*.fleet_members.yml) or C(*.fleet_members.yaml).
  - Connection options and their E(K8S_AUTH_*) environment variables match kubernetes.core and the collection's modules.
extends_documentation_fragment:
  - constructed
  - inventory_cache
requirements:
  - kubernetes (the Python client)
  - PyYAML
options:
  plugin:
    description: The name of this plugin; makes the file an inventory source of this plugin.
    required: true
    type: str
    choices: [fleetops.registration.fleet_members]
  kubeconfig:
    description:
      - Path to the hub's kubeconfig file. Without it, and without O(host), the files E(KUBECONFIG) lists (merged as
        kubectl merges them), else C(~/.kube/config), else the in-cluster service account is used.
    type: path
    env:
      - name: K8S_AUTH_KUBECONFIG
  context:
    description: The context of the hub in O(kubeconfig). Defaults to the kubeconfig's current context.
    type: str
    env:
      - name: K8S_AUTH_CONTEXT
  host:
    description: URL of the hub's API server, overriding the kubeconfig's.
    type: str
    env:
      - name: K8S_AUTH_HOST
  api_key:
    description: Bearer token to authenticate to the hub with.
    type: str
    env:
      - name: K8S_AUTH_API_KEY
  validate_certs:
    description: Whether to verify the hub API server's certificate.
    type: bool
    aliases: [verify_ssl]
    env:
      - name: K8S_AUTH_VERIFY_SSL
  ca_cert:
    description: Path to a CA bundle that verifies the hub API server.
    type: path
    aliases: [ssl_ca_cert]
    env:
      - name: K8S_AUTH_SSL_CA_CERT
  client_cert:
    description: Path to a client certificate to authenticate with.
    type: path
    aliases: [cert_file]
    env:
      - name: K8S_AUTH_CERT_FILE
  client_key:
    description: Path to the key of O(client_cert).
    type: path
    aliases: [key_file]
    env:
      - name: K8S_AUTH_KEY_FILE
  proxy:
    description: URL of an HTTP proxy to reach the hub through.
    type: str
    env:
      - name: K8S_AUTH_PROXY
  managers:
    description:
      - The fleet managers to read. A manager whose API the hub does not serve is skipped with a warning.
    type: list
    elements: str
    choices: [rancher_fleet, kubefleet]
    default: [rancher_fleet, kubefleet]
  fleet_namespaces:
    description:
      - Namespaces to read Rancher Fleet C(Cluster)s from. Empty (the default) reads all namespaces.
    type: list
    elements: str
    default: []
  link_label:
    description:
      - A label key whose value names the member on both managers (for a Fleet C(Cluster) and a C(MemberCluster)
        with different names). Objects without the label are matched by name.
      - The host is then named by the label's value; C(fleetops_cluster_name) is set only when both objects have the
        same name.
    type: str
  stale_after:
    description:
      - Seconds since the last Fleet agent check-in (C(rancher_fleet)) or KubeFleet member agent heartbeat
        (C(kubefleet)) after which a joined member counts as stale - the meaning the O(fleetops.registration.member_info#module:stale_after)
        and O(fleetops.registration.fleet_status_info#module:stale_after) options have. A number applies to every
        manager; a mapping gives it per manager, keyed by C(rancher_fleet) and C(kubefleet).
      - Unset, each manager's own rule applies - the one M(fleetops.registration.fleet_status_info) and
        M(fleetops.registration.member_info) apply too - 3600 seconds for Rancher Fleet (its agent checks in every
        15 minutes by default), three C(heartbeatPeriodSeconds) for KubeFleet. For KubeFleet a value can only make
        that rule stricter.
    type: raw
    default: {}
  lock_namespace:
    description:
      - The hub namespace of the per-member locks (M(fleetops.registration.member_lock)), read for C(fleetops_lock) with
        one LIST. Without the right to list Leases there, no lock is shown.
    type: str
    default: fleetops-system
  read_kubeconfig_secrets:
    description:
      - Read the kubeconfig Secret of imported Fleet clusters (C(spec.kubeConfigSecret)) for the member's API server
        URL. Only the URL is kept; nothing else of the Secret reaches the inventory, its cache or its output.
      - When the hub refuses access to the Secret, the URL is left unset.
      - Off by default, so that the inventory's credential needs no access to Secrets holding credentials.
    type: bool
    default: false
  hub_host:
    description:
      - The name of the hub's host in the group C(hub), with C(fleetops_kubeconfig) and C(fleetops_context) from
        O(kubeconfig) and O(context). An empty string adds no hub host (give it in another inventory source).
    type: str
    default: fleet-hub
  local_connection:
    description:
      - Give every host C(ansible_connection=local) and the controller's Python, as the collection's modules run on
        the controller and talk to the API servers from there.
    type: bool
    default: true
notes:
  - Variables for all hosts or a group (chart paths, the Helm binary, C(fleetops_api_server_url) for the hub) go in
    C(group_vars/) beside the inventory file, as with any inventory source.
  - With O(cache) on, the hub's objects are cached, not the derived variables, so heartbeat ages and health are
    computed afresh on every run. What may carry a secret is left out of them first (the values of a Rancher Fleet
    C(Cluster)'s C(agentEnvVars), a proxy password say; annotations), so the cache holds none.
  - The C(fleetops_*) variables the roles read, and how to map member kubeconfigs with this plugin, are described in
    C(docs/inventory.md) and C(docs/inventory-plugin.md) of the installed collection.
seealso:
  - module: fleetops.registration.member_info
  - module: fleetops.registration.fleet_status_info
'''

EXAMPLES = r'''
---
# hub.fleet_members.yml: every member of both managers; the members' contexts in one kubeconfig, named as on the hub.
plugin: fleetops.registration.fleet_members
kubeconfig: ~/.kube/hub.yaml
compose:
  fleetops_kubeconfig: "'~/.kube/members.yaml'"
  fleetops_context: inventory_hostname

---
# Only Fleet's fleet-default namespace; groups from the hub's labels; members named by a label both managers carry.
plugin: fleetops.registration.fleet_members
kubeconfig: ~/.kube/hub.yaml
context: hub-admin
fleet_namespaces: [fleet-default]
link_label: fleetops.example.com/member
keyed_groups:
  - key: fleetops_hub_labels.env | default('none')
    prefix: env
groups:
  kubefleet_only: fleetops_managers == ['kubefleet']
compose:
  fleetops_kubeconfig: "'~/.kube/' + inventory_hostname + '.yaml'"
  fleetops_backends: fleetops_managers
cache: true
cache_plugin: ansible.builtin.jsonfile
cache_connection: ~/.cache/fleetops-inventory
cache_timeout: 300

# Then, for example:
#   ansible-inventory -i hub.fleet_members.yml --graph
#   ansible-playbook -i hub.fleet_members.yml fleetops.registration.cluster_status
#   ansible-playbook -i hub.fleet_members.yml fleetops.registration.leave_cluster --limit stale
'''

import datetime
import shutil

from ansible.errors import AnsibleParserError
from ansible.module_utils.common.text.converters import to_native
from ansible.plugins.inventory import BaseInventoryPlugin, Cacheable, Constructable
from ansible.utils.unsafe_proxy import wrap_var

from ansible_collections.fleetops.registration.plugins.plugin_utils import fleet_members as mapping

from ansible_collections.fleetops.registration.plugins.module_utils import k8s_auth, k8s_client, member_lock, registry
from ansible_collections.fleetops.registration.plugins.module_utils.files import private_tempdir
from ansible_collections.fleetops.registration.plugins.module_utils._deps import KUBERNETES_IMPORT_ERROR

IMPORT_ERROR = KUBERNETES_IMPORT_ERROR

try:
    from ansible.template import trust_as_template
except ImportError:  # ansible-core < 2.19 renders every string variable
    def trust_as_template(value):
        return value

AUTH_OPTIONS = ("kubeconfig", "context", "host", "api_key", "validate_certs", "ca_cert", "client_cert", "client_key", "proxy")


class InventoryModule(BaseInventoryPlugin, Constructable, Cacheable):
    """Hosts for the member clusters of a Rancher Fleet / KubeFleet hub."""

    NAME = "fleetops.registration.fleet_members"

    def verify_file(self, path):
        return super().verify_file(path) and path.endswith(("fleet_members.yml", "fleet_members.yaml"))

    def parse(self, inventory, loader, path, cache=True):
        super().parse(inventory, loader, path, cache)
        self._read_config_data(path)
        cache_key = self.get_cache_key(path)
        use_cache = self.get_option("cache") and cache
        update_cache = self.get_option("cache") and not cache
        objects = None
        if use_cache:
            try:
                objects = self._cache[cache_key]
            except KeyError:
                update_cache = True
        if objects is None or "objects" not in objects:  # nothing cached, or an older release's cache layout
            update_cache = update_cache or objects is not None
            objects = self.read_hub()
        if update_cache:
            self._cache[cache_key] = objects
        self.populate(objects)

    # -- reading the hub ------------------------------------------------------------------------------------------

    def _client(self, tmpdir):
        if IMPORT_ERROR is not None:
            raise AnsibleParserError("%s needs the kubernetes and PyYAML Python packages on the controller: %s"
                                     % (self.NAME, to_native(IMPORT_ERROR)))
        params = dict((key, self.get_option(key)) for key in AUTH_OPTIONS)
        try:
            settings = k8s_auth.ConnectionSettings(params, label="hub")
            return k8s_client.KubeClient(settings.client_configuration(tmpdir=lambda: tmpdir), label="hub",
                                         hint="Check the kubeconfig, context, host and certificate options of %s" % self.NAME)
        except k8s_auth.ParameterError as exc:
            raise AnsibleParserError("%s: %s" % (self.NAME, exc.message()))

    def read_hub(self):
        """The hub's objects this inventory is built from, JSON-ready (what the cache keeps)."""
        # Key files for a kubeconfig's inline keys live only while the hub is read, not until the playbook ends.
        tmpdir = private_tempdir()
        try:
            return self._read_hub(self._client(tmpdir))
        finally:
            shutil.rmtree(tmpdir, ignore_errors=True)

    def _read_hub(self, client):
        objects, urls = {}, {}
        try:
            for name in self.get_option("managers"):
                manager = registry.manager(name, param="managers")
                objects[name] = [manager.storable(item) for item in self._list(client, manager.member_resource)]
                if self.get_option("read_kubeconfig_secrets"):
                    found, problems = manager.member_urls(client, objects[name])
                    urls.update(found)
                    for problem in problems:
                        self.display.vvv("%s: %s" % (self.NAME, problem))
            locks = member_lock.live_locks(client, self.get_option("lock_namespace"))
        except (k8s_client.ApiError, k8s_client.ConnectionFailure) as exc:
            raise AnsibleParserError("%s: %s" % (self.NAME, exc.message()))
        return {"objects": objects, "member_urls": urls, "locks": locks}

    def _list(self, client, resource):
        """A manager's member objects (in each of ``fleet_namespaces`` when they are namespaced); none, with a warning,
        when the hub does not serve them."""
        namespaces = (self.get_option("fleet_namespaces") or [None]) if resource.namespaced else [None]
        try:
            items = [item for namespace in namespaces for item in client.list(resource, namespace=namespace)]
        except k8s_client.NotFoundError:
            self.display.warning("%s: the hub does not serve %s (%s); its members are not listed"
                                 % (self.NAME, resource.plural, resource.api_version))
            return []
        return [mapping.strip_object(item) for item in items]

    # -- the inventory ------------------------------------------------------------------------------------------------

    def populate(self, objects):
        now = datetime.datetime.now(datetime.timezone.utc)
        try:
            stale_after = mapping.stale_limits(self.get_option("stale_after"))
        except ValueError as exc:
            raise AnsibleParserError("%s: %s" % (self.NAME, exc))
        hosts = mapping.build_hosts(objects["objects"], now, link_label=self.get_option("link_label"), stale_after=stale_after,
                                    member_urls=objects.get("member_urls"), locks=objects.get("locks"))
        for group in (mapping.MEMBERS_GROUP, mapping.HUB_GROUP) + mapping.MANAGERS + mapping.HEALTH_STATES:
            self.inventory.add_group(group)
        self._add_hub()
        strict = self.get_option("strict")
        for name, host in hosts.items():
            for group in host["groups"]:
                self.inventory.add_host(name, group=group)
            # What the hub says (labels, clientID, properties) can be written by a member: never a template. ansible-core
            # 2.19 trusts no inventory string anyway; older releases template what is not marked unsafe.
            for key, value in host["vars"].items():
                self.inventory.set_variable(name, key, wrap_var(value))
            for key, value in self._connection_vars().items():
                self.inventory.set_variable(name, key, value)
            hostvars = self.inventory.get_host(name).get_vars()
            self._set_composite_vars(self.get_option("compose"), hostvars, name, strict=strict)
            self._add_host_to_composed_groups(self.get_option("groups"), hostvars, name, strict=strict)
            self._add_host_to_keyed_groups(self.get_option("keyed_groups"), hostvars, name, strict=strict)

    def _add_hub(self):
        name = self.get_option("hub_host")
        if not name:
            return
        self.inventory.add_host(name, group=mapping.HUB_GROUP)
        hub_vars = dict(self._connection_vars())
        if self.get_option("kubeconfig"):
            hub_vars["fleetops_kubeconfig"] = self.get_option("kubeconfig")
        if self.get_option("context"):
            hub_vars["fleetops_context"] = self.get_option("context")
        for key, value in hub_vars.items():
            self.inventory.set_variable(name, key, value)

    def _connection_vars(self):
        if not self.get_option("local_connection"):
            return {}
        return {"ansible_connection": "local",
                "ansible_python_interpreter": trust_as_template("{{ ansible_playbook_python }}")}
