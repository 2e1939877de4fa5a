"""No secret in any output (issue 31, item 4), read where a security reviewer reads it.

A distinct marker is planted in every option that can carry a secret without being secret as a whole - a proxy
password in the chart's ``values`` and in the ``proxy``/``hub_proxy`` options (with and without a scheme), a chart
repository login, ``secret_values``, a kubeconfig mapping's token, client key, auth-provider config, exec ``args``
(``--token=``, ``--password``) and ``env`` and ``proxy-url`` password, and a scheme-less ``user:password@host:port`` in
the agent setting's environment - and one job runs as AWX runs it: ansible-runner over a private data directory,
``-vvv``. The modules that need no cluster fail early against a closed port; member2 joins through the member_join
role (its request fact carries the inventory's agent setting and values). No marker may appear in the job's stdout
(what ``-vvv`` prints), in any job event's JSON (what AWX stores), or in syslog: the job runs in a private mount
namespace whose ``/dev/log`` is a datagram socket this test reads. Nor in the job's fact cache, nor in the
fleet_members inventory plugin's cache of the hub read while member2 is joined (issue 46 item 4).
"""

import base64
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import uuid

import pytest
import yaml
from kubernetes import client

from modrun import collections_root
from test_inventory_plugin import ansible, ok, write_plugin_inventory

pytestmark = pytest.mark.lab

RUN = uuid.uuid4().hex[:10]
MARKERS = dict((name, "mk%s%s" % (RUN, name.replace("_", ""))) for name in (
    "values_proxy", "values_password", "secret_values", "proxy_option", "hub_proxy_option", "repo_url", "agent_env",
    "kc_token", "kc_client_key", "kc_auth_provider", "kc_exec_arg", "kc_exec_password", "kc_exec_env", "kc_proxy_url",
    "role_agent_env", "role_values_url", "role_values_password", "role_secret_values", "role_fleet_values", "role_fleet_secret",
))
M = MARKERS
CLOSED = "127.0.0.1:9"  # nothing listens there: a module that connects fails at once

KUBECONFIG = {
    "apiVersion": "v1", "kind": "Config", "current-context": "exec",
    "clusters": [{"name": "closed", "cluster": {"server": "https://%s" % CLOSED, "proxy-url": "http://proxyuser:%s@%s" % (M["kc_proxy_url"], CLOSED)}}],
    "contexts": [{"name": "exec", "context": {"cluster": "closed", "user": "exec"}},
                 {"name": "token", "context": {"cluster": "closed", "user": "token"}}],
    "users": [
        # /bin/echo prints its arguments, which the kubernetes client then quotes in its error
        {"name": "exec", "user": {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "/bin/echo", "interactiveMode": "Never",
                                           "args": ["--token=" + M["kc_exec_arg"], "--password", M["kc_exec_password"]],
                                           "env": [{"name": "REGION", "value": M["kc_exec_env"]}]}}},
        {"name": "token", "user": {"token": M["kc_token"], "client-key-data": M["kc_client_key"]}},
        {"name": "oidc", "user": {"auth-provider": {"name": "oidc", "config": {"client-id": "kubectl", "refresh-token": M["kc_auth_provider"]}}}},
    ],
}
# Chart values and options given to the agent modules directly.
MODULE_VARS = {
    "marked_kubeconfig": KUBECONFIG,
    "marked_values": {"proxy": "http://proxyuser:%s@%s" % (M["values_proxy"], CLOSED), "registry": {"password": M["values_password"]}},
    "marked_secret_values": {"registry": {"token": M["secret_values"]}},
    "marked_proxy": "http://proxyuser:%s@%s" % (M["proxy_option"], CLOSED),
    "marked_hub_proxy": "proxyuser:%s@%s" % (M["hub_proxy_option"], CLOSED),
    "marked_repo_url": "https://robot:%s@charts.invalid/fleet" % M["repo_url"],
    "marked_agent": {"env": {"HTTPS_PROXY": "agentuser:%s@proxy.invalid:3128" % M["agent_env"]}},
}
# The same kinds of values, through the inventory, for member2's join (harmless to the agents: the agents never use a
# proxy for the loopback hub, and the charts ignore values they do not know).
ROLE_VARS = {
    "fleetops_agent": {"env": {"HTTPS_PROXY": "agentuser:%s@proxy.invalid:3128" % M["role_agent_env"], "NO_PROXY": "127.0.0.1,localhost"}},
    "member_join_kubefleet_agent_values": {"fleetopsAudit": {"endpoint": "https://audit:%s@audit.invalid/" % M["role_values_url"],
                                                             "password": M["role_values_password"]}},
    "member_join_fleet_agent_values": {"fleetopsAudit": {"proxy": "http://audit:%s@proxy.invalid:3128" % M["role_fleet_values"]}},
    "member_join_agent_secret_values": {"kubefleet": {"fleetopsAudit": {"note": M["role_secret_values"]}},
                                        "rancher_fleet": {"fleetopsAudit": {"note": M["role_fleet_secret"]}}},
}

AGENT_TASKS = """
    - name: fleet_agent%(way)s
      fleetops.registration.fleet_agent:
        kubeconfig: "{{ marked_kubeconfig }}"
        proxy: "{{ marked_proxy }}"
        hub_host: https://%(closed)s
        hub_proxy: "{{ marked_hub_proxy }}"
        token_name: audit
        token_namespace: fleet-default
        chart_ref: fleet-agent
        chart_repo_url: "{{ marked_repo_url }}"
        values: "{{ marked_values }}"
        secret_values: "{{ marked_secret_values }}"
        agent: "{{ marked_agent }}"
        wait_timeout: 5
      ignore_errors: true%(environment)s

    - name: kubefleet_member_agent, the target's kubeconfig mapping with a static token%(way)s
      fleetops.registration.kubefleet_member_agent:
        kubeconfig: "{{ marked_kubeconfig }}"
        context: token
        hub_proxy: "{{ marked_hub_proxy }}"
        name: audit
        hub_api_server_url: https://%(closed)s
        hub_ca_cert: "{{ fleetops_ca_file }}"
        chart_ref: member-agent
        chart_repo_url: "{{ marked_repo_url }}"
        chart_version: 0.0.1
        values: "{{ marked_values }}"
        secret_values: "{{ marked_secret_values }}"
        agent: "{{ marked_agent }}"
        wait_timeout: 5
      ignore_errors: true%(environment)s
"""
# Each agent module twice: in the controller's process (the lab's local connection on the controller's Python), and as
# a module process (a task environment keeps one: plugin_utils/controller_run.py), which logs its invocation to syslog.
PLAYBOOK = """
- name: The agent modules given a marker in every option that can carry a secret (they fail early, at a closed port)
  hosts: fleet-hub
  gather_facts: false
  tasks:
    - name: A cacheable fact, to show the job's fact cache is written
      ansible.builtin.set_fact:
        fleetops_audit_cached: true
        cacheable: true
%(in_controller)s
%(module_process)s
- name: Join member2
  ansible.builtin.import_playbook: fleetops.registration.join_cluster
""" % {"in_controller": AGENT_TASKS % {"closed": CLOSED, "way": "", "environment": ""},
       "module_process": AGENT_TASKS % {"closed": CLOSED, "way": " (module process)",
                                        "environment": "\n      environment:\n        FLEETOPS_AUDIT: module-process"}}

# Run as root in a private mount namespace (unshare -m): /dev becomes a tmpfs holding the real /dev's entries
# (bind-mounted) and, as /dev/log, the test's socket; then the command runs there. Nothing changes outside.
DEVLOG = r"""
set -e
sock=$1; dir=$2; shift 2
mkdir -p "$dir"
mount -t tmpfs -o mode=755 fleetops-dev "$dir"
for entry in /dev/* /dev/.[!.]*; do
  [ -e "$entry" ] || [ -L "$entry" ] || continue
  name=${entry#/dev/}
  if [ "$name" = ptmx ]; then ln -s pts/ptmx "$dir/ptmx"  # a pty comes from the devpts next to the ptmx opened
  elif [ -L "$entry" ]; then cp -P "$entry" "$dir/$name"
  elif [ -d "$entry" ]; then mkdir "$dir/$name"; mount --rbind "$entry" "$dir/$name"
  else touch "$dir/$name"; mount --bind "$entry" "$dir/$name"; fi
done
touch "$dir/log"
mount --bind "$sock" "$dir/log"
mount --move "$dir" /dev
exec "$@"
"""

RUNNER = """
import json, sys
import ansible_runner
result = ansible_runner.run(**json.loads(sys.argv[1]))
print(json.dumps({"status": result.status, "rc": result.rc}))
"""


class SyslogListener:
    """A Unix datagram socket, read in a thread: what the job's processes send to /dev/log."""

    def __init__(self, path):
        self.path = str(path)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.sock.settimeout(0.5)
        self.messages = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self):
        while not self._stop.is_set():
            try:
                self.messages.append(self.sock.recv(1 << 20).decode("utf-8", "replace"))
            except socket.timeout:
                continue

    def close(self):
        self._stop.set()
        self._thread.join()
        self.sock.close()


def runner_job(lab, data, listener):
    """join member2 (and the early-failing module play) as AWX runs a job, with -vvv, in the private mount namespace."""
    for folder in ("inventory", "project", "env"):
        (data / folder).mkdir(parents=True)
    inventory = yaml.safe_load(lab.inventory.read_text())
    inventory["all"]["children"]["members"]["hosts"]["member2"].update(ROLE_VARS)
    inventory["all"]["children"]["hub"]["hosts"]["fleet-" + lab.hub].update(MODULE_VARS)
    (data / "inventory" / "hosts.yml").write_text(yaml.safe_dump(inventory))
    (data / "project" / "audit.yml").write_text(PLAYBOOK)
    (data / "devlog.sh").write_text(DEVLOG)
    (data / "runner.py").write_text(RUNNER)
    kwargs = {"private_data_dir": str(data), "playbook": "audit.yml", "ident": "job", "verbosity": 3, "quiet": True,
              "limit": "fleet-%s,member2" % lab.hub,
              "envvars": {"ANSIBLE_COLLECTIONS_PATH": str(collections_root()), "ANSIBLE_NOCOLOR": "1",
                          "ANSIBLE_DEPRECATION_WARNINGS": "0", "ANSIBLE_NO_TARGET_SYSLOG": "0",
                          "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")}}
    proc = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", str(data / "devlog.sh"), listener.path,
                           str(data / "dev"), sys.executable, str(data / "runner.py"), json.dumps(kwargs)],
                          capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode == 0, "the job could not run in a private mount namespace (needs root): %s" % proc.stderr[-3000:]
    artifacts = data / "artifacts" / "job"
    events = [path.read_text() for path in sorted((artifacts / "job_events").glob("*.json"))]
    return json.loads(proc.stdout.strip().splitlines()[-1]), (artifacts / "stdout").read_text(), events


# This run's markers, and an earlier run's (a kept lab's member2 runs the agents an earlier run installed with its own
# marked values, which the member view reads back from the releases).
ANY_RUN = re.compile(r"mk[0-9a-f]{10}(%s)" % "|".join(name.replace("_", "") for name in MARKERS))


def leave_member2(lab, tmp_path):
    """Leave member2 again: the lab's other tests start from members that joined nothing."""
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(collections_root()), ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"),
               PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", str(lab.inventory),
                           "fleetops.registration.leave_cluster", "--limit", "member2"],
                          capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=900, check=False)
    assert proc.returncode == 0, "leaving member2 failed:\n%s" % (proc.stdout + proc.stderr)[-4000:]


def cached_inventory(lab, tmp_path):
    """What the fleet_members inventory plugin keeps in its jsonfile cache of the hub as it is now."""
    cache_dir = tmp_path / "inventory-cache"
    inventory = write_plugin_inventory(lab, tmp_path / "inventory", cache=True, cache_plugin="ansible.builtin.jsonfile",
                                       cache_connection=str(cache_dir))
    ok(ansible("ansible-inventory", "-i", inventory, "--list", cwd=tmp_path), "ansible-inventory with the cache on")
    return "\n".join(path.read_text() for path in cache_dir.iterdir())


def shown(text):
    return sorted(set(ANY_RUN.findall(text)))


def joined_member2(lab, tmp_path):
    """The job's stdout, events and syslog lines, after checking it took the paths that matter: every module process
    logged its invocation (those run in the controller logged none), the modules failed after starting, the role
    joined member2 with the inventory's values (secret ones included) and ran its request fact's task."""
    listener = SyslogListener(tmp_path / "log.sock")
    try:
        outcome, stdout, events = runner_job(lab, tmp_path / "job", listener)
    finally:
        listener.close()
    assert outcome == {"status": "successful", "rc": 0}, stdout[-6000:]

    logged = "\n".join(listener.messages)
    for module in ("fleet_agent", "kubefleet_member_agent"):
        assert "ansible-fleetops.registration.%s: Invoked with" % module in logged, "no syslog line from %s" % module
    # The join's modules run in the controller on the lab's local connection (plugin_utils/controller_run.py): no
    # module process, so no invocation logged anywhere; each agent module's task with an environment logged one.
    assert "ansible-fleetops.registration.member_info: Invoked with" not in logged
    assert all(logged.count("ansible-fleetops.registration.%s: Invoked with" % module) == 1
               for module in ("fleet_agent", "kubefleet_member_agent")), logged[-3000:]
    assert "fleet_agent runs in the controller's process" in stdout and "the task sets environment variables" in stdout
    assert stdout.count("...ignoring") == 4
    assert "and note what its state is judged against" in stdout  # step_args works out the request (no_log)
    assert "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER" in stdout and "********" in stdout
    helm = lab.run_helm("member2", "get", "values", "member-agent", "--namespace", "fleet-hub-credentials", "--output", "json")
    assert json.loads(helm.stdout)["fleetopsAudit"] == {
        "endpoint": ROLE_VARS["member_join_kubefleet_agent_values"]["fleetopsAudit"]["endpoint"],
        "password": M["role_values_password"], "note": M["role_secret_values"]}
    joined = client.CustomObjectsApi(lab.api_client("hub")).get_cluster_custom_object(
        "cluster.kubernetes-fleet.io", "v1beta1", "memberclusters", "member2")
    assert any(c["type"] == "Joined" and c["status"] == "True" for c in joined["status"].get("conditions") or [])
    return stdout, events, logged


def test_no_marked_secret_in_vvv_output_job_events_or_syslog(lab_controllers, tmp_path):
    lab = lab_controllers
    # Modules log to journald instead of syslog where python-systemd is importable (the lab's modules run with this Python).
    probe = subprocess.run([sys.executable, "-c", "import systemd.journal"], capture_output=True, check=False)
    assert probe.returncode != 0, "python-systemd is importable: modules would log to journald, which this test does not read"
    try:
        stdout, events, logged = joined_member2(lab, tmp_path)
        # the agent setting's HTTPS_PROXY (with its password) reaches Fleet's agent from a Secret on the member: the
        # Cluster, Fleet's agent bundle and every other Fleet or KubeFleet object on the hub name it only
        custom = client.CustomObjectsApi(lab.api_client("hub"))
        cluster = custom.get_namespaced_custom_object("fleet.cattle.io", "v1alpha1", "fleet-default", "clusters", "member2")
        ref = dict((item["name"], item.get("valueFrom")) for item in cluster["spec"].get("agentEnvVars") or [])["HTTPS_PROXY"]
        env_secret = client.CoreV1Api(lab.api_client("member2")).read_namespaced_secret(ref["secretKeyRef"]["name"], "cattle-fleet-system")
        assert M["role_agent_env"] in base64.b64decode(env_secret.data["HTTPS_PROXY"]).decode()
        hub_objects = json.dumps([custom.list_cluster_custom_object(group, "v1alpha1" if group == "fleet.cattle.io" else "v1beta1", plural)
                                  for group, plural in (("fleet.cattle.io", "clusters"), ("fleet.cattle.io", "bundles"),
                                                        ("fleet.cattle.io", "bundledeployments"),
                                                        ("cluster.kubernetes-fleet.io", "memberclusters"))])
        assert shown(hub_objects) == [], "marked secrets on the hub"
        inventory_cache = cached_inventory(lab, tmp_path)
        assert "member2" in inventory_cache and "HTTPS_PROXY" in inventory_cache
    finally:
        leave_member2(lab, tmp_path)
    # ansible-runner keeps the job's fact cache (jsonfile) in its artifacts, as AWX's fact storage reads it
    cache = {path.name: path.read_text() for path in (tmp_path / "job" / "artifacts" / "job" / "fact_cache").iterdir()}
    assert any("fleetops_audit_cached" in text for text in cache.values()), "the job's fact cache was not written: %s" % cache
    leaked = {"-vvv stdout": shown(stdout), "job events": shown("\n".join(events)), "syslog": shown(logged),
              "fact cache": shown("\n".join(cache.values())), "inventory cache": shown(inventory_cache)}
    assert leaked == {"-vvv stdout": [], "job events": [], "syslog": [], "fact cache": [], "inventory cache": []}, "marked secrets were kept"
    shutil.rmtree(tmp_path / "job" / "artifacts", ignore_errors=True)
