"""The committed Gen 1 tables are exactly what the extractor gets from the pinned Showdown."""

from pokejax import data, install


def test_committed_data_equals_fresh_extraction(showdown):
    fresh = data.extract()
    assert fresh == data.load()
    assert fresh["showdown"] == install.SHOWDOWN_VERSION


def test_tables_cover_every_random_set():
    d = data.load()
    assert set(d["randomSets"]) == set(d["species"])
    for entry in d["randomSets"].values():
        for key in ("moves", "essentialMoves", "exclusiveMoves", "comboMoves"):
            assert set(entry.get(key, [])) <= set(d["moves"])
    assert {"normal", "ghost", "psychic", "dragon"} <= set(d["typechart"])
    assert "dark" not in d["typechart"] and "steel" not in d["typechart"]
