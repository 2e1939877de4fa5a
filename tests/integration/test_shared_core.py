"""The shared core against the lab: Helm's records read without helm, whoami with good and bad credentials,
a clear message for an API whose CRDs are missing, a client for an endpoint as an agent sees it, API calls and Helm
through the proxy the environment names (with its credentials), a user whose credential comes from an exec plugin,
and impersonation, each for the API calls and for Helm alike."""

import base64
import json
import os
import select
import socket
import socketserver
import subprocess
import sys
import threading
from urllib.parse import urlparse

import pytest
import yaml
from kubernetes import client

from ansible_collections.fleetops.registration.plugins.module_utils.errors import ApiError, ApiNotServed, ConnectionFailure
from ansible_collections.fleetops.registration.plugins.module_utils.helm import Helm, ReleasePlan, read_release
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_auth import ConnectionSettings, endpoint_configuration
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_client import KubeClient
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.resources import CLUSTER
from kube_helpers import ignore_404, unique
from modrun import run_module

pytestmark = pytest.mark.lab

MEMBER = "member2"


def kube(lab, context):
    settings = ConnectionSettings({"kubeconfig": str(lab.kubeconfig), "context": context}, label=context)
    return KubeClient(settings.client_configuration(), label=context)


@pytest.fixture
def tiny_chart(tmp_path):
    chart = tmp_path / "tiny"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: tiny\nversion: 0.1.0\nappVersion: \"1.0\"\n")
    (chart / "templates" / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: tiny\ndata:\n  greeting: {{ .Values.greeting | quote }}\n")
    return chart


@pytest.fixture
def scratch_ns(lab):
    name = unique("fo-core")
    yield name
    lab.run_helm(MEMBER, "uninstall", "tiny", "--namespace", name, "--ignore-not-found", check=False)
    ignore_404(lambda: client.CoreV1Api(lab.api_client(MEMBER)).delete_namespace(name))


def test_read_release_matches_helm_and_feeds_the_plan(lab, tiny_chart, scratch_ns):
    member = kube(lab, MEMBER)
    assert read_release(member, "tiny", scratch_ns) is None
    assert ReleasePlan.decide(None, "tiny", "0.1.0", {}).action == "install"

    lab.run_helm(MEMBER, "upgrade", "--install", "tiny", tiny_chart, "--namespace", scratch_ns, "--create-namespace",
                 "--set", "greeting=hello")
    release = read_release(member, "tiny", scratch_ns)
    assert release["name"] == "tiny" and release["namespace"] == scratch_ns
    assert (release["revision"], release["status"], release["chart"], release["chart_version"], release["app_version"]) == (
        1, "deployed", "tiny", "0.1.0", "1.0")
    assert release["values"] == {"greeting": "hello"}
    assert release["updated"]
    assert ReleasePlan.decide(release, "tiny", "0.1.0", {"greeting": "hello"}).action == "none"
    assert ReleasePlan.decide(release, "tiny", "0.1.0", {"greeting": "bye"}).reasons == ["values differ"]

    lab.run_helm(MEMBER, "upgrade", "tiny", tiny_chart, "--namespace", scratch_ns, "--set", "greeting=bye")
    again = read_release(member, "tiny", scratch_ns)
    assert (again["revision"], again["status"], again["values"]) == (2, "deployed", {"greeting": "bye"})

    lab.run_helm(MEMBER, "uninstall", "tiny", "--namespace", scratch_ns)
    assert read_release(member, "tiny", scratch_ns) is None


def test_whoami_good_and_bad_credentials(lab):
    hub = kube(lab, "hub")
    user = hub.whoami()
    assert user  # the lab's admin identity
    stranger = KubeClient(endpoint_configuration(lab.api_urls["hub"], lab.ca_pem("hub"), token="not-a-valid-token"), label="hub")
    with pytest.raises(ApiError) as err:
        stranger.whoami()
    assert err.value.status == 401
    # the wrong CA: the endpoint's certificate does not verify
    wrong_ca = KubeClient(endpoint_configuration(lab.api_urls["hub"], lab.ca_pem(MEMBER), token="x"), label="hub")
    with pytest.raises(ConnectionFailure) as err:
        wrong_ca.whoami()
    assert "certificate" in err.value.msg.lower()


def test_missing_crds_name_the_api_and_hub_prepare(lab):
    member = kube(lab, "member1")
    with pytest.raises(ApiNotServed) as err:
        member.list(CLUSTER, "clusters")
    message = err.value.message()
    assert "fleet.cattle.io/v1alpha1" in message and "clusters" in message and "hub_prepare" in message
    with pytest.raises(ApiNotServed):
        member.get(CLUSTER, "x", "clusters")
    # a missing object in a served API stays "not there"
    assert kube(lab, "hub").get(CLUSTER, "no-such-cluster", "default") is None


class ConnectProxy(socketserver.ThreadingTCPServer):
    """An HTTPS proxy on the loopback (CONNECT only) that counts what it forwards; the name ``kubernetes`` (in the
    lab API servers' certificates, and neither ``localhost`` nor a loopback address) goes to 127.0.0.1."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, credentials=None):
        self.tunnels = []
        self.credentials = credentials  # "user:password" the proxy requires (basic), or None
        self.refused = 0
        super().__init__(("127.0.0.1", 0), ConnectHandler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.server_address[1]


class ConnectHandler(socketserver.StreamRequestHandler):
    def handle(self):
        request = self.rfile.readline().decode("latin-1").split()
        headers = {}
        line = self.rfile.readline()
        while line not in (b"\r\n", b"\n", b""):
            name, _sep, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
            line = self.rfile.readline()
        if len(request) < 2 or request[0] != "CONNECT":
            self.wfile.write(b"HTTP/1.1 405 Method Not Allowed\r\n\r\n")
            return
        expected = "Basic " + base64.b64encode(self.server.credentials.encode()).decode() if self.server.credentials else None
        if expected and headers.get("proxy-authorization") != expected:
            self.server.refused += 1
            self.wfile.write(b"HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic\r\nContent-Length: 0\r\n\r\n")
            return
        host, port = request[1].rsplit(":", 1)
        self.server.tunnels.append(request[1])
        upstream = socket.create_connection(("127.0.0.1" if host == "kubernetes" else host, int(port)), timeout=10)
        self.wfile.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        self.wfile.flush()
        sockets = [self.connection, upstream]
        try:
            while True:
                readable, _w, _x = select.select(sockets, [], [], 30)
                if not readable:
                    return
                for sock in readable:
                    data = sock.recv(65536)
                    if not data:
                        return
                    (upstream if sock is self.connection else self.connection).sendall(data)
        finally:
            upstream.close()


def test_api_calls_go_through_the_proxy_the_environment_names(lab, tmp_path):
    kubeconfig, port = through_proxy_kubeconfig(lab, tmp_path)
    proxy = ConnectProxy()
    try:
        env = {"HTTPS_PROXY": proxy.url, "NO_PROXY": "", "no_proxy": ""}
        result = run_module("fleet_status_info", {"kubeconfig": str(kubeconfig), "context": "hub"}, env=env)
        assert not result.failed, result.get("msg")
        assert proxy.tunnels and set(proxy.tunnels) == {"kubernetes:%d" % port}
        through = len(proxy.tunnels)
        bypassed = run_module("fleet_status_info", {"kubeconfig": str(kubeconfig), "context": "hub", "no_proxy": "kubernetes"}, env=env)
        assert bypassed.failed and "kubernetes" in bypassed["msg"]  # a direct connection: the name does not resolve
        assert len(proxy.tunnels) == through
    finally:
        proxy.shutdown()
        proxy.server_close()


def test_an_exec_plugin_user_reaches_the_api(lab, tmp_path):
    """A kubeconfig user whose credential comes from an exec plugin (as EKS, GKE and AKS kubeconfigs have): a script
    that prints an ExecCredential with the lab admin's client certificate and counts how often it runs."""
    config = yaml.safe_load(lab.kubeconfig.read_text())
    context = next(c["context"] for c in config["contexts"] if c["name"] == "hub")
    admin = next(u["user"] for u in config["users"] if u["name"] == context["user"])
    credential = {"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "status": {
        "clientCertificateData": base64.b64decode(admin["client-certificate-data"]).decode(),
        "clientKeyData": base64.b64decode(admin["client-key-data"]).decode()}}
    calls = tmp_path / "calls"
    script = tmp_path / "credential-plugin"
    script.write_text("#!%s\nimport json\nopen(%r, 'a').write('run\\n')\nprint(json.dumps(%s))\n"
                      % (sys.executable, str(calls), json.dumps(credential)))
    os.chmod(script, 0o700)
    for user in config["users"]:
        if user["name"] == context["user"]:
            user["user"] = {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": str(script),
                                     "interactiveMode": "Never"}}
    kubeconfig = tmp_path / "exec-user.yaml"
    kubeconfig.write_text(yaml.safe_dump(config))
    result = run_module("fleet_status_info", {"kubeconfig": str(kubeconfig), "context": "hub"})
    assert not result.failed, result.get("msg")
    assert calls.read_text().count("run") >= 1
    assert "BEGIN" not in result["raw_output"], "the exec plugin's credential reached the module's output"
    helm = helm_for(lab, ConnectionSettings({"kubeconfig": str(kubeconfig), "context": "hub"}, label="hub"), tmp_path)
    before = calls.read_text().count("run")
    rc, _out, err = helm.run(["list", "-A"], check=False)
    assert rc == 0, err
    assert calls.read_text().count("run") > before, "Helm did not use the exec plugin"


def helm_for(lab, settings, tmp_path, env=None):
    """The collection's Helm runner for ``settings``, as FleetModule.helm() builds it."""
    configuration = settings.client_configuration(tmpdir=lambda: str(tmp_path))
    kubeconfig, context = settings.helm_kubeconfig(configuration, str(tmp_path))

    def run_command(argv, environ_update=None):
        proc = subprocess.run(argv, env=dict(lab.helm_env(), **dict(environ_update or {}, **(env or {}))),
                              capture_output=True, text=True, timeout=120, check=False)
        return proc.returncode, proc.stdout, proc.stderr
    return Helm(run_command, lab.helm, kubeconfig, context, connection_args=settings.helm_arguments())


def through_proxy_kubeconfig(lab, tmp_path):
    """The lab kubeconfig with the hub's server named ``kubernetes``, a name only the test proxy resolves."""
    config = yaml.safe_load(lab.kubeconfig.read_text())
    port = urlparse(lab.api_urls["hub"]).port
    for cluster in config["clusters"]:
        if urlparse(cluster["cluster"]["server"]).port == port:
            cluster["cluster"]["server"] = "https://kubernetes:%d" % port
    kubeconfig = tmp_path / "through-proxy.yaml"
    kubeconfig.write_text(yaml.safe_dump(config))
    return kubeconfig, port


def test_proxy_credentials_reach_the_proxy_for_the_api_and_for_helm(lab, tmp_path):
    kubeconfig, port = through_proxy_kubeconfig(lab, tmp_path)
    proxy = ConnectProxy(credentials="fleet ops:s3cr@t")
    try:
        with_userinfo = proxy.url.replace("http://", "http://fleet%20ops:s3cr%40t@")
        env = {"HTTPS_PROXY": with_userinfo, "NO_PROXY": "", "no_proxy": ""}
        result = run_module("fleet_status_info", {"kubeconfig": str(kubeconfig), "context": "hub"}, env=env)
        assert not result.failed, result.get("msg")
        assert proxy.tunnels and set(proxy.tunnels) == {"kubernetes:%d" % port} and proxy.refused == 0
        assert "s3cr@t" not in result["raw_output"]
        given = run_module("fleet_status_info", {"kubeconfig": str(kubeconfig), "context": "hub", "proxy": proxy.url,
                                                 "proxy_headers": {"proxy_basic_auth": "fleet ops:s3cr@t"}})
        assert not given.failed, given.get("msg")
        wrong = run_module("fleet_status_info", {"kubeconfig": str(kubeconfig), "context": "hub", "proxy": proxy.url,
                                                 "proxy_headers": {"proxy_basic_auth": "fleet ops:wrong"}})
        assert wrong.failed and proxy.refused >= 1 and "wrong" not in wrong["raw_output"]
        tunnels = len(proxy.tunnels)
        settings = ConnectionSettings({"kubeconfig": str(kubeconfig), "context": "hub", "proxy": proxy.url,
                                       "proxy_headers": {"proxy_basic_auth": "fleet ops:s3cr@t"}}, label="hub")
        rc, _out, err = helm_for(lab, settings, tmp_path, env={"NO_PROXY": "", "no_proxy": ""}).run(["list", "-A"], check=False)
        assert rc == 0, err
        assert len(proxy.tunnels) > tunnels, "Helm did not go through the proxy"
    finally:
        proxy.shutdown()
        proxy.server_close()


def test_impersonation_applies_to_the_api_calls_and_to_helm(lab, tmp_path):
    base = {"kubeconfig": str(lab.kubeconfig), "context": "hub"}
    nobody = run_module("fleet_status_info", dict(base, impersonate_user="fleetops-nobody"))
    assert nobody.failed and "fleetops-nobody" in nobody["msg"], nobody.get("msg")
    # Two groups: were they joined into one header line, the API server would see one group named "x, system:masters".
    admin = dict(base, impersonate_user="fleetops-admin", impersonate_groups=["fleetops-ops", "system:masters"])
    assert not run_module("fleet_status_info", admin).failed
    from_env = run_module("fleet_status_info", base, env={"K8S_AUTH_IMPERSONATE_USER": "fleetops-env-user"})
    assert from_env.failed and "fleetops-env-user" in from_env["msg"]
    rc, _out, err = helm_for(lab, ConnectionSettings(dict(base, impersonate_user="fleetops-nobody"), label="hub"),
                             tmp_path).run(["list", "-A"], check=False)
    assert rc != 0 and "fleetops-nobody" in err
    rc, _out, err = helm_for(lab, ConnectionSettings(admin, label="hub"), tmp_path).run(["list", "-A"], check=False)
    assert rc == 0, err
