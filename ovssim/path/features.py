"""Per-device offload features, by their ``ethtool -K`` names, with Linux's defaults.

``tso`` (tx-tcp-segmentation), ``gso`` (generic-segmentation-offload), ``gro``
(generic-receive-offload), ``sg`` (scatter-gather), ``tx-checksumming``.
Dependencies follow ``netdev_fix_features`` (net/core/dev.c): TSO needs SG and
transmit checksumming, so ``ethtool -K dev tx off`` also turns TSO off (as
measured on this machine's kernel 6.18: ``tx off`` on a veth leaves sg and gso
on and turns tx-tcp-segmentation off).  GSO stays on without them: TCP always
builds GSO skbs (``sk_setup_caps`` adds NETIF_F_GSO for TCP) and the device's
transmit path segments them in software (``validate_xmit_skb`` ->
``skb_gso_segment``) when the device cannot.

Defaults per device kind (the drivers' ``hw_features``/``features``):

* veth (a container's interface, chain links): tso, gso, sg, tx on; gro off
  (veth GRO needs NAPI/XDP; ``ethtool -k`` on this machine: ``generic-receive-offload: off``);
* virtio-net / tap (kvm-tap) and Xen netfront/netback (xen-vif): tso, gso, sg,
  tx, gro on (guest offloads negotiated with vhost / netback's ``feature-gso-tcpv4``);
* an emulated NIC behind qemu-dm (xen-hvm-tap, e1000/rtl8139): no TSO, gro on;
* a physical NIC: all on;
* bare metal (the host's own stack on its NIC): all on.
"""
from __future__ import annotations

FEATURES = ("tso", "gso", "gro", "sg", "tx-checksumming")

_ALL_ON = {"tso": True, "gso": True, "gro": True, "sg": True, "tx-checksumming": True}
DEFAULTS = {
    "veth": {**_ALL_ON, "gro": False},
    "container-veth": {**_ALL_ON, "gro": False},
    "kvm-tap": dict(_ALL_ON),
    "xen-vif": dict(_ALL_ON),
    "xen-hvm-tap": {**_ALL_ON, "tso": False},
    "bare-metal": dict(_ALL_ON),
    "nic": dict(_ALL_ON),
}

#: ``gso_max_size`` / ``gso_max_segs`` of every device kind here (GSO_LEGACY_MAX_SIZE, GSO_MAX_SEGS;
#: ``ip -d link`` on a veth: gso_max_size 65536 gso_max_segs 65535)
GSO_MAX_SIZE = 65536
GSO_MAX_SEGS = 65535
#: ``gro_max_size``: GRO merges up to 64 KB (``ip -d link``: gro_max_size 65536)
GRO_MAX_SIZE = 65536


def resolve(kind: str, overrides: dict | None = None) -> dict[str, bool]:
    """The device's effective features: its kind's defaults, ``overrides``, then the dependencies."""
    if kind not in DEFAULTS:
        raise ValueError(f"unknown device kind {kind!r}; use one of {', '.join(DEFAULTS)}")
    f = dict(DEFAULTS[kind])
    for k, v in (overrides or {}).items():
        if k not in FEATURES:
            raise ValueError(f"unknown offload feature {k!r}; use one of {', '.join(FEATURES)}")
        f[k] = bool(v)
    if not f["tx-checksumming"]:
        f["tso"] = False          # "Dropping TSO features since no CSUM feature."
    if not f["sg"]:
        f["tso"] = False          # "Dropping TSO features since no SG feature."
    return f
