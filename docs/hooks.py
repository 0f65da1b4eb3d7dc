"""MkDocs hooks: pages generated from the code and the validation report, so no page goes stale.

``<!-- example: NAME.py -->`` becomes that example script; ``<!-- scenario-reference -->`` becomes the table of every scenario key from
``ovssim.scenario_keys`` (the validator's own table) and every workload tool's
options; ``<!-- validation-report -->`` becomes ``validation/report.md`` with its
figures copied into the site.
"""
from __future__ import annotations

import importlib
from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parent.parent
FIGURES = ROOT / "validation" / "figures"


def _table(rows) -> str:
    lines = ["| key | meaning |", "|---|---|"]
    lines += ["| `{}` | {} |".format(k, v.replace("|", "\\|")) for k, v in rows]
    return "\n".join(lines)


def scenario_reference() -> str:
    from ovssim.scenario_keys import SECTION_HELP, SECTION_KEYS, WORKLOAD_KEYS
    from ovssim.workloads.registry import WORKLOADS
    out = []
    for sec, help_text in SECTION_HELP.items():
        out.append(f"### `[{sec}]`" if sec in ("scenario", "params") else f"### `[[{sec}]]`")
        out.append(help_text)
        if sec in SECTION_KEYS:
            out.append(_table(SECTION_KEYS[sec].items()))
    out.append("### Workload tools")
    seen = set()
    for (tool, sel), target in WORKLOADS.items():
        mod, cls = target.split(":")
        klass = getattr(importlib.import_module(f"ovssim.workloads.{mod}"), cls)
        if klass in seen:
            continue
        seen.add(klass)
        title = f"`tool = \"{tool}\"`" + (f", `{'test' if tool == 'netperf' else 'proto'} = \"{sel}\"`" if sel else "")
        out.append(f"#### {title} — `{klass.__name__}`")
        options = getattr(klass, "OPTIONS", None)
        if options:
            rows = [(" / ".join(o.flags), o.help) for o in options]
        else:
            missing = sorted(set(klass.KEYS) - set(WORKLOAD_KEYS))
            if missing:
                raise ValueError(f"{klass.__name__} takes keys with no description in "
                                 f"ovssim/scenario_keys.py WORKLOAD_KEYS: {missing}")
            rows = [(k, WORKLOAD_KEYS[k]) for k in sorted(klass.KEYS)]
        out.append(_table(rows))
    return "\n\n".join(out)


def validation_report() -> str:
    text = (ROOT / "validation" / "report.md").read_text()
    return text.replace("](figures/", "](validation-figures/")


def include_examples(markdown: str) -> str:
    """``<!-- example: NAME.py -->`` becomes that script of ``examples/`` as a code block (CI runs them all)."""
    out = []
    for line in markdown.splitlines():
        tag = line.strip()
        if tag.startswith("<!-- example:") and tag.endswith("-->"):
            name = tag[len("<!-- example:"):-3].strip()
            code = (ROOT / "examples" / name).read_text()
            out += [f"`examples/{name}`:", "", "```python", code.rstrip(), "```"]
        else:
            out.append(line)
    return "\n".join(out)


def on_page_markdown(markdown, page, config, files):
    markdown = include_examples(markdown)
    if "<!-- scenario-reference -->" in markdown:
        markdown = markdown.replace("<!-- scenario-reference -->", scenario_reference())
    if "<!-- validation-report -->" in markdown:
        markdown = markdown.replace("<!-- validation-report -->", validation_report())
    return markdown


def on_files(files, config):
    for png in sorted(FIGURES.glob("*.png")):
        files.append(File.generated(config, f"validation-figures/{png.name}", abs_src_path=str(png)))
    return files
