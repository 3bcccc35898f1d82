"""The read tools answer typed records: no function of talkthrough_assets/read returns an untyped dict record, every
tool's outputSchema is its answer model's JSON Schema, and an answer's JSON leaves out exactly the fields it never
set (agents rely on a key being absent, not null, where it does not apply)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import anyio

from talkthrough_assets.model import manifest as model
from talkthrough_assets.read.answers import Segment
from talkthrough_assets.read.listing import Counts, RecordingItem, RecordingList
from talkthrough_assets.read.search_answer import SearchAnswer

READ = Path(__file__).resolve().parents[2] / "talkthrough_assets" / "read"
# the search index's own modules answer the index's rows (search.py's answer is typed by search_answer.of at the
# Reader), and the HTML report is a file, not a tool's answer
NOT_ANSWERS = {"index.py", "index_view.py", "search.py", "report.py"}
# where a typed answer becomes the JSON that is sent
JSON_OUT = {("answers.py", "dump")}
RECORDS = ("dict", "list[dict]", "dict | None", "dict[str, Any]", "list[dict[str, Any]]")


def _untyped(node: ast.FunctionDef) -> bool:
    """A function whose result is an untyped dict record: annotated so, or a dict literal returned unannotated."""
    if node.returns is not None:
        ann = ast.unparse(node.returns).replace("'", "").replace('"', "")
        return ann in RECORDS or ann.startswith(("tuple[list[dict]", "tuple[dict"))
    return any(isinstance(n, ast.Return) and isinstance(n.value, ast.Dict) for n in ast.walk(node))


def test_no_read_function_returns_an_untyped_dict_record():
    found = []
    for path in sorted(READ.glob("*.py")):
        if path.name in NOT_ANSWERS:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _untyped(node) \
                    and (path.name, node.name) not in JSON_OUT:
                found.append(f"{path.name}:{node.lineno} {node.name}")
    assert found == []


def test_each_tools_output_schema_is_its_answer_models():
    from talkthrough_mcp.protocol import answer_model
    from talkthrough_mcp.tools import TOOLS, build_server

    listed = {t.name: t for t in anyio.run(build_server().list_tools)}
    for fn in TOOLS:
        model = answer_model(fn)
        required = model.model_json_schema()["required"]
        assert listed[fn.__name__].output_schema["required"] == required, fn.__name__
    assert answer_model(TOOLS[0]) is RecordingList


def test_an_answer_sends_the_fields_it_set_and_null_only_where_set_to_null():
    item = RecordingItem(id="0123456789abcdef", filename="a.mp4", duration_ms=5, recorded_at=None, wall_clock=None,
                         counts=Counts(segments=1, frames=0, unique_frames=0, speakers=0), diarized=False,
                         has_audio=True, has_video=False, transcript_available=True, generation="g")
    data = item.dump()
    assert data["recorded_at"] is None and data["wall_clock"] is None  # set, to null: sent as null
    assert "partial" not in data and "next_start_ms" not in data and "kind" not in data  # never set: absent
    item.next_start_ms = None
    assert item.dump()["next_start_ms"] is None
    seg = Segment.of(model.Segment(seq=3, t0_ms=10, t1_ms=20, text="hi"), {}, None, with_t_wall=False)
    assert seg.dump() == {"seq": 3, "t_ms": 10, "t1_ms": 20, "text": "hi"}
    assert seg.size() == len(json.dumps(seg.dump(), separators=(",", ":")))


def test_a_search_answer_keeps_the_keys_it_was_given_and_only_those():
    given = {"query": "x", "terms": ["x"], "mode": "and", "scope": "all recordings", "total_matches": 1, "returned": 1,
             "hits": [{"recording": "r", "source": "ocr", "t_ms": 1, "t_wall": None, "frame_ms": 0, "score": 1.5,
                       "snippet": "x", "ranked_by": "bm25"}],
             "recordings": {"r": {"filename": "a.mp4", "generation": "g"}}, "index": "warming (1 of 2)"}
    assert SearchAnswer.model_validate(given).dump() == given
