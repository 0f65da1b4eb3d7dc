"""Click commands ``ovssim collect``, ``ovssim testbed`` and ``ovssim import-data``.

The lead's ``ovssim`` group wires them in (``ovssim.collect.cli:collect``,
``ovssim.collect.cli:testbed``, ``ovssim.collect.cli:import_data``).  They only
parse arguments and call the library; errors are :class:`ovssim.errors.OvssimError`.
"""
from __future__ import annotations

import sys
from pathlib import Path

import click

from ..errors import ConfigError, OvssimError
from ..tomlfile import read_toml
from . import bounds
from ..signals import signals_interrupt


def _fail(exc: Exception):
    """One line, the form every ovssim command uses, and exit status 2."""
    if isinstance(exc, OSError) and not isinstance(exc, OvssimError):
        exc = f"{exc.filename + ': ' if exc.filename else ''}{exc.strerror or exc} -- fix: check the path and its permissions"
    click.echo("ovssim: error: " + " ".join(str(exc).split()), err=True)
    sys.exit(2)


def _interrupted():
    click.echo("ovssim: interrupted: finished runs are saved; complete them with --resume", err=True)
    sys.exit(130)


@click.command("collect")
@click.argument("campaign_file", type=click.Path())
@click.option("--out", type=click.Path(), default=None,
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
    from .campaign import MAX_ATTEMPTS, run_campaign
    over = {}
    if repetitions is not None:
        over["repetitions"] = repetitions
    if duration is not None:
        over["duration"] = duration
    try:
        with signals_interrupt():
            if kernel == "uml":
                from .uml.collect import run_campaign_uml
                summary = run_campaign_uml(campaign_file, out, resume=resume, overrides=over,
                                           log=lambda m: click.echo(m, err=True))
            else:
                summary = run_campaign(campaign_file, out, resume=resume, progress=not no_progress,
                                       overrides=over, log=lambda m: click.echo(m, err=True))
    except (OvssimError, OSError) as exc:
        _fail(exc)
    except KeyboardInterrupt:
        _interrupted()
    click.echo(f"runs: {summary['total']} in the campaign, {summary['previously_done']} done "
               f"before, now ok {summary['ok']}, failed {summary['failed']}, "
               f"skipped {summary['skipped']}"
               + (f", not retried after {MAX_ATTEMPTS} failures {summary['given_up']}"
                  if summary.get("given_up") else ""))
    left = summary["total"] - summary["previously_done"] - summary["ok"] - summary["skipped"]
    if left:
        click.echo(f"incomplete: {left} run(s) did not succeed; --resume retries failed runs "
                   f"(up to {MAX_ATTEMPTS} attempts each)", err=True)


def _load_testbed_file(path):
    from .testbed import TestbedSpec, check_prefix
    if path is None:
        return TestbedSpec(), "ovss"
    bounds.input_file(path, "testbed")
    try:
        doc = read_toml(path, "testbed", "give a testbed .toml file (see data/README.md)")
    except RecursionError:
        raise ConfigError("not a testbed file: values nested too deeply", file=str(path)) from None
    tb = doc.get("testbed", doc)
    if not isinstance(tb, dict):
        raise ConfigError("[testbed] must be a table", file=str(path), key="testbed")
    tb = dict(tb)
    prefix = check_prefix(tb.pop("prefix", "ovss"), file=str(path), key="testbed.prefix")
    return TestbedSpec.from_dict(tb, file=str(path)), prefix


@click.group("testbed")
def testbed():
    """Build, inspect or remove the built-in namespace testbed."""


@testbed.command("up")
@click.argument("testbed_file", required=False, type=click.Path())
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
        with signals_interrupt():
            for name in tbmod.reap_stale():
                click.echo(f"removed testbed {name} left by a killed process", err=True)
            tb = tbmod.Testbed(spec, prefix=prefix).up()
            try:
                tb.wait_ready()
                tb.detach()      # hand it over to `ovssim testbed down`: it outlives this process
            except BaseException:
                tb.down()
                raise
    except (OvssimError, OSError) as exc:
        _fail(exc)
    except KeyboardInterrupt:
        click.echo("ovssim: interrupted: nothing was left up", err=True)
        sys.exit(130)
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
@click.option("--all", "all_", is_flag=True, help="remove every testbed no live process owns")
@click.option("--force", is_flag=True, help="also remove testbeds a running collector still uses")
@click.option("--kernel", type=click.Choice(["host", "uml"]), default="host", show_default=True,
              help="host: this machine's kernel; uml: a user-mode-Linux 6.1 instance (every qdisc, "
                   "the OVS kernel datapath)")
def testbed_down(name, all_, force, kernel):
    """Remove testbed NAME (or the only one, or --all).

    A testbed a live ``ovssim collect`` still uses is left alone unless --force."""
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
        if name:
            _fail(OvssimError(f"no ovssim testbed named {name!r} is up -- fix: see 'ovssim testbed status'"))
        click.echo("no ovssim testbed is up")
        return
    if len(states) > 1 and not all_ and not name:
        _fail(OvssimError("several testbeds are up: " + ", ".join(s["name"] for s in states)
                          + " -- fix: name one or pass --all"))
    busy = [] if force else [s for s in states if tbmod.owner_alive(s)]
    with signals_interrupt():
        for st in states:
            if st in busy:
                click.echo(f"testbed {st['name']} kept: collector pid {st['owner_pid']} still uses it "
                           "(stop it, or pass --force)", err=True)
                continue
            tbmod.teardown_saved(st)
            click.echo(f"testbed {st['name']} removed")
    if busy:
        sys.exit(1)


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
@click.argument("files", nargs=-1, required=True, type=click.Path())
@click.option("--out", required=True, type=click.Path(),
              help="campaign directory to write (tidy format)")
@click.option("--name", default="imported", help="campaign name recorded in the rows")
@click.option("--unit", default="s", help="unit of the values in a plain CSV of samples")
@click.option("--column", default=None, help="column of a plain CSV holding the samples")
def import_data(files, out, name, unit, column):
    """Import Flent .flent.gz files, iperf3 -J .json output or plain CSVs of samples into the tidy format."""
    from .importers import import_files
    try:
        n = import_files(files, out, campaign=name, unit=unit, column=column)
    except (OvssimError, OSError) as exc:
        _fail(exc)
    click.echo(f"imported {n} run(s) into {out}")
