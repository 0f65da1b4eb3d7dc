"""The one order in which model parameters are combined, for every entry point.

Lowest first; a later source replaces the values of an earlier one, key by key:

1. ``default``    the embedded default profile (``ovssim/data/default_profile.toml``);
2. ``profile``    the profile the scenario names (``[scenario] profile``), its ``base`` chain first;
3. ``[params]``   the scenario file's ``[params]`` table;
4. ``--profile``  a profile chosen by the caller rather than by the file: ``ovssim run --profile``, the
                  profile ``ovssim validate`` fits or reads, ``run_scenario(profile=...)``.  It *replaces*
                  the scenario's profile (2 is not loaded), and every value it or its bases set explicitly
                  (not inherited from the embedded default) beats the scenario's ``[params]``;
5. ``--set``      values given for this run alone: ``ovssim run --set params.KEY=VALUE``, ``whatif --set``,
                  a sweep point's ``params.*`` changes, a calibration's trial values.

Then, when the scenario gives ``speed_index`` (the simulated host's, as ``ovssim.collect.state`` measures
it), every CPU cost of the result (``ovssim.profile.CPU_COSTS``) is scaled by the profile's ``[state]
speed_index`` over it: all values are taken to be stated for the machine state the profile was fitted on.

Why ``[params]`` sits between the two kinds of profile: a scenario's ``[params]`` are written against the
profile the same file names (modelling choices such as "a single log-normal here, so its scale can be
fitted"), so they refine it; a profile named on the command line is the user's later, more specific word
(typically a profile fitted to exactly this testbed) and a fitted value must not be silently undone by a
modelling default of the file -- the surprise of issue 17, where ``ovssim run xenserver_two_host.toml
--profile xenserver_two_host`` gave a same-host RTT of 0.141 ms instead of the fitted 0.387 ms.  Whatever
is given for one run (5) beats everything.  ``whatif`` and ``sweep`` take no ``--profile``: their sources
are 1, 2, 3 and 5, in the same order.

:func:`resolve` applies the order; :meth:`Resolved.notes` says which keys each source overrode, and whose
values they replaced (``ovssim run`` prints them on stderr, one line per source).
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, field

from .errors import ConfigError
from .profile import DEFAULT_LABEL, Profile

ORDER = ("default", "profile", "[params]", "--profile", "--set")


@dataclass
class Resolved:
    """The profile a run uses, and who overrode whom on the way."""
    profile: Profile
    overrides: list[tuple[str, str, str]] = field(default_factory=list)    # (winner, key, loser)

    def notes(self) -> list[str]:
        """One line per source that replaced another source's values: which keys, and whose."""
        by_winner: dict[str, dict[str, list[str]]] = {}
        for winner, key, loser in self.overrides:
            by_winner.setdefault(winner, {}).setdefault(loser, []).append(key)
        return [f"{winner} overrides " + "; ".join(f"{loser}: {', '.join(sorted(keys))}"
                                                    for loser, keys in losers.items())
                for winner, losers in by_winner.items()]


def _apply(prof: Profile, values: dict, source: str, out: list) -> Profile:
    """``values`` over ``prof``, recording (source, key, origin it replaced) for every key."""
    if not values:
        return prof
    new = prof.with_overrides(values, source=source)
    out.extend((source, k, prof.origin.get(k, DEFAULT_LABEL)) for k in values)
    return new


def resolve(scenario, *, profile: "Profile | str | None" = None, sets: dict | None = None) -> Resolved:
    """The parameters of a run of ``scenario`` (a :class:`~ovssim.scenario.Scenario`), in :data:`ORDER`.

    ``profile``: the caller's profile (layer 4; a name, path or :class:`Profile`), replacing the one the
    scenario names; ``sets``: dotted parameter names -> values for this run alone (layer 5)."""
    params = dict(scenario.data.get("params") or {})
    where = f"[params] of {scenario.file}"
    overrides: list = []
    if profile is None:                                   # layers 1-2, then 3
        prof = _apply(Profile.load(scenario.profile, relative_to=scenario.base_dir), params, where, overrides)
    else:                                                 # layers 1, 3, then 4
        chosen = profile if isinstance(profile, Profile) else Profile.load(profile, relative_to=scenario.base_dir)
        imposed = chosen.explicit()
        for k in set(params) & imposed:                   # still checked: a typo is an error either way
            Profile._validate(k, params[k], where)
        under = {k: v for k, v in params.items() if k not in imposed}
        prof = chosen.with_overrides(under, source=where)
        named = f"--profile {chosen.name} ({chosen.source})"
        overrides += [(named, k, where) for k in sorted(set(params) & imposed)]
        overrides += [(where, k, DEFAULT_LABEL) for k in under]
        if scenario.profile not in ("default", chosen.name):
            overrides.append((named, "all", f"the scenario's profile {scenario.profile!r}"))
    prof = _apply(prof, dict(sets or {}), "--set", overrides)
    if scenario.speed_index is not None:                  # last: every value is stated for the profile's state
        factor = prof.state.get("speed_index", 0) / scenario.speed_index
        prof = prof.scaled(scenario.speed_index)
        overrides.append(("scenario.speed_index", "CPU costs", f"{prof.name}'s state (x{factor:.3g})"))
    return Resolved(prof, overrides)


def parse_set(text: str) -> tuple[str, object]:
    """``KEY=VALUE`` with VALUE read as a TOML value when it is one (``10``, ``true``, ``{kind="sfq"}``)."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"--set {text!r} is not KEY=VALUE", key="--set", fix='write e.g. --set "scenario.duration=2s"')
    try:
        parsed = tomllib.loads(f"v = {value}")["v"]
    except tomllib.TOMLDecodeError:
        parsed = value
    return key.strip(), parsed


def split_sets(texts) -> tuple[dict, dict]:
    """``--set`` options -> (parameter values for layer 5, ``params.`` stripped; other scenario changes)."""
    params, changes = {}, {}
    for text in texts:
        key, value = parse_set(text)
        if key.startswith("params."):
            params[key[len("params."):]] = value
        else:
            changes[key] = value
    return params, changes
