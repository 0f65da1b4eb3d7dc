"""A checkout (and its .venv) under a directory the UML instance masks stays visible inside it."""
import sys

import ovssim
from ovssim.collect.uml import instance


def test_a_checkout_in_tmp_is_kept_and_one_elsewhere_is_not(monkeypatch):
    monkeypatch.setattr(ovssim, "__file__", "/tmp/ci/ovssim/ovssim/__init__.py")
    monkeypatch.setattr(sys, "prefix", "/tmp/ci/ovssim/.venv")
    assert sorted(instance._software_under_private_dirs()) == ["/tmp/ci/ovssim", "/tmp/ci/ovssim/.venv"]
    monkeypatch.setattr(ovssim, "__file__", "/srv/ovssim/ovssim/__init__.py")
    monkeypatch.setattr(sys, "prefix", "/srv/ovssim/.venv")
    assert instance._software_under_private_dirs() == []


def test_kept_folders_are_bound_broadest_first(monkeypatch):
    """An output folder inside the checkout is bound after the checkout, so the checkout's bind cannot hide it."""
    monkeypatch.setattr(instance, "find_kernel", lambda: None)
    monkeypatch.setattr(instance, "_software_under_private_dirs", lambda: ["/tmp/ci/ovssim"])
    inst = instance.UmlInstance(keep=["/tmp/ci/ovssim/data/out"])
    assert inst.keep == ["/tmp/ci/ovssim", "/tmp/ci/ovssim/data/out"]
