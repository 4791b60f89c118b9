"""Memory quantities as Kubernetes writes them, in bytes (oom.maxMemory, the memory bump)."""

from __future__ import annotations

import re

import pytest

from sundial.api import common, validate


@pytest.mark.parametrize(
    ("quantity", "expected"),
    [
        ("512Mi", 512 * 2**20),
        ("4Gi", 4 * 2**30),
        ("1.1Gi", 1181116007),  # rounded up, exactly: 1.1 * 2**30 = 1181116006.4
        ("1.5G", 1_500_000_000),
        ("1e9", 1_000_000_000),
        (".5Ki", 512),
        ("1024", 1024),
        ("2Ei", 2 * 2**60),
    ],
)
def test_memory_quantities_read_as_bytes(quantity: str, expected: int) -> None:
    assert validate.memory_bytes(quantity) == expected
    assert re.match(common.MEMORY_QUANTITY_PATTERN, quantity)  # the CRD admits it too


@pytest.mark.parametrize("quantity", ["-1Mi", "100m", "1 Gi", "4GB", "lots", ""])
def test_anything_else_is_not_a_memory_quantity(quantity: str) -> None:
    assert validate.memory_bytes(quantity) is None
    assert not re.match(common.MEMORY_QUANTITY_PATTERN, quantity)
