"""The ``latency`` stage's network: a namespace of the bench's own where every lab API server is one delayed hop away.

``DelayedNetwork(urls, one_way_ms=25)`` (a context manager) adds a network namespace ``fleetops-bench-<pid>`` with
only its loopback up, starts ``bench/latency_proxy.py`` listening there on each API server's address, and gives the
argv prefix (``ip netns exec <name>``) that runs a command inside it. On the way out it stops the relay (its own
process, by pid) and deletes the namespace. Nothing outside that namespace changes: no qdisc, route or address of the
machine's own interfaces, so other labs and runs on the machine are not delayed.
"""

import os
import select
import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path

import latency_proxy

RELAY = Path(__file__).resolve().with_name('latency_proxy.py')
READY_SECONDS = 15


class DelayedNetwork:
    """A network namespace where ``urls``' API servers answer ``one_way_ms`` later each way (see latency_proxy)."""

    def __init__(self, urls, one_way_ms=25):
        self.endpoints = latency_proxy.endpoints_of(urls)
        self.one_way_ms = one_way_ms
        self.name = 'fleetops-bench-%d' % os.getpid()
        self.relay = None

    def __enter__(self):
        subprocess.run(['ip', 'netns', 'add', self.name], check=True)
        try:
            subprocess.run(['ip', '-n', self.name, 'link', 'set', 'lo', 'up'], check=True)
            self.relay = subprocess.Popen(  # pylint: disable=consider-using-with
                [sys.executable, str(RELAY), '--netns', self.name, '--delay-ms', str(self.one_way_ms)]
                + ['%s:%d' % endpoint for endpoint in self.endpoints], stdout=subprocess.PIPE, text=True)
            ready = select.select([self.relay.stdout], [], [], READY_SECONDS)[0]
            if not ready or self.relay.stdout.readline().strip() != 'ready':
                raise RuntimeError('the latency relay did not start within %d s' % READY_SECONDS)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc):
        if self.relay is not None:
            self.relay.terminate()
            try:
                self.relay.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.relay.kill()
                self.relay.wait()
            self.relay = None
        subprocess.run(['ip', 'netns', 'del', self.name], check=False)
        return False

    def wrapper(self):
        """The argv prefix that runs a command inside the namespace."""
        return ['ip', 'netns', 'exec', self.name]

    def probe(self):
        """Seconds of a TLS handshake to the first API server from inside the namespace (TCP, TLS: two round trips
        over the delayed hop, so about 4 x one_way_ms), to show the delay is there."""
        host, port = self.endpoints[0]
        code = ('import socket, ssl, time; c = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT); c.check_hostname = False; '
                'c.verify_mode = ssl.CERT_NONE; t = time.monotonic(); '
                's = c.wrap_socket(socket.create_connection((%r, %d), timeout=10)); print(time.monotonic() - t); s.close()'
                % (host, port))
        out = subprocess.run(self.wrapper() + [sys.executable, '-c', code], check=True, capture_output=True, text=True)
        return float(out.stdout.strip())


def loopback_probe(host, port):
    """The same handshake on the loopback, for comparison."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    started = time.monotonic()
    with context.wrap_socket(socket.create_connection((host, port), timeout=10)):
        return time.monotonic() - started
