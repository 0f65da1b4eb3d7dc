"""The shared JSON-lines journal (ovssim/journal.py) under a kill at any byte: a property test."""
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ovssim import journal
from ovssim.errors import DataError

records = st.lists(st.fixed_dictionaries({"run_id": st.text(min_size=1, max_size=8),
                                          "value": st.floats(allow_nan=False, allow_infinity=False),
                                          "note": st.text(max_size=20)}), min_size=1, max_size=12)


@settings(max_examples=150, deadline=None)
@given(recs=records, cut=st.floats(min_value=0, max_value=1), new=st.text(max_size=10))
def test_a_kill_at_any_byte_loses_only_the_record_being_written(tmp_path_factory, recs, cut, new):
    path = tmp_path_factory.mktemp("j") / "runs.jsonl"
    for r in recs:
        journal.append(path, r)
    data = path.read_bytes()
    k = int(cut * len(data))
    path.write_bytes(data[:k])                       # killed after k bytes reached the disk
    whole = [r for r, end in zip(recs, _line_ends(data)) if end <= k]
    assert list(journal.iter_records(path)) == whole        # reading never fails on a torn tail
    journal.cut_torn_tail(path)
    assert path.read_bytes() == data[:sum(len(ln) for ln in data.splitlines(keepends=True)[:len(whole)])]
    journal.append(path, {"run_id": "next", "note": new})  # what --resume does next
    assert list(journal.iter_records(path)) == whole + [{"run_id": "next", "note": new}]


def _line_ends(data: bytes):
    end = 0
    for ln in data.splitlines(keepends=True):
        end += len(ln)
        yield end


def test_garbage_after_the_last_newline_and_a_padded_last_line_are_cut(tmp_path):
    path = tmp_path / "runs.jsonl"
    journal.append(path, {"run_id": "a"})
    good = path.read_bytes()
    path.write_bytes(good + b"\x00\x00\x00\n")        # a crash padded the torn line with zeros
    assert journal.cut_torn_tail(path) == 4 and path.read_bytes() == good
    assert journal.cut_torn_tail(path) == 0            # idempotent


def test_a_damaged_middle_line_is_reported_never_dropped_with_what_follows(tmp_path):
    path = tmp_path / "runs.jsonl"
    path.write_bytes(b'{"run_id": "a"}\n{"run_id": "b"\n{"run_id": "c"}\n')
    assert journal.cut_torn_tail(path) == 0            # nothing after the damage is cut
    with pytest.raises(DataError, match="line 2"):
        list(journal.iter_records(path))
    path.write_bytes(b'{"run_id": "a"}\n[1, 2]\n{"run_id": "c"}\n')
    with pytest.raises(DataError, match="line 2"):
        list(journal.iter_records(path))


def test_missing_and_empty_journals(tmp_path):
    assert list(journal.iter_records(tmp_path / "none")) == []
    assert journal.cut_torn_tail(tmp_path / "none") == 0
    (tmp_path / "e").write_bytes(b"")
    assert list(journal.iter_records(tmp_path / "e")) == [] and journal.cut_torn_tail(tmp_path / "e") == 0
    journal.append(tmp_path / "e", {"a": 1})
    assert json.loads((tmp_path / "e").read_text()) == {"a": 1}
