"""``ovssim fit``: fit delay samples, calibrate against testbed runs, export distributions.

Thin: every command parses its options and calls the library in
:mod:`ovssim.fit`; errors are :class:`~ovssim.errors.OvssimError` s, which the
top-level CLI prints as one line.
"""
from __future__ import annotations

import json
import re
import sys
import tomllib
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from ..cli import COUNT, REPS, SEED, WORKERS
from ..errors import ConfigError, DataError

console = Console() if sys.stdout.isatty() else Console(width=150)


def _kv(items, what: str) -> dict:
    out = {}
    for item in items or ():
        for part in re.split(r",(?=[^,=]+=)", item):
            if "=" not in part:
                raise ConfigError(f"cannot read {what} {part!r}", fix=f"write {what} as KEY=VALUE")
            k, v = part.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def _command_line() -> str:
    """The invoking command, rebuilt from click's parsed parameters (for provenance).

    Rebuilt rather than read from ``sys.argv`` so it is right however the CLI
    was entered (console script, ``python -m ovssim``, tests calling ``main``).
    """
    import shlex
    ctx = click.get_current_context()
    parts = ctx.command_path.split()
    parts[0] = "ovssim"
    args, opts = [], []
    for prm in ctx.command.params:
        val = ctx.params.get(prm.name)
        if isinstance(prm, click.Argument):
            args.append(str(val))
            continue
        if val is None or val == prm.default or val == () or val is False:
            continue
        flag = prm.opts[-1] if prm.opts[-1].startswith("--") else prm.opts[0]
        if prm.is_flag:
            opts.append(flag)
        elif prm.multiple:
            for v in val:
                opts += [flag, str(v)]
        else:
            opts += [flag, str(val)]
    return " ".join(shlex.quote(x) for x in parts + args + opts)


TIME_UNITS = ["s", "ms", "us", "ns"]


def _check_param(name: str) -> None:
    """``name`` must be a parameter profiles know (ovssim.profile.SCHEMA): a profile is read back later."""
    import difflib

    from ..profile import SCHEMA
    if name not in SCHEMA:
        close = difflib.get_close_matches(name, list(SCHEMA), n=1)
        raise ConfigError(f"--param {name!r} is not a profile parameter", key="--param",
                          fix=f"did you mean {close[0]!r}?" if close else
                          "see ovssim/data/default_profile.toml for the parameter names")


def _csv(text: str | None) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()] if text else []


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


@click.group("fit")
def fit():
    """Fit delay distributions to samples and calibrate model parameters to testbed runs."""


# -- samples ------------------------------------------------------------------------
@fit.command("samples")
@click.argument("data", type=click.Path())
@click.option("--column", "-c", help="column holding the delays (default: value / delay* / the only one)")
@click.option("--unit", "-u", type=click.Choice(TIME_UNITS),
              help="unit of the delays (default: a 'unit' column, the column's suffix like delay_us, else s)")
@click.option("--by", help="comma-separated columns: fit each group separately")
@click.option("--where", "where", multiple=True, help="KEY=VALUE row filter (repeatable), e.g. series=rtt")
@click.option("--families", help="comma-separated candidates (default all: empirical,expon,gamma,"
              "weibull_min,lognorm,lognorm_mixture)")
@click.option("--criterion", type=click.Choice(["bic", "aic", "ks"]), default="bic", show_default=True)
@click.option("--loc", "loc_mode", type=click.Choice(["fit", "zero"]), default="fit", show_default=True,
              help="fit a location (minimum delay) or fix it at 0")
@click.option("--k-max", type=click.IntRange(1, 16), default=4, show_default=True, help="largest mixture size tried")
@click.option("--smooth", is_flag=True, help="kernel-smooth draws from the empirical candidate")
@click.option("--choose", help="write this family instead of the chosen one (e.g. empirical)")
@click.option("--param", help="profile parameter the fitted distribution sets, e.g. ovs.lookup "
              "(needed to write a profile)")
@click.option("--out", "-o", type=click.Path(), help="profile to write (default calibration/NAME.toml)")
@click.option("--force", is_flag=True, help="replace the profile if it exists")
@click.option("--name", help="profile name (default: the data file's stem)")
@click.option("--plots", type=click.Path(), help="directory for the ECDF and Q-Q figures")
@click.option("--ecdf", "ecdf_dir", type=click.Path(),
              help="directory for seed 001's eq. 1 table (value, count, rel_freq, ecdf) as CSV")
@click.option("--seed", type=SEED, default=0, show_default=True, help="seed of the subsample used for large data")
def samples_cmd(data, column, unit, by, where, families, criterion, loc_mode, k_max, smooth, choose, param,
                out, force, name, plots, ecdf_dir, seed):
    """Fit candidate distributions to raw delay samples in DATA and choose one by AIC/BIC."""
    from ..atomic import check_output, write_atomic
    from .families import fit_samples
    from .profile_writer import build_profile, write_profile
    from .samples import read_samples
    by_cols = _csv(by)
    stem = Path(data).stem.replace(".csv", "")
    if out and not param:
        raise ConfigError("--out needs --param (the profile parameter this distribution sets)",
                          fix="add e.g. --param ovs.lookup")
    if param:
        _check_param(param)
        if out and not by_cols:                 # before any fitting: the output must be writable
            check_output(out, overwrite=force, what="profile", make_parents=True)
    groups = read_samples(data, column=column, unit=unit, by=by_cols, where=_kv(where, "--where"))
    for key, x in groups.items():
        label = ", ".join(f"{c}={v}" for c, v in zip(by_cols, key)) or stem
        res = fit_samples(x, families=_csv(families) or None, criterion=criterion, loc=loc_mode,
                          k_max=k_max, smooth=smooth, seed=seed)
        t = Table(title=f"{label}: n={res.n}, median {res.summary['median'] * 1e6:.4g} us, "
                        f"p99 {res.summary['p99'] * 1e6:.4g} us")
        for col in ("family", "params", "loglik", "AIC", "BIC", "KS dist", "AD", ""):
            t.add_column(col, justify="right" if col not in ("family", "") else "left")
        for f in res.fits:
            t.add_row(f.family + (f" (k={f.extra['k']})" if "k" in f.extra else ""), _fmt(f.n_params),
                      _fmt(f.loglik), _fmt(f.aic), _fmt(f.bic), _fmt(f.ks), _fmt(f.ad),
                      "chosen" if f is res.chosen else "")
        console.print(t)
        picked = res.get(choose) if choose else res.chosen
        shown = {k: v for k, v in picked.spec.items() if k not in ("values", "quantiles", "probs")}
        console.print(f"{picked.family}: {json.dumps(shown)}")
        suffix = "" if not key else "-" + "-".join(str(k) for k in key)
        if ecdf_dir:
            from .ecdf import frequency_table
            d = Path(ecdf_dir)
            d.mkdir(parents=True, exist_ok=True)
            write_atomic(d / f"{stem}{suffix}_ecdf.csv", frequency_table(x).to_csv(index=False), what="ECDF table")
        if plots:
            from .plots import plot_ecdf, plot_qq
            d = Path(plots)
            p1 = plot_ecdf(x, res, d / f"{stem}{suffix}_ecdf.png", title=label)
            p2 = plot_qq(x, res, d / f"{stem}{suffix}_qq.png", family=picked.family)
            console.print(f"plots: {p1}  {p2}")
        if param:
            pname = (name or stem) + suffix
            figures = {"n": res.n, "family": picked.family, "criterion": criterion,
                       **{k: v for k, v in picked.figures().items() if v is not None},
                       "families": {f.family: {k: v for k, v in f.figures().items() if v is not None}
                                    for f in res.fits}}
            if by_cols:
                figures["group"] = label
            if where:
                figures["where"] = list(where)
            doc = build_profile(name=pname, params={param: picked.spec}, command=_command_line(),
                                data_files=[data],
                                method=f"maximum likelihood (scipy.stats), {picked.family} chosen by "
                                       f"{criterion.upper()} among {', '.join(f.family for f in res.fits)}",
                                description=f"delay distribution of {param} fitted to {label}", fit=figures)
            path = write_profile(out if (out and not by_cols) else Path("calibration") / f"{pname}.toml", doc,
                                 overwrite=force)
            console.print(f"wrote {path}")


# -- regression ----------------------------------------------------------------------
@fit.command("regress")
@click.argument("data", type=click.Path())
@click.option("--delay", "-c", "delay_col", required=True, help="delay column (e.g. delay_us)")
@click.option("--unit", "-u", type=click.Choice(TIME_UNITS), help="unit of the delay column (default: its suffix, else s)")
@click.option("--drivers", required=True, help="comma-separated driver columns, e.g. packet_size,rate,ram")
@click.option("--log-drivers", help="drivers that enter as log(x), e.g. rate")
@click.option("--where", "where", multiple=True, help="KEY=VALUE row filter (repeatable)")
@click.option("--predict", help="driver values to predict at, e.g. packet_size=1500b,rate=200mbit")
@click.option("--kind", type=click.Choice(["quantile", "lognorm"]), default="quantile", show_default=True)
@click.option("--param", help="write the prediction to a profile under this parameter name")
@click.option("--out", "-o", type=click.Path(), help="profile path (default calibration/NAME.toml)")
@click.option("--force", is_flag=True, help="replace the profile if it exists")
@click.option("--name", help="profile name")
def regress_cmd(data, delay_col, unit, drivers, log_drivers, where, predict, kind, param, out, force, name):
    """Regress log(delay) on its drivers (OLS and quantile regression) and predict a distribution."""
    from ..atomic import check_output
    from .profile_writer import build_profile, write_profile
    from .regression import fit_regression
    from .samples import apply_where, read_table
    if param:
        _check_param(param)
        check_output(out or Path("calibration") / f"{name or Path(data).stem}.toml", overwrite=force,
                     what="profile", make_parents=True)
    df = apply_where(read_table(data), _kv(where, "--where"), file=str(data))
    if unit is None and "unit" in df.columns and df["unit"].nunique() == 1:
        unit = str(df["unit"].iloc[0])          # the collector's samples carry their unit
    model = fit_regression(df, delay=delay_col, drivers=_csv(drivers), unit=unit,
                           log_drivers=_csv(log_drivers))
    coef = model.coefficients()
    t = Table(title=f"log(delay) ~ {model.formula_rhs}  (n={model.n}; effects are multiplicative: "
                    "exp(coef) per unit)")
    for c in ("model", "term", "coef", "ci95_low", "ci95_high", "p_value"):
        t.add_column(c, justify="left" if c in ("model", "term") else "right")
    for _, r in coef.iterrows():
        if r["model"] in ("ols", "q0.5"):
            t.add_row(r["model"], r["term"], *(_fmt(float(r[c])) for c in ("coef", "ci95_low", "ci95_high", "p_value")))
    console.print(t)
    if predict:
        spec = model.predict(_kv([predict], "--predict"), kind=kind)
        console.print(f"predicted delay at {predict}: {json.dumps(spec)}")
        if param:
            pname = name or Path(data).stem
            doc = build_profile(name=pname, params={param: spec}, data_files=[data], command=_command_line(),
                                method=f"{'quantile regression' if kind == 'quantile' else 'OLS'} of "
                                       f"log(delay) on {model.formula_rhs} (statsmodels), predicted at {predict}",
                                fit={"n": model.n, "ols_r2": float(model.ols.rsquared),
                                     "ols_resid_sd_log": float(model.ols.scale ** 0.5)})
            console.print(f"wrote {write_profile(out or Path('calibration') / f'{pname}.toml', doc, overwrite=force)}")


# -- runs ---------------------------------------------------------------------------------
@fit.command("runs")
@click.argument("data", type=click.Path())
@click.option("--scenario", "-s", "scenario_path", required=True, type=click.Path(),
              help="scenario TOML reproducing the measured setup")
@click.option("--params", "-p", "param_specs", multiple=True, required=True,
              help="NAME[:FIELD]=LO..HI to calibrate (repeatable), e.g. vif.kvm-tap.backend_delay:scale=5us..100us")
@click.option("--target", "-t", "target_specs", multiple=True, required=True,
              help="MEASURED=WORKLOAD:METRIC (repeatable), e.g. rtt=ping:rtt_mean; from a campaign's "
              "raw samples: samples:SERIES:STAT=WORKLOAD:METRIC, e.g. samples:rtt:p99=ping:rtt_p99")
@click.option("--where", "where", multiple=True, help="KEY=VALUE row filter selecting one configuration")
@click.option("--reps", type=REPS, default=4, show_default=True, help="replications per evaluation")
@click.option("--seed", type=SEED, default=12345, show_default=True, help="the common random-number seed")
@click.option("--workers", type=WORKERS, default=None,
              help="processes running each evaluation's replications (default: one per local core, at most "
                   "--reps; the fit does not depend on it)")
@click.option("--max-evals", type=COUNT, default=150, show_default=True, help="simulations the optimiser may run")
@click.option("--method", type=click.Choice(["Nelder-Mead", "least_squares"]), default="Nelder-Mead",
              show_default=True, help="optimiser (scipy.optimize); least_squares needs fewer simulations "
              "when the metrics are smooth in the parameters, Nelder-Mead is robust when they are not")
@click.option("--bootstrap", type=click.IntRange(0, 10000), default=0, show_default=True,
              help="bootstrap re-fits over measured runs (needs per-run data); 0 = Jacobian uncertainty")
@click.option("--rel-sigma", type=click.FloatRange(0, 10, min_open=True), default=0.01, show_default=True,
              help="relative uncertainty assumed for means printed without CI or resolution")
@click.option("--out", "-o", type=click.Path(), help="profile path (default calibration/NAME.toml)")
@click.option("--force", is_flag=True, help="replace the profile if it exists")
@click.option("--name", help="profile name (default: the scenario's name)")
def runs_cmd(data, scenario_path, param_specs, target_specs, where, reps, seed, workers, max_evals, method,
             bootstrap, rel_sigma, out, force, name):
    """Calibrate model parameters so simulated metrics match measured runs (simulation-based)."""
    from .calibrate import (Param, SimulationModel, calibrate, overrides_for, parse_mapping,
                            targets_from_samples, targets_from_table)
    from .profile_writer import build_profile, data_entry, write_profile
    from .samples import apply_where, campaign_table, read_campaign_samples, read_table
    p = Path(data)
    sel = _kv(where, "--where")
    mapping = [parse_mapping(t) for t in target_specs]
    from_samples = [m for m in mapping if m[0].startswith("samples:")]
    from_table = [m for m in mapping if not m[0].startswith("samples:")]
    targets = []
    if from_table:
        if p.is_dir():
            table = campaign_table(p)
            if table is None:
                raise DataError(f"{p}: no results.csv.gz yet -- fix: let the campaign finish "
                                "(the collector rebuilds it at the end of a session)")
            df = read_table(table)
        else:
            df = read_table(p)
        df = apply_where(df, sel, file=str(data))
        targets += targets_from_table(df, from_table, rel_sigma=rel_sigma, file=str(data))
    if from_samples:
        if not p.is_dir():
            raise ConfigError("samples:... targets need a collector campaign directory as DATA",
                              fix="point DATA at e.g. data/local/local-bridges")
        targets += targets_from_samples(apply_where(read_campaign_samples(p), sel, file=str(data)),
                                        from_samples, rel_sigma=rel_sigma, file=str(data))
    params = [Param.parse(s) for s in param_specs]
    for prm in params:
        _check_param(prm.name)
    if out:
        from ..atomic import check_output
        check_output(out, overwrite=force, what="profile", make_parents=True)         # before the calibration's simulations
    from ..runner import ReplicationPool, local_cores
    workers = min(workers or local_cores(), reps)
    pool = ReplicationPool(workers) if workers > 1 else None
    try:
        model = SimulationModel(scenario_path, params, reps=reps, seed=seed, pool=pool)
        from ..precedence import resolve           # the trial values are --set, above these (one order)
        for line in resolve(model.scenario).notes():
            click.echo(f"ovssim: {line}", err=True)
        with console.status(f"calibrating {len(params)} parameter(s) against {len(targets)} target(s)"):
            res = calibrate(model, params, targets, method=method, max_evals=max_evals, bootstrap=bootstrap)
    except BaseException:
        if pool is not None:
            pool.close(kill=True)           # interrupted or failed: no worker left behind
        raise
    if pool is not None:
        pool.close()
    t = Table(title=f"calibration ({res.evaluations} simulations, objective {res.objective:.3g})")
    for c in ("parameter", "value", "std", "95% CI"):
        t.add_column(c)
    for prm in params:
        v, s, ci = res.values[prm.label], res.std[prm.label], res.ci95[prm.label]
        t.add_row(prm.label, str(prm.fmt(v)), str(prm.fmt(s)) if s != float("inf") else "not identifiable",
                  f"{prm.fmt(ci[0])} .. {prm.fmt(ci[1])}" if ci[1] != float("inf") else "-")
    console.print(t)
    console.print(res.fit_table().to_string(index=False))
    if not res.success:
        console.print(f"[yellow]optimiser: {res.message}[/yellow]")
    for lab in res.at_bound:
        console.print(f"[yellow]{lab} ended on a bound of its range: the data want a value outside it, "
                      "or another part of the model dominates -- widen the range or add parameters; "
                      "its uncertainty is not meaningful[/yellow]")
    overrides = overrides_for(params, res.values, model.base_specs)
    uncertainty = {}
    for prm in params:
        s, ci = res.std[prm.label], res.ci95[prm.label]
        if s != float("inf"):
            uncertainty[prm.label] = {"std": prm.fmt(s), "ci95": [prm.fmt(ci[0]), prm.fmt(ci[1])]}
    fitfig = {"objective": res.objective, "evaluations": res.evaluations, "success": res.success,
              "at_bound": res.at_bound,
              "targets": {f"{k[0]}:{k[1]}": {"simulated": s, "measured": y, "sigma": sg}
                          for k, (s, y, sg) in res.fitted.items()},
              "target_sigma": {f"{tg.workload}:{tg.metric}": tg.source for tg in targets},
              "uncertainty_method": res.uncertainty_method}
    scen_entry = data_entry(scenario_path)
    doc = build_profile(name=name or model.scenario.name, params=overrides, command=_command_line(),
                        data_files=[p],
                        extra_data=[dict(scen_entry, role="scenario")],
                        method=f"simulation-based calibration: scipy.optimize {res.method} on a log/linear unit cube, "
                               f"{reps} replications per evaluation with common random numbers (seed {seed})",
                        description=f"calibrated against {data} ({', '.join(target_specs)})",
                        fit=fitfig, uncertainty=uncertainty)
    pname = doc["profile"]["name"]
    console.print(f"wrote {write_profile(out or Path('calibration') / f'{pname}.toml', doc, overwrite=force)}")


# -- export -----------------------------------------------------------------------------
@fit.command("export")
@click.argument("source", type=click.Path())
@click.option("--param", help="parameter of the profile to export (default: its only distribution)")
@click.option("--format", "-f", "fmt", type=click.Choice(["ns3-table", "ns3-cpp", "omnetpp", "omnetpp-table",
                                                           "json"]), default="json", show_default=True)
@click.option("--unit", type=click.Choice(TIME_UNITS), default="us", show_default=True, help="unit of exported values")
@click.option("--out", "-o", type=click.Path(), help="file to write (default: stdout)")
def export_cmd(source, param, fmt, unit, out):
    """Export a distribution from a profile (or a JSON/TOML spec) for ns-3, OMNeT++ or JSON."""
    from .export import export
    path = Path(source)
    if not path.exists():
        raise ConfigError("no such file", file=str(path), fix="give a profile TOML or a spec JSON file")
    text = path.read_text()
    try:
        doc = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot parse: {exc}", file=str(path)) from None
    params = doc.get("params", doc if "dist" not in doc else {"delay": doc})
    if "spec" in doc and isinstance(doc["spec"], dict):
        params = {doc.get("name", "delay"): doc["spec"]}
    dists = {k: v for k, v in params.items() if isinstance(v, dict) and "dist" in v}
    if param:
        if param not in params:
            raise ConfigError(f"no parameter {param!r}", file=str(path),
                              fix=f"choose one of {', '.join(params)}")
        spec = params[param]
    elif len(dists) == 1:
        param, spec = next(iter(dists.items()))
    else:
        raise ConfigError(f"{len(dists)} distributions in the file", file=str(path),
                          fix=f"choose one with --param ({', '.join(dists) or 'none found'})")
    text = export(spec, fmt, name=param, unit=unit)
    if out:
        from ..atomic import write_atomic
        write_atomic(out, text if text.endswith("\n") else text + "\n")
        console.print(f"wrote {out}")
    else:
        click.echo(text)


__all__ = ["fit"]
