"""crawlkit.fetch.netpolicy: which addresses may be connected to (invariant 7)."""

from __future__ import annotations

import pytest

from crawlkit.errors import UsageError
from crawlkit.fetch.netpolicy import NetPolicy


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "127.9.9.9",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",
        "100.64.0.1",
        "0.0.0.0",
        "224.0.0.1",
        "240.0.0.1",
        "255.255.255.255",
        "::1",
        "::",
        "fe80::1",
        "fc00::1",
        "ff02::1",
        "::ffff:127.0.0.1",
        "::ffff:8.8.8.8",
        "64:ff9b::a00:1",
        "2002:7f00:1::1",
        "192.0.2.1",
        "198.18.0.1",
    ],
)
def test_non_public_addresses_are_refused(address: str) -> None:
    assert NetPolicy().refusal(address) is not None


@pytest.mark.parametrize("address", ["8.8.8.8", "93.184.216.34", "2606:4700:4700::1111"])
def test_public_addresses_are_allowed(address: str) -> None:
    assert NetPolicy().allowed(address)


def test_allow_net_opens_exactly_its_cidr() -> None:
    policy = NetPolicy(["127.0.0.0/9"])
    assert policy.allowed("127.1.0.1")
    assert not policy.allowed("127.255.0.1")
    assert not policy.allowed("10.0.0.1")
    with pytest.raises(UsageError):
        NetPolicy(["not-a-cidr"])
