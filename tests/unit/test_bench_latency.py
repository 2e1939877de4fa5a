"""Unit tests of the latency stage's relay rules (bench/latency_proxy.py): when delayed data is released, which
endpoints are relayed."""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), 'bench'))

import latency_proxy as lp  # noqa: E402  pylint: disable=wrong-import-position

DELAY = 0.025


def test_the_clients_first_data_waits_for_the_handshake_a_real_link_needs():
    # connected at 100.0: SYN and SYN-ACK take a round trip, the data one more delay
    assert lp.release_time(100.0, DELAY, opened=100.0) == pytest.approx(100.075)
    assert lp.release_time(100.01, DELAY, opened=100.0) == pytest.approx(100.075)


def test_later_data_is_released_one_delay_after_it_was_sent():
    assert lp.release_time(101.0, DELAY, opened=100.0) == pytest.approx(101.025)
    assert lp.release_time(100.06, DELAY, opened=100.0) == pytest.approx(100.085)


def test_release_times_keep_the_order_data_was_sent_in():
    sent = [100.0, 100.001, 100.05, 100.2, 100.2001]
    released = [lp.release_time(t, DELAY, opened=100.0) for t in sent]
    assert released == sorted(released)


def test_endpoints_of_api_server_urls_are_distinct_and_sorted():
    urls = ['https://127.0.0.1:6443', 'https://127.0.0.1:6443/', 'https://127.0.0.1:40271/api', 'https://hub.example']
    assert lp.endpoints_of(urls) == [('127.0.0.1', 6443), ('127.0.0.1', 40271), ('hub.example', 443)]


def test_an_endpoint_is_host_and_port():
    assert lp.parse_endpoint('127.0.0.1:6443') == ('127.0.0.1', 6443)
    for bad in ('127.0.0.1', ':6443', '127.0.0.1:0', '127.0.0.1:http', 'host:70000'):
        with pytest.raises(ValueError, match='host:port'):
            lp.parse_endpoint(bad)
