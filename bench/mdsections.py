"""Results files written by the benchmarks and edited by hand: a run replaces
only the section of the markdown it measured and keeps everything else.

A benchmark's markdown holds one section per host (and thread count, or
per set of models within a host), with paragraphs that sessions write by
hand under the generated tables, and earlier runs kept as sections of their
own. Regenerating the whole file from the JSON lost both. :func:`splice`
puts a run's freshly generated section in place of the section with the
same heading and keeps the section it replaces, hand-written text
included, right after it as an earlier run; every other line of the file is
left as it was."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path

_STAMP = re.compile(r"\b(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2})")


def _level(line: str) -> int:
    """The level of a markdown heading line (``## x``: 2), 0 for other lines."""
    m = re.match(r"(#{1,6}) ", line)
    return len(m.group(1)) if m else 0


def _bounds(lines: list[str], heading: str, start: int = 0, stop: int | None = None
            ) -> tuple[int, int] | None:
    """``[begin, end)`` of the section whose heading line is exactly
    ``heading`` within ``lines[start:stop]``: up to the next heading of the
    same or a higher level, or a marker comment (``<!--``) of another
    writer's part."""
    stop = len(lines) if stop is None else stop
    level = _level(heading)
    for i in range(start, stop):
        if lines[i].rstrip() == heading.rstrip():
            j = i + 1
            while j < stop and not 0 < _level(lines[j]) <= level and \
                    not lines[j].startswith("<!--"):
                j += 1
            return i, j
    return None


def _earlier(section: list[str]) -> list[str]:
    """``section`` with its heading renamed to an earlier run of the date its
    figures were taken (the first ISO time stamp in it)."""
    m = next((m for line in section if (m := _STAMP.search(line))), None)
    when = f"{m.group(1)} {m.group(2)}" if m else "before"
    return [f"{section[0].rstrip()}, earlier run {when}"] + section[1:]


def splice(text: str, new: str, within: str | None = None, before: str | None = None) -> str:
    """``text`` with the section ``new`` (whose first line is its heading) in
    place of the section with the same heading, the replaced one kept right
    after it as an earlier run (``<heading>, earlier run <date>``). With
    ``within``: the section is looked for inside the section of that heading
    (which is created at the end when missing). A section that is new is
    added at the end of ``within``, or of the file, or before the first line
    that starts with ``before``."""
    lines = text.split("\n")
    new_lines = new.rstrip("\n").split("\n") + [""]
    start, stop = 0, len(lines)
    if within is not None:
        outer = _bounds(lines, within)
        if outer is None:
            return splice(text, within + "\n\n" + new, before=before)
        start, stop = outer[0] + 1, outer[1]
    found = _bounds(lines, new_lines[0], start, stop)
    if found is None:
        at = stop
        if within is None and before is not None:
            at = next((i for i, line in enumerate(lines) if line.startswith(before)), stop)
        while at > start and not lines[at - 1].strip():
            at -= 1
        out = lines[:at] + [""] + new_lines + lines[at:]
    else:
        i, j = found
        old = lines[i:j]
        out = lines[:i] + new_lines + _earlier(old) + lines[j:]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(out)).rstrip("\n") + "\n"


def update(path: Path, sections: Iterable[str], whole: Callable[[], str],
           within: str | None = None, before: str | None = None) -> None:
    """Writes the results file ``path``: in an existing one, each of
    ``sections`` spliced in (see :func:`splice`); a new one is ``whole()``."""
    if not path.exists():
        path.write_text(whole())
        return
    text = path.read_text()
    for section in sections:
        text = splice(text, section, within=within, before=before)
    path.write_text(text)
