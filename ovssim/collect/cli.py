"""Click commands ``ovssim collect``, ``ovssim testbed`` and ``ovssim import-data``.

The lead's ``ovssim`` group wires them in (``ovssim.collect.cli:collect``,
``ovssim.collect.cli:testbed``, ``ovssim.collect.cli:import_data``).  They only
parse arguments and call the library; errors are :class:`ovssim.errors.OvssimError`.
"""
from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path

import click

from ..errors import ConfigError, OvssimError


def _fail(exc: OvssimError):
    click.echo(f"error: {exc}", err=True)
    sys.exit(2)


@click.command("collect")
@click.argument("campaign_file", type=click.Path(dir_okay=False))
@click.option("--out", type=click.Path(file_okay=False), default=None,
              help="output directory (default data/local/<campaign name>)")
@click.option("--resume", is_flag=True, help="complete an interrupted campaign in --out")
@click.option("--repetitions", type=int, default=None, help="override [campaign] repetitions")
@click.option("--duration", default=None, help='override [campaign] duration, e.g. "3s"')
@click.option("--no-progress", is_flag=True, help="no progress display")
@click.option("--kernel", type=click.Choice(["host", "uml"]), default="host", show_default=True,
              help="host: this machine's kernel; uml: a user-mode-Linux 6.1 instance (every qdisc, "
                   "the OVS kernel datapath)")
def collect(campaign_file, out, resume, repetitions, duration, no_progress, kernel):
    """Run a measurement CAMPAIGN_FILE (TOML) through a real OVS / Linux bridge testbed."""
    from .campaign import run_campaign
    over = {}
    if repetitions is not None:
        over["repetitions"] = repetitions
    if duration is not None:
        over["duration"] = duration
    try:
        if kernel == "uml":
            from .uml.collect import run_campaign_uml
            summary = run_campaign_uml(campaign_file, out, resume=resume, overrides=over,
                                       log=lambda m: click.echo(m, err=True))
        else:
            summary = run_campaign(campaign_file, out, resume=resume, progress=not no_progress,
                                   overrides=over, log=lambda m: click.echo(m, err=True))
    except OvssimError as exc:
        _fail(exc)
    except KeyboardInterrupt:
        click.echo("interrupted: finished runs are saved; complete them with --resume", err=True)
        sys.exit(130)
    click.echo(f"runs: {summary['total']} in the campaign, {summary['previously_done']} done "
               f"before, now ok {summary['ok']}, failed {summary['failed']}, "
               f"skipped {summary['skipped']}")


def _load_testbed_file(path):
    from .testbed import TestbedSpec
    if path is None:
        return TestbedSpec(), "ovss"
    try:
        doc = tomllib.loads(Path(path).read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read testbed file: {exc}", file=str(path)) from None
    tb = dict(doc.get("testbed", doc))
    prefix = tb.pop("prefix", "ovss")
    return TestbedSpec.from_dict(tb, file=str(path)), prefix


@click.group("testbed")
def testbed():
    """Build, inspect or remove the built-in namespace testbed."""


@testbed.command("up")
@click.argument("testbed_file", required=False, type=click.Path(dir_okay=False))
@click.option("--kernel", type=click.Choice(["host", "uml"]), default="host", show_default=True,
              help="host: this machine's kernel; uml: a user-mode-Linux 6.1 instance (every qdisc, "
                   "the OVS kernel datapath)")
def testbed_up(testbed_file, kernel):
    """Build the testbed described by TESTBED_FILE (default: 2 VMs, one OVS bridge)."""
    from . import testbed as tbmod
    if kernel == "uml":
        from .uml import testbed as umltb
        try:
            inst, text = umltb.up(testbed_file)
        except OvssimError as exc:
            _fail(exc)
        click.echo(f"UML instance {inst.name} ({inst.kernel.describe()}) is up; inside it:")
        click.echo(text.rstrip())
        click.echo(f"  run commands in it: ovssim testbed exec {inst.name} -- CMD ...")
        return
    try:
        spec, prefix = _load_testbed_file(testbed_file)
        tb = tbmod.Testbed(spec, prefix=prefix).up()
        tb.wait_ready()
    except OvssimError as exc:
        _fail(exc)
    # hand the testbed over to `ovssim testbed down`: it outlives this process
    state_file = tbmod.STATE_DIR / f"{tb.name}.json"
    st = json.loads(state_file.read_text())
    st["detached"] = True
    state_file.write_text(json.dumps(st, indent=1))
    tbmod._ACTIVE.pop(tb.name, None)
    if tb.ovs is not None:
        tb.ovs._procs.clear()   # leave the daemons running
    click.echo(f"testbed {tb.name} is up ({spec.bridge}, chain {spec.chain}, "
               f"datapath {spec.resolved_datapath()})")
    for i, (ns, ip) in enumerate(zip(tb.vm_ns, tb.vm_ip), start=1):
        click.echo(f"  vm{i}: ip netns exec {ns} ...   address {ip}")
    click.echo(f"  bridges in: ip netns exec {tb.sw} ...")
    if tb.ovs is not None:
        click.echo(f"  ovs-vsctl --db=unix:{tb.ovs.db_sock} show")
    for n in tb.notes:
        click.echo(f"  note: {n}")


@testbed.command("down")
@click.argument("name", required=False)
@click.option("--all", "all_", is_flag=True, help="remove every testbed ovssim built")
@click.option("--kernel", type=click.Choice(["host", "uml"]), default="host", show_default=True,
              help="host: this machine's kernel; uml: a user-mode-Linux 6.1 instance (every qdisc, "
                   "the OVS kernel datapath)")
def testbed_down(name, all_, kernel):
    """Remove testbed NAME (or the only one, or --all)."""
    from . import testbed as tbmod
    if kernel == "uml":
        from .uml import testbed as umltb
        try:
            names = umltb.down(name, all_)
        except OvssimError as exc:
            _fail(exc)
        click.echo("\n".join(f"UML testbed {n} removed" for n in names) or "no UML testbed is up")
        return
    states = tbmod.saved_testbeds()
    if name:
        states = [s for s in states if s["name"] == name]
    if not states:
        click.echo("no ovssim testbed is up")
        return
    if len(states) > 1 and not all_ and not name:
        click.echo("several testbeds are up: " + ", ".join(s["name"] for s in states)
                   + "; name one or pass --all", err=True)
        sys.exit(2)
    for st in states:
        tbmod.teardown_saved(st)
        click.echo(f"testbed {st['name']} removed")


@testbed.command("status")
@click.argument("testbed_file", required=False, type=click.Path(dir_okay=False))
@click.option("--kernel", type=click.Choice(["host", "uml"]), default="host", show_default=True,
              help="host: this machine's kernel; uml: a user-mode-Linux 6.1 instance (every qdisc, "
                   "the OVS kernel datapath)")
def testbed_status(testbed_file, kernel):
    """Show the testbeds that are up and what this machine supports."""
    import os
    if kernel == "uml":
        from .uml import testbed as umltb
        from .uml.kernel import find_kernel, unavailable_reason
        why = unavailable_reason()
        click.echo("UML kernel: " + (f"unavailable: {why}" if why else find_kernel().describe()))
        for line in umltb.status() or ["no UML instance is up"]:
            click.echo(line)
        return
    from .ovs import kernel_datapath_available
    from .qos import KNOWN_KINDS, probe_qdiscs
    from . import testbed as tbmod
    for st in tbmod.saved_testbeds():
        alive = [ns for ns in st["namespaces"] if Path(f"/run/netns/{ns}").exists()]
        owner = ("detached (ovssim testbed up)" if st.get("detached")
                 else f"owned by collector pid {st.get('owner_pid')}")
        click.echo(f"{st['name']}: {st['spec']['bridge']} chain {st['spec']['chain']} "
                   f"({len(alive)}/{len(st['namespaces'])} namespaces present, {owner})")
    click.echo("OVS kernel datapath: " + ("available" if kernel_datapath_available()
                                          else "absent (userspace netdev datapath will be used)"))
    if os.geteuid() == 0:
        for kind, (ok, why) in probe_qdiscs(KNOWN_KINDS).items():
            click.echo(f"qdisc {kind:10s} {'available' if ok else 'UNAVAILABLE: ' + why}")
    else:
        click.echo("qdisc availability: run as root to probe")


@testbed.command("exec", context_settings={"ignore_unknown_options": True})
@click.argument("name")
@click.argument("argv", nargs=-1, required=True, type=click.UNPROCESSED)
@click.option("--timeout", type=float, default=300.0, help="seconds to wait for the command")
def testbed_exec(name, argv, timeout):
    """Run a command inside UML testbed NAME (from `ovssim testbed up --kernel uml`)."""
    from .uml import testbed as umltb
    try:
        res = umltb.exec_(name, list(argv), timeout=timeout)
    except OvssimError as exc:
        _fail(exc)
    click.echo(res.stdout, nl=False)
    click.echo(res.stderr, nl=False, err=True)
    sys.exit(res.returncode)


@click.command("import-data")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False, exists=True))
@click.option("--out", required=True, type=click.Path(file_okay=False),
              help="campaign directory to write (tidy format)")
@click.option("--name", default="imported", help="campaign name recorded in the rows")
@click.option("--unit", default="s", help="unit of the values in a plain CSV of samples")
@click.option("--column", default=None, help="column of a plain CSV holding the samples")
def import_data(files, out, name, unit, column):
    """Import Flent .flent.gz files or plain CSVs of samples into the tidy format."""
    from .importers import import_files
    try:
        n = import_files(files, out, campaign=name, unit=unit, column=column)
    except OvssimError as exc:
        _fail(exc)
    click.echo(f"imported {n} run(s) into {out}")
