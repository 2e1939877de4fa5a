"""A delaying TCP relay for the bench's ``latency`` stage: the lab's API servers as seen across a slow network.

The stage runs ansible-playbook in a network namespace of its own (``bench/scale_netns.py``), where nothing listens but
this relay: on each lab API server's address (``127.0.0.1:<port>`` there too, so kubeconfigs, TLS names and CA files
stay as they are) it accepts connections, and forwards them to the real API server in the bench's own namespace. Every
API request of the run therefore crosses the relay - a request to anything else fails (connection refused) - and the
relay holds each piece of data ``delay`` seconds in each direction, as a link with that one-way delay would.

Why a relay and not ``tc netem``: the lab's API servers listen on 127.0.0.1 only (a veth would need a forwarder or
NAT anyway), and the kernel of the bench machine has no ``sch_netem`` (CONFIG_NET_SCH_NETEM unset: ``tc qdisc add
... netem`` answers "Specified qdisc kind is unknown"). The relay's rules (``release_time``) model the link: data
from the client reaches the server one delay after it was sent, but no sooner than the TCP handshake a real link
would have needed first (SYN, SYN-ACK: one round trip) plus that delay; answers reach the client one delay after the
server sent them. Data in one direction keeps its order.

Run as ``python latency_proxy.py --netns NAME --delay-ms 25 127.0.0.1:6443 ...``; it prints ``ready`` once every
listener is open and runs until it is terminated.
"""

import argparse
import asyncio
import os
import socket
import sys
import time

CHUNK = 65536


def release_time(received, delay, opened):
    """When data the client sent at ``received`` reaches the server: one ``delay`` later, and no sooner than the
    handshake a real link would have needed first (a round trip from ``opened``, when the client connected) plus the
    delay. Times in seconds of one monotonic clock."""
    return max(received + delay, opened + 3 * delay)


def parse_endpoint(text):
    """``(host, port)`` of ``host:port`` (an IPv4 address or a name); ValueError naming the text when it is not one."""
    host, sep, port = text.rpartition(':')
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError('not a host:port endpoint: %r' % text)
    return host, int(port)


def endpoints_of(urls):
    """The sorted, distinct ``(host, port)`` of API server URLs (``https://host:port[/path]``; 443 when none)."""
    found = set()
    for url in urls:
        rest = url.split('://', 1)[-1].split('/', 1)[0]
        host, sep, port = rest.rpartition(':')
        found.add((host, int(port)) if sep and port.isdigit() else (rest, 443))
    return sorted(found)


async def _pump(reader, writer, delay, opened=None):
    """Copy ``reader`` to ``writer``, each chunk released ``delay`` after it was read (see release_time for the
    client's side, ``opened`` set); EOF passed on the same way."""
    queue = asyncio.Queue()

    async def read():
        while True:
            data = await reader.read(CHUNK)
            now = time.monotonic()
            await queue.put((release_time(now, delay, opened) if opened is not None else now + delay, data))
            if not data:
                return

    async def write():
        while True:
            due, data = await queue.get()
            wait = due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            if not data:
                if writer.can_write_eof():
                    writer.write_eof()
                return
            writer.write(data)
            await writer.drain()

    reading = asyncio.ensure_future(read())
    try:
        await write()
    finally:
        reading.cancel()


async def _relay(client_reader, client_writer, target, delay):
    opened = time.monotonic()
    try:
        server_reader, server_writer = await asyncio.open_connection(*target)
    except OSError:
        client_writer.close()
        return
    try:
        await asyncio.gather(_pump(client_reader, server_writer, delay, opened), _pump(server_reader, client_writer, delay))
    except (OSError, asyncio.IncompleteReadError):
        pass
    finally:
        for writer in (client_writer, server_writer):
            writer.close()


def listen_in(netns, endpoints):
    """Listening sockets on ``endpoints``, opened inside the named network namespace (``/run/netns/<netns>``); the
    process returns to its own namespace afterwards, so the relay's own connections go to the real servers."""
    own = os.open('/proc/self/ns/net', os.O_RDONLY)
    target = os.open('/run/netns/%s' % netns, os.O_RDONLY)
    sockets = []
    try:
        os.setns(target, os.CLONE_NEWNET)
        for host, port in endpoints:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, port))
            sock.listen(256)
            sock.setblocking(False)
            sockets.append(((host, port), sock))
    finally:
        os.setns(own, os.CLONE_NEWNET)
        os.close(own)
        os.close(target)
    return sockets


async def serve(sockets, delay):
    servers = []
    for target, sock in sockets:
        servers.append(await asyncio.start_server(lambda r, w, t=target: _relay(r, w, t, delay), sock=sock))
    print('ready', flush=True)
    await asyncio.gather(*(server.serve_forever() for server in servers))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--netns', required=True, help='the network namespace to listen in (ip netns add made it)')
    parser.add_argument('--delay-ms', type=float, required=True, help='one-way delay in milliseconds (25: a 50 ms round trip)')
    parser.add_argument('endpoints', nargs='+', help='host:port of each API server (the same address in the namespace)')
    args = parser.parse_args(argv)
    sockets = listen_in(args.netns, [parse_endpoint(text) for text in args.endpoints])
    try:
        asyncio.run(serve(sockets, args.delay_ms / 1000.0))
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == '__main__':
    sys.exit(main())
