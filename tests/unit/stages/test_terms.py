"""stages.terms: the SQL search index's term folding."""

from __future__ import annotations

from talkthrough_assets.model import terms


def test_term_folding_is_case_and_diacritic_insensitive():
    assert terms.tokens("Café ÜBER-Déploiement, v2!") == ["cafe", "uber", "deploiement", "v2"]
    rows = terms.term_rows("ocr", [(5, 5000, "Deploy deploy pipeline")])
    assert {(r["term"], r["tf"], r["doc_len"]) for r in rows} == {("deploy", 2, 3), ("pipeline", 1, 3)}
